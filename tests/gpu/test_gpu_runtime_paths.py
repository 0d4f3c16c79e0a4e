"""Which path the GPU runtime (runtime/gpu/) takes, on a fake driver whose memory is a bytearray: no GPU
needed. The kernels themselves run in test_gpu_conformance.py and test_gpu_paths.py."""

from __future__ import annotations

import ctypes
import re
import threading
from pathlib import Path

import numpy as np
import pytest

from generated import kernels_hip
from generated.dtypes import DType, ReduceOp
from generated.kernel_facts import KernelPattern
from runtime.errors import DTypeMismatch, ShapeMismatch
from runtime.gpu.launch import kernel_params
from runtime.gpu.memory import GpuBuffer
from runtime.gpu.reduce import FEW_GROUPS, PASS0_HEADER
from runtime.gpu.runtime import GpuRuntime
from runtime.layout import Layout


class FakeDriver:
    """Every device shares one bytearray; pointers are offsets into it."""

    name = "fake"

    def __init__(self, peer: bool = True) -> None:
        self.memory = bytearray(1 << 16)
        self.top = 256
        self.peer = peer
        self.calls: list[tuple] = []

    def activate(self, ordinal):
        pass

    def stream(self, ordinal):
        return f"stream{ordinal}"

    def multiprocessors(self, ordinal):
        return 132

    def alloc(self, nbytes, stream):
        ptr, self.top = self.top, self.top + -(-nbytes // 256) * 256
        self.calls.append(("alloc", ptr, nbytes, stream))
        return ptr

    def free(self, ptr, stream):
        pass

    def upload(self, ptr, host, stream):
        self.calls.append(("upload", ptr, host.nbytes))
        self.memory[ptr : ptr + host.nbytes] = host.tobytes()

    def download(self, host, ptr, stream):
        self.calls.append(("download", ptr, host.nbytes))
        host.view(np.uint8)[:] = np.frombuffer(self.memory, np.uint8, host.nbytes, ptr)

    def copy(self, dst, src, nbytes, stream):
        self.calls.append(("copy", dst, src, nbytes, stream))
        self.memory[dst : dst + nbytes] = self.memory[src : src + nbytes]

    def memset(self, ptr, nbytes, stream, byte=0):
        self.calls.append(("memset", ptr, nbytes, byte))
        self.memory[ptr : ptr + nbytes] = bytes([byte]) * nbytes

    def peer_copy(self, dst, dst_ordinal, src, src_ordinal, nbytes, stream):
        self.calls.append(("peer_copy", dst, dst_ordinal, src, src_ordinal, nbytes, stream))
        if self.peer:
            self.memory[dst : dst + nbytes] = self.memory[src : src + nbytes]
        return self.peer

    def of(self, kind):
        return [c for c in self.calls if c[0] == kind]


def _runtime(peer: bool = True) -> tuple[GpuRuntime, FakeDriver, list[tuple]]:
    driver = FakeDriver(peer)
    rt = GpuRuntime(driver)
    launches: list[tuple] = []

    def launch(source, name, grid, block, stream, args, types):
        launches.append((name, grid, block, args))
        if name.startswith("copy_strided_"):
            _copy_strided(driver.memory, np.dtype(getattr(kernels_hip, f"_{name.rsplit('_', 1)[1].upper()}")), *args)

    rt.launch = launch
    return rt, driver, launches


def _copy_strided(memory: bytearray, dtype: np.dtype, numel, rank, info, inp, out) -> None:
    """copy_strided_<dtype> (hip/fill_copy.hip) on the fake memory: the view of `inp` that
    info's dims and strides (elements; info 0: contiguous) select, contiguous at `out`."""
    if info:
        dims, strides = np.frombuffer(memory, np.uint64, 2 * rank, info).astype(int).reshape(2, rank)
    else:
        dims, strides = (numel,), (1,)
    flat = np.frombuffer(memory, dtype, (len(memory) - inp) // dtype.itemsize, inp)
    view = np.lib.stride_tricks.as_strided(flat, tuple(dims), tuple(s * dtype.itemsize for s in strides))
    np.frombuffer(memory, dtype, numel, out)[:] = view.reshape(-1)


# -- to_device -----------------------------------------------------------------------------

X = np.arange(24, dtype=np.float32).reshape(4, 6)


def test_a_contiguous_view_moves_between_devices_peer_to_peer():
    rt, driver, _ = _runtime()
    src = rt.from_host(0, X)
    view = Layout.contiguous((4, 6)).narrow(0, 1, 2)  # rows 1-2: an offset, still contiguous
    out = rt.to_device(src, view, 1)
    assert out.ordinal == 1
    [(_, dst, dst_ordinal, from_, src_ordinal, nbytes, stream)] = driver.of("peer_copy")
    assert (dst, dst_ordinal, from_, src_ordinal, nbytes, stream) == (out.ptr, 1, src.ptr + 6 * 4, 0, 48, "stream1")
    assert not driver.of("download")  # no trip through host memory
    np.testing.assert_array_equal(rt.to_numpy(out, Layout.contiguous((2, 6))), X[1:3])


def test_devices_that_cannot_copy_peer_to_peer_go_through_host_memory():
    rt, driver, _ = _runtime(peer=False)
    src = rt.from_host(0, X)
    out = rt.to_device(src, Layout.contiguous((4, 6)), 1)
    assert len(driver.of("peer_copy")) == 1 and driver.of("download")
    np.testing.assert_array_equal(rt.to_numpy(out, Layout.contiguous((4, 6))), X)


COPY = kernels_hip.STORAGE["copy_strided_src"]  # the table the generated to_device passes


def test_a_strided_view_is_made_dense_on_its_device_then_copied_peer_to_peer():
    rt, driver, launches = _runtime()
    src = rt.from_host(0, X)
    moved = rt.to_device(src, Layout.contiguous((4, 6)).transpose(0, 1), 1, COPY)
    [(name, _, _, (numel, rank, info, inp, dense))] = launches
    assert (name, numel, rank, inp) == ("copy_strided_f32", 24, 2, src.ptr) and info
    [(_, dst, dst_ordinal, from_, src_ordinal, nbytes, _)] = driver.of("peer_copy")
    assert (dst, dst_ordinal, from_, src_ordinal, nbytes) == (moved.ptr, 1, dense, 0, X.nbytes)
    assert not driver.of("download")  # no trip through host memory
    np.testing.assert_array_equal(rt.to_numpy(moved, Layout.contiguous((6, 4))), X.T)


def test_a_strided_view_on_its_own_device_is_one_copy_kernel():
    rt, driver, launches = _runtime()
    src = rt.from_host(0, X)
    view = Layout.contiguous((4, 6)).narrow(1, 1, 3)
    moved = rt.to_device(src, view, 0, COPY)
    assert [(name, args[3], args[4]) for name, _, _, args in launches] == [("copy_strided_f32", src.ptr + 4, moved.ptr)]
    assert not driver.of("peer_copy") and not driver.of("download") and not driver.of("copy")
    np.testing.assert_array_equal(rt.to_numpy(moved, Layout.contiguous((4, 3))), X[:, 1:4])


def test_a_strided_view_goes_through_host_memory_without_peer_access_or_a_copy_kernel():
    for peer, table in ((False, COPY), (True, None)):
        rt, driver, launches = _runtime(peer)
        src = rt.from_host(0, X)
        moved = rt.to_device(src, Layout.contiguous((4, 6)).transpose(0, 1), 1, table)
        np.testing.assert_array_equal(rt.to_numpy(moved, Layout.contiguous((6, 4))), X.T)
        assert driver.of("download")[0][2] == X.nbytes and len(launches) == (table is not None)


def test_a_contiguous_view_on_its_own_device_is_one_memcpy():
    rt, driver, launches = _runtime()
    src = rt.from_host(0, X)
    same = rt.to_device(src, Layout.contiguous((4, 6)), 0, COPY)
    assert not driver.of("peer_copy") and driver.of("copy")[-1][1:] == (same.ptr, src.ptr, X.nbytes, "stream0")
    assert not launches


def test_an_empty_view_needs_no_copy():
    rt, driver, _ = _runtime()
    out = rt.to_device(rt.from_host(0, X), Layout.contiguous((0, 6)), 1)
    assert out.size == 0 and not driver.of("peer_copy") and not driver.of("download")


# -- inputs a kernel or the BLAS must read dense: a strided one is copied on the device -----

EVERY_OTHER = Layout((3, 4), (16, 2))  # rows and columns of a (6, 8) buffer, every other one
Y = np.arange(48, dtype=np.float32).reshape(6, 8)


class GemmDriver(FakeDriver):
    def gemm(
        self,
        ordinal,
        stream,
        dtype,
        transa,
        transb,
        m,
        n,
        k,
        a,
        lda,
        stride_a,
        b,
        ldb,
        stride_b,
        c,
        ldc,
        stride_c,
        batch,
        *,
        reduced=False,
    ):
        self.calls.append(("gemm", a, b, c))


def _dense_at(driver, ptr, shape):
    return np.frombuffer(driver.memory, np.float32, int(np.prod(shape)), ptr).reshape(shape)


def test_each_nn_op_reading_dense_inputs_has_the_copy_kernel_of_each_of_its_dtypes():
    from runtime.gpu.nn import COPY_STRIDED

    for op, table in kernels_hip.NN.items():
        if op != "sigmoid":  # reads any view, as the unary ops do
            main = next(iter(table))[0]  # every key is (pattern, dtype); the op's own kernel first
            dtypes = {key[1] for key in table if key[0] == main}
            assert {key[1] for key in table if key[0] == COPY_STRIDED} == dtypes, op
            assert all(table[(COPY_STRIDED, d)] is COPY[(COPY_STRIDED, d)] for d in dtypes), op


def test_dense_keeps_a_dense_view_and_copies_any_other_on_the_device():
    rt, driver, launches = _runtime()
    buf = rt.from_host(0, Y)
    copy = COPY[(KernelPattern.COPY_STRIDED_SELF, np.dtype(np.float32))]
    assert rt._dense(buf, Layout.contiguous((6, 8)), copy) == (buf, Layout.contiguous((6, 8))) and not launches
    for view, want in ((EVERY_OTHER, Y[::2, ::2]), (Layout.contiguous((2, 8), start_offset=8), Y[1:3])):
        dense, layout = rt._dense(buf, view, copy)
        assert layout == Layout.contiguous(want.shape) and launches[-1][0] == "copy_strided_f32"
        np.testing.assert_array_equal(_dense_at(driver, dense.ptr, want.shape), want)
    assert not driver.of("download") and not driver.of("copy")


@pytest.mark.parametrize("op", ["softmax_last_dim", "arg_sort", "rms_norm"])
def test_an_nn_op_reads_a_strided_input_through_a_device_copy(op):
    from runtime.gpu import nn as gpu_nn

    rt, driver, launches = _runtime()
    buf = rt.from_host(0, Y)
    extra = {
        "arg_sort": (True,),
        "rms_norm": (rt.from_host(0, np.ones(4, np.float32)), Layout.contiguous((4,)), 1e-5),
    }.get(op, ())
    getattr(gpu_nn, op)(rt, buf, EVERY_OTHER, *extra, kernels_hip.NN[op])
    (copy, _, _, (_, _, _, _, dense)), (kernel, _, _, args) = launches
    assert (copy, kernel) == ("copy_strided_f32", "arg_sort_local_f32" if op == "arg_sort" else f"{op}_f32")
    assert dense in args
    np.testing.assert_array_equal(_dense_at(driver, dense, (3, 4)), Y[::2, ::2])
    assert not driver.of("download")


def test_sdpa_reads_strided_q_k_v_through_device_copies():
    from runtime.gpu import nn as gpu_nn

    rt = GpuRuntime(driver := GemmDriver())
    launches = []
    rt.launch = lambda source, name, grid, block, stream, args, types: launches.append(name)
    buf = rt.from_host(0, np.arange(64, dtype=np.float32))
    view = Layout.contiguous((1, 1, 4, 8)).transpose(2, 3)  # (1, 1, 8, 4)
    gpu_nn.sdpa(rt, buf, view, buf, view, buf, view, 0.5, False, kernels_hip.NN["sdpa"])
    assert launches == ["copy_strided_f32"] * 3 + ["sdpa_softmax_f32"]
    assert len(driver.of("gemm")) == 2 and not driver.of("download")


def test_qmatmul_reads_a_strided_x_through_a_device_copy():
    from runtime import ggml
    from runtime.gpu.quant import QGpuBuffer, q_matmul

    rt, driver, launches = _runtime()
    n, k = 2, 32
    q = QGpuBuffer("q8_0", rt.from_host(0, np.zeros(n * ggml.FORMATS["q8_0"].nbytes, np.uint8)))
    x = rt.from_host(0, np.arange(3 * k, dtype=np.float32))
    q_matmul(rt, q, x, Layout.contiguous((k, 3)).transpose(0, 1), (n, k), kernels_hip.QSTORAGE["matmul"])
    (copy, _, _, (_, _, _, _, dense)), (quantize, _, _, x_args), (kernel, _, _, args) = launches
    assert (copy, quantize, kernel) == ("copy_strided_f32", "quantize_q8_1_f32", "qmatvec_q8_1_q8_0")
    assert x_args[0] == args[1] == dense and x_args[1] == args[2]  # x, then x in q8_1
    np.testing.assert_array_equal(_dense_at(driver, dense, (3, k)), np.arange(3 * k).reshape(k, 3).T)
    assert not driver.of("download")


class Sm90Driver(FakeDriver):
    """A cuda sm_90 device that lets a block have `shared` bytes of shared memory, with room for
    weight rows and x of 16384 values."""

    name = "cuda"

    def __init__(self, shared: int) -> None:
        super().__init__()
        self.memory = bytearray(1 << 18)
        self.shared = shared

    def arch(self, ordinal):
        return "sm_90"

    def shared_per_block(self, ordinal):
        return self.shared


@pytest.mark.parametrize("shared", [232448, 101376], ids=["227-KiB", "99-KiB"])
def test_the_stream_product_takes_one_row_only_where_a_block_may_have_its_shared_memory(shared):
    """One row of x of q3_K against 16384-value rows on cuda sm_90 and up: x quantized to q8_1,
    then qmatvec_q8_1_stream_q3_k where a block may have STREAM_SHARED + STREAM_STATIC +
    DYNAMIC_SHARED_SPARE bytes of shared memory (227 KiB), else qmatvec_q8_1_one_q3_k (a device
    of 99 KiB a block), whose product needs none of it; the stream entry would only fall back to
    its slow one there."""
    from runtime import ggml
    from runtime.gpu import quant as gpu_quant

    rt = GpuRuntime(Sm90Driver(shared))
    launches: list[tuple] = []
    rt.launch = lambda source, name, grid, block, stream, args, types: launches.append((name, args))
    n, k = 3, 16384
    q = gpu_quant.QGpuBuffer("q3_k", rt.from_host(0, np.zeros(n * k // 256 * ggml.FORMATS["q3_k"].nbytes, np.uint8)))
    x = rt.from_host(0, np.ones(k, np.float32))
    gpu_quant.q_matmul(rt, q, x, Layout.contiguous((1, k)), (n, k), kernels_hip.QSTORAGE["matmul"])
    (quantize, (x_in, xq, *_)), (product, args) = launches
    entry = "qmatvec_q8_1_stream_q3_k" if shared == 232448 else "qmatvec_q8_1_one_q3_k"
    assert (quantize, product) == ("quantize_q8_1_f32", entry) and args[1:3] == (x_in, xq) == (x.ptr, xq)


@pytest.mark.parametrize(
    "fmt, rows, n",
    [("q4_0", 1, 3), ("q4_0", 1, 65537), ("q4_0", 2, 3), ("q6_k", 2, 3), ("q6_k", 4, 3), ("f16", 1, 3), ("f16", 8, 3)],
)
@pytest.mark.parametrize("exact", [False, True], ids=["q8_1-x", "exact-x"])
def test_qmatmul_takes_the_quantized_x_product_unless_the_switch_or_the_measured_rows_say(fmt, rows, n, exact):
    """Off (the default): x quantized to q8_1 and qmatvec_q8_1_<fmt> (qmatvec_q8_1_few_<fmt> for one
    or two rows, qmatvec_q8_1_one_<fmt> for one where q8_one_apart), but the exact-x kernel for
    EXACT_X_FASTER's rows and, up to EXACT_X_SMALL_ELEMS weights, EXACT_X_SMALL's (q4_0 of one
    row: 3 x 256 weights exact, 65537 x 256 quantized); on: the exact-x kernel. f32 / f16 / bf16:
    the quantized-x product on x itself."""
    from runtime import ggml
    from runtime.gpu.quant import (
        EXACT_X_FASTER,
        EXACT_X_SMALL,
        EXACT_X_SMALL_ELEMS,
        QGpuBuffer,
        q8_one_apart,
        q_matmul,
        x_rows_class,
    )

    rt, _, launches = _runtime()
    rt.switches.qmatmul_exact_x = exact
    k = 256
    nbytes = n * k // ggml.FORMATS[fmt].block * ggml.FORMATS[fmt].nbytes
    q = QGpuBuffer(fmt, rt.from_host(0, np.zeros(nbytes, np.uint8)))
    x = rt.from_host(0, np.ones(rows * k, np.float32))
    q_matmul(rt, q, x, Layout.contiguous((rows, k)), (n, k), kernels_hip.QSTORAGE["matmul"])
    names = [name for name, *_ in launches]
    one = f"qmatvec_q8_1_one_{fmt}" if q8_one_apart(fmt) else f"qmatvec_q8_1_few_{fmt}"
    product = {1: one, 2: f"qmatvec_q8_1_few_{fmt}"}.get(rows, f"qmatvec_q8_1_{fmt}")
    small = (fmt, x_rows_class(rows)) in EXACT_X_SMALL and n * k <= EXACT_X_SMALL_ELEMS
    if fmt in ggml.PLAIN:
        assert names == [product] and launches[0][3][1] == launches[0][3][2] == x.ptr  # x, as xq
    elif exact or (fmt, x_rows_class(rows)) in EXACT_X_FASTER or small:
        assert names == [f"qmatvec_{fmt}"]
    else:
        assert names == ["quantize_q8_1_f32", product]


class GemmArgsDriver(FakeDriver):
    """Records each gemm's arguments; blas: what blas_available answers."""

    def __init__(self, blas: bool = True) -> None:
        super().__init__()
        self.blas = blas
        self.reduced: list[bool] = []  # each gemm's `reduced`

    def blas_available(self):
        return self.blas

    def gemm(self, *args, reduced=False):
        self.calls.append(("gemm", *args))
        self.reduced.append(reduced)


@pytest.mark.parametrize("rows", [1, 23, 24, 40])
@pytest.mark.parametrize("blas", [True, False], ids=["blas", "no-blas"])
def test_qmatmul_of_many_rows_dequantizes_once_and_runs_the_gemm(rows, blas):
    """From gemm_rows("q4_0") (24) rows of x: W dequantized to f32, then one f32 GEMM
    computing out^T = W x^T column-major; fewer rows, or no BLAS (rocm without hipBLAS):
    qmatvec."""
    from runtime import ggml
    from runtime.gpu.quant import QGpuBuffer, gemm_rows, q_matmul

    rt = GpuRuntime(driver := GemmArgsDriver(blas))
    launches = []
    rt.launch = lambda source, name, grid, block, stream, args, types: launches.append((name, args))
    n, k = 3, 64
    q = QGpuBuffer("q4_0", rt.from_host(0, np.zeros(n * (k // 32) * ggml.FORMATS["q4_0"].nbytes, np.uint8)))
    x = rt.from_host(0, np.ones(rows * k, np.float32))
    out = q_matmul(rt, q, x, Layout.contiguous((rows, k)), (n, k), kernels_hip.QSTORAGE["matmul"])
    assert gemm_rows("q4_0") == 24
    if rows >= gemm_rows("q4_0") and blas:
        [(name, (blocks, w, numel))] = launches
        assert (name, blocks, numel) == ("dequantize_q4_0_f32", q.buf.ptr, n * k)
        [(_, ordinal, _, dtype, trans_a, trans_b, m, cols, depth, a, lda, _, b, ldb, _, c, ldc, _, batch)] = driver.of(
            "gemm"
        )
        assert (dtype, trans_a, trans_b, m, cols, depth) == (np.dtype(np.float32), True, False, n, rows, k)
        assert (a, lda, b, ldb, c, ldc, batch) == (w, k, x.ptr, k, out.ptr, n, 1)
    else:  # one row of a small q4_0 weight: the exact-x kernel (EXACT_X_SMALL), else x in q8_1
        want = ["qmatvec_q4_0"] if rows == 1 else ["quantize_q8_1_f32", "qmatvec_q8_1_q4_0"]
        assert [name for name, _ in launches] == want and not driver.of("gemm")


def test_dequantize_and_gemm_take_the_weight_in_slabs_into_one_buffer(monkeypatch):
    """A weight larger than GEMM_SLAB_BYTES as f32 is dequantized slab by slab of rows into
    one buffer, each slab multiplied into its columns of out."""
    from runtime import ggml
    from runtime.gpu import quant as gpu_quant

    rt = GpuRuntime(driver := GemmArgsDriver())
    launches = []
    rt.launch = lambda source, name, grid, block, stream, args, types: launches.append(args)
    n, k, rows = 5, 64, 30
    monkeypatch.setattr(gpu_quant, "GEMM_SLAB_BYTES", 2 * k * 4)  # two rows of W a slab
    row_bytes = k // 32 * ggml.FORMATS["q4_0"].nbytes
    q = gpu_quant.QGpuBuffer("q4_0", rt.from_host(0, np.zeros(n * row_bytes, np.uint8)))
    x = rt.from_host(0, np.ones(rows * k, np.float32))
    out = gpu_quant.q_matmul(rt, q, x, Layout.contiguous((rows, k)), (n, k), kernels_hip.QSTORAGE["matmul"])
    slab = launches[0][1]
    assert launches == [(q.buf.ptr + n0 * row_bytes, slab, m * k) for n0, m in ((0, 2), (2, 2), (4, 1))]
    gemms = [(c[6], c[9], c[15], c[16]) for c in driver.of("gemm")]  # m, a, c, ldc
    assert gemms == [(m, slab, out.ptr + 4 * n0, n) for n0, m in ((0, 2), (2, 2), (4, 1))]


def test_a_matmul_operand_the_blas_cannot_read_is_copied_on_the_device():
    from runtime.params import MatmulDims

    rt = GpuRuntime(driver := GemmDriver())
    launches = []
    rt.launch = lambda source, name, grid, block, stream, args, types: launches.append((name, args[4]))
    lhs = rt.from_host(0, Y)
    rhs = rt.from_host(0, np.ones((4, 5), np.float32))
    out = rt.matmul(
        lhs, rhs, MatmulDims(1, 3, 5, 4), EVERY_OTHER, Layout.contiguous((4, 5)), kernels_hip.STORAGE["matmul"]
    )
    [(name, dense)] = launches
    assert name == "copy_strided_f32" and driver.of("gemm") == [("gemm", rhs.ptr, dense, out.ptr)]
    assert not driver.of("download")


def test_index_add_copies_self_and_a_strided_src_on_the_device():
    rt, driver, launches = _runtime()
    buf = rt.from_host(0, Y)
    ids = rt.from_host(0, np.array([0, 2], np.uint32))
    rt.index_add(
        buf,
        EVERY_OTHER,
        ids,
        Layout.contiguous((2,)),
        buf,
        Layout((3, 2), (16, 2)),
        1,
        kernels_hip.STORAGE["index_add"],
    )
    assert [name for name, *_ in launches] == ["copy_strided_f32", "copy_strided_f32", "index_add_u32_f32"]
    assert not driver.of("download")  # the kernel checks the ids: nothing waits for the device


# -- index ops: ids checked by the kernels, read at the next synchronization ------------------


class SyncingDriver(FakeDriver):
    def synchronize(self, ordinal):
        self.calls.append(("synchronize", ordinal))


def _index_ops(rt, x, ids):
    """Each index op over a (4, 6) f32 x along dim 1 with `ids` of shape (2,): the last
    launch argument is its flag address."""
    lx, li = Layout.contiguous((4, 6)), Layout.contiguous((2,))
    lg = Layout.contiguous((4, 2))
    gids = rt.from_host(0, np.tile(rt.to_numpy(ids, li), 4))
    src = rt.from_host(0, np.ones((4, 2), np.float32))
    table = kernels_hip.STORAGE
    return {
        "gather": lambda: rt.gather(x, lx, gids, lg, 1, table["gather"]),
        "index_select": lambda: rt.index_select(x, ids, lx, li, 1, table["index_select"]),
        "scatter_set": lambda: rt.scatter_set(x, lx, gids, lg, src, lg, 1, table["scatter_set"]),
        "scatter_add": lambda: rt.scatter_add(x, lx, gids, lg, src, lg, 1, table["scatter_add"]),
        "index_add": lambda: rt.index_add(x, lx, ids, li, src, lg, 1, table["index_add"]),
    }


@pytest.mark.parametrize("op", ["gather", "index_select", "scatter_set", "scatter_add", "index_add"])
def test_index_ops_never_wait_for_the_device(op):
    """No download (which waits for the device) and no synchronize in the op: each launch
    gets its own flag word on the device; a later synchronize reads them all at once."""
    driver = SyncingDriver()
    rt = GpuRuntime(driver)
    launches = []
    rt.launch = lambda source, name, grid, block, stream, args, types: launches.append((name, args))
    x = rt.from_host(0, X)
    ids = rt.from_host(0, np.array([5, 0], np.int64))
    ops = _index_ops(rt, x, ids)
    driver.calls.clear()
    for _ in range(3):
        ops[op]()
    assert not driver.of("download") and not driver.of("synchronize")
    flags = [args[-1] for name, args in launches if name.startswith(op)]
    assert len(flags) == 3 and flags[1] == flags[0] + 4 and flags[2] == flags[0] + 8
    rt.synchronize(0)  # all flags clear: no error, one read of the three words
    assert [c[2] for c in driver.of("download")] == [12]
    rt.synchronize(0)
    assert len(driver.of("download")) == 1  # nothing pending: no read at all


@pytest.mark.parametrize("reader", ["synchronize", "to_numpy", "to_host"])
def test_a_flag_a_kernel_set_raises_the_ops_shape_mismatch_at_the_next_read(reader):
    driver = SyncingDriver()
    rt = GpuRuntime(driver)
    launches = []
    rt.launch = lambda source, name, grid, block, stream, args, types: launches.append((name, args))
    x = rt.from_host(0, X)
    ids = rt.from_host(0, np.array([1, 0], np.uint32))
    ops = _index_ops(rt, x, ids)
    ops["gather"]()
    ops["scatter_add"]()
    ops["index_select"]()
    flag = launches[1][1][-1]  # scatter_add's kernel found a bad id
    driver.memory[flag : flag + 4] = (1).to_bytes(4, "little")
    read = {
        "synchronize": lambda: rt.synchronize(0),
        "to_host": lambda: rt.to_host(x),
        "to_numpy": lambda: rt.to_numpy(x, Layout.contiguous((4, 6))),
    }[reader]
    with pytest.raises(ShapeMismatch, match=r"scatter_add on fake: expected shape ids in \[0, 6\), got an id out of"):
        read()
    assert driver.memory[flag : flag + 4] == bytes(4)  # cleared for the next ops
    read()  # reported once


def test_index_ops_past_every_flag_read_them_first(monkeypatch):
    monkeypatch.setattr("runtime.gpu.indexing.ID_FLAG_SLOTS", 2)
    driver = SyncingDriver()
    rt = GpuRuntime(driver)
    launches = []
    rt.launch = lambda source, name, grid, block, stream, args, types: launches.append((name, args))
    x = rt.from_host(0, X)
    ids = rt.from_host(0, np.array([1, 0], np.uint32))
    gather = _index_ops(rt, x, ids)["gather"]
    driver.calls.clear()
    gather(), gather()
    assert not driver.of("download")
    gather()  # the third needs a flag: the two in use are read, then reused
    assert [c[2] for c in driver.of("download")] == [8]
    assert launches[-1][1][-1] == launches[0][1][-1]


# -- reduce_op: few, long groups in one launch ---------------------------------------------

TABLE = kernels_hip.STORAGE["reduce_op"]


def _reduce(rt, shape, dims, op=ReduceOp.SUM):
    buf = GpuBuffer(1 << 40, int(np.prod(shape)), np.dtype(np.float32), 0)  # never read: launches are faked
    return rt.reduce_op(buf, kernels_hip.REDUCE[op], Layout.contiguous(shape), dims, TABLE)


@pytest.mark.parametrize("op", list(ReduceOp), ids=str)
def test_a_reduction_over_all_dims_is_one_launch_into_a_kept_scratch(op):
    rt, driver, launches = _runtime()
    out = _reduce(rt, (8192, 8192), (0, 1), op)
    [(name, grid, block, args)] = launches
    code, pass_, numel, group, rank, info, chunks, src, partial, dst = args
    assert name == "reduce_chunks_f32" and pass_ == 0 and (numel, group, info, dst) == (1 << 26, 1 << 26, 0, out.ptr)
    assert chunks == 132 * 32 and grid == chunks // (block // 32)  # a warp per chunk
    scratch = rt._scratch[0]
    assert partial == scratch.ptr and scratch.nbytes >= PASS0_HEADER + chunks * 16
    assert ("memset", scratch.ptr, scratch.nbytes, 0) in driver.calls  # the block counter starts at zero
    allocs = len(driver.of("alloc"))
    _reduce(rt, (8192, 8192), (0, 1), op)
    assert launches[1][3][8] == scratch.ptr  # the same scratch, not zeroed again
    assert len(driver.of("alloc")) == allocs + 1  # the output only
    assert driver.of("memset")[-1][1] != scratch.ptr


@pytest.mark.parametrize(
    "shape, dims", [((8192, 8192), (0, 1)), ((3, 1 << 18), (1,)), ((5, 100_003), (1,)), ((FEW_GROUPS, 5000), (1,))]
)
def test_one_launch_reductions_give_a_warp_a_chunk_and_a_block_chunks_of_one_group(shape, dims):
    """hip/reduce.hip's pass 0 combines a block's states when each warp has one chunk and
    the chunks are a multiple of the block's warps (so a block holds chunks of one group)."""
    rt, _, launches = _runtime()
    _reduce(rt, shape, dims)
    [(name, grid, block, args)] = launches
    chunks, groups = args[6], int(np.prod(shape)) // args[3]
    assert args[1] == 0 and chunks % (block // 32) == 0 and grid * (block // 32) == groups * chunks


@pytest.mark.parametrize(
    "itemsize, offset, kept, reduced, width",
    [
        (4, 0, [[8192, 1]], [[8192, 8192]], 4),
        (1, 0, [[64, 1]], [[99, 64]], 8),
        (2, 0, [[64, 1]], [[99, 64]], 8),
        (8, 0, [[66, 1]], [[99, 66]], 2),
        (4, 0, [[37, 1]], [[99, 37]], 1),  # columns not a multiple of 4
        (4, 4, [[64, 1]], [[99, 72]], 1),  # the first element 4 bytes past a 16-byte boundary
        (4, 32, [[64, 1]], [[99, 72]], 4),
        (4, 0, [[64, 1]], [[99, 66]], 1),  # a row stride not a multiple of 4
        (4, 0, [[3, 300 * 48], [48, 1]], [[300, 48]], 4),
        (4, 0, [[3, 1002], [48, 1]], [[300, 48]], 1),  # an outer stride not a multiple of 4
    ],
)
def test_a_thread_reads_several_columns_where_the_vector_loads_are_aligned(itemsize, offset, kept, reduced, width):
    from runtime.gpu.reduce import _reduce_columns

    assert _reduce_columns(itemsize, (1 << 40) + offset, kept, reduced) == width


@pytest.mark.parametrize(
    "itemsize, offset, kept, reduced, width",
    [
        (4, 0, [[8192, 1]], [[8192, 8192]], 8),
        (4, 16, [[64, 1]], [[99, 72]], 1),  # 16 bytes past a 32-byte boundary
        (4, 0, [[68, 1]], [[99, 68]], 1),  # 68 columns: no multiple of 8
        (8, 0, [[64, 1]], [[99, 64]], 4),
        (2, 0, [[64, 1]], [[99, 64]], 8),  # at most 8 columns whatever the type
        (1, 0, [[64, 1]], [[99, 64]], 8),
    ],
)
def test_two_accesses_a_row_double_the_columns(itemsize, offset, kept, reduced, width, monkeypatch):
    """COLUMN_PACKS 2 (hip/reduce.hip's OPGEN_COLUMN_PACKS 2): two 16-byte accesses a row, so
    twice the columns a thread (at most 8) and alignment to both accesses."""
    from runtime.gpu import reduce as gpu

    monkeypatch.setattr(gpu, "COLUMN_PACKS", 2)
    assert gpu._reduce_columns(itemsize, (1 << 40) + offset, kept, reduced) == width


def test_a_sum_over_dim_0_is_one_launch_of_column_tiles():
    """A leading dim's groups too long for a thread each: reduce_columns_f32 with the rank-2
    view by value (its row stride an argument, no info: nothing uploaded), one launch, a
    thread per 4 columns, 32 threads across a tile (128 columns), the rows split into 6
    slices (6 blocks of 256 threads per tile fill the 3 blocks per multiprocessor of the
    entry point's launch bound: 384 of 396), into a kept scratch whose tile counters precede
    the states and are zeroed once."""
    rt, driver, launches = _runtime()
    out = _reduce(rt, (8192, 8192), (0,))
    [(name, grid, block, args)] = launches
    code, groups, el, row_stride, rank, info, splits, src, partial, dst = args
    assert (name, code, groups, el, row_stride, rank, info) == ("reduce_columns_f32", 0, 8192, 8192, 8192, 0, 0)
    assert dst == out.ptr and src == 1 << 40 and not driver.of("upload")  # no dims and strides uploaded
    assert (block, splits, grid) == (256, 6, (8192 // 128) * 6)
    scratch, room, states, _ = rt._tile_scratch[0]
    assert room % 1024 == 0 and room >= 8192 // 128 and partial == scratch.ptr + 4 * room
    # a state (up to 16 bytes) per column and slice, past the counters
    assert states >= 8192 * splits * 16 and scratch.nbytes >= 4 * room + states
    assert ("memset", scratch.ptr, 4 * room, 0) in driver.calls  # the counters start at zero
    allocs = len(driver.of("alloc"))
    _reduce(rt, (8192, 8192), (0,))
    assert launches[1][3][8] == partial  # the same scratch, not zeroed again
    assert len(driver.of("alloc")) == allocs + 1  # the output only
    assert [c for c in driver.of("memset") if c[3] == 0] == [("memset", scratch.ptr, 4 * room, 0)]


def test_column_tiles_counters_grow_and_never_meet_the_states():
    """More tiles than the counters' room: a new scratch with room for them, zeroed there;
    the states start past every counter, so a later launch with fewer tiles still finds
    its counters at zero whatever the earlier launch's states wrote."""
    rt, driver, launches = _runtime()
    driver.memory = bytearray(1 << 23)
    _reduce(rt, (300, 64), (0,))
    first, room, _, _ = rt._tile_scratch[0]
    assert room == 1024 and launches[0][3][8] == first.ptr + 4096
    _reduce(rt, (256, 160_000), (0,))  # 40,000 units of 4 columns: 1,250 tiles
    assert launches[1][0] == "reduce_columns_f32" and launches[1][3][5] == 0  # a rank-2 view by value
    second, room2, _, _ = rt._tile_scratch[0]
    assert second is not first and room2 == 2048 and launches[1][3][8] == second.ptr + 4 * 2048
    assert ("memset", second.ptr, 4 * 2048, 0) in driver.calls
    _reduce(rt, (300, 64), (0,))
    assert rt._tile_scratch[0][0] is second and launches[2][3][8] == second.ptr + 4 * 2048


def _column_tiles(memory: bytearray, args, block: int, order: np.random.Generator) -> None:
    """reduce_columns_f32 of a sum (hip/reduce.hip's reduce_column_tiles) on the fake
    memory, as the kernel's blocks do it, in a random order of the (tile, slice) items: each
    writes its slice's sums to the states (a slice: every splits-th run of the block's rows
    of threads, or a band of rows where the kernel's OPGEN_TILE_INTERLEAVED is 0), counts
    itself on its tile's counter (which must be zero at launch), and the last of a tile adds
    the tile's states in slice order."""
    from runtime.gpu.reduce import COLUMN_TILE, TILE_INTERLEAVED, _reduce_columns

    code, groups, group, row_stride, rank, info, splits, src, partial, dst = args
    assert code == 0
    if not info:  # a rank-2 view by value
        assert rank == 0
        dims, strides = np.array([groups, group]), np.array([1, row_stride])
    else:
        assert row_stride == 0
        dims, strides = np.frombuffer(memory, np.uint64, 2 * rank, info).astype(int).reshape(2, rank)
    flat = np.frombuffer(memory, np.float32, (len(memory) - src) // 4, src)
    view = np.lib.stride_tricks.as_strided(flat, tuple(dims), tuple(4 * s for s in strides)).reshape(-1, group)
    assert view.shape[0] == groups
    width = _reduce_columns(4, src, [[n, s] for n, s in zip(dims[:-1], strides[:-1])], [[dims[-1], strides[-1]]])
    units = groups // width
    tile = COLUMN_TILE
    while tile > 1 and (tile // 2 >= units or tile > block):
        tile //= 2
    tiles, rows, span = -(-units // tile), -(-group // splits), tile * width
    counters = np.frombuffer(memory, np.uint32, tiles, partial - 4 * tiles)[::-1]  # tile t's at partial - 4 (t + 1)
    assert not counters.any(), "a tile counter is not zero at launch"
    states = np.frombuffer(memory, np.float32, splits * groups, partial).reshape(splits, groups)
    out = np.frombuffer(memory, np.float32, groups, dst)
    for item in order.permutation(tiles * splits):
        s, t = divmod(int(item), tiles)
        g0, g1 = t * span, min(groups, (t + 1) * span)
        if TILE_INTERLEAVED:  # runs of ty_n rows (the block's rows of threads), every splits-th
            ty_n = block // tile
            mine = (np.arange(group) // ty_n) % splits == s
            states[s, g0:g1] = view[g0:g1, mine].sum(axis=1, dtype=np.float32)
        else:  # a band of consecutive rows
            r0 = min(s * rows, group)
            states[s, g0:g1] = view[g0:g1, r0 : min(r0 + rows, group)].sum(axis=1, dtype=np.float32)
        counters[t] += 1
        if counters[t] == splits:
            total = states[0, g0:g1].copy()
            for k in range(1, splits):
                total += states[k, g0:g1]
            out[g0:g1] = total
            counters[t] = 0


COLUMN_TILE_CASES = [
    ((4099, 64), (0,), lambda l: l),  # 16 units of 4 columns: a tile of 16 threads; 4,099 rows in 8 slices
    ((2053, 1000), (0,), lambda l: l),  # 250 units: 8 tiles, the last one short; slices with a tail
    ((3001, 37), (0,), lambda l: l),  # a column a thread (37 is no multiple of 4): 2 tiles
    ((3, 300, 48), (1,), lambda l: l),  # a batch of column sums
    ((50, 40, 16), (0, 1), lambda l: l),  # two leading dims merged
    ((700, 72), (0,), lambda l: l.narrow(1, 1, 64)),  # unaligned: a column a thread
    ((4099, 64), (0,), lambda l: l),  # again, after launches with more tiles
]


@pytest.mark.parametrize(
    "packs, interleaved, by_value", [(1, True, True), (1, True, False), (1, False, True), (2, True, True)]
)
def test_column_tiles_sum_as_numpy_launch_after_launch(packs, interleaved, by_value, monkeypatch):
    """The column tiles through the fake driver with the kernel's protocol modelled in numpy
    (blocks in a random order): the arguments, the scratch layout and the counters handed
    from launch to launch give numpy's sums, and every case takes reduce_columns, a rank-2
    view by value where COLUMN_BY_VALUE is on; slices interleaved or as bands
    (hip/reduce.hip's OPGEN_TILE_INTERLEAVED), 4 or 8 f32 columns a thread (COLUMN_PACKS)."""
    monkeypatch.setattr("runtime.gpu.reduce.COLUMN_PACKS", packs)
    monkeypatch.setattr("runtime.gpu.reduce.TILE_INTERLEAVED", interleaved)
    monkeypatch.setattr("runtime.gpu.reduce.COLUMN_BY_VALUE", by_value)
    rt, driver, launches = _runtime()
    driver.memory = bytearray(1 << 25)
    order = np.random.default_rng(5)
    for i, (shape, dims, make_view) in enumerate(COLUMN_TILE_CASES):
        x = np.random.default_rng(i).uniform(-1, 1, shape).astype(np.float32)
        layout = make_view(Layout.contiguous(shape))
        buf = rt.from_host(0, x)
        out = rt.reduce_op(buf, kernels_hip.REDUCE[ReduceOp.SUM], layout, dims, TABLE)
        name, grid, block, args = launches[-1]
        assert name == "reduce_columns_f32" and (args[5] == 0) == (by_value and len(shape) - len(dims) == 1), shape
        _column_tiles(driver.memory, args, block, order)
        view = np.lib.stride_tricks.as_strided(
            x.reshape(-1)[layout.start_offset :], layout.shape, tuple(4 * s for s in layout.stride)
        )
        want = view.sum(axis=dims, keepdims=True, dtype=np.float64)
        got = np.frombuffer(driver.memory, np.float32, out.size, out.ptr).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4, err_msg=str(shape))


def test_the_scratch_grows_when_a_reduction_needs_more():
    rt, driver, launches = _runtime()
    rt._scratch[0] = small = rt.alloc(0, 64, np.dtype(np.uint8))
    _reduce(rt, (3, 1 << 18), (1,))
    assert launches[0][3][1] == 0 and rt._scratch[0] is not small
    assert launches[0][3][8] == rt._scratch[0].ptr and driver.of("memset")[-1][1:] == (
        rt._scratch[0].ptr,
        rt._scratch[0].nbytes,
        0,
    )


def test_more_groups_than_one_block_finishes_take_two_launches():
    rt, driver, launches = _runtime()
    groups = FEW_GROUPS + 1
    _reduce(rt, (groups, 1 << 16), (1,))
    assert [(name, args[1]) for name, _, _, args in launches] == [("reduce_chunks_f32", 1), ("reduce_chunks_f32", 2)]
    assert launches[0][3][8] == launches[1][3][8] != getattr(rt._scratch.get(0), "ptr", None)


def test_groups_long_enough_for_one_warp_each_stay_one_launch_of_fast_kernels():
    rt, _, launches = _runtime()
    _reduce(rt, (8192, 8192), (1,))
    [(name, _, _, _)] = launches
    assert name == "fast_sum_f32"


# -- reduce_op's plans: what a call works out before it launches, kept per key ----------------


def _shape_of(launch, out_ptr: int, memory: bytearray) -> tuple:
    """A launch with the addresses a plan or a call allocates afresh replaced: the output
    named, the partial states of two launches (reduce_chunks pass 1 / 2) named, and the
    view's dims and strides on the device (info) by their values."""
    name, grid, block, args = launch
    args = ["out" if a == out_ptr and i == len(args) - 1 else a for i, a in enumerate(args)]
    rank_at = 2 if name.startswith("fast_") else 4
    if args[rank_at + 1]:
        info, rank = args[rank_at + 1], args[rank_at]
        args[rank_at + 1] = tuple(np.frombuffer(memory, np.uint64, 2 * rank, info).tolist())
    if name.startswith("reduce_chunks_") and args[1] in (1, 2):
        args[8] = "partial"
    return name, grid, block, tuple(args)


# (dtype, shape, view, dims, op): every path (fast kernels, pass 0, pass 1 and 2, column tiles
# by value and by info, the empty output, the empty sum), views that differ only in their
# strides, offset, alignment or dims, and dtypes and ops of the same view.
PLAN_CASES = [
    (np.float32, (64, 48), lambda l: l, (0,), ReduceOp.SUM),
    (np.float32, (64, 48), lambda l: l, (1,), ReduceOp.SUM),
    (np.float32, (64, 48), lambda l: l, (0, 1), ReduceOp.SUM),
    (np.float32, (64, 48), lambda l: l.transpose(0, 1), (0,), ReduceOp.SUM),
    (np.float32, (64, 48), lambda l: l, (0,), ReduceOp.ARGMAX),
    (np.float64, (64, 48), lambda l: l, (0,), ReduceOp.SUM),
    (np.uint8, (64, 48), lambda l: l, (0,), ReduceOp.MAX),
    (np.float32, (300, 64), lambda l: l, (0,), ReduceOp.SUM),
    (np.float32, (300, 72), lambda l: l.narrow(1, 0, 64), (0,), ReduceOp.SUM),  # the same shape, another stride
    (np.float32, (300, 72), lambda l: l.narrow(1, 1, 64), (0,), ReduceOp.SUM),  # unaligned: a column a thread
    (np.float32, (300, 72), lambda l: l.narrow(1, 4, 64), (0,), ReduceOp.SUM),
    (np.float32, (300, 72), lambda l: l.narrow(0, 1, 299).narrow(1, 0, 64), (0,), ReduceOp.SUM),
    (np.float32, (3, 300, 48), lambda l: l, (1,), ReduceOp.SUM),  # tiles by the info array
    (np.float32, (3, 300, 48), lambda l: l, (0, 1), ReduceOp.SUM),
    (np.float32, (9, 5000), lambda l: l, (1,), ReduceOp.SUM),  # pass 1 and 2
    (np.float32, (3, 5000), lambda l: l, (1,), ReduceOp.MIN),  # pass 0
    (np.float32, (3, 0), lambda l: l, (1,), ReduceOp.SUM),  # an empty sum: zeros
    (np.float32, (0, 5), lambda l: l, (1,), ReduceOp.SUM),  # no group
]


def test_reductions_reuse_their_plan_only_for_the_same_op_dtype_view_and_dims():
    """Calls of every case, in a shuffled order over and over, launch what a fresh plan
    launches for that call (every plan dropped for it, then put back): no case takes another's plan,
    whatever differs (dims, op, dtype, strides, offset, alignment, rank); the repeated calls
    plan nothing."""
    from runtime.gpu import reduce as gpu

    rt, driver, launches = _runtime()
    driver.memory = bytearray(1 << 22)
    bufs = []
    for i, (dtype, shape, _, _, _) in enumerate(PLAN_CASES):
        x = np.random.default_rng(i).integers(0, 9, shape).astype(dtype)
        bufs.append(rt.from_host(0, x))
    planned: list[tuple] = []
    plan = gpu.Reductions._reduce_plan

    def spy(self, *args):
        planned.append(args)
        return plan(self, *args)

    def call(i):
        dtype, shape, make_view, dims, op = PLAN_CASES[i]
        before = len(launches)
        out = rt.reduce_op(bufs[i], kernels_hip.REDUCE[op], make_view(Layout.contiguous(shape)), dims, TABLE)
        return out, [_shape_of(launch, out.ptr, driver.memory) for launch in launches[before:]]

    with pytest.MonkeyPatch().context() as m:
        m.setattr(gpu.Reductions, "_reduce_plan", spy)
        order = np.random.default_rng(1).permutation(np.tile(np.arange(len(PLAN_CASES)), 4))
        seen = set()
        for i in order:
            planned.clear()
            _, cached = call(int(i))
            assert len(planned) == (0 if int(i) in seen else 1), PLAN_CASES[i]
            seen.add(int(i))
            kept = dict(rt._reduce_plans)
            rt._reduce_plans.clear()
            _, fresh = call(int(i))
            assert cached == fresh, PLAN_CASES[i]
            rt._reduce_plans.clear()
            rt._reduce_plans.update(kept)
    assert launches  # the cases launch (all but the empty ones)


def test_a_plan_is_kept_per_runtime_bounded_and_forgotten_when_a_setting_changes(monkeypatch):
    from runtime.gpu import reduce as gpu

    rt, driver, launches = _runtime()
    _reduce(rt, (8192, 8192), (0,))
    assert len(rt._reduce_plans) == 1 and launches[-1][3][6] == 6  # 6 slices
    monkeypatch.setattr(gpu, "COLUMN_SPLITS", 5)  # a setting: every plan forgotten
    assert not rt._reduce_plans
    _reduce(rt, (8192, 8192), (0,))
    assert launches[-1][3][6] == 5
    monkeypatch.undo()  # back to 0: forgotten again
    assert not rt._reduce_plans
    _reduce(rt, (8192, 8192), (0,))
    assert launches[-1][3][6] == 6
    monkeypatch.setattr(gpu, "REDUCE_PLANS_KEPT", 4)
    for rows in range(200, 210):
        _reduce(rt, (rows, 64), (0,))
    assert len(rt._reduce_plans) == 4
    assert [key[3] for key in rt._reduce_plans] == [(rows, 64) for rows in range(206, 210)]  # the newest


def test_a_planned_reduction_still_checks_its_table_buffer_and_dims():
    """A kept plan serves only a call with its launch table and a buffer that holds the
    view: a shorter buffer raises ShapeMismatch as the first call would, another table (a
    dtype it lacks) DTypeMismatch; dims as a list or invalid dims are planned (or refused)
    each call."""
    rt, _, launches = _runtime()
    layout = Layout.contiguous((300, 64))
    buf = GpuBuffer(1 << 40, 300 * 64, np.dtype(np.float32), 0)
    kernel = kernels_hip.REDUCE[ReduceOp.SUM]
    rt.reduce_op(buf, kernel, layout, (0,), TABLE)
    short = GpuBuffer(1 << 40, 300 * 64 - 1, np.dtype(np.float32), 0)
    with pytest.raises(ShapeMismatch):
        rt.reduce_op(short, kernel, layout, (0,), TABLE)
    lacking = {k: v for k, v in TABLE.items() if np.dtype(np.float32) not in k}
    with pytest.raises(DTypeMismatch):
        rt.reduce_op(buf, kernel, layout, (0,), lacking)
    further = Layout((300, 64), (64, 1), 16)  # 64 bytes on: the same alignment, past the buffer's end
    with pytest.raises(ShapeMismatch):
        rt.reduce_op(buf, kernel, further, (0,), TABLE)
    for dims in ((0, 0), (2,), (-1,)):
        for _ in range(2):
            with pytest.raises(ShapeMismatch):
                rt.reduce_op(buf, kernel, layout, dims, TABLE)
    count = len(launches)
    rt.reduce_op(buf, kernel, layout, [0], TABLE)  # a list: not a key, planned
    rt.reduce_op(buf, kernel, layout, [0], TABLE)
    assert launches[count][:3] == launches[count + 1][:3] == launches[0][:3]
    assert len(rt._reduce_plans) == 1


def test_a_plan_is_kept_per_alignment_of_the_first_element():
    """The same view of two buffers whose first elements differ in alignment (a foreign
    pointer 4 bytes past a 16-byte boundary) takes 4 columns a thread in one and 1 in the
    other: two plans, one for each alignment (64 bytes on: the first's)."""
    rt, _, launches = _runtime()
    layout = Layout.contiguous((300, 64))
    kernel = kernels_hip.REDUCE[ReduceOp.SUM]
    shapes = []
    for ptr in ((1 << 40), (1 << 40) + 4, (1 << 40) + 64, (1 << 40) + 4):
        buf = GpuBuffer(ptr, 300 * 64, np.dtype(np.float32), 0)
        rt.reduce_op(buf, kernel, layout, (0,), TABLE)
        shapes.append(launches[-1][:3] + (launches[-1][3][:7],))
    assert shapes[0] == shapes[2] != shapes[1] == shapes[3]
    assert shapes[0][3][1] == 64 and shapes[0][1] == 1  # 16 units of 4 columns: one tile
    assert len(rt._reduce_plans) == 2


def test_a_plan_uploads_a_views_dims_and_strides_once():
    """Column tiles of a rank-3 view read its dims and strides on the device: uploaded with
    the plan, kept with it, not per call."""
    rt, driver, launches = _runtime()
    driver.memory = bytearray(1 << 22)
    buf = rt.from_host(0, np.ones((3, 300, 48), np.float32))
    uploads = len(driver.of("upload"))
    for _ in range(3):
        rt.reduce_op(buf, kernels_hip.REDUCE[ReduceOp.SUM], Layout.contiguous((3, 300, 48)), (1,), TABLE)
    assert len(driver.of("upload")) == uploads + 1
    info = launches[0][3][5]
    assert info and all(launch[3][5] == info for launch in launches)


# -- kernel arguments ----------------------------------------------------------------------

SIGNATURES = sorted({v for k, v in vars(kernels_hip).items() if k.startswith("_ARGS_")}, key=str)


def _sample(t, i):
    return float(i) + 0.5 if t in (ctypes.c_float, ctypes.c_double) else (i * 0x1_0001) % 250 + 1


def _read_back(address, types):
    pointers = ctypes.cast(address, ctypes.POINTER(ctypes.c_void_p))
    return [ctypes.cast(pointers[i], ctypes.POINTER(t))[0] for i, t in enumerate(types)]


@pytest.mark.parametrize("types", SIGNATURES, ids=lambda ts: "-".join(t.__name__ for t in ts))
def test_kernel_params_point_at_each_argument_as_its_c_type(types):
    local = threading.local()
    for round_ in range(2):  # the second launch refills the same buffer
        args = tuple(_sample(t, i + round_) for i, t in enumerate(types))
        assert _read_back(kernel_params(local, types, args), types) == list(args)


def test_kernel_params_take_what_ctypes_takes():
    """None for a null pointer, and integers wrapped to the argument's width."""
    types = (ctypes.c_void_p, ctypes.c_uint8, ctypes.c_size_t, ctypes.c_float)
    local = threading.local()  # holds the buffers the address points into
    address = kernel_params(local, types, (None, 257, -1, 2))
    assert _read_back(address, types) == [None, 1, 2**64 - 1, 2.0]


# -- small buffers are recycled, large ones go back to the driver's pool --------------------
def test_small_buffers_are_recycled_per_device_and_size():
    rt, driver, _ = _runtime()
    first = rt.alloc(0, 1000, np.dtype(np.float32))  # 4,000 bytes: a 4 KiB block
    ptr = first.ptr
    del first
    again = rt.alloc(0, 1024, np.dtype(np.float32))
    assert again.ptr == ptr and len(driver.of("alloc")) == 1, "a dropped block of the same size is reused"
    other_device = rt.alloc(1, 1024, np.dtype(np.float32))
    bigger = rt.alloc(0, 2048, np.dtype(np.float32))
    assert len({again.ptr, other_device.ptr, bigger.ptr}) == 3 and len(driver.of("alloc")) == 3


def test_large_buffers_and_a_full_cache_go_back_to_the_pool(monkeypatch):
    import runtime.gpu.memory as gpu

    rt, driver, _ = _runtime()
    freed = []
    driver.free = lambda ptr, stream: freed.append(ptr)
    large = rt.alloc(0, gpu.SMALL_BLOCK, np.dtype(np.float32))
    ptr = large.ptr
    del large
    assert freed == [ptr]
    monkeypatch.setattr(gpu, "SMALL_CACHE_LIMIT", 4096)
    a, b = rt.alloc(0, 1024, np.dtype(np.float32)), rt.alloc(0, 1024, np.dtype(np.float32))
    kept, spilled = a.ptr, b.ptr
    del a, b
    assert freed == [ptr, spilled] and rt.alloc(0, 1024, np.dtype(np.float32)).ptr == kept


def test_distinct_small_sizes_share_their_block_size_past_the_remembered_ones(monkeypatch):
    import runtime.gpu.memory as gpu

    monkeypatch.setattr(gpu, "BIN_SIZES_KEPT", 4)
    rt, driver, _ = _runtime()
    for n in range(700, 1025):  # 2,800 to 4,096 bytes: one 4 KiB block size, 325 sizes
        ptr = rt.alloc(0, n, np.dtype(np.float32)).ptr  # dropped at once
    assert len(driver.of("alloc")) == 1 and rt.alloc(0, 900, np.dtype(np.float32)).ptr == ptr
    assert len(rt._bin_of) <= 4 and len(rt._bins) == 1  # the remembered sizes; one block size


# -- launches: prepared once per function; the cuda driver's through cuLaunchKernelEx ------
class LaunchDriver(FakeDriver):
    """Records driver.function and driver.launch; no `launcher`: every launch goes through
    `launch`."""

    def function(self, module, name):
        self.calls.append(("function", module, name))
        return f"fn:{name}"

    def launch(self, fn, grid, block, stream, args, types):
        self.calls.append(("launch", fn, grid, block, stream, args, types))


def test_a_function_is_looked_up_once_and_a_driver_without_launcher_launches_through_launch():
    driver = LaunchDriver()
    rt = GpuRuntime(driver)
    rt._module = lambda ordinal, source: f"module:{ordinal}:{source}"
    buf = rt.from_host(0, np.arange(10, dtype=np.float32))
    kernel = kernels_hip.UNARY[kernels_hip.UnaryOp.EXP]
    view = Layout.contiguous((4,), start_offset=3)
    outs = [rt.unary(buf, kernel, view) for _ in range(2)]
    assert driver.of("function") == [("function", f"module:0:{kernels_hip._SRC_ELEMENTWISE}", "unary_exp_f32")]
    launches = driver.of("launch")
    assert [c[1:5] for c in launches] == [("fn:unary_exp_f32", 1, 256, "stream0")] * 2
    assert [c[5] for c in launches] == [(4, 1, 0, buf.ptr + 12, out.ptr) for out in outs]
    unary_types = (ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    assert launches[0][6] is next(
        v for k, v in vars(kernels_hip).items() if k.startswith("_ARGS_") and v == unary_types
    )


def test_unary_checks_dtype_and_extent_before_it_allocates():
    from runtime.errors import DTypeMismatch, ShapeMismatch

    rt, driver, launches = _runtime()
    kernel = kernels_hip.UNARY[kernels_hip.UnaryOp.EXP]
    ints = rt.from_host(0, np.arange(8, dtype=np.uint8))
    floats = rt.from_host(0, np.arange(8, dtype=np.float32))
    allocs = len(driver.of("alloc"))
    with pytest.raises(DTypeMismatch):
        rt.unary(ints, kernel, Layout.contiguous((8,)))
    for view in (Layout.contiguous((8,), start_offset=1), Layout.contiguous((3, 3)).transpose(0, 1)):
        with pytest.raises(ShapeMismatch):
            rt.unary(floats, kernel, view)
    assert len(driver.of("alloc")) == allocs and not launches
    empty = rt.unary(floats, kernel, Layout.contiguous((0, 4)))
    assert empty.size == 0 and not launches


def _counting(kernel, calls: list):
    """`kernel` with each dtype's launch wrapper counting its calls into `calls`."""
    from runtime.params import Kernel

    def wrap(fn):
        def counted(*args):
            calls.append(fn.__name__)
            fn(*args)

        return counted

    return Kernel(kernel.op, {dt: wrap(fn) for dt, fn in kernel.by_dtype.items()}, kernel.result)


def test_unary_and_binary_launch_through_the_prepared_launch_after_the_first_call():
    """The first call goes through the generated wrapper and `launch` (which prepares the
    function); later ones call the prepared launch directly, with the same arguments."""
    driver = LaunchDriver()
    rt = GpuRuntime(driver)
    rt._module = lambda ordinal, source: f"module:{ordinal}:{source}"
    wrapped: list[str] = []
    exp = _counting(kernels_hip.UNARY[kernels_hip.UnaryOp.EXP], wrapped)
    add = _counting(kernels_hip.BINARY[kernels_hip.BinaryOp.ADD], wrapped)
    x = rt.from_host(0, np.arange(12, dtype=np.float32))
    y = rt.from_host(0, np.arange(12, dtype=np.float32))
    view = Layout.contiguous((4,), start_offset=3)
    outs = [rt.unary(x, exp, view) for _ in range(3)]
    strided = Layout.contiguous((3, 4)).transpose(0, 1)
    sums = [rt.binary(x, add, y, strided, strided) for _ in range(2)]
    sums += [rt.binary(x, add, y, view, Layout.contiguous((4,), start_offset=8)) for _ in range(2)]
    assert wrapped == ["launch_unary_exp_f32", "launch_binary_add_f32"]  # each wrapper once
    launches = driver.of("launch")
    assert [c[1] for c in launches] == ["fn:unary_exp_f32"] * 3 + ["fn:binary_add_f32"] * 4
    assert [c[5] for c in launches[:3]] == [(4, 1, 0, x.ptr + 12, out.ptr) for out in outs]
    assert all(c[5][2] != 0 and c[5][:2] == (12, 2) for c in launches[3:5])  # dims and strides uploaded
    assert [c[5] for c in launches[5:]] == [(4, 1, 0, x.ptr + 12, y.ptr + 32, out.ptr) for out in sums[2:]]
    assert len({c[6] for c in launches[:3]}) == 1 and len(driver.of("function")) == 2


def test_the_direct_launches_keep_every_check():
    from runtime.errors import DeviceMismatch, DTypeMismatch, ShapeMismatch

    driver = LaunchDriver()
    rt = GpuRuntime(driver)
    rt._module = lambda ordinal, source: f"module:{ordinal}:{source}"
    exp = kernels_hip.UNARY[kernels_hip.UnaryOp.EXP]
    add = kernels_hip.BINARY[kernels_hip.BinaryOp.ADD]
    x, y = rt.from_host(0, np.ones(8, np.float32)), rt.from_host(0, np.ones(8, np.float32))
    rt.unary(x, exp, Layout.contiguous((8,)))
    rt.binary(x, add, y, Layout.contiguous((8,)), Layout.contiguous((8,)))  # both prepared now
    launched = len(driver.of("launch"))
    with pytest.raises(DTypeMismatch, match="exp"):
        rt.unary(rt.from_host(0, np.ones(8, np.uint8)), exp, Layout.contiguous((8,)))
    for view in (
        Layout.contiguous((8,), start_offset=1),
        Layout.contiguous((9,)),
        Layout.contiguous((3, 3)).transpose(0, 1),
    ):
        with pytest.raises(ShapeMismatch, match="exp"):
            rt.unary(x, exp, view)
        with pytest.raises(ShapeMismatch, match="add"):
            rt.binary(x, add, y, view, view)
        with pytest.raises(ShapeMismatch, match="add"):
            rt.binary(x, add, y, Layout.contiguous(view.shape), view)
    with pytest.raises(DeviceMismatch, match="add"):
        rt.binary(x, add, rt.from_host(1, np.ones(8, np.float32)), Layout.contiguous((8,)), Layout.contiguous((8,)))
    assert len(driver.of("launch")) == launched


def test_small_buffers_go_back_to_their_bin_when_dropped():
    rt, driver, _ = _runtime()
    a = rt.alloc(0, 100, np.dtype(np.float32))
    ptr, bin_ = a.ptr, a.bin
    assert (a.size, a.dtype, a.ordinal, a.nbytes) == (100, np.dtype(np.float32), 0, 400)
    del a
    assert bin_.free == [ptr] and rt.alloc(0, 90, np.dtype(np.float32)).ptr == ptr  # the same 512-byte block


@pytest.mark.parametrize("numel", [0, 1, 256, 257, 64 * 256, 64 * 256 + 1, 132 * 64 * 256, 1 << 30])
def test_geometry_is_the_block_count_capped_at_64_per_multiprocessor(numel):
    rt, _, _ = _runtime()
    assert rt.geometry(numel, 0) == max(1, min(-(-numel // 256), 132 * 64))


class FakeLibcuda:
    """cuLaunchKernelEx and cuLaunchKernel as ctypes callbacks that read what they are given
    as libcuda would: the launch config, and each kernel argument through kernelParams."""

    def __init__(self, types, result=0):
        self.types, self.result, self.calls = types, result, []
        cu_result = ctypes.c_int
        self.ex = ctypes.CFUNCTYPE(cu_result, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
            self._ex
        )
        self.plain = ctypes.CFUNCTYPE(
            cu_result, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
        )(self._plain)

    def _ex(self, config, fn, params, extra):
        from runtime.cuda import _LaunchConfig

        c = _LaunchConfig.from_address(config)
        dims = (c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY, c.blockDimZ, c.sharedMemBytes)
        self.calls.append(("ex", fn, dims, c.hStream, c.attrs, c.numAttrs, _read_back(params, self.types), extra))
        return self.result

    def _plain(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.calls.append(
            ("plain", fn, (gx, gy, gz, bx, by, bz, shared), stream, None, 0, _read_back(params, self.types), extra)
        )
        return self.result

    def symbol(self, name, hold_gil=False):
        self.asked = getattr(self, "asked", []) + [(name, hold_gil)]
        return {"cuLaunchKernelEx": self.ex, "cuLaunchKernel": self.plain}[name]


def _cuda_launcher(monkeypatch, types, result=0):
    import runtime.cuda as cuda

    lib = FakeLibcuda(types, result)
    monkeypatch.setattr(cuda, "_libcuda_symbol", lib.symbol)
    driver = cuda.CudaDriver()
    return driver, driver.launcher(0xF00D, types), lib


@pytest.mark.parametrize("hold", [True, False])
def test_prepared_launches_keep_the_gil_as_launch_holds_gil_says(monkeypatch, hold):
    import runtime.cuda as cuda

    monkeypatch.setattr(cuda, "LAUNCH_HOLDS_GIL", hold)
    _, launch, lib = _cuda_launcher(monkeypatch, SIGNATURES[0])
    assert lib.asked == [("cuLaunchKernelEx", hold)]


def test_a_symbol_that_keeps_the_gil_comes_from_a_pydll(monkeypatch):
    import runtime.cuda as cuda

    opened = []
    monkeypatch.setattr(cuda, "_driver_api", lambda: None)
    monkeypatch.setattr(cuda.ctypes, "PyDLL", lambda name: opened.append(("PyDLL", name)) or ctypes.pythonapi)
    monkeypatch.setattr(cuda.ctypes, "CDLL", lambda name: opened.append(("CDLL", name)) or ctypes.pythonapi)
    cuda._libcuda_symbol.cache_clear()
    try:
        assert cuda._libcuda_symbol("Py_IsInitialized", True) is not None
        assert cuda._libcuda_symbol("Py_IsInitialized") is not None
    finally:
        cuda._libcuda_symbol.cache_clear()
    assert opened == [("PyDLL", "libcuda.so.1"), ("CDLL", "libcuda.so.1")]


@pytest.mark.parametrize("types", SIGNATURES, ids=lambda ts: "-".join(t.__name__ for t in ts))
def test_the_cuda_launcher_passes_dims_stream_and_each_argument_as_its_c_type(monkeypatch, types):
    _, launch, lib = _cuda_launcher(monkeypatch, types)
    for round_ in range(3):  # the same buffer refilled; the stream changes once
        args = tuple(_sample(t, i + round_) for i, t in enumerate(types))
        stream = 0x5000 if round_ < 2 else 0x6000
        launch(7 + round_, 128, stream, args, types)
        assert lib.calls[-1] == ("ex", 0xF00D, (7 + round_, 1, 1, 128, 1, 1, 0), stream, None, 0, list(args), None)
    assert [c[0] for c in lib.calls] == ["ex"] * 3


def test_the_cuda_launcher_leaves_to_launch_what_its_buffer_cannot_take(monkeypatch):
    """Values to convert as ctypes does, another thread (with buffers of its own), a
    signature other than the prepared one: cuLaunchKernel with the same arguments."""
    types = (ctypes.c_void_p, ctypes.c_uint8, ctypes.c_size_t, ctypes.c_float)
    _, launch, lib = _cuda_launcher(monkeypatch, types)
    launch(3, 64, 0x5000, (None, 257, -1, 2), types)
    assert lib.calls[-1] == ("plain", 0xF00D, (3, 1, 1, 64, 1, 1, 0), 0x5000, None, 0, [None, 1, 2**64 - 1, 2.0], None)
    thread = threading.Thread(target=launch, args=(5, 32, 0x5000, (16, 2, 3, 4.0), types))
    thread.start()
    thread.join()
    assert lib.calls[-1][0] == "plain" and lib.calls[-1][2][0] == 5 and lib.calls[-1][6] == [16, 2, 3, 4.0]
    launch(6, 32, 0x5000, (16, 2, 3, 4.0), tuple(types))  # an equal tuple is the same signature
    assert lib.calls[-1][0] == "ex" and lib.calls[-1][2][0] == 6
    with pytest.raises(OverflowError):
        launch(-1, 32, 0x5000, (16, 2, 3, 4.0), types)


def test_a_failed_cuda_launch_raises_gpu_error(monkeypatch):
    from runtime.gpu.driver import GpuError

    types = (ctypes.c_size_t,)
    _, launch, _ = _cuda_launcher(monkeypatch, types, result=1)  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(GpuError, match="cuda: cuLaunchKernel failed"):
        launch(1, 1, 0x5000, (1,), types)


class FakeCudaApi:
    """cuda-python's cuModuleGetFunction and cuFuncGetAttribute for CudaDriver.function:
    functions numbered in order of lookup, all of one binary version (70 for sm_70, ...)."""

    class CUfunction_attribute:  # noqa: N801  (cuda-python's name)
        CU_FUNC_ATTRIBUTE_BINARY_VERSION = "binary version"

    def __init__(self, version):
        self.version, self.looked_up = version, []

    def cuModuleGetFunction(self, module, name):  # noqa: N802
        self.looked_up.append(name.decode())
        return 0, 0x100 + len(self.looked_up)

    def cuFuncGetAttribute(self, attribute, fn):  # noqa: N802
        assert attribute == "binary version"
        return 0, self.version


class FakeSharedCudaApi(FakeCudaApi):
    """FakeCudaApi with the device's opt-in shared memory per block (227 KiB), each function's
    static shared memory (128 bytes) and the dynamic shared memory each is allowed, as set."""

    class CUfunction_attribute:  # noqa: N801  (cuda-python's names)
        CU_FUNC_ATTRIBUTE_BINARY_VERSION = "binary version"
        CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = "static shared"
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = "dynamic shared"

    class CUdevice_attribute:  # noqa: N801
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = "opt-in shared"

    def __init__(self, version):
        super().__init__(version)
        self.allowed = {}

    def cuFuncGetAttribute(self, attribute, fn):  # noqa: N802
        return (0, 128) if attribute == "static shared" else super().cuFuncGetAttribute(attribute, fn)

    def cuFuncSetAttribute(self, fn, attribute, value):  # noqa: N802
        assert attribute == "dynamic shared"
        self.allowed[fn] = value
        return (0,)

    def cuInit(self, flags):  # noqa: N802
        return (0,)

    def cuDeviceGet(self, ordinal):  # noqa: N802
        return 0, ordinal

    def cuDeviceGetAttribute(self, attribute, device):  # noqa: N802
        assert attribute == "opt-in shared"
        return 0, 232448


def test_the_stream_products_launch_with_the_dynamic_shared_memory_a_block_may_have_less_the_spare(monkeypatch):
    """The functions of DYNAMIC_SHARED_KERNELS (qmatvec_q8_1_stream_*) are allowed, when looked up,
    the device's opt-in shared memory less their static shared memory and DYNAMIC_SHARED_SPARE
    (room for other kernels' blocks), and every launch of them, prepared or not, asks for that;
    other functions are allowed nothing more and ask for none."""
    import runtime.cuda as cuda

    types = (ctypes.c_void_p,) * 3 + (ctypes.c_size_t,) * 3
    lib, api = FakeLibcuda(types), FakeSharedCudaApi(90)
    monkeypatch.setattr(cuda, "_libcuda_symbol", lib.symbol)
    monkeypatch.setattr(cuda, "_driver_api", lambda: api)
    driver = cuda.CudaDriver()
    assert "qmatvec_q8_1_stream_q3_k" in cuda.DYNAMIC_SHARED_KERNELS
    args = (0x1000, 0x2000, 0x3000, 64, 16384, 1)
    assert cuda.DYNAMIC_SHARED_SPARE > 0
    stream_shared = 232448 - 128 - cuda.DYNAMIC_SHARED_SPARE
    for name, shared in (("qmatvec_q8_1_stream_q3_k", stream_shared), ("qmatvec_q8_1_one_q3_k", 0)):
        fn = driver.function("module", name)
        assert api.allowed.get(fn, 0) == shared, name
        driver.launcher(fn, types)(132, 544, 0x5000, args, types)
        driver.launch(fn, 132, 544, 0x5000, args, types)
        (ex, *_), (plain, *_) = lib.calls[-2:]
        assert ex == "ex" and plain == "plain"
        assert [call[2][6] for call in lib.calls[-2:]] == [shared, shared], name


@pytest.mark.parametrize("version", [90, 80])
def test_only_the_kernels_that_wait_for_their_predecessor_launch_programmatically(monkeypatch, version):
    """The exact-x qmatvec kernels (q4_0, q4_1, q8_0, q4_k, q6_k) and every product of
    hip/qmatvec_q8.hip (each waits for the kernel before it) built for sm_90 and up carry the
    programmatic stream serialization attribute (id 6, value 1) in every prepared launch, and
    so does x's quantization (it lets its product start, and waits for the kernel before it
    before it reads x); other kernels, and those kernels built for an older GPU, carry none."""
    import runtime.cuda as cuda

    types = (ctypes.c_void_p,) * 3 + (ctypes.c_size_t,) * 3
    lib, api = FakeLibcuda(types), FakeCudaApi(version)
    monkeypatch.setattr(cuda, "_libcuda_symbol", lib.symbol)
    monkeypatch.setattr(cuda, "_driver_api", lambda: api)
    driver = cuda.CudaDriver()
    entries = (Path(cuda.__file__).parent.parent / "generated" / "qmatvec_q8_entries.h").read_text()
    q8 = set(re.findall(r'extern "C" __global__ void (\w+)\(', entries))  # every entry point it defines
    exact = {"qmatvec_q4_0", "qmatvec_q4_1", "qmatvec_q8_0", "qmatvec_q4_k", "qmatvec_q6_k"}
    programmatic = exact | q8
    assert programmatic == cuda.PROGRAMMATIC_KERNELS and "quantize_q8_1_f32" in q8 and len(q8) == 91
    names = (
        "qmatvec_q4_0", "qmatvec_q4_1", "dequantize_q4_0_f32", "qmatvec_q8_0", "qmatvec_q4_k", "qmatvec_q6_k",
        "qmatvec_q5_k", "quantize_q8_1_f32", "qmatvec_q8_1_few_q4_1", "qmatvec_q8_1_mma_wide_f16",
    )  # fmt: skip
    functions = {name: driver.function("module", name) for name in names}
    args = (0x1000, 0x2000, 0x3000, 4096, 4096, 1)
    for name, fn in functions.items():
        launch = driver.launcher(fn, types)
        for _ in range(2):
            launch(256, 256, 0x5000, args, types)
            kind, got_fn, dims, stream, attrs, count, params, _ = lib.calls[-1]
            assert (kind, got_fn, dims[:4], stream, params) == ("ex", fn, (256, 1, 1, 256), 0x5000, list(args))
            if version >= 90 and name in programmatic:
                attribute = cuda._LaunchAttribute.from_address(attrs)
                assert (count, attribute.id, attribute.value) == (1, 6, 1), name
                assert ctypes.sizeof(cuda._LaunchAttribute) == 72  # cuda.h's CUlaunchAttribute
            else:
                assert (attrs, count) == (None, 0), name
    assert api.looked_up == list(names)


# -- convolutions through the BLAS -----------------------------------------------------------


class BlasDriver(FakeDriver):
    """A driver whose BLAS is there: each gemm's arguments are recorded (`reduced` apart)."""

    def __init__(self) -> None:
        super().__init__()
        self.reduced: list[bool] = []

    def blas_available(self):
        return True

    def gemm(self, ordinal, stream, dtype, *args, reduced=False):
        self.calls.append(("gemm", np.dtype(dtype), *args))
        self.reduced.append(reduced)


def _conv_runtime(monkeypatch=None, column_bytes=None):
    driver = BlasDriver()
    rt = GpuRuntime(driver)
    launches = []
    rt.launch = lambda source, name, grid, block, stream, args, types: launches.append((name, args))
    if column_bytes is not None:
        monkeypatch.setattr("runtime.gpu.conv.CONV_COLUMN_BYTES", column_bytes)
    return rt, driver, launches


def test_conv2d_of_floats_is_im2col_then_one_gemm_per_chunk_with_the_kernel_broadcast(monkeypatch):
    from runtime.params import ConvParams2D

    b, c_in, h, w, c_out = 3, 2, 5, 4, 3
    taps, positions = c_in * 3 * 3, h * w  # padding 1 keeps the size
    rt, driver, launches = _conv_runtime(monkeypatch, 2 * taps * positions * 4)  # columns of 2 batches
    x = rt.from_host(0, np.ones((b, h, c_in, w), np.float32))
    lx = Layout.contiguous((b, h, c_in, w)).permute((0, 2, 1, 3))  # strided (b, c_in, h, w): read in place
    k = rt.from_host(0, np.ones((c_out, c_in, 3, 3), np.float32))
    p = ConvParams2D(b_size=b, i_h=h, i_w=w, k_h=3, k_w=3, c_out=c_out, c_in=c_in, padding=1)
    driver.calls.clear()
    out = rt.conv2d(x, lx, k, Layout.contiguous((c_out, c_in, 3, 3)), p, kernels_hip.STORAGE["conv2d"])
    assert [name for name, _ in launches] == ["im2col_f32", "im2col_f32"]
    (_, first), (_, second) = launches
    assert first[:16] == (2 * taps, c_in, h, w, 3, 3, h, w, 1, 1, -1, -1, h * c_in * w, w, c_in * w, 1)
    assert first[16] == x.ptr and second[16] == x.ptr + 2 * h * c_in * w * 4 and first[0] == 2 * taps
    assert second[0] == taps  # the last chunk: one batch
    col = first[17]
    gemms = driver.of("gemm")
    assert [g_[1:] for g_ in gemms] == [
        (
            np.dtype(np.float32),
            False,
            False,
            positions,
            c_out,
            taps,
            col,
            positions,
            taps * positions,
            k.ptr,
            taps,
            0,
            out.ptr + b0 * c_out * positions * 4,
            positions,
            c_out * positions,
            n,
        )
        for b0, n in ((0, 2), (2, 1))
    ]
    assert not driver.of("download")


def test_conv_transpose2d_of_f32_is_a_gemm_then_col2im_and_bf16_keeps_the_direct_kernel():
    import ml_dtypes

    from runtime.params import ConvTransposeParams2D

    b, c_in, h, w, c_out = 2, 4, 3, 5, 3
    p = ConvTransposeParams2D(b_size=b, i_h=h, i_w=w, k_h=2, k_w=2, c_out=c_out, c_in=c_in, stride=2)
    for dtype, want in ((np.float32, ["col2im_f32"]), (ml_dtypes.bfloat16, ["conv_transpose2d_bf16"])):
        rt, driver, launches = _conv_runtime()
        x = rt.from_host(0, np.ones((b, c_in, h, w), dtype))
        k = rt.from_host(0, np.ones((c_in, c_out, 2, 2), dtype))
        driver.calls.clear()
        out = rt.conv_transpose2d(
            x,
            Layout.contiguous((b, c_in, h, w)),
            k,
            Layout.contiguous((c_in, c_out, 2, 2)),
            p,
            kernels_hip.STORAGE["conv_transpose2d"],
        )
        assert [name for name, _ in launches] == want
        if dtype is np.float32:
            taps, inputs = c_out * 4, h * w
            [(_, _, ta, tb, m, n, kk, a, lda, sa, bb, ldb, sb, c, ldc, sc, batch)] = driver.of("gemm")
            assert (ta, tb, m, n, kk, a, lda, sa, bb, ldb, sb) == (
                False,
                True,
                inputs,
                taps,
                c_in,
                x.ptr,
                inputs,
                c_in * inputs,
                k.ptr,
                taps,
                0,
            )
            assert (ldc, sc, batch) == (inputs, taps * inputs, b)
            [(_, args)] = launches
            assert args[:11] == (b * c_out, 2, 2, h, w, p.out_h(), p.out_w(), 2, 0, 0, 1) and args[11:] == (c, out.ptr)
        else:
            assert not driver.of("gemm")
        assert not driver.of("download")


def test_a_transposed_convolution_of_stride_1_is_a_convolution_reading_the_taps_backwards():
    from runtime.params import ConvTransposeParams1D

    rt, driver, launches = _conv_runtime()
    b, c_in, l_in, c_out = 2, 3, 9, 4
    p = ConvTransposeParams1D(b_size=b, l_in=l_in, c_out=c_out, c_in=c_in, k_size=3, padding=1, dilation=2)
    x = rt.from_host(0, np.ones((b, c_in, l_in), np.float32))
    k = rt.from_host(0, np.ones((c_in, c_out, 3), np.float32))
    out = rt.conv_transpose1d(
        x,
        Layout.contiguous((b, c_in, l_in)),
        k,
        Layout.contiguous((c_in, c_out, 3)),
        p,
        kernels_hip.STORAGE["conv_transpose1d"],
    )
    assert [name for name, _ in launches] == ["copy_strided_f32", "im2col_f32"]
    (_, copy), (_, im2col) = launches
    assert copy[:2] == (c_in * c_out * 3, 3)  # the kernel as (c_out, c_in, k), made dense
    dims_strides = np.frombuffer(driver.memory, np.uint64, 6, copy[2]).tolist()
    assert dims_strides == [c_out, c_in, 3, 3, c_out * 3, 1]
    l_out = p.l_out()
    assert im2col[:16] == (b * c_in * 3, c_in, 1, l_in, 1, 3, 1, l_out, 1, -2, 0, 1, c_in * l_in, l_in, 0, 1)
    [gemm] = driver.of("gemm")
    assert gemm[2:7] == (False, False, l_out, c_out, c_in * 3) and gemm[10] == copy[4] and gemm[13] == out.ptr


def test_integer_convolutions_keep_the_direct_kernels():
    from runtime.params import ConvParams1D

    rt, driver, launches = _conv_runtime()
    x = rt.from_host(0, np.ones((2, 3, 8), np.int64))
    k = rt.from_host(0, np.ones((4, 3, 3), np.int64))
    rt.conv1d(
        x,
        Layout.contiguous((2, 3, 8)),
        k,
        Layout.contiguous((4, 3, 3)),
        ConvParams1D(b_size=2, l_in=8, c_out=4, c_in=3, k_size=3),
        kernels_hip.STORAGE["conv1d"],
    )
    assert [name for name, _ in launches] == ["conv1d_i64"] and not driver.of("gemm")


# -- arg_sort: chunks in shared memory, merges through global memory ---------------------------


def test_arg_sort_of_a_short_row_is_one_launch_and_a_long_row_merges_its_chunks():
    from runtime.gpu import nn as gpu_nn

    table = kernels_hip.NN["arg_sort"]
    rt, driver, launches = _runtime()
    x = rt.from_host(0, np.ones((2, 4096), np.float32))
    out, _ = gpu_nn.arg_sort(rt, x, Layout.contiguous((2, 4096)), True, table)
    [(name, _, threads, args)] = launches
    assert name == "arg_sort_local_f32" and threads == 4096 // 8  # 8 packed pairs a thread
    assert args[:6] == (2, 4096, 4096, 1, 2, 4096) and args[7:] == (0, 0, out.ptr)

    rt, driver, launches = _runtime()
    x = rt.from_host(0, np.ones((1, 3 * 4096 + 5), np.float32))
    out, _ = gpu_nn.arg_sort(rt, x, Layout.contiguous((1, 3 * 4096 + 5)), False, table)
    steps = [(name.rsplit("_", 1)[0], args) for name, _, _, args in launches]
    assert [(name, args[2:4] if name == "arg_sort_merge" else args[4:6]) for name, args in steps] == [
        ("arg_sort_local", (2, 4096)),
        ("arg_sort_merge", (8192, 4096)),
        ("arg_sort_local", (8192, 8192)),
        ("arg_sort_merge", (16384, 8192)),
        ("arg_sort_merge", (16384, 4096)),
        ("arg_sort_local", (16384, 16384)),
    ]
    assert all(args[9] == 0 for _, args in steps[:-1] if len(args) == 10) and steps[-1][1][9] == out.ptr
    assert steps[0][1][6] == x.ptr and all(args[6] == 0 for name, args in steps[1:] if name == "arg_sort_local")
    assert not driver.of("download")


def test_index_select_of_contiguous_ids_uploads_no_dims_and_strides():
    rt, driver, launches = _runtime()
    x = rt.from_host(0, X)
    ids = rt.from_host(0, np.array([0, 5, 5, 1, 7, 2], np.int64))
    uploads = []
    driver.upload = lambda ptr, host, stream: uploads.append(host.nbytes)
    rt.index_select(
        x,
        ids,
        Layout.contiguous((4, 6)),
        Layout.contiguous((2,), start_offset=3),
        1,
        kernels_hip.STORAGE["index_select"],
    )
    [(name, _, _, args)] = launches
    assert name == "index_select_i64_f32" and args[2] == 0 and args[3] == ids.ptr + 24 and uploads == []
    rt.index_select(x, ids, Layout.contiguous((4, 6)), Layout((2,), (2,), 1), 1, kernels_hip.STORAGE["index_select"])
    assert launches[1][3][2] != 0 and uploads == [2 * 8]  # a strided view: its dim and stride


@pytest.mark.parametrize("method", ["rand_uniform", "rand_normal"])
def test_host_drawn_random_storages_name_the_gpu_backend_in_their_errors(method):
    """The samples are drawn on the host by the cpu runtime's code; its errors name the GPU
    backend that was asked (they named cpu), and nothing is uploaded."""
    rt, driver, _ = _runtime()
    with pytest.raises(DTypeMismatch, match=f"{method} on fake: expected dtype"):
        getattr(rt, method)(0, (4,), DType.U8, 0.0, 1.0)
    with pytest.raises(ShapeMismatch, match=f"{method} on fake: expected shape non-negative dims"):
        getattr(rt, method)(0, (2, -1), DType.F32, 0.0, 1.0)
    assert not [c for c in driver.calls if c[0] == "alloc"]


def test_the_cuda_launcher_writes_a_changed_block_and_refuses_one_out_of_range(monkeypatch):
    types = SIGNATURES[0]
    _, launch, lib = _cuda_launcher(monkeypatch, types)
    args = tuple(_sample(t, i) for i, t in enumerate(types))
    for grid, block in ((3, 256), (4, 256), (5, 64), (6, 256)):
        launch(grid, block, 0x5000, args, types)
        assert lib.calls[-1] == ("ex", 0xF00D, (grid, 1, 1, block, 1, 1, 0), 0x5000, None, 0, list(args), None)
    with pytest.raises(OverflowError):  # as cuLaunchKernel's own checks: never a wrapped dim
        launch(7, 2**32, 0x5000, args, types)
    launch(8, 256, 0x5000, args, types)
    assert lib.calls[-1] == ("ex", 0xF00D, (8, 1, 1, 256, 1, 1, 0), 0x5000, None, 0, list(args), None)


# -- the generated cuda arms of unary / binary, through Storage, over the fake driver ------
@pytest.fixture
def cuda_storage(monkeypatch):
    """runtime.cuda's runtime (what the generated arms call) over FakeDriver, recording launches."""
    import runtime.cuda as cuda

    rt = cuda._rt
    driver = FakeDriver()
    launches: list[tuple] = []
    monkeypatch.setattr(rt, "driver", driver)
    for state in ("_streams", "_bins", "_bin_of", "_kept", "_direct", "_launches"):
        monkeypatch.setattr(rt, state, {})
    monkeypatch.setattr(
        rt,
        "launch",
        lambda source, name, grid, block, stream, args, types: launches.append(
            (name, grid, block, stream.handle, args)
        ),
    )
    return rt, launches


def test_the_cuda_arms_build_a_storage_of_the_runtimes_buffer(cuda_storage):
    from generated.backends import On
    from generated.dtypes import BinaryOp, UnaryOp
    from generated.storage import Storage

    rt, launches = cuda_storage
    x = Storage(On.CUDA, rt.from_host(0, np.arange(8, dtype=np.float32)))
    y = Storage(On.CUDA, rt.from_host(0, np.ones(8, dtype=np.float32)))
    lay = Layout.contiguous((8,))
    for op, name, args in (
        (lambda: x.unary(UnaryOp.EXP, lay), "unary_exp_f32", lambda o: (8, 1, 0, x.inner.ptr, o.ptr)),
        (
            lambda: x.binary(BinaryOp.ADD, y, lay, lay),
            "binary_add_f32",
            lambda o: (8, 1, 0, x.inner.ptr, y.inner.ptr, o.ptr),
        ),
    ):
        out = op()
        assert type(out) is Storage and out.backend is On.CUDA and isinstance(out.inner, GpuBuffer)
        assert (out.inner.size, out.inner.dtype, out.inner.ordinal) == (8, np.dtype(np.float32), 0)
        assert launches[-1] == (name, 1, 256, "stream0", args(out.inner))
    strided = Layout.contiguous((4, 2)).transpose(0, 1)  # still the general path's info buffer
    out = x.binary(BinaryOp.ADD, y, strided, strided)
    (_, _, _, _, (n, rank, info, *_)) = launches[-1]
    assert (n, rank) == (8, 2) and info
    import runtime.cuda as cuda  # the arms' dtype and device of a buffer, as Memory gives them

    assert (cuda.dtype(x.inner), cuda.device(x.inner)) == (rt.dtype(x.inner), rt.device(x.inner)) == (x.inner.dtype, 0)
    with pytest.raises(DTypeMismatch):  # the arm's checks still come first
        x.binary(BinaryOp.ADD, Storage(On.CUDA, rt.from_host(0, np.ones(8, dtype=np.float64))), lay, lay)
    with pytest.raises(ShapeMismatch):
        x.binary(BinaryOp.ADD, y, lay, Layout.contiguous((2, 4)))


@pytest.mark.parametrize("family", ["unary", "binary"])
def test_unary_and_binary_reuse_a_free_block_as_alloc_does(monkeypatch, family):
    """Without POISON, unary and binary take a dropped block of their output's size
    themselves: the same block, buffer and accounting as `_alloc`, no driver allocation."""
    import runtime.gpu.memory as memory

    monkeypatch.setattr(memory, "POISON", False)
    rt, driver, launches = _runtime()
    x = rt.from_host(0, np.arange(1024, dtype=np.float32))
    lay = Layout.contiguous((1024,))
    if family == "unary":
        run = lambda: rt.unary(x, kernels_hip.UNARY[kernels_hip.UnaryOp.EXP], lay)  # noqa: E731
    else:
        run = lambda: rt.binary(x, kernels_hip.BINARY[kernels_hip.BinaryOp.ADD], x, lay, lay)  # noqa: E731
    first = run()
    ptr, bin_ = first.ptr, first.bin
    del first
    assert bin_.free == [ptr] and rt._kept[0].bytes == 4096
    allocs = len(driver.of("alloc"))
    out = run()
    assert type(out) is memory._PooledBuffer and out.bin is bin_
    assert (out.ptr, out.size, out.dtype, out.ordinal, out.release) == (ptr, 1024, np.dtype(np.float32), 0, None)
    assert bin_.free == [] and rt._kept[0].bytes == 0 and len(driver.of("alloc")) == allocs
    assert launches[-1][3][-1] == ptr  # the kernel writes the reused block
    general = rt._alloc(0, 1024, np.dtype(np.float32), "stream0")  # what _alloc gives for the same size
    assert (type(general), general.bin) == (type(out), bin_)
    del out
    assert bin_.free == [ptr]  # back to the bin when dropped, as _alloc's blocks

"""Which path runtime/gpu.py takes, on a fake driver whose memory is a bytearray: no GPU
needed. The kernels themselves run in test_gpu_conformance.py and test_gpu_paths.py."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

from generated import kernels_hip
from generated.dtypes import ReduceOp
from runtime.gpu import FEW_GROUPS, PASS0_HEADER, GpuBuffer, GpuRuntime, kernel_params
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
        self.memory[ptr:ptr + host.nbytes] = host.tobytes()

    def download(self, host, ptr, stream):
        self.calls.append(("download", ptr, host.nbytes))
        host.view(np.uint8)[:] = np.frombuffer(self.memory, np.uint8, host.nbytes, ptr)

    def copy(self, dst, src, nbytes, stream):
        self.calls.append(("copy", dst, src, nbytes, stream))
        self.memory[dst:dst + nbytes] = self.memory[src:src + nbytes]

    def memset(self, ptr, nbytes, stream, byte=0):
        self.calls.append(("memset", ptr, nbytes, byte))
        self.memory[ptr:ptr + nbytes] = bytes([byte]) * nbytes

    def peer_copy(self, dst, dst_ordinal, src, src_ordinal, nbytes, stream):
        self.calls.append(("peer_copy", dst, dst_ordinal, src, src_ordinal, nbytes, stream))
        if self.peer:
            self.memory[dst:dst + nbytes] = self.memory[src:src + nbytes]
        return self.peer

    def of(self, kind):
        return [c for c in self.calls if c[0] == kind]


def _runtime(peer: bool = True) -> tuple[GpuRuntime, FakeDriver, list[tuple]]:
    driver = FakeDriver(peer)
    rt = GpuRuntime(driver)
    launches: list[tuple] = []
    rt.launch = lambda source, name, grid, block, stream, args, types: launches.append((name, grid, block, args))
    return rt, driver, launches


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


def test_a_strided_view_goes_through_host_memory_and_one_device_copies_on_it():
    rt, driver, _ = _runtime()
    src = rt.from_host(0, X)
    moved = rt.to_device(src, Layout.contiguous((4, 6)).transpose(0, 1), 1)
    np.testing.assert_array_equal(rt.to_numpy(moved, Layout.contiguous((6, 4))), X.T)
    same = rt.to_device(src, Layout.contiguous((4, 6)), 0)
    assert not driver.of("peer_copy") and driver.of("copy")[-1][1:] == (same.ptr, src.ptr, X.nbytes, "stream0")


def test_an_empty_view_needs_no_copy():
    rt, driver, _ = _runtime()
    out = rt.to_device(rt.from_host(0, X), Layout.contiguous((0, 6)), 1)
    assert out.size == 0 and not driver.of("peer_copy") and not driver.of("download")


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


def test_the_scratch_grows_when_a_reduction_needs_more():
    rt, driver, launches = _runtime()
    rt._scratch[0] = small = rt.alloc(0, 64, np.dtype(np.uint8))
    _reduce(rt, (3, 1 << 18), (1,))
    assert launches[0][3][1] == 0 and rt._scratch[0] is not small
    assert launches[0][3][8] == rt._scratch[0].ptr and driver.of("memset")[-1][1:] == (rt._scratch[0].ptr,
                                                                                      rt._scratch[0].nbytes, 0)


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
    import runtime.gpu as gpu

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

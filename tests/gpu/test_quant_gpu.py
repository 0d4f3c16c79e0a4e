"""GGML quantized storage on the GPU backends against the cpu backend, through the generated
API: quantize (host quantizer, uploaded), the blocks' bytes, dequantize to f32 and f16, and
the matrix-vector kernels (hip/quantized.hip) for every format of ops.yaml. Fresh GPU buffers are
poisoned (conftest), so an output element a kernel does not write cannot pass.

Exactness: dequantizing to f32 is compared bit for bit. Each weight is GGML's formula in f32
(q4_0/q8_0 (q - o) * d, q4_1 q * d + m, q4_k (d*sc)*q - dmin*m, q6_k (d*sc)*q): every
product there is exact (at most 24 significant bits) and the one add or subtract rounds
once, the kernels being compiled without FMA contraction, so any correctly rounding
implementation gives the same bits. f16 may differ by one ulp from a cpu that rounds the
exact value to f16 directly instead of through f32 (double rounding). The products x @ W^T
accumulate in f32 in another order: compared relative to sum |x| |W| (the scale of the
rounding error), which still catches one wrong weight (~1/k of that scale).

Runs where a GPU backend is available (the H100 through the device tool); elsewhere the
module is one skip that says why."""

from __future__ import annotations

import functools
import importlib

import numpy as np
import pytest

import generated as g
from runtime import ggml
from tests.gpu.runnable import gpu_backends_or_skip

GPU_BACKENDS = gpu_backends_or_skip()

# weights and bytes per block
BLOCKS = {name: (f.block, f.nbytes) for name, f in ggml.FORMATS.items()}
FORMATS = list(BLOCKS)
PLAIN = [f for f in FORMATS if BLOCKS[f][0] == 1]
# (n, k): k = 256 and 4096 with odd n; k = 2304 ends on a partial tile of the q4_0/q8_0 kernels,
# k = 6400 is a whole chunk of 4096 and a partial one for their dp4a path (the bulk copies'
# barriers used twice), k = 96 (blocks of 32 only) takes their general path.
SHAPES = {
    fmt: [(9, 256), (33, 256), (7, 4096), (131, 4096), (3, 2304), (5, 6400)]
    + ([(5, 96)] if BLOCKS[fmt][0] <= 32 else [])
    + ([(5, 36), (4, 5)] if BLOCKS[fmt][0] == 1 else [])  # k % 8: the GEMM (qmatvec reads 8 at once)
    for fmt in FORMATS
}
ROWS = [1, 2, 7, 33]  # 33: past runtime/gpu/quant.py gemm_rows (12 or 24): dequantize + GEMM
MATMUL_RTOL = 1e-5  # of sum |x| |W|; f32 over 4096 terms is ~1e-7 of it


@pytest.fixture(autouse=True)
def exact_x():
    """These tests hold the exact-x kernels (hip/quantized.hip) to 1e-5 of sum |x||W|: the switch
    qmatmul_exact_x on (tests/gpu/test_quant_q8_gpu.py tests the quantized-x product)."""
    kept = {b: _runtime(b).switches.qmatmul_exact_x for b in GPU_BACKENDS}
    for b in GPU_BACKENDS:
        _runtime(b).switches.qmatmul_exact_x = True
    yield
    for b, value in kept.items():
        _runtime(b).switches.qmatmul_exact_x = value


def _runtime(backend: g.Backend):
    return __import__(f"runtime.{backend.value}", fromlist=["_rt"])._rt


def device_or_skip(backend: g.Backend) -> g.Device:
    reason = backend.unavailable_reason()
    if reason is not None:
        pytest.skip(f"{backend.value}: unavailable: {reason}")
    return g.Device(backend, 0)


def weights(count: int, seed: int) -> np.ndarray:
    """Normal values whose scale changes every 32, so that blocks differ in their scales."""
    rng = np.random.default_rng(seed)
    scales = np.repeat(rng.uniform(0.01, 2.0, -(-count // 32)), 32)[:count]
    return (rng.standard_normal(count) * scales).astype(np.float32)


@functools.cache
def quantized(backend: g.Backend, fmt: str, count: int):
    """(values, cpu QStorage, gpu QStorage) of `count` weights."""
    values = weights(count, seed=count + FORMATS.index(fmt))
    dtype = g.GgmlDType(fmt)
    return values, g.Device.parse("cpu").quantize(values, dtype), g.Device(backend, 0).quantize(values, dtype)


def flat(storage: g.Storage, count: int) -> np.ndarray:
    return g.to_numpy(storage, g.Layout.contiguous((count,)))


def assert_f16_within_one_ulp(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype == np.float16, what
    gap = np.abs(got.astype(np.float64) - want.astype(np.float64))
    ulp = np.spacing(np.abs(want)).astype(np.float64)
    bad = ~(gap <= ulp)
    assert not bad.any(), f"{what}: {bad.sum()} values more than 1 ulp off, e.g. {got[bad][:4]} vs {want[bad][:4]}"


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("fmt", FORMATS)
def test_quantize_gives_the_cpu_blocks(backend, fmt):
    device_or_skip(backend)
    count = 4 * 256 + {1: 3, 32: 32, 256: 256}[BLOCKS[fmt][0]]
    _, cpu, gpu = quantized(backend, fmt, count)
    assert gpu.dtype() is g.GgmlDType(fmt)
    assert gpu.size_in_bytes() == cpu.size_in_bytes() == count // BLOCKS[fmt][0] * BLOCKS[fmt][1]
    data = gpu.data()
    assert data.dtype == np.uint8
    np.testing.assert_array_equal(data, cpu.data())


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("count", [256, 4096 * 33])
def test_dequantize_f32_is_the_cpu_result_bit_for_bit(backend, fmt, count):
    device_or_skip(backend)
    _, cpu, gpu = quantized(backend, fmt, count)
    want, got = flat(cpu.dequantize(count), count), flat(gpu.dequantize(count), count)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{backend.value} {fmt}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("fmt", PLAIN)
@pytest.mark.parametrize("count", [1, 7, 13, 4099])
def test_plain_formats_dequantize_any_count(backend, fmt, count):
    device_or_skip(backend)
    _, cpu, gpu = quantized(backend, fmt, count)
    want, got = flat(cpu.dequantize(count), count), flat(gpu.dequantize(count), count)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{backend.value} {fmt}")
    want16, got16 = flat(cpu.dequantize_f16(count), count), flat(gpu.dequantize_f16(count), count)
    assert_f16_within_one_ulp(got16, want16, f"{backend.value} {fmt} dequantize_f16 of {count}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("fmt", FORMATS)
def test_dequantize_f16_is_the_cpu_result(backend, fmt):
    device_or_skip(backend)
    count = 4096 * 9
    _, cpu, gpu = quantized(backend, fmt, count)
    want, got = flat(cpu.dequantize_f16(count), count), flat(gpu.dequantize_f16(count), count)
    assert_f16_within_one_ulp(got, want, f"{backend.value} {fmt} dequantize_f16")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("fmt", [f for f in FORMATS if f not in ("q8_1", "q8_k")])  # gguf dequantizes neither
def test_dequantize_matches_the_gguf_package(backend, fmt):
    """One more oracle of the block formats, independent of runtime.ggml."""
    gguf_quants = pytest.importorskip("gguf.quants")
    from gguf import GGMLQuantizationType

    device_or_skip(backend)
    count = 4096
    _, _, gpu = quantized(backend, fmt, count)
    want = gguf_quants.dequantize(gpu.data(), GGMLQuantizationType[fmt.upper()]).reshape(-1).astype(np.float32)
    np.testing.assert_array_equal(flat(gpu.dequantize(count), count).view(np.uint32), want.view(np.uint32))


def x_operand(device: g.Device, x: np.ndarray, kind: str) -> tuple[g.Storage, g.Layout]:
    """x (rows, k) as a contiguous view, or as the transpose of a (k, rows) storage."""
    if kind == "contiguous":
        return device.storage_from_slice(x.reshape(-1)), g.Layout.contiguous(x.shape)
    return device.storage_from_slice(np.ascontiguousarray(x.T).reshape(-1)), g.Layout.contiguous(
        x.shape[::-1]
    ).transpose(0, 1)


def has_blas(backend: g.Backend) -> bool:
    """Whether the backend's driver has its BLAS here (cuBLAS through nvmath, hipBLAS)."""
    return importlib.import_module(f"runtime.{backend.value}")._driver.blas_available()


def assert_matmul_close(got: np.ndarray, want: np.ndarray, x: np.ndarray, w: np.ndarray, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype == np.float32, what
    assert np.isfinite(got).all(), f"{what}: not finite (an unwritten output?)"
    scale = np.abs(x.reshape(-1, x.shape[-1])).astype(np.float64) @ np.abs(w).astype(np.float64).T
    err = np.abs(got.astype(np.float64) - want.astype(np.float64)).reshape(scale.shape) / (scale + 1e-30)
    assert err.max() <= MATMUL_RTOL, (
        f"{what}: error {err.max():.2e} of sum |x||W| at {np.unravel_index(err.argmax(), err.shape)}"
    )


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("kind", ["contiguous", "transposed"])
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("fmt, n, k", [(f, n, k) for f in FORMATS for n, k in SHAPES[f]])
def test_matmul_matches_the_cpu(backend, fmt, n, k, rows, kind):
    device = device_or_skip(backend)
    cpu_device = g.Device.parse("cpu")
    _, cpu_q, gpu_q = quantized(backend, fmt, n * k)
    w = flat(cpu_q.dequantize(n * k), n * k).reshape(n, k)
    x = np.random.default_rng(rows * k + n).standard_normal((rows, k)).astype(np.float32)
    out = g.Layout.contiguous((rows, n))
    if k % 8 and not has_blas(backend):
        # the kernels read x 8 weights at a time; a ragged k takes the BLAS GEMM, or says why not
        with pytest.raises(g.ShapeMismatch, match="without a BLAS"):
            gpu_q.matmul(*x_operand(device, x, kind), (n, k))
        return
    want = g.to_numpy(cpu_q.matmul(*x_operand(cpu_device, x, kind), (n, k)), out)
    got = g.to_numpy(gpu_q.matmul(*x_operand(device, x, kind), (n, k)), out)
    assert_matmul_close(got, want, x, w, f"{backend.value} {fmt} ({n}, {k}) x {rows} rows {kind}")


def crafted_blocks(fmt: str, n: int, k: int, zero_at: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Blocks of an (n, k) weight in `fmt` (q4_0, q4_1, q8_0) from random quants and scales, with
    the weight 0 at the positions `zero_at` (one per block of 32) in every odd row."""
    blocks = k // 32
    d = rng.uniform(0.01, 2.0, (n, blocks)).astype(np.float16)
    if fmt == "q8_0":
        q = rng.integers(-127, 128, (n, k)).astype(np.int8)
        q[1::2, np.arange(blocks) * 32 + zero_at] = 0
        head = [d.view(np.uint8).reshape(n, blocks, 2)]
        return np.concatenate([*head, q.view(np.uint8).reshape(n, blocks, 32)], 2).reshape(-1)
    q = rng.integers(0, 16, (n, k)).astype(np.uint8)
    q[1::2, np.arange(blocks) * 32 + zero_at] = 8 if fmt == "q4_0" else 0  # q4_0: (q - 8) d; q4_1: q d + m, m = 0
    q = q.reshape(n, blocks, 32)
    qs = q[:, :, :16] | (q[:, :, 16:] << 4)  # weight i < 16: the low nibble of byte i, i + 16 its high one
    head = [d.view(np.uint8).reshape(n, blocks, 2)]
    if fmt == "q4_1":
        m = rng.uniform(-1.0, 1.0, (n, blocks)).astype(np.float16)
        m[1::2] = 0
        head.append(m.view(np.uint8).reshape(n, blocks, 2))
    return np.concatenate([*head, qs], 2).reshape(-1)


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("fmt", ["q4_0", "q4_1", "q8_0"])
@pytest.mark.parametrize("n, k", [(37, 6400), (16, 4096), (5, 96)])
def test_matmul_of_adversarial_x(backend, fmt, n, k):
    """x that the kernels' integer digits of x (22 bits per block of 32, against the block's
    largest |x|) must get right, against the dequantized weight in f64: row 0, a value of 64
    among N(0, 1) ones in every block, where the odd rows of W are 0 (the large sum of x meets
    no weight); row 1, blocks scaled by 2^-30..2^30 and zero blocks; row 2, zeros (y exactly 0);
    row 3, blocks of 2^-20 with one value of 2^-14. Then a NaN in x row 0 and an infinity in
    row 1: those rows' outputs are not finite, the other rows' unchanged."""
    device = device_or_skip(backend)
    if not hasattr(device, "qstorage_from_bytes"):
        pytest.skip("the generated Device has no qstorage_from_bytes")
    rng = np.random.default_rng(k + n + FORMATS.index(fmt))
    blocks = k // 32
    big = rng.integers(0, 32, blocks)  # the large value's place in each block
    data = crafted_blocks(fmt, n, k, big, rng)
    dtype = g.GgmlDType(fmt)
    w = flat(g.Device.parse("cpu").qstorage_from_bytes(data, dtype).dequantize(n * k), n * k).reshape(n, k)
    gpu_q = device.qstorage_from_bytes(data, dtype)
    x = rng.standard_normal((4, blocks, 32))
    x[0, np.arange(blocks), big] = 64.0 * rng.choice([-1.0, 1.0], blocks)
    x[1] *= 2.0 ** rng.integers(-30, 31, (blocks, 1))
    x[1, ::5] = 0.0
    x[2] = 0.0
    x[3] *= 2.0**-20
    x[3, np.arange(blocks), big] = 2.0**-14
    x = x.reshape(4, k).astype(np.float32)

    def product(x: np.ndarray) -> np.ndarray:
        got = gpu_q.matmul(device.storage_from_slice(x.reshape(-1)), g.Layout.contiguous(x.shape), (n, k))
        return g.to_numpy(got, g.Layout.contiguous((x.shape[0], n)))

    got = product(x)
    want = x.astype(np.float64) @ w.astype(np.float64).T
    assert_matmul_close(got, want.astype(np.float32), x, w, f"{backend.value} {fmt} ({n}, {k}) adversarial x")
    assert not got[2].any(), "x of zeros: y is not exactly 0"
    bad = x.copy()
    bad[0, k // 2] = np.nan
    bad[1, 7] = np.inf
    got_bad = product(bad)
    assert not np.isfinite(got_bad[:2]).any(), "a NaN or infinity in x: its row's outputs must not be finite"
    np.testing.assert_array_equal(got_bad[2:], got[2:])


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("fmt", ["q4_0", "q6_k"])
def test_matmul_of_many_rows_in_slabs_of_the_weight(backend, fmt, monkeypatch):
    """Dequantize + GEMM with the weight taken three rows at a time (runtime/gpu/quant.py
    GEMM_SLAB_BYTES): each slab's columns of the result against the cpu."""
    from runtime.gpu import quant as gpu_quant

    device = device_or_skip(backend)
    n, k, rows = 8, 512, 40
    monkeypatch.setattr(gpu_quant, "GEMM_SLAB_BYTES", 3 * k * 4)
    _, cpu_q, gpu_q = quantized(backend, fmt, n * k)
    w = flat(cpu_q.dequantize(n * k), n * k).reshape(n, k)
    x = np.random.default_rng(9).standard_normal((rows, k)).astype(np.float32)
    out = g.Layout.contiguous((rows, n))
    want = g.to_numpy(cpu_q.matmul(*x_operand(g.Device.parse("cpu"), x, "contiguous"), (n, k)), out)
    got = g.to_numpy(gpu_q.matmul(*x_operand(device, x, "contiguous"), (n, k)), out)
    assert_matmul_close(got, want, x, w, f"{backend.value} {fmt} ({n}, {k}) x {rows} rows in slabs of 3")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("fmt", FORMATS)
def test_matmul_batch_dims_and_an_offset_view(backend, fmt):
    """x (2, 3, k) gives (2, 3, n); x a view at an offset of its storage."""
    device = device_or_skip(backend)
    n, k = 5, 512
    _, cpu_q, gpu_q = quantized(backend, fmt, n * k)
    w = flat(cpu_q.dequantize(n * k), n * k).reshape(n, k)
    x = np.random.default_rng(2).standard_normal((3, 3, k)).astype(np.float32)
    layout = g.Layout.contiguous(x.shape).narrow(0, 1, 2)  # the last two of three: start offset 3k
    out = g.Layout.contiguous((2, 3, n))
    want = g.to_numpy(cpu_q.matmul(g.Device.parse("cpu").storage_from_slice(x.reshape(-1)), layout, (n, k)), out)
    got = g.to_numpy(gpu_q.matmul(device.storage_from_slice(x.reshape(-1)), layout, (n, k)), out)
    assert_matmul_close(got, want, x[1:], w, f"{backend.value} {fmt} batch")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
def test_bad_arguments_raise_typed_errors(backend):
    device = device_or_skip(backend)
    _, _, q = quantized(backend, "q4_0", 2 * 256)
    x = device.storage_from_slice(np.ones(256, np.float32))
    with pytest.raises(g.ShapeMismatch, match="quantize"):
        device.quantize(np.ones(33, np.float32), g.GgmlDType.Q4_0)
    with pytest.raises(g.ShapeMismatch, match="dequantize"):
        q.dequantize(100)  # not whole blocks
    with pytest.raises(g.ShapeMismatch, match="dequantize"):
        q.dequantize(3 * 256)  # more than stored
    with pytest.raises(g.ShapeMismatch, match="qmatmul"):
        q.matmul(x, g.Layout.contiguous((256,)), (3, 256))  # q holds (2, 256)
    with pytest.raises(g.ShapeMismatch, match="qmatmul"):
        q.matmul(x, g.Layout.contiguous((2, 128)), (2, 256))  # x's last dim is not k
    with pytest.raises(g.ShapeMismatch, match="quantize"):
        device.quantize(np.ones(300, np.float32), g.GgmlDType.Q5_K)  # a partial block of 256
    with pytest.raises(g.ShapeMismatch, match="quantize"):
        device.quantize(np.ones(40, np.float32), g.GgmlDType.Q5_0)
    with pytest.raises(g.DTypeMismatch, match=r"matmul on \w+: expected dtype one of f32, got f64"):
        q.matmul(device.storage_from_slice(np.ones(256, np.float64)), g.Layout.contiguous((256,)), (2, 256))


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("fmt", FORMATS)
def test_storage_from_bytes_and_zeros(backend, fmt):
    device = device_or_skip(backend)
    if not hasattr(device, "qstorage_from_bytes") or not hasattr(device, "qzeros"):
        pytest.skip("the generated Device has no qstorage_from_bytes / qzeros")
    count = 512
    _, cpu, _ = quantized(backend, fmt, count)
    q = device.qstorage_from_bytes(cpu.data(), g.GgmlDType(fmt))
    np.testing.assert_array_equal(q.data(), cpu.data())
    np.testing.assert_array_equal(
        flat(q.dequantize(count), count).view(np.uint32), flat(cpu.dequantize(count), count).view(np.uint32)
    )
    zeros = device.qzeros(count, g.GgmlDType(fmt))
    assert zeros.size_in_bytes() == cpu.size_in_bytes() and not zeros.data().any()
    assert not flat(zeros.dequantize(count), count).any()
    with pytest.raises(g.ShapeMismatch):
        device.qstorage_from_bytes(cpu.data()[:-1], g.GgmlDType(fmt))


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("size", [4096, 2304])
def test_chained_products_read_what_the_product_before_wrote(backend, size):
    """Each product's x is the output of the product just before, queued back to back with
    no synchronization: on cuda (sm_90) every qmatvec_<fmt> starts while the kernel before
    it runs (programmatic dependent launch), so reading x or writing y before that kernel
    ends would show here as poison (NaN) or stale values. Each step is checked against the
    cpu on the input the gpu actually had."""
    device = device_or_skip(backend)
    steps = [
        ("q4_0", 0),
        ("q4_0", 1),
        ("q8_0", 0),
        ("q4_0", 0),
        ("q8_0", 1),
        ("q8_0", 0),
        ("q4_0", 1),
        ("q4_1", 0),
        ("q4_1", 1),
        ("q4_k", 0),
        ("q4_k", 1),
        ("q6_k", 0),
        ("q4_1", 0),
        ("q6_k", 1),
        ("q6_k", 0),
        ("q4_k", 0),
    ]
    weight = {}
    for fmt, seed in sorted(set(steps)):
        values = weights(size * size, seed=size + 7 * seed + FORMATS.index(fmt)) / np.float32(size**0.5)
        weight[fmt, seed] = (
            g.Device.parse("cpu").quantize(values, g.GgmlDType(fmt)),
            device.quantize(values, g.GgmlDType(fmt)),
        )
    x = np.random.default_rng(size).standard_normal(size).astype(np.float32)
    layout = g.Layout.contiguous((size,))
    outs = [device.storage_from_slice(x)]
    for fmt, seed in steps:  # nothing synchronizes between these launches
        outs.append(weight[fmt, seed][1].matmul(outs[-1], layout, (size, size)))
    values = [g.to_numpy(out, layout) for out in outs]
    np.testing.assert_array_equal(values[0], x)
    for i, (fmt, seed) in enumerate(steps):
        cpu_q = weight[fmt, seed][0]
        w = flat(cpu_q.dequantize(size * size), size * size).reshape(size, size)
        want = g.to_numpy(
            cpu_q.matmul(g.Device.parse("cpu").storage_from_slice(values[i]), layout, (size, size)), layout
        )
        assert_matmul_close(values[i + 1], want, values[i], w, f"{backend.value} step {i} {fmt} ({size}, {size})")
    if backend is g.Backend.CUDA:
        import runtime.cuda as cuda

        rt = cuda._rt
        if int(rt.driver.arch(0)[3:]) >= 90:
            launched = {name: int(fn) for (_, _, name), fn in rt._functions.items() if name.startswith("qmatvec_q")}
            assert {launched[f"qmatvec_{fmt}"] for fmt, _ in steps} <= rt.driver._programmatic


@pytest.mark.parametrize("fmt", FORMATS)
def test_matmul_on_any_grid_is_the_same(fmt):
    """qmatvec_<fmt> strides over its items (row groups of W x rows of x), so a grid of fewer
    blocks than items gives the same bits: a block then takes later items after its first,
    whose chunks it copies after the wait, not before it.
    k = 6400 adds a second, partial chunk per item. cuda only: the launch wrapper is driven
    directly, with grids of 1, 2 and 7 blocks against the runtime's own."""
    if g.Backend.CUDA not in GPU_BACKENDS:
        pytest.skip(f"cuda: unavailable: {g.Backend.CUDA.unavailable_reason()}")
    from generated import kernels_hip
    from runtime.cuda import _rt as rt
    from runtime.gpu import quant as gpu_quant

    n, k, rows = 40, 6400, 3
    values = weights(n * k, seed=21 + FORMATS.index(fmt))
    x = np.random.default_rng(5).standard_normal((rows, k)).astype(np.float32)
    q = gpu_quant.quantize(rt, 0, values, fmt)
    x_buf, stream = rt.from_host(0, x), rt.stream(0)
    launch = getattr(kernels_hip, f"launch_qmatvec_{fmt}")
    item_rows, threads = gpu_quant.qmatvec_launch(rt, fmt)
    items = -(-n // item_rows) * rows
    assert items > 7, items  # every smaller grid below strides over items
    got = {}
    for grid in (items, 1, 2, 7):
        y = rt.alloc(0, rows * n, np.dtype(np.float32))  # poisoned: an unwritten output is NaN
        launch(rt.launch, grid, threads, stream, q.buf.ptr, x_buf.ptr, y.ptr, n, k, rows)
        got[grid] = rt.to_host(y)
    w = flat(g.Device.parse("cpu").quantize(values, g.GgmlDType(fmt)).dequantize(n * k), n * k).reshape(n, k)
    want = (x.astype(np.float64) @ w.T.astype(np.float64)).astype(np.float32)
    assert_matmul_close(got[items].reshape(rows, n), want, x, w, f"cuda {fmt} grid {items}")
    for grid in (1, 2, 7):
        np.testing.assert_array_equal(got[grid], got[items], err_msg=f"cuda {fmt}: grid {grid} against {items}")

"""QMatMul's quantized-x product on the GPU backends (hip/qmatvec_q8.hip, the default where the
switch qmatmul_exact_x is off): x quantized to q8_1 blocks on the device, integer dot products
against every block format; f32 / f16 / bf16 weights multiplied by x itself.

Two checks for each format, shape and count of x rows:
- test-backend-ops' bound: the normalized mean squared error against the f64 product of the
  dequantized weight and the exact x is at most 5e-4 (switches.QMATMUL_Q8_1_NMSE); and against
  the cpu backend's product alike;
- the arithmetic: against the f64 product of the dequantized weight and x quantized on the
  host as the kernel quantizes it (d = max |x| / 127 per 32 values, q = rint(x * 127 / max |x|)
  in f32), within 1e-5 of sum |x q8| |W| (f32 sums): a wrong quant, scale or minimum shows.
Plus a NaN or infinity in x (its row not finite, the others unchanged) and the switch's
exact path. Outputs are poisoned before (conftest), so an unwritten element cannot pass.

Runs where a GPU backend is available; elsewhere the module is one skip that says why."""

from __future__ import annotations

import numpy as np
import pytest

import generated as g
from generated import kernel_facts
from runtime import ggml
from runtime.gpu.quant import BLOCK32_BITS, BLOCK256_BITS, bulk_copies, q8_long_x_shared
from runtime.gpu.switches import QMATMUL_Q8_1_NMSE
from tests.gpu.runnable import gpu_backends_or_skip

GPU_BACKENDS = gpu_backends_or_skip()

FORMATS = list(ggml.FORMATS)
FLOAT = ("f32", "f16", "bf16")
#: (n, k): blocks of 256 and of 32, odd n, a k of many thread strides; k up to 4096 gives each
#: group of lanes its own items (QMATVEC_Q8_LANE_UNITS), 4352 a block an item (few items)
SHAPES = [(37, 256), (33, 4096), (130, 2304), (33, 4352)]  # NMSE over few outputs is noisy: n of 33 at least
#: f32 / f16 / bf16: k of 24 fills f32's units of 8, not f16's of 16 (their exact-x kernel), f32's
#: pieces side by side up to QMATVEC_Q8_FLOAT_PIECES_K, 14352 a half of the row apart (f16's and
#: bf16's always); 8448: a block an item (more units a lane than QMATVEC_Q8_LANE_UNITS_F), 4352
#: f32's too; 4112 ends in part of the tensor cores' step (64 weights of a warp's lanes of a row),
#: n of 19 part of a tile
#: (of an item's second where QMATVEC_Q8_MMA_F_TILES is 2, n of 33 one row of an item's first);
#: n of 8195 takes qmatvec_q8_1_mma_wide_* (QMATVEC_Q8_MMA_WIDE_N), items of QMATVEC_Q8_MMA_TILES_F
#: tiles, the last part full
FLOAT_SHAPES = [(7, 24), (33, 8448), (19, 4112), (33, 14352), (8195, 96)]
#: The blocks of 32 on the tensor cores (from QMATVEC_Q8_MMA_Q_FROM rows of x, on weights of at least
#: QMATVEC_Q8_MMA_Q_N rows; cuda sm_80 and up), items of one or two tiles of 16 rows (q8_tiles): n of
#: 8195 leaves the last item 3 rows (a second tile past n), 8213 21 (a second tile part full); k of 96
#: (3 blocks) part of a warp's step of 4 blocks a quad, 1312 (41) steps of every warp of the block and
#: a last one of 1
BLOCK32_SHAPES = [(max(8192, kernel_facts.QMATVEC_Q8_MMA_Q_N) + extra, k) for extra in (3, 21) for k in (96, 1312)]
BLOCK32 = [f for f in ggml.FORMATS if f not in FLOAT and ggml.FORMATS[f].block == 32]
ROWS = [1, 2, 3, 5, 8, 11]  # every x class (1, 2, 4, 8) and past 8 (two groups of x rows)
ARITHMETIC_RTOL = 1e-5


def _runtime(backend: g.Backend):
    return __import__(f"runtime.{backend.value}", fromlist=["_rt"])._rt


@pytest.fixture(params=GPU_BACKENDS, ids=str)
def backend(request):
    rt = _runtime(request.param)
    kept = rt.switches.qmatmul_exact_x
    rt.switches.qmatmul_exact_x = False
    yield request.param
    rt.switches.qmatmul_exact_x = kept


def weights(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scales = np.repeat(rng.uniform(0.01, 2.0, -(-count // 32)), 32)[:count]
    return (rng.standard_normal(count) * scales).astype(np.float32)


def x_as_q8_1(x: np.ndarray) -> np.ndarray:
    """x (rows, k) as the kernel's q8_1 blocks give it back: q * d, in f64."""
    blocks = x.reshape(x.shape[0], -1, 32)
    amax = np.abs(blocks).max(axis=2, keepdims=True)
    with np.errstate(divide="ignore"):
        inverse = np.where(amax > 0, np.float32(127.0) / amax, np.float32(0.0)).astype(np.float32)
    q = np.rint(blocks * inverse)
    d = (amax / np.float32(127.0)).astype(np.float32)
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(x.shape)


def nmse(got: np.ndarray, want: np.ndarray) -> float:
    return float(((got.astype(np.float64) - want) ** 2).sum() / (want**2).sum())


def product(device: g.Device, q: g.QStorage, x: np.ndarray, n: int) -> np.ndarray:
    got = q.matmul(device.storage_from_slice(x.reshape(-1)), g.Layout.contiguous(x.shape), (n, x.shape[1]))
    return g.to_numpy(got, g.Layout.contiguous((x.shape[0], n)))


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize(
    "fmt, n, k",
    [(f, n, k) for f in FORMATS for n, k in SHAPES + FLOAT_SHAPES * (f in FLOAT) + BLOCK32_SHAPES * (f in BLOCK32)],
)
def test_quantized_x_product_within_ggml_bound(backend, fmt, n, k, rows):
    device = g.Device(backend, 0)
    cpu = g.Device.parse("cpu")
    values = weights(n * k, seed=n * k + FORMATS.index(fmt))
    dtype = g.GgmlDType(fmt)
    cpu_q, gpu_q = cpu.quantize(values, dtype), device.quantize(values, dtype)
    w = g.to_numpy(cpu_q.dequantize(n * k), g.Layout.contiguous((n * k,))).reshape(n, k).astype(np.float64)
    x = np.random.default_rng(rows * k + n).standard_normal((rows, k)).astype(np.float32)
    got = product(device, gpu_q, x, n)
    exact = x.astype(np.float64) @ w.T
    what = f"{backend.value} {fmt} ({n}, {k}) x {rows} rows"
    assert nmse(got, exact) <= QMATMUL_Q8_1_NMSE, f"{what}: NMSE {nmse(got, exact):.2e} against f64"
    assert nmse(got, product(cpu, cpu_q, x, n).astype(np.float64)) <= QMATMUL_Q8_1_NMSE, f"{what}: against the cpu"
    from runtime.gpu.quant import quantized_x

    takes_q8_1 = fmt not in FLOAT and quantized_x(_runtime(backend), fmt, rows, n, k)  # else x as given
    xq = x_as_q8_1(x) if takes_q8_1 else x.astype(np.float64)
    want = xq @ w.T
    scale = np.abs(xq) @ np.abs(w).T
    err = np.abs(got - want) / (scale + 1e-30)
    assert err.max() <= ARITHMETIC_RTOL, f"{what}: error {err.max():.2e} of sum |x q8| |W| against x in q8_1"


@pytest.mark.parametrize("fmt", ["q4_0", "q5_1", "q3_k", "q4_k", "q8_k", "f16"])
def test_nan_or_infinity_in_x_reaches_only_its_row(backend, fmt):
    device = g.Device(backend, 0)
    n, k = 9, 512
    q = device.quantize(weights(n * k, 5), g.GgmlDType(fmt))
    x = np.random.default_rng(4).standard_normal((4, k)).astype(np.float32)
    x[3] = 0.0
    clean = product(device, q, x, n)
    assert not clean[3].any(), "x of zeros: y is not exactly 0"
    bad = x.copy()
    bad[0, k // 2] = np.nan
    bad[1, 7] = np.inf
    got = product(device, q, bad, n)
    assert not np.isfinite(got[:2]).any(), "a NaN or infinity in x: its row's outputs must not be finite"
    np.testing.assert_array_equal(got[2:], clean[2:])


@pytest.mark.parametrize("fmt", ["q4_0", "q6_k"])
def test_the_switch_takes_the_exact_x_kernel(backend, fmt):
    """qmatmul_exact_x on: the product is x's own (within f32 sums), off: x in q8_1."""
    device = g.Device(backend, 0)
    n, k = 16, 1024
    values = weights(n * k, 6)
    q = device.quantize(values, g.GgmlDType(fmt))
    w = g.to_numpy(q.dequantize(n * k), g.Layout.contiguous((n * k,))).reshape(n, k).astype(np.float64)
    x = np.random.default_rng(7).standard_normal((4, k)).astype(np.float32)  # 4 rows: no EXACT_X_FASTER
    rt = _runtime(backend)
    rt.switches.qmatmul_exact_x = True
    exact = product(device, q, x, n)
    rt.switches.qmatmul_exact_x = False
    quantized = product(device, q, x, n)
    scale = np.abs(x.astype(np.float64)) @ np.abs(w).T
    assert (np.abs(exact - x.astype(np.float64) @ w.T) / scale).max() <= ARITHMETIC_RTOL
    assert (np.abs(quantized - x_as_q8_1(x) @ w.T) / scale).max() <= ARITHMETIC_RTOL
    assert not np.array_equal(exact, quantized)


#: The blocks of 256 whose one row of x takes qmatvec_q8_1_one_<fmt>, its long units reading x from
#: shared memory on cuda (runtime/gpu/quant.py's q8_long_x_shared).
SHARED_X = [f for f in FORMATS if q8_long_x_shared(f)]


def one_row_product(rt, fmt: str, n: int, k: int, seed: int):
    """The runtime's product of one row of x against W (n, k) of `fmt`: (y, W's quantized buffer,
    x and x in q8_1 on the device, W dequantized on the cpu as (n, k) f64, x (1, k) f32)."""
    from generated import kernels_hip
    from runtime.gpu import quant as gpu_quant

    values = weights(n * k, seed=seed)
    q = gpu_quant.quantize(rt, 0, values, fmt)
    cpu_q = g.Device.parse("cpu").quantize(values, g.GgmlDType(fmt))
    w = g.to_numpy(cpu_q.dequantize(n * k), g.Layout.contiguous((n * k,))).reshape(n, k).astype(np.float64)
    x = np.random.default_rng(k + seed).standard_normal((1, k)).astype(np.float32)
    x_buf = rt.from_host(0, x)
    xq = rt.alloc(0, gpu_quant.x_q8_1_bytes(1, k), np.dtype(np.uint8))
    y = rt.alloc(0, n, np.dtype(np.float32))
    gpu_quant.qmatvec_q8_1(rt, q, x_buf, y, n, k, 1, kernels_hip.QSTORAGE["matmul"], xq)  # quantizes x into xq
    return rt.to_host(y), q, x_buf, xq, w, x


def launch_one(rt, fmt: str, grid: int, w_ptr: int, x_buf, xq, n: int, k: int) -> np.ndarray:
    """qmatvec_q8_1_one_<fmt> on `grid` blocks, its launch wrapper driven directly on the weight's
    bytes at w_ptr: y (n,)."""
    from generated import kernels_hip

    y = rt.alloc(0, n, np.dtype(np.float32))  # poisoned: an unwritten output is NaN
    launch = getattr(kernels_hip, f"launch_qmatvec_q8_1_one_{fmt}")
    launch(rt.launch, grid, kernel_facts.QMATVEC_Q8_THREADS, rt.stream(0), w_ptr, x_buf.ptr, xq.ptr, y.ptr, n, k, 1)
    return rt.to_host(y)


def same_bits_on_any_grid(rt, fmt: str, n: int, k: int, seed: int) -> None:
    """qmatvec_q8_1_one_<fmt> by one row of x against W (n, k): grids of 1, 2 and 7 blocks give
    the runtime's grid's bits, which are x in q8_1 times W within the f32 sums' bound."""
    shipped, q, x_buf, xq, w, x = one_row_product(rt, fmt, n, k, seed=seed)
    for grid in (1, 2, 7):
        got = launch_one(rt, fmt, grid, q.buf.ptr, x_buf, xq, n, k)
        np.testing.assert_array_equal(got, shipped, err_msg=f"cuda {fmt} ({n}, {k}): grid {grid}")
    want = x_as_q8_1(x) @ w.T
    scale = np.abs(x_as_q8_1(x)) @ np.abs(w).T
    assert (np.abs(shipped.reshape(1, n) - want) / scale).max() <= ARITHMETIC_RTOL, f"cuda {fmt} ({n}, {k})"


@pytest.mark.parametrize("k", [4352, kernel_facts.QMATVEC_Q8_LONG_X_SHARED_K + 256], ids=["shared", "past-shared"])
@pytest.mark.parametrize("fmt", SHARED_X)
def test_long_units_give_the_same_bits_on_any_grid(backend, fmt, k):
    """qmatvec_q8_1_one_<fmt> by one row of x: each block copies x into shared memory once and
    strides over its items (a k past QMATVEC_Q8_LONG_X_SHARED_K reads x from global memory), so
    grids of 1, 2 and 7 blocks give the runtime's grid's bits (its capped grid: q8_grid), which
    are x in q8_1 times W within the f32 sums' bound. cuda only: the launch wrapper is driven
    directly; the HIP build reads x from global memory at every k."""
    if backend is not g.Backend.CUDA:
        pytest.skip(f"{backend.value}: x in shared memory is cuda's path")
    n = 4 * 7 * 3 + 2  # 22 items of 4 weight rows, the last 2 rows: every grid below takes several
    same_bits_on_any_grid(_runtime(backend), fmt, n, k, seed=SHARED_X.index(fmt))


#: The blocks of 256 of QMATVEC_Q8_LANE_K_ONE_BLOCKS that read x from shared memory: their groups
#: of lanes take their own items from QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS items on.
LANE_SHARED_X = [f for f in SHARED_X if kernel_facts.QMATVEC_Q8_LANE_K_ONE_BLOCKS >> BLOCK256_BITS.index(f) & 1]


@pytest.mark.parametrize("fmt", LANE_SHARED_X)
def test_long_units_by_groups_of_lanes_give_the_same_bits_on_any_grid(backend, fmt):
    """From QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS items (4 weight rows each here), a format of
    QMATVEC_Q8_LANE_K_ONE_BLOCKS with x in shared memory gives each group of lanes its own items
    up to QMATVEC_Q8_LANE_UNITS_K_ONE units a lane (k of 4352: 4.25): its bits are the same on
    grids of 1, 5 and the runtime's, and x in q8_1 times W within the f32 sums' bound. W is 64
    quantized rows repeated (a cpu reference of 8192 rows of its own would take long)."""
    if backend is not g.Backend.CUDA:
        pytest.skip(f"{backend.value}: x in shared memory is cuda's path")
    from generated import kernels_hip
    from runtime.gpu import quant as gpu_quant

    rt = _runtime(backend)
    k, sample = 4352, 64
    n = kernel_facts.QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS * kernel_facts.QMATVEC_Q8_ROWS_K_X1
    n += -n % sample  # whole samples
    cpu_q = g.Device.parse("cpu").quantize(weights(sample * k, seed=11), g.GgmlDType(fmt))
    block = g.to_numpy(cpu_q.dequantize(sample * k), g.Layout.contiguous((sample * k,))).reshape(sample, k)
    q = gpu_quant.qstorage_from_bytes(rt, 0, np.tile(cpu_q.data(), n // sample), fmt)
    x = np.random.default_rng(12).standard_normal((1, k)).astype(np.float32)
    x_buf = rt.from_host(0, x)
    xq = rt.alloc(0, gpu_quant.x_q8_1_bytes(1, k), np.dtype(np.uint8))
    y = rt.alloc(0, n, np.dtype(np.float32))
    gpu_quant.qmatvec_q8_1(rt, q, x_buf, y, n, k, 1, kernels_hip.QSTORAGE["matmul"], xq)
    shipped = rt.to_host(y)
    for grid in (1, 5):
        got = launch_one(rt, fmt, grid, q.buf.ptr, x_buf, xq, n, k)
        np.testing.assert_array_equal(got, shipped, err_msg=f"grid {grid}")
    w = block.astype(np.float64)
    want = np.tile(x_as_q8_1(x) @ w.T, n // sample)
    scale = np.tile(np.abs(x_as_q8_1(x)) @ np.abs(w).T, n // sample)
    assert (np.abs(shipped.reshape(1, n) - want) / scale).max() <= ARITHMETIC_RTOL, f"cuda {fmt} ({n}, {k})"


def blocks_of(mask: str, what: str) -> list:
    """The blocks of 32 whose bit the kernel fact `mask` has (the order of BLOCK32_BITS), or one
    case skipped for want of them."""
    chosen = [f for f in BLOCK32_BITS if getattr(kernel_facts, mask) >> BLOCK32_BITS.index(f) & 1]
    return chosen or [pytest.param(None, marks=pytest.mark.skip(reason=f"{mask} is 0: no {what} to check"))]


def bulk_runtime_or_skip(backend: g.Backend):
    """The cuda runtime where its device has the bulk copy engine (sm_90 and up), else a skip
    that says why."""
    if backend is not g.Backend.CUDA:
        pytest.skip(f"{backend.value}: the bulk copy engine is cuda's (sm_90)")
    rt = _runtime(backend)
    if not bulk_copies(rt, 0):
        pytest.skip(f"cuda {rt.driver.arch(0)}: no bulk copy engine (sm_90 and up)")
    return rt


#: The blocks of 32 whose one row of x streams the weights through the bulk copy engine (cuda sm_90).
BULK = blocks_of("QMATVEC_Q8_BULK_BLOCKS", "bulk product")


#: (n, k): 39 rows leave the last item of QMATVEC_Q8_BULK_ROWS (4) 3 rows; k of 4352 two steps of
#: QMATVEC_Q8_THREADS (128) units, the second of 8; 2304 one step of 72; 16640 four whole steps
#: and one of 8, past QMATVEC_Q8_LONG_X_SHARED_K
BULK_SHAPES = [(39, 4352), (130, 2304), (6, 16640)]


@pytest.mark.parametrize("n, k", BULK_SHAPES)
@pytest.mark.parametrize("fmt", BULK)
def test_the_bulk_stages_give_the_same_bits_on_any_grid(backend, fmt, n, k):
    """qmatvec_q8_1_one_<fmt> of QMATVEC_Q8_BULK_BLOCKS by one row of x: a block's stages run on
    across its items (on one block, every item's steps wrap the stages many times), so grids of 1,
    2 and 7 blocks give the runtime's grid's bits, which are x in q8_1 times W within the f32
    sums' bound. cuda sm_90 and up (the bulk copy engine); the launch wrapper is driven directly."""
    rt = bulk_runtime_or_skip(backend)
    same_bits_on_any_grid(rt, fmt, n, k, seed=BLOCK32_BITS.index(fmt) + k)


#: The blocks of 32 whose one row of x takes two neighbouring blocks a lane's unit where k is a
#: multiple of 64 and the weights 4-aligned (QMATVEC_Q8_TWO_BLOCKS), in qmatvec_q8_1_one_<fmt>.
TWO_BLOCKS = blocks_of("QMATVEC_Q8_TWO_BLOCKS", "two-block units")

#: (n, k): 4352 values, 136 blocks, in pairs (n of 39 below QMATVEC_Q8_NARROW_N: its narrow items);
#: 4384 one block past the pairs (units of one block); 16640 in pairs past QMATVEC_Q8_LONG_X_SHARED_K
TWO_BLOCK_SHAPES = [(39, 4352), (37, 4384), (10, 16640)]


@pytest.mark.parametrize("n, k", TWO_BLOCK_SHAPES)
@pytest.mark.parametrize("fmt", TWO_BLOCKS)
def test_two_block_units_give_the_same_bits_on_any_grid(backend, fmt, n, k):
    """qmatvec_q8_1_one_<fmt> of QMATVEC_Q8_TWO_BLOCKS by one row of x, in two-block units (k a
    multiple of 64) or in units of one block (k not): grids of 1, 2 and 7 blocks give the runtime's
    grid's bits, which are x in q8_1 times W within the f32 sums' bound. cuda only: the launch
    wrapper is driven directly."""
    if backend is not g.Backend.CUDA:
        pytest.skip(f"{backend.value}: the launch wrapper is driven through the cuda runtime here")
    same_bits_on_any_grid(_runtime(backend), fmt, n, k, seed=BLOCK32_BITS.index(fmt) + k)


@pytest.mark.parametrize("fmt", TWO_BLOCKS)
def test_weights_off_four_byte_alignment_take_units_of_one_block(backend, fmt):
    """The same weights 2 bytes past a 4-byte boundary (blocks of 18 bytes allow it), where a pair
    of blocks cannot be read as 4-aligned words: qmatvec_q8_1_one_<fmt> takes units of one block,
    and gives x in q8_1 times W within the f32 sums' bound, as the aligned weights' two-block units
    do. cuda only: the launch wrapper is driven directly."""
    if backend is not g.Backend.CUDA:
        pytest.skip(f"{backend.value}: the launch wrapper is driven through the cuda runtime here")
    rt = _runtime(backend)
    n, k, seed = 37, 4352, 3
    aligned, _, x_buf, xq, w, x = one_row_product(rt, fmt, n, k, seed=seed)
    data = np.asarray(g.Device.parse("cpu").quantize(weights(n * k, seed=seed), g.GgmlDType(fmt)).data(), np.uint8)
    shifted = rt.from_host(0, np.concatenate([np.zeros(2, np.uint8), data]))
    got = launch_one(rt, fmt, 7, shifted.ptr + 2, x_buf, xq, n, k)
    want, scale = x_as_q8_1(x) @ w.T, np.abs(x_as_q8_1(x)) @ np.abs(w).T
    for name, y_of in (("2 bytes off", got), ("aligned", aligned)):
        err = np.abs(y_of.reshape(1, n) - want) / scale
        assert err.max() <= ARITHMETIC_RTOL, f"cuda {fmt} weights {name}: error {err.max():.2e}"


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f not in SHARED_X])
def test_every_one_row_entry_multiplies_as_the_product_does(backend, fmt):
    """qmatvec_q8_1_one_<fmt> of a format whose one row of x the runtime gives to its few entry
    (items of one weight row there, never launched by QMatMul) is correct all the same: x in q8_1
    (f32 / f16 / bf16: x itself) times W within the f32 sums' bound, on grids of 1 and 7 blocks.
    cuda only: the launch wrapper is driven directly."""
    if backend is not g.Backend.CUDA:
        pytest.skip(f"{backend.value}: the launch wrapper is driven through the cuda runtime here")
    rt = _runtime(backend)
    n, k = 37, 512
    _, q, x_buf, xq, w, x = one_row_product(rt, fmt, n, k, seed=FORMATS.index(fmt))
    x_in = x.astype(np.float64) if fmt in FLOAT else x_as_q8_1(x)
    want, scale = x_in @ w.T, np.abs(x_in) @ np.abs(w).T
    for grid in (1, 7):
        got = launch_one(rt, fmt, grid, q.buf.ptr, x_buf, x_buf if fmt in FLOAT else xq, n, k)
        err = np.abs(got.reshape(1, n) - want) / scale
        assert err.max() <= ARITHMETIC_RTOL, f"cuda {fmt} grid {grid}: error {err.max():.2e}"


#: The blocks of 256 whose one row of x streams the weights through dynamic shared memory
#: (qmatvec_q8_1_stream_<fmt>, cuda sm_90).
STREAM = [f for f in BLOCK256_BITS if kernel_facts.QMATVEC_Q8_STREAM_K >> BLOCK256_BITS.index(f) & 1] or [
    pytest.param(None, marks=pytest.mark.skip(reason="QMATVEC_Q8_STREAM_K is 0: no stream product to check"))
]
STREAM_THREADS = 32 * (kernel_facts.QMATVEC_Q8_STREAM_WARPS + 1)

#: (n, k): k of 8192 a chunk a row (one copy of the group's rows), 35 rows leaving most reading
#: warps without work on 7 blocks; 14336 a row in two chunks of q2_K and q6_K (the second of 24
#: blocks), one of 56 blocks of q3_K (a lane at a time); 16384 one chunk of 64 blocks of q3_K (a
#: lane two blocks at once), two of q2_K and q6_K, over many steps a warp (q3_K and q6_K releasing
#: the next kernel at once, QMATVEC_Q8_STREAM_RELEASE_STEPS); 18432 a chunk of 64 and one of 8;
#: 24576 x's row of 1536 pieces (one bulk copy of 32256 bytes). Odd counts of rows leave q2_K's and
#: q3_K's last pair of rows (QMATVEC_Q8_STREAM_PAIRS) one row.
STREAM_SHAPES = [(35, 8192), (17, 14336), (640, 16384), (9, 18432), (5, 24576)]


def launch_stream(rt, fmt: str, grid: int, w_ptr: int, x_buf, xq, n: int, k: int, rows: int = 1) -> np.ndarray:
    """qmatvec_q8_1_stream_<fmt> on `grid` blocks, its launch wrapper driven directly: y (rows, n)."""
    from generated import kernels_hip
    from runtime.gpu.quant import q8_stream_launch

    y = rt.alloc(0, rows * n, np.dtype(np.float32))  # poisoned: an unwritten output is NaN
    launch = getattr(kernels_hip, f"launch_qmatvec_q8_1_stream_{fmt}")
    threads = q8_stream_launch(rt, 0, fmt, n, k)[1] if fmt in BLOCK256_BITS else STREAM_THREADS
    launch(rt.launch, grid, threads, rt.stream(0), w_ptr, x_buf.ptr, xq.ptr, y.ptr, n, k, rows)
    return rt.to_host(y)


@pytest.mark.parametrize("n, k", STREAM_SHAPES)
@pytest.mark.parametrize("fmt", STREAM)
def test_the_stream_product_gives_the_same_bits_on_any_grid(backend, fmt, n, k):
    """One row of x of QMATVEC_Q8_STREAM_K takes qmatvec_q8_1_stream_<fmt> (q8_stream): each
    reading warp's slots run on across its groups of rows (on one block every slot is refilled
    many times), so grids of 1, 2 and 7 blocks give the runtime's grid's bits, which are x in q8_1
    times W within the f32 sums' bound. cuda sm_90 and up (the bulk copy engine); the launch
    wrapper is driven directly."""
    from runtime.gpu.quant import q8_stream

    rt = bulk_runtime_or_skip(backend)
    shipped, q, x_buf, xq, w, x = one_row_product(rt, fmt, n, k, seed=BLOCK256_BITS.index(fmt) + k)
    assert q8_stream(rt, 0, fmt, 1, k, q.buf.ptr), f"cuda {fmt} ({n}, {k}) should take the stream product"
    for grid in (1, 2, 7):
        got = launch_stream(rt, fmt, grid, q.buf.ptr, x_buf, xq, n, k)
        np.testing.assert_array_equal(got, shipped, err_msg=f"cuda {fmt} ({n}, {k}): grid {grid}")
    want, scale = x_as_q8_1(x) @ w.T, np.abs(x_as_q8_1(x)) @ np.abs(w).T
    err = np.abs(shipped.reshape(1, n) - want) / scale
    assert err.max() <= ARITHMETIC_RTOL, f"cuda {fmt} ({n}, {k}): error {err.max():.2e}"


@pytest.mark.parametrize("fmt", STREAM)
def test_the_stream_product_of_weights_past_the_evict_first_bytes(backend, fmt):
    """Weights of QMATVEC_Q8_STREAM_EVICT_FIRST_BYTES and more (their copies' lines evicted first
    from L2 for the formats of QMATVEC_Q8_STREAM_EVICT_FIRST) give the same product: 64 distinct
    weight rows repeated past that size (not a whole number of times), so each repeated row has
    its first copy's bits (a row's sum is taken in one order) and all are x in q8_1 times W within
    the f32 sums' bound. cuda sm_90 and up."""
    from generated import kernels_hip
    from runtime.gpu import quant as gpu_quant

    rt = bulk_runtime_or_skip(backend)
    k, distinct = 16384, 64
    row_bytes = k // 256 * ggml.FORMATS[fmt].nbytes
    n = -(-kernel_facts.QMATVEC_Q8_STREAM_EVICT_FIRST_BYTES // row_bytes) + 5
    sample = ggml.quantize(weights(distinct * k, seed=BLOCK256_BITS.index(fmt)), fmt)
    q = gpu_quant.qstorage_from_bytes(rt, 0, np.resize(sample, n * row_bytes), fmt)
    assert gpu_quant.q8_stream(rt, 0, fmt, 1, k, q.buf.ptr), f"cuda {fmt} ({n}, {k}) should take the stream product"
    x = np.random.default_rng(k).standard_normal((1, k)).astype(np.float32)
    x_buf, y = rt.from_host(0, x), rt.alloc(0, n, np.dtype(np.float32))
    xq = rt.alloc(0, gpu_quant.x_q8_1_bytes(1, k), np.dtype(np.uint8))
    gpu_quant.qmatvec_q8_1(rt, q, x_buf, y, n, k, 1, kernels_hip.QSTORAGE["matmul"], xq)
    got = rt.to_host(y)
    np.testing.assert_array_equal(got, got[np.arange(n) % distinct], err_msg=f"cuda {fmt} ({n}, {k})")
    w = ggml.dequantize(sample, fmt, distinct * k).reshape(distinct, k).astype(np.float64)
    want, scale = x_as_q8_1(x) @ w.T, np.abs(x_as_q8_1(x)) @ np.abs(w).T
    err = np.abs(got[:distinct].reshape(1, distinct) - want) / scale
    assert err.max() <= ARITHMETIC_RTOL, f"cuda {fmt} ({n}, {k}): error {err.max():.2e}"


@pytest.mark.parametrize("fmt", STREAM)
def test_the_stream_product_is_given_the_shared_memory_the_runtime_counts_on(backend, fmt):
    """qmatvec_q8_1_stream_<fmt>'s launches ask for at least STREAM_SHARED bytes of dynamic shared
    memory on a device that lets a block have STREAM_SHARED + STREAM_STATIC + DYNAMIC_SHARED_SPARE
    (its static shared memory within STREAM_STATIC): where q8_stream says the stream takes a
    product, the kernel's own test (stream_fits) agrees and never falls back to its slow
    groups-of-lanes product. cuda sm_90 and up."""
    from generated.kernel_facts import DYNAMIC_SHARED_SPARE
    from runtime.gpu.quant import STREAM_SHARED, STREAM_STATIC

    rt = bulk_runtime_or_skip(backend)
    if rt.driver.shared_per_block(0) < STREAM_SHARED + STREAM_STATIC + DYNAMIC_SHARED_SPARE:
        pytest.skip(f"cuda {rt.driver.arch(0)}: {rt.driver.shared_per_block(0)} bytes a block, no stream product")
    one_row_product(rt, fmt, 640, 16384, seed=1)
    fns = [fn for (_, _, name), fn in rt._functions.items() if name == f"qmatvec_q8_1_stream_{fmt}"]
    shared = [rt.driver._dynamic_shared[int(fn)] for fn in fns]
    assert shared and min(shared) >= STREAM_SHARED, (fmt, shared)


def stream_image(quants: np.ndarray, d: np.ndarray) -> bytes:
    """One row of x as hip/qmatvec_q8.hip's stream_x_bytes lays it out, from its q8_1 (int8
    quants, a d a unit of 32): each block of 256's 16 pieces of 16 quants and a piece of zeros;
    the units' d, units 4c..4c + 3 of block b at 4 (c nb + b); the sums of their halves' quants as
    16-bit integers, likewise two a unit."""
    nb = quants.size // 256
    pieces = np.zeros((nb, 17, 16), np.int8)
    pieces[:, :16] = quants.reshape(nb, 16, 16)
    units = d.reshape(nb, 2, 4).transpose(1, 0, 2)  # [c, b, unit 4c + j]
    sums = quants.reshape(nb, 2, 4, 2, 16).astype(np.int64).sum(axis=4).astype(np.int16).transpose(1, 0, 2, 3)
    return pieces.tobytes() + units.astype(np.float32).tobytes() + sums.tobytes()


def quantized_row(rt, x: np.ndarray) -> bytes:
    """quantize_q8_1_f32 of one row of x on the device: the bytes of its x_q8_1_bytes."""
    from generated import kernels_hip
    from generated.kernel_facts import KernelPattern
    from runtime.gpu import quant as gpu_quant
    from runtime.gpu.launch import BLOCK

    k = x.size
    x_buf, xq = rt.from_host(0, x), rt.alloc(0, gpu_quant.x_q8_1_bytes(1, k), np.dtype(np.uint8))
    quantize = rt._entry(kernels_hip.QSTORAGE["matmul"], (KernelPattern.QUANTIZE_Q8_1_X, x.dtype), "qmatmul")
    quantize(rt.launch, rt.geometry(k // 4, 0), BLOCK, rt.stream(0), x_buf.ptr, xq.ptr, 1, k)
    return rt.to_host(xq).tobytes()


def units_d(got: bytes, k: int) -> np.ndarray:
    """Each unit of 32's d out of a row's q8_1 (a half's d, d s: a unit's d every 4 floats)."""
    return np.frombuffer(got[k : k + k // 16 * 8], np.float32)[0::4]


@pytest.mark.parametrize("at", [96, 101, 110, 127])
def test_x_quantization_makes_the_unit_of_a_nan_nan_at_any_lane(backend, at):
    """A NaN in x makes its unit's d NaN and its quants 0, wherever it lies among the unit's 8
    lanes (each lane's flag is shuffled to the others, whatever its own); a unit of zeros has d 0;
    every other d is max |x| / 127."""
    k = 2048
    x = np.random.default_rng(at).standard_normal(k).astype(np.float32)
    x[256:288] = 0.0
    x[at] = np.nan
    got = quantized_row(_runtime(backend), x)
    d, amax = units_d(got, k), np.abs(x.reshape(-1, 32)).max(axis=1)
    want = np.where(np.isnan(amax), np.nan, amax / np.float32(127.0))
    assert np.array_equal(d, want, equal_nan=True), f"{backend.value}: units {np.flatnonzero(np.isnan(d))} NaN, want 3"
    assert not np.frombuffer(got[96:128], np.int8).any(), f"{backend.value}: the NaN unit's quants"


@pytest.mark.parametrize("k", [2048, 6144, 16384, 4352])
def test_x_quantization_writes_the_stream_image_of_one_row(backend, k):
    """quantize_q8_1_f32 writes one row of x of k a multiple of 2048 a second time after its q8_1,
    as the stream product holds it in shared memory (x_has_stream_image; the product copies it
    whole): byte for byte what the row's own quants and d give, a unit of zeros and one of NaN
    included; x_q8_1_bytes counts it, and a row of k not a multiple of 2048 has none."""
    from runtime.gpu import quant as gpu_quant

    x = np.random.default_rng(k).standard_normal(k).astype(np.float32)
    x[256:288] = 0.0
    x[100] = np.nan
    plain = k + k // 16 * 8
    image = gpu_quant.stream_x_bytes(k // 256) if k % 2048 == 0 else 0
    assert gpu_quant.x_q8_1_bytes(1, k) == plain + image, k
    got = quantized_row(_runtime(backend), x)
    want = stream_image(np.frombuffer(got[:k], np.int8), units_d(got, k)) if image else b""
    assert got[plain:] == want, f"{backend.value} k {k}: the image"


@pytest.mark.parametrize(
    ("fmt", "k", "rows"), [("q3_k", 4352, 1), ("q3_k", 8192, 2), ("q2_k", 6144, 1), ("q4_0", 8192, 1), ("f16", 8192, 1)]
)
def test_the_stream_entry_multiplies_where_the_stream_does_not_fit(backend, fmt, k, rows):
    """qmatvec_q8_1_stream_<fmt> where stream_fits does not hold (k not a multiple of 2048, fewer
    than QMATVEC_Q8_STREAM_BLOCKS blocks a row, two rows of x, a format without the stream product)
    takes its groups-of-lanes product: x in q8_1 (f16: x itself) times W within the f32 sums' bound,
    on grids of 1 and 7 blocks. cuda only: the launch wrapper is driven directly."""
    from generated import kernels_hip
    from runtime.gpu import quant as gpu_quant

    if backend is not g.Backend.CUDA:
        pytest.skip(f"{backend.value}: the launch wrapper is driven through the cuda runtime here")
    rt = _runtime(backend)
    n = 37
    values = weights(n * k, seed=k + rows)
    q = gpu_quant.quantize(rt, 0, values, fmt)
    cpu_q = g.Device.parse("cpu").quantize(values, g.GgmlDType(fmt))
    w = g.to_numpy(cpu_q.dequantize(n * k), g.Layout.contiguous((n * k,))).reshape(n, k).astype(np.float64)
    x = np.random.default_rng(k).standard_normal((rows, k)).astype(np.float32)
    x_buf = rt.from_host(0, x)
    xq = rt.alloc(0, gpu_quant.x_q8_1_bytes(rows, k), np.dtype(np.uint8))
    y = rt.alloc(0, rows * n, np.dtype(np.float32))
    gpu_quant.qmatvec_q8_1(rt, q, x_buf, y, n, k, rows, kernels_hip.QSTORAGE["matmul"], xq)  # quantizes x into xq
    x_in = x.astype(np.float64) if fmt in FLOAT else x_as_q8_1(x)
    want, scale = x_in @ w.T, np.abs(x_in) @ np.abs(w).T
    for grid in (1, 7):
        got = launch_stream(rt, fmt, grid, q.buf.ptr, x_buf, x_buf if fmt in FLOAT else xq, n, k, rows)
        err = np.abs(got.reshape(rows, n) - want) / scale
        assert err.max() <= ARITHMETIC_RTOL, f"cuda {fmt} ({n}, {k}) x {rows} rows, grid {grid}: error {err.max():.2e}"

"""GPU conformance of the NN ops (g.nn, hip/nn.hip through runtime/gpu/nn.py) against the
cpu backend, through the generated custom ops: every dtype, rows of 1 to 20,000 elements
(registers only, and segments read again), contiguous, misaligned, transposed and broadcast
views. Output buffers are poisoned first (conftest): an element a kernel fails to write is
NaN, or the largest index, and fails the comparison.

Runs where a GPU backend is available (the H100 through the device tool, for cuda);
elsewhere the module is one skip that says why."""

from __future__ import annotations

import math

import numpy as np
import pytest

import generated as g
from tests.gpu.runnable import gpu_backends_or_skip

GPU_BACKENDS = gpu_backends_or_skip()

CPU = g.Device.parse("cpu")
FLOAT = ["bf16", "f16", "f32", "f64"]
ATTENTION = ["bf16", "f16", "f32"]
ALL = [d.value for d in g.DType]
TOLERANCE = {"bf16": 2e-2, "f16": 2e-3, "f32": 1e-5, "f64": 1e-12}
# Row lengths: a warp's worth and less, odd tails, several packs per thread, 4096 (the bench),
# and 20,000: longer than a block holds in registers (hip/nn.hip reads it in segments).
COLS = [1, 7, 33, 1000, 4096, 20000]
VIEWS = ["contiguous", "unaligned", "transposed", "broadcast"]
EPS = 1e-5


def random(rng, dtype: str, shape, low: float = -3.0, high: float = 3.0) -> np.ndarray:
    return rng.uniform(low, high, shape).astype(g.DType(dtype).numpy)


def view(rng, dtype: str, shape: tuple[int, ...], kind: str, low: float = -3.0, high: float = 3.0):
    """(host array, layout of a `shape` view of it):
    contiguous; unaligned: contiguous from element 1 (its rows miss 16-byte alignment, read in
    place); transposed: the last two dims swapped; broadcast: dim 0 of stride 0."""
    rank = len(shape)
    if kind == "contiguous":
        return random(rng, dtype, shape, low, high), g.Layout.contiguous(shape)
    if kind == "unaligned":
        return random(rng, dtype, math.prod(shape) + 1, low, high), g.Layout.contiguous(shape, start_offset=1)
    if kind == "transposed":
        stored = shape[:-2] + (shape[-1], shape[-2])
        return random(rng, dtype, stored, low, high), g.Layout.contiguous(stored).transpose(rank - 2, rank - 1)
    if kind == "broadcast":
        stored = (1,) + shape[1:]
        return random(rng, dtype, stored, low, high), g.Layout.contiguous(stored).broadcast_as(shape)
    raise ValueError(kind)


def on_both(device: g.Device, op, operands) -> list[np.ndarray]:
    """`op` applied to the views `operands` ([(array, layout), ...], the first is self) on
    the cpu and on `device`, through Storage.apply_op<n>; both results as numpy."""
    results = []
    for dev in (CPU, device):
        (first, first_layout), *rest = operands
        args = [x for array, layout in rest for x in (dev.storage_from_slice(array), layout)]
        storage, shape = getattr(dev.storage_from_slice(first), f"apply_op{len(operands)}")(first_layout, *args, op)
        results.append(g.to_numpy(storage, g.Layout.contiguous(shape)))
    return results


def assert_close(got: np.ndarray, want: np.ndarray, dtype: str, what: str) -> None:
    """Within the dtype's tolerance, relative to the largest result (softmax rows of 20,000
    hold values of 1e-4: an absolute floor of the tolerance itself would pass anything)."""
    assert got.shape == want.shape and got.dtype == want.dtype, what
    tol = TOLERANCE[dtype]
    want64, got64 = want.astype(np.float64), got.astype(np.float64)
    scale = float(np.abs(want64).max()) if want64.size else 1.0
    np.testing.assert_allclose(got64, want64, rtol=tol, atol=tol * scale, err_msg=what)


def device_of(backend: g.Backend) -> g.Device:
    return g.Device(backend, 0)


# --------------------------------------------------------------------------- elementwise and rows


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("kind", VIEWS)
@pytest.mark.parametrize("cols", [7, 4096])
@pytest.mark.parametrize("dtype", FLOAT)
def test_sigmoid(backend, dtype, cols, kind):
    x = view(np.random.default_rng(1), dtype, (6, cols), kind, -10, 10)
    want, got = on_both(device_of(backend), g.nn.Sigmoid(), [x])
    assert_close(got, want, dtype, f"{backend.value} sigmoid {dtype} {cols} {kind}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("kind", VIEWS)
@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("dtype", FLOAT)
def test_softmax_last_dim(backend, dtype, cols, kind):
    x = view(np.random.default_rng(2), dtype, (5, cols), kind, -10, 10)
    want, got = on_both(device_of(backend), g.nn.SoftmaxLastDim(), [x])
    assert_close(got, want, dtype, f"{backend.value} softmax {dtype} {cols} {kind}")


def _special_rows(rng, cols: int) -> np.ndarray:
    """Rows a softmax must get right beyond random values: masked (-inf but for a few), all
    -inf (NaN, as numpy), one NaN (NaN), one +inf (NaN), far below 0 (exp of the row's top
    alone would underflow), and -inf in every lane but one of the block."""
    rows = np.tile(rng.uniform(-10, 10, cols), (6, 1))
    rows[0, rng.random(cols) < 0.9] = -np.inf
    rows[0, cols // 2] = 1.0
    rows[1] = -np.inf
    rows[2, cols // 3] = np.nan
    rows[3, cols - 1] = np.inf
    rows[4] -= 1e4
    rows[5, 1:] = -np.inf
    return rows


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("cols", [7, 1000, 4096, 20000])
@pytest.mark.parametrize("dtype", FLOAT)
def test_softmax_of_infinities_and_nan_rows(backend, dtype, cols):
    """Each part of a row (a thread's values, a segment) merges its top and sum with the
    others: a part that holds only -inf must add 0, not NaN; NaN and +inf rows are NaN."""
    x = _special_rows(np.random.default_rng(12), cols).astype(g.DType(dtype).numpy)
    with np.errstate(invalid="ignore"):
        want, got = on_both(device_of(backend), g.nn.SoftmaxLastDim(), [(x, g.Layout.contiguous(x.shape))])
    assert np.array_equal(np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64))), (
        f"{backend.value} softmax {dtype} {cols}: NaN rows differ"
    )
    finite = ~np.isnan(want.astype(np.float64)).any(axis=1)
    assert finite.tolist() == [True, False, False, False, True, True]
    assert_close(got[finite], want[finite], dtype, f"{backend.value} softmax {dtype} {cols} special rows")


def _alpha(rng, dtype: str, cols: int, broadcast: bool):
    """A (cols,) operand; broadcast: one value of stride 0."""
    if broadcast:
        return random(rng, dtype, (1,), -2, 2), g.Layout.contiguous((1,)).broadcast_as((cols,))
    return random(rng, dtype, (cols,), -2, 2), g.Layout.contiguous((cols,))


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("alpha_broadcast", [False, True], ids=["alpha", "alpha-broadcast"])
@pytest.mark.parametrize("kind", VIEWS)
@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("dtype", FLOAT)
def test_rms_norm(backend, dtype, cols, kind, alpha_broadcast):
    rng = np.random.default_rng(3)
    x = view(rng, dtype, (5, cols), kind)
    want, got = on_both(device_of(backend), g.nn.RmsNorm(eps=EPS), [x, _alpha(rng, dtype, cols, alpha_broadcast)])
    assert_close(got, want, dtype, f"{backend.value} rms_norm {dtype} {cols} {kind}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("alpha_broadcast", [False, True], ids=["alpha", "alpha-broadcast"])
@pytest.mark.parametrize("kind", VIEWS)
@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("dtype", FLOAT)
def test_layer_norm(backend, dtype, cols, kind, alpha_broadcast):
    rng = np.random.default_rng(4)
    x = view(rng, dtype, (5, cols), kind, 1, 5)  # a mean far from 0
    operands = [x, _alpha(rng, dtype, cols, alpha_broadcast), _alpha(rng, dtype, cols, False)]
    want, got = on_both(device_of(backend), g.nn.LayerNorm(eps=EPS), operands)
    assert_close(got, want, dtype, f"{backend.value} layer_norm {dtype} {cols} {kind}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", FLOAT)
def test_norms_of_a_3d_tensor(backend, dtype):
    rng = np.random.default_rng(5)
    x = view(rng, dtype, (2, 3, 40), "contiguous")
    alpha = _alpha(rng, dtype, 40, False)
    device = device_of(backend)
    want, got = on_both(device, g.nn.RmsNorm(eps=EPS), [x, alpha])
    assert_close(got, want, dtype, f"{backend.value} rms_norm 3d {dtype}")
    want, got = on_both(device, g.nn.LayerNorm(eps=EPS), [x, alpha, alpha])
    assert_close(got, want, dtype, f"{backend.value} layer_norm 3d {dtype}")


# --------------------------------------------------------------------------- rotary embeddings

ROPES = {"rope_i": g.nn.RopeI, "rope": g.nn.Rope, "rope_thd": g.nn.RopeThd}
ROPE_VIEWS = ["contiguous", "unaligned", "heads-transposed", "longer-tables"]


def _rope_operands(rng, dtype: str, op: str, kind: str, b=2, h=3, t=5, d=8):
    shape = (b, t, h, d) if op == "rope_thd" else (b, h, t, d)
    if kind == "heads-transposed":  # dims 1 and 2 swapped: rope_thd's layout for rope, and back
        stored = (shape[0], shape[2], shape[1], shape[3])
        x = random(rng, dtype, stored), g.Layout.contiguous(stored).transpose(1, 2)
    else:
        x = view(rng, dtype, shape, "unaligned" if kind == "unaligned" else "contiguous")
    rows = t + 3 if kind == "longer-tables" else t
    tables = [(random(rng, dtype, (rows, d // 2), -1, 1), g.Layout.contiguous((rows, d // 2))) for _ in range(2)]
    return [x, *tables]


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("kind", ROPE_VIEWS)
@pytest.mark.parametrize("dtype", FLOAT)
@pytest.mark.parametrize("op", list(ROPES))
def test_rope(backend, op, dtype, kind):
    operands = _rope_operands(np.random.default_rng(6), dtype, op, kind)
    want, got = on_both(device_of(backend), ROPES[op](), operands)
    assert_close(got, want, dtype, f"{backend.value} {op} {dtype} {kind}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("op", list(ROPES))
def test_rope_of_a_model_sized_tensor(backend, op):
    operands = _rope_operands(np.random.default_rng(7), "bf16", op, "contiguous", b=1, h=8, t=33, d=128)
    want, got = on_both(device_of(backend), ROPES[op](), operands)
    assert_close(got, want, "bf16", f"{backend.value} {op} (1, 8, 33, 128)")


# --------------------------------------------------------------------------- attention

SDPA_SHAPES = {  # (b, h, sq, skv, d)
    "square": (2, 3, 7, 7, 16),
    "kv-cache": (1, 2, 3, 9, 8),  # sq < skv
    "more-queries": (1, 2, 6, 4, 8),  # sq > skv: causal queries 0 and 1 see no key (zeros)
    "long-rows": (1, 2, 33, 1000, 64),
    "one-query": (2, 2, 1, 4096, 64),
    # bf16 / f16 with head dims 64 and 128 run hip/attention.hip's fused kernel on cuda: tiles of
    # 64 queries and 64 keys, so ragged tails on both sides, and a causal diagonal off the tiles
    "flash-64": (2, 3, 77, 77, 64),
    "flash-64-one-key": (1, 2, 5, 1, 64),  # causal: only the last query sees the key
    "flash-128-kv-cache": (1, 2, 33, 300, 128),  # sq < skv
    "flash-128-more-queries": (1, 2, 130, 70, 128),  # sq > skv: causal queries 0 to 59 see no key
    "flash-128-tiles": (1, 1, 128, 256, 128),  # whole tiles
}


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", list(SDPA_SHAPES))
@pytest.mark.parametrize("dtype", ATTENTION)
def test_sdpa(backend, dtype, shape, causal):
    b, h, sq, skv, d = SDPA_SHAPES[shape]
    rng = np.random.default_rng(8)
    q = view(rng, dtype, (b, h, sq, d), "contiguous", -1, 1)
    k = view(rng, dtype, (b, h, skv, d), "contiguous", -1, 1)
    v = view(rng, dtype, (b, h, skv, d), "contiguous", -1, 1)
    op = g.nn.Sdpa(scale=1 / math.sqrt(d), causal=causal)
    want, got = on_both(device_of(backend), op, [q, k, v])
    assert_close(got, want, dtype, f"{backend.value} sdpa {dtype} {shape} causal={causal}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ATTENTION)
def test_sdpa_of_strided_views(backend, dtype):
    """q stored (b, sq, h, d) and viewed (b, h, sq, d); k transposed in its last two dims; v
    broadcast over the batch."""
    b, h, sq, skv, d = 2, 3, 5, 6, 16
    rng = np.random.default_rng(9)
    stored = (b, sq, h, d)
    q = random(rng, dtype, stored, -1, 1), g.Layout.contiguous(stored).transpose(1, 2)
    k = view(rng, dtype, (b, h, skv, d), "transposed", -1, 1)
    v = view(rng, dtype, (b, h, skv, d), "broadcast", -1, 1)
    want, got = on_both(device_of(backend), g.nn.Sdpa(scale=0.25, causal=True), [q, k, v])
    assert_close(got, want, dtype, f"{backend.value} sdpa strided {dtype}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ATTENTION)
def test_sdpa_of_views_with_a_fused_head_dim(backend, dtype):
    """Head dim 64 (the fused kernel's, for bf16 and f16 on cuda): q a transposed view (copied
    dense), k contiguous from element 1 (not 16-byte aligned: copied to an aligned buffer), v
    broadcast over the batch."""
    b, h, sq, skv, d = 2, 2, 70, 90, 64
    rng = np.random.default_rng(10)
    stored = (b, sq, h, d)
    q = random(rng, dtype, stored, -1, 1), g.Layout.contiguous(stored).transpose(1, 2)
    k = view(rng, dtype, (b, h, skv, d), "unaligned", -1, 1)
    v = view(rng, dtype, (b, h, skv, d), "broadcast", -1, 1)
    want, got = on_both(device_of(backend), g.nn.Sdpa(scale=0.125, causal=True), [q, k, v])
    assert_close(got, want, dtype, f"{backend.value} sdpa views d=64 {dtype}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_sdpa_of_scores_growing_along_the_keys(backend, dtype, d, causal):
    """Scores that grow along the keys, far past the first tile's (the fused kernel's case):
    its rows' running maxima move in later tiles, past its rescale slack for some rows of a
    warp and not others, and O and the sums are rescaled there."""
    b, h, sq, skv = 1, 2, 70, 300
    rng = np.random.default_rng(11)
    dt = g.DType(dtype).numpy
    q = rng.uniform(-4, 4, (b, h, sq, d)).astype(dt)
    k = (rng.uniform(-1, 1, (b, h, skv, d)) * np.linspace(0.1, 3.0, skv)[:, None]).astype(dt)
    v = rng.uniform(-1, 1, (b, h, skv, d)).astype(dt)
    operands = [(x, g.Layout.contiguous(x.shape)) for x in (q, k, v)]
    want, got = on_both(device_of(backend), g.nn.Sdpa(scale=1 / math.sqrt(d), causal=causal), operands)
    assert_close(got, want, dtype, f"{backend.value} sdpa growing scores {dtype} d={d} causal={causal}")


# --------------------------------------------------------------------------- arg_sort


def _sort_values(rng, dtype: str, shape) -> np.ndarray:
    """Few distinct values (ties); floats also hold NaN, -0.0 and 0.0."""
    values = rng.integers(0, 9, shape)
    if g.DType(dtype).kind == "float":
        x = (values - 4).astype(np.float64)
        x[rng.random(shape) < 0.1] = np.nan
        x[rng.random(shape) < 0.1] = -0.0
    elif dtype == "i64":
        x = (values - 4) * 10**12
    else:
        x = values * (10**8 if dtype == "u32" else 1)
    return x.astype(g.DType(dtype).numpy)


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("ascending", [True, False], ids=["asc", "desc"])
@pytest.mark.parametrize("kind", ["contiguous", "transposed"])
@pytest.mark.parametrize("cols", [1, 7, 33, 1000, 4096, 4097, 8192, 20000])
@pytest.mark.parametrize("dtype", ALL)
def test_arg_sort(backend, dtype, cols, kind, ascending):
    """The order is total (ties by index, NaN the largest value): equal index for index."""
    rng = np.random.default_rng(10)
    shape = (3, cols)
    if kind == "transposed":
        x = _sort_values(rng, dtype, shape[::-1]), g.Layout.contiguous(shape[::-1]).transpose(0, 1)
    else:
        x = _sort_values(rng, dtype, shape), g.Layout.contiguous(shape)
    want, got = on_both(device_of(backend), g.nn.ArgSort(ascending=ascending), [x])
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} arg_sort {dtype} {cols} {kind}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "i64", "bf16"])
@pytest.mark.parametrize("ascending", [True, False], ids=["asc", "desc"])
def test_arg_sort_of_long_rows_merges_through_global_memory(backend, dtype, ascending):
    """Rows past a shared-memory chunk (4,096 pairs): 2 rows of 100,003 (padded to 2^17)."""
    rng = np.random.default_rng(12)
    x = _sort_values(rng, dtype, (2, 100_003)), g.Layout.contiguous((2, 100_003))
    want, got = on_both(device_of(backend), g.nn.ArgSort(ascending=ascending), [x])
    np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} arg_sort {dtype} 100,003")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
def test_shape_errors_match_the_cpu(backend):
    """The same ShapeMismatch (op, expectation, value) on both backends."""
    x, alpha = np.zeros((2, 7), np.float32), np.zeros(6, np.float32)
    errors = []
    for dev in (CPU, device_of(backend)):
        with pytest.raises(g.ShapeMismatch) as info:
            dev.storage_from_slice(x).apply_op2(
                g.Layout.contiguous((2, 7)),
                dev.storage_from_slice(alpha),
                g.Layout.contiguous((6,)),
                g.nn.RmsNorm(eps=EPS),
            )
        errors.append(info.value)
    cpu, gpu = ((e.op, e.expected, e.got) for e in errors)
    assert cpu == gpu and errors[1].backend == backend.value

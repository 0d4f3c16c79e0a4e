"""On a GPU: reductions of a few long groups in one launch (reduce_chunks pass 0, its block
counter handed from launch to launch), and peer copies between two GPUs of one host,
ordered with both devices' streams. Skips, saying why, where no GPU backend can run."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
import yaml

import generated as g
from runtime.gpu.reduce import FEW_GROUPS

ROOT = Path(__file__).resolve().parents[2]

# The paths of the shared GPU runtime (runtime/gpu): the backends that run HIP kernels on it.
_BACKENDS = yaml.safe_load((ROOT / "ops.yaml").read_text())["backends"]
_HIP = {name for name, spec in _BACKENDS.items() if spec.get("kernels") == "hip"}
_REASONS = {b: b.unavailable_reason() for b in g.Backend if b.value in _HIP}
GPU_BACKENDS = [b for b, reason in _REASONS.items() if reason is None]
if not GPU_BACKENDS:
    pytest.skip(
        "no GPU backend can run here: " + "; ".join(f"{b.value}: {r}" for b, r in _REASONS.items()),
        allow_module_level=True,
    )

CPU = g.Device.parse("cpu")
REDUCE = list(g.ReduceOp)
# (shape, view, dims): one group (all dims; a strided view of all dims), a few, the most
# one launch finishes, and one more (two launches).
CASES = [
    ((1 << 20,), "contiguous", (0,)),
    ((1 << 10, 1 << 10), "transposed", (0, 1)),
    ((3, 1 << 18), "contiguous", (1,)),
    ((FEW_GROUPS, 1 << 16), "contiguous", (1,)),
    ((FEW_GROUPS + 1, 1 << 16), "contiguous", (1,)),
]


def _values(dtype: g.DType, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.kind == "float":  # f16 sums of 2^20 of them stay finite
        return (rng.uniform(0.1, 3, shape) / (64 if dtype is g.DType.F16 else 1)).astype(dtype.numpy)
    return rng.integers(1, 7, shape).astype(dtype.numpy)


def _layout(shape, view: str) -> tuple[g.Layout, tuple[int, ...]]:
    layout = g.Layout.contiguous(shape)
    return (layout.transpose(0, 1), shape[::-1]) if view == "transposed" else (layout, shape)


def _reduce(device, x, layout, shape, op, dims):
    out_shape = tuple(1 if i in dims else n for i, n in enumerate(shape))
    s = device.storage_from_slice(x)
    return g.to_numpy(s.reduce_op(op, layout, dims), g.Layout.contiguous(out_shape))


def _check(got, want, op, dtype, what):
    if op is g.ReduceOp.SUM and dtype.kind == "float":
        tol = {"bf16": 2e-2, "f16": 2e-3}.get(dtype.value, 1e-5)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, err_msg=what)
    else:  # exact; NaN equals NaN (bf16 too, which numpy compares as an opaque type: as f64)
        if want.dtype.kind not in "iu":
            got, want = got.astype(np.float64), want.astype(np.float64)
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16", "f64", "i64", "u32", "u8"])
@pytest.mark.parametrize("op", REDUCE, ids=str)
def test_few_long_groups_reduce_as_on_the_cpu_launch_after_launch(backend, dtype, op):
    """Every case twice in a row, sizes alternating: a block counter left non-zero by one
    launch would leave the next one's output unwritten (poisoned: NaN / 0xFF)."""
    device, dt = g.Device(backend, 0), g.DType(dtype)
    for round_ in range(2):
        for shape, view, dims in CASES:
            x = _values(dt, shape, seed=len(shape) + round_)
            layout, view_shape = _layout(shape, view)
            what = f"{backend.value} {op.value} {dtype} {shape} {view} {dims} round {round_}"
            _check(
                _reduce(device, x, layout, view_shape, op, dims),
                _reduce(CPU, x, layout, view_shape, op, dims),
                op,
                dt,
                what,
            )


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("op", [g.ReduceOp.ARGMAX, g.ReduceOp.ARGMIN, g.ReduceOp.MAX], ids=str)
def test_one_launch_keeps_the_first_extreme_and_the_first_nan(backend, op):
    device = g.Device(backend, 0)
    x = np.ones(1 << 20, np.float32)
    x[[5000, 700_000]] = 9.0 if op is not g.ReduceOp.ARGMIN else -9.0
    layout = g.Layout.contiguous(x.shape)
    assert _reduce(device, x, layout, x.shape, op, (0,)).tolist() == _reduce(CPU, x, layout, x.shape, op, (0,)).tolist()
    x[[900_000, 300_000]] = np.nan
    got, want = _reduce(device, x, layout, x.shape, op, (0,)), _reduce(CPU, x, layout, x.shape, op, (0,))
    np.testing.assert_array_equal(got, want)


# -- a thread per group, several neighbouring groups at once (16-byte loads) ----------------

# (base shape, view, dims, whether the runtime takes several columns a thread): reductions
# over leading dims, whose groups are read by a thread each. Several columns a thread needs
# the view's first element, the innermost kept size and every other stride to be multiples
# of the vector width (16 bytes of elements, at most 8): 64 and 48 columns are, 37 and an
# offset of 1 are not; a row stride of 66 is for 8-byte types only (width 2).
COLUMN_CASES = [
    ((4099, 64), lambda l: l, (0,), True),  # rows split: one launch of column tiles (pass 3)
    ((100, 64), lambda l: l, (0,), True),  # one launch (groups too short to split)
    ((4099, 37), lambda l: l, (0,), False),  # columns not a multiple of the width
    ((700, 72), lambda l: l.narrow(1, 8, 64), (0,), True),  # an aligned offset
    ((700, 72), lambda l: l.narrow(1, 1, 64), (0,), False),  # an unaligned offset
    ((700, 66), lambda l: l.narrow(1, 0, 64), (0,), None),  # row stride 66: 8-byte types only
    ((3, 300, 48), lambda l: l, (1,), True),  # a batch of column sums
    ((50, 40, 16), lambda l: l, (0, 1), True),  # two leading dims merged
    ((9, 5, 48), lambda l: l.narrow(1, 1, 3), (0, 1), None),  # reduced dims that do not merge: generic path
]


def _column_values(dt: g.DType, shape, op: g.ReduceOp, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if op is g.ReduceOp.SUM:
        return _values(dt, shape, seed)
    x = rng.integers(1, 7, shape).astype(dt.numpy)  # ties: the first extreme must win
    if dt.kind == "float":
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size, 5)] = np.nan  # NaN propagates (first NaN for argmin/argmax)
    return x


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16", "f64", "i64", "u32", "u8"])
@pytest.mark.parametrize("op", REDUCE, ids=str)
def test_leading_dims_reduce_as_on_the_cpu_several_columns_a_thread(backend, dtype, op, monkeypatch):
    """Several neighbouring columns a thread (aligned vector loads) where the view allows,
    one column a thread where it does not (odd widths, unaligned offsets, odd row strides):
    both against the cpu backend, every dtype, and the path each case takes."""
    import runtime.gpu.reduce as gpu

    taken: list[int] = []
    columns = gpu._reduce_columns

    def spy(*args):
        taken.append(result := columns(*args))
        return result

    monkeypatch.setattr(gpu, "_reduce_columns", spy)
    device, dt = g.Device(backend, 0), g.DType(dtype)
    width = min(gpu.COLUMN_PACKS * min(16 // dt.numpy.itemsize, 8), 8)  # hip/reduce.hip's kColumns
    for i, (shape, make_view, dims, wide) in enumerate(COLUMN_CASES):
        x = _column_values(dt, shape, op, seed=i)
        layout = make_view(g.Layout.contiguous(shape))
        what = f"{backend.value} {op.value} {dtype} {shape} case {i} {dims}"
        taken.clear()
        got = _reduce(device, x.reshape(-1), layout, layout.shape, op, dims)
        want = _reduce(CPU, x.reshape(-1), layout, layout.shape, op, dims)
        _check(got, want, op, dt, what)
        if wide is None and i == 5:
            wide = width == 2
        if wide is None:
            assert taken == [], what  # not a thread per group
        else:
            assert taken == [width if wide else 1], what


# -- leading dims in one launch: column tiles, their rows split over several blocks -------

# (base shape, view, dims): groups of a leading dim too long for a thread each, which the
# runtime reduces in one launch (reduce_columns_<dt>): rows in slices of several blocks
# per column tile, the last block of a tile to finish combining them. Rows that no slice
# count divides (4,099, 2,053, 3,001 in 6 / 6 / 11 slices), tiles short of 32 threads (down
# to 2: 8 columns, or 3 columns a column a thread), a last tile cut short (1,000 columns), a
# column a thread (37 columns, unaligned offsets), several columns a thread (8 / 4 / 2 for 1-
# and 2-, 4- and 8-byte types), a row stride past the columns (a narrowed view), the fewest
# rows split (128), and a rank-3 view (by its info array).
COLUMN_TILE_CASES = [
    ((4099, 64), lambda l: l, (0,)),
    ((2053, 1000), lambda l: l, (0,)),
    ((3001, 37), lambda l: l, (0,)),
    ((700, 72), lambda l: l.narrow(1, 8, 64), (0,)),
    ((700, 72), lambda l: l.narrow(1, 1, 64), (0,)),
    ((3, 300, 48), lambda l: l, (1,)),
    ((129, 8), lambda l: l, (0,)),
    ((257, 3), lambda l: l, (0,)),
    ((128, 64), lambda l: l, (0,)),
    ((1500, 1100), lambda l: l.narrow(1, 16, 1000).narrow(0, 3, 1490), (0,)),
    ((4099, 64), lambda l: l, (0,)),  # again, after launches with more tiles: the counters were left at zero
]


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16", "f64", "i64", "u32", "u8"])
@pytest.mark.parametrize("op", REDUCE, ids=str)
@pytest.mark.parametrize("by_value", [True, False], ids=["by-value", "info"])
def test_column_tiles_reduce_as_on_the_cpu_in_one_launch(backend, dtype, op, by_value, monkeypatch):
    """Every case against the cpu backend, every dtype, ties and NaNs for the extremes (the
    first extreme, the first NaN), and each case in one launch of column tiles: a rank-2
    view by value (its row stride an argument; 32-bit indices) where COLUMN_BY_VALUE is on,
    else by its info array. Each case is planned afresh (its plan dropped first), so that
    the path it plans is seen; the repeated case launches again whatever the plans."""
    import runtime.gpu.reduce as gpu

    monkeypatch.setattr(gpu, "COLUMN_BY_VALUE", by_value)
    taken: list[tuple] = []
    tiles = gpu.Reductions._reduce_column_tiles

    def spy(self, *args):
        taken.append(args)
        return tiles(self, *args)

    monkeypatch.setattr(gpu.Reductions, "_reduce_column_tiles", spy)
    device, dt = g.Device(backend, 0), g.DType(dtype)
    rt = importlib.import_module(f"runtime.{backend.value}")._rt
    for i, (shape, make_view, dims) in enumerate(COLUMN_TILE_CASES):
        x = _column_values(dt, shape, op, seed=100 + i)
        layout = make_view(g.Layout.contiguous(shape))
        what = f"{backend.value} {op.value} {dtype} {shape} case {i} {dims}"
        taken.clear()
        rt._reduce_plans.clear()
        got = _reduce(device, x.reshape(-1), layout, layout.shape, op, dims)
        want = _reduce(CPU, x.reshape(-1), layout, layout.shape, op, dims)
        _check(got, want, op, dt, what)
        assert len(taken) == 1, what
        rank2 = len(shape) - len(dims) == 1  # the merged view: one kept dim, one reduced
        row_stride, rank, info = taken[0][5]  # the arguments before splits: by value, or the info array
        assert (info == 0 and rank == 0 and row_stride == layout.stride[0]) == (by_value and rank2), what


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f64"])
def test_column_tiles_sum_the_same_whichever_block_finishes_last(backend, dtype, monkeypatch):
    """A float sum of a rank-2 view's column tiles (by value, 32-bit indices) is the same bit
    for bit run after run, with a grid of 3 blocks that take the (tile, slice) items in turn
    (so other blocks arrive last), and through the info array (the dims and strides
    uploaded; size_t indices)."""
    import runtime.gpu.reduce as gpu

    device, dt = g.Device(backend, 0), g.DType(dtype)
    x = np.random.default_rng(21).uniform(-1, 1, (2053, 1000)).astype(dt.numpy)
    layout = g.Layout.contiguous(x.shape)
    first = _reduce(device, x.reshape(-1), layout, x.shape, g.ReduceOp.SUM, (0,))
    again = _reduce(device, x.reshape(-1), layout, x.shape, g.ReduceOp.SUM, (0,))
    monkeypatch.setattr(gpu, "COLUMN_GRID_MAX", 3)
    few_blocks = _reduce(device, x.reshape(-1), layout, x.shape, g.ReduceOp.SUM, (0,))
    monkeypatch.setattr(gpu, "COLUMN_BY_VALUE", False)  # pass 3: the same sums in the same order
    with_info = _reduce(device, x.reshape(-1), layout, x.shape, g.ReduceOp.SUM, (0,))
    assert first.tobytes() == again.tobytes() == few_blocks.tobytes() == with_info.tobytes()
    want = _reduce(CPU, x.reshape(-1), layout, x.shape, g.ReduceOp.SUM, (0,))
    # signs mixed, so a column's sum may cancel to near 0: the rounding is bounded by the sum
    # of |x| (2,053 f32 terms: a few ulps of it), not by the result
    scale = np.abs(x.astype(np.float64)).sum(axis=0, keepdims=True)
    err = np.abs(first.astype(np.float64) - want.astype(np.float64)) / scale
    bound = {"bf16": 8e-3, "f32": 1e-6, "f64": 1e-12}[dtype]  # bf16: the result's rounding, 2^-8
    assert err.max() < bound, f"{backend.value} sum {dtype}: error {err.max():.2e} of sum |x|"


# -- peer copies ---------------------------------------------------------------------------


def _two_devices(backend: g.Backend) -> tuple[g.Device, g.Device]:
    first = g.Device(backend, 0)
    try:
        second = g.Device(backend, 1)
        second.synchronize()
    except (g.OpgenError, ValueError) as exc:
        pytest.skip(f"{backend.value}:1 cannot run here ({exc}): one device only")
    return first, second


@pytest.fixture
def peer_copies(monkeypatch):
    """The peer copies the drivers make, and what each returned."""
    made = []
    for backend in GPU_BACKENDS:
        driver = importlib.import_module(f"runtime.{backend.value}")._rt.driver
        original = driver.peer_copy

        def spy(*args, original=original):
            made.append((args, result := original(*args)))
            return result

        monkeypatch.setattr(driver, "peer_copy", spy)
    return made


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
def test_a_contiguous_view_moves_peer_to_peer_ordered_with_both_streams(backend, peer_copies):
    first, second = _two_devices(backend)
    n = 1 << 24
    x = np.arange(n, dtype=np.float32) % 1000
    layout = g.Layout.contiguous((n,))
    s = first.storage_from_slice(x)
    produced = s.affine(layout, 2.0, 1.0)  # queued on device 0, not waited for
    moved = g.to_device(produced, layout.narrow(0, 16, n - 16), second)
    produced.const_set(-1.0, layout)  # queued on device 0 after the copy: must not reach it
    del produced  # its free, queued on device 0: must not overtake the copy either
    assert [(args[1], args[3], result) for args, result in peer_copies] == [(1, 0, True)]
    got = g.to_numpy(moved, g.Layout.contiguous((n - 16,)))
    np.testing.assert_array_equal(got, (x * 2 + 1)[16:])
    back = g.to_device(moved, g.Layout.contiguous((n - 16,)), first)
    np.testing.assert_array_equal(g.to_numpy(back, g.Layout.contiguous((n - 16,))), (x * 2 + 1)[16:])
    assert len(peer_copies) == 2


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
def test_a_strided_view_is_made_dense_on_its_device_then_copied_peer_to_peer(backend, peer_copies):
    first, second = _two_devices(backend)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    moved = g.to_device(first.storage_from_slice(x), g.Layout.contiguous((3, 4)).transpose(0, 1), second)
    np.testing.assert_array_equal(g.to_numpy(moved, g.Layout.contiguous((4, 3))), x.T)
    assert [(args[1], args[3], args[4], result) for args, result in peer_copies] == [(1, 0, x.nbytes, True)]

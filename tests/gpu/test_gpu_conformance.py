"""GPU conformance: every op a GPU backend runs (its own kernels or a cpu fallback) against
the CPU backend, every declared dtype, contiguous, strided and broadcast layouts. Output
buffers are poisoned first (conftest) so that unwritten elements fail.

Runs where the backend is available (the H100 through the device tool, for cuda); elsewhere
each test skips, saying why."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from pathlib import Path

import generated as g

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = yaml.safe_load((ROOT / "ops.yaml").read_text())
GPU_BACKENDS = [b for b in g.Backend if b is not g.Backend.CPU]
TOLERANCE = {"bf16": 2e-2, "f16": 2e-3, "f32": 1e-5, "f64": 1e-12}
SHAPE = (6, 35)  # odd sizes: tails after the 16-byte vector path


def device_or_skip(backend: g.Backend) -> g.Device:
    reason = backend.unavailable_reason()
    if reason is not None:
        pytest.skip(f"{backend.value}: unavailable: {reason}")
    return g.Device(backend, 0)


def dtypes_of(family: str, op: str) -> list[str]:
    spec = REGISTRY[family][op]["dtypes"]
    return REGISTRY["dtype_sets"].get(spec, spec) if isinstance(spec, str) else spec


def operand(dtype: g.DType, shape, rng, positive=False) -> np.ndarray:
    """Random values; `positive` also keeps integers off zero (integer division by zero is
    undefined in Candle, C and HIP alike: no reference to compare with)."""
    if dtype.kind == "float":
        x = rng.uniform(0.1 if positive else -3, 3, shape)
    elif dtype.kind == "uint":
        x = rng.integers(1, 7 if dtype is g.DType.U8 else 1000, shape)
    else:
        x = rng.integers(1 if positive else -1000, 1000, shape)
    return x.astype(dtype.numpy)


LAYOUTS = {
    "contiguous": lambda shape: (shape, g.Layout.contiguous(shape)),
    "transposed": lambda shape: (shape[::-1], g.Layout.contiguous(shape).transpose(0, 1)),
    "offset": lambda shape: ((shape[0] - 1, shape[1] - 2), g.Layout.contiguous(shape).narrow(0, 1, shape[0] - 1).narrow(1, 2, shape[1] - 2)),
}


def assert_close(got: np.ndarray, want: np.ndarray, dtype: str, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, what
    if dtype in TOLERANCE:
        tol = TOLERANCE[dtype]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def on_both(device: g.Device, array: np.ndarray):
    return g.Device.parse("cpu").storage_from_slice(array), device.storage_from_slice(array)


POSITIVE = {"sqrt", "log", "recip"}
UNARY = [(op, dt) for op in REGISTRY["unary"] for dt in dtypes_of("unary", op)]
BINARY = [(f, op, dt) for f in ("binary", "cmp") for op in REGISTRY[f] for dt in dtypes_of(f, op)]


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("layout_kind", list(LAYOUTS))
@pytest.mark.parametrize("op, dtype", UNARY, ids=[f"{o}-{d}" for o, d in UNARY])
def test_unary(backend, layout_kind, op, dtype):
    device = device_or_skip(backend)
    dt = g.DType(dtype)
    rng = np.random.default_rng(abs(hash((op, dtype, layout_kind))) % 2**32)
    base = operand(dt, SHAPE, rng, positive=op in POSITIVE)
    shape, layout = LAYOUTS[layout_kind](SHAPE)
    cpu, gpu = on_both(device, base)
    want = g.to_numpy(cpu.unary(g.UnaryOp(op), layout), g.Layout.contiguous(shape))
    got = g.to_numpy(gpu.unary(g.UnaryOp(op), layout), g.Layout.contiguous(shape))
    assert_close(got, want, dtype, f"{backend.value} unary {op} {dtype} {layout_kind}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("layout_kind", ["contiguous", "transposed", "broadcast"])
@pytest.mark.parametrize("family, op, dtype", BINARY, ids=[f"{f}-{o}-{d}" for f, o, d in BINARY])
def test_binary_and_cmp(backend, layout_kind, family, op, dtype):
    device = device_or_skip(backend)
    dt = g.DType(dtype)
    rng = np.random.default_rng(abs(hash((family, op, dtype, layout_kind))) % 2**32)
    lhs = operand(dt, SHAPE, rng)
    rhs = operand(dt, SHAPE, rng, positive=op == "div")
    lhs_layout = g.Layout.contiguous(SHAPE)
    rhs_layout = g.Layout.contiguous(SHAPE)
    shape = SHAPE
    if layout_kind == "transposed":
        lhs_layout, rhs_layout, shape = lhs_layout.transpose(0, 1), rhs_layout.transpose(0, 1), SHAPE[::-1]
    elif layout_kind == "broadcast":  # rhs is one row, stride 0 over the rows
        rhs = rhs[:1].copy()
        rhs_layout = g.Layout.contiguous((1, SHAPE[1])).broadcast_as(SHAPE)
    (cl, gl), (cr, gr) = on_both(device, lhs), on_both(device, rhs)
    enum = g.BinaryOp if family == "binary" else g.CmpOp
    method = "binary" if family == "binary" else "cmp"
    want = g.to_numpy(getattr(cl, method)(enum(op), cr, lhs_layout, rhs_layout), g.Layout.contiguous(shape))
    got = g.to_numpy(getattr(gl, method)(enum(op), gr, lhs_layout, rhs_layout), g.Layout.contiguous(shape))
    assert_close(got, want, dtype if family == "binary" else "u8", f"{backend.value} {family} {op} {dtype} {layout_kind}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", [d.value for d in g.DType])
def test_round_trip_and_to_device(backend, dtype):
    device = device_or_skip(backend)
    rng = np.random.default_rng(7)
    x = operand(g.DType(dtype), SHAPE, rng)
    s = device.storage_from_slice(x)
    layout = g.Layout.contiguous(SHAPE)
    assert s.dtype() is g.DType(dtype) and s.device() == device
    np.testing.assert_array_equal(g.to_vec2(s, layout), x)
    np.testing.assert_array_equal(g.to_vec2(s, layout.transpose(0, 1)), x.T)
    back = g.to_device(s, layout.transpose(0, 1), g.Device.parse("cpu"))
    np.testing.assert_array_equal(g.to_vec2(back, g.Layout.contiguous(SHAPE[::-1])), x.T)
    z = device.zeros(SHAPE, g.DType(dtype))
    assert not g.to_vec2(z, layout).any()


# -- the ops on hand-written kernels, and some that fall back to the cpu ------------------

def run_both(device, arrays, call):
    """call(storages...) on the cpu and on `device`; both results as numpy."""
    cpu = g.Device.parse("cpu")
    return [call(*[d.storage_from_slice(a) for a in arrays]) for d in (cpu, device)]


FLOAT = ["bf16", "f16", "f32", "f64"]
ALL = [d.value for d in g.DType]
MAP_LAYOUTS = ["contiguous", "transposed", "offset"]


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("layout_kind", MAP_LAYOUTS)
@pytest.mark.parametrize("op, dtype", [("affine", d) for d in ALL] + [("powf", d) for d in FLOAT]
                         + [("elu", d) for d in FLOAT])
def test_affine_powf_elu(backend, layout_kind, op, dtype):
    device = device_or_skip(backend)
    dt = g.DType(dtype)
    x = operand(dt, SHAPE, np.random.default_rng(3), positive=op == "powf")
    shape, layout = LAYOUTS[layout_kind](SHAPE)
    args = {"affine": (2.0, 1.0) if dt.kind == "float" else (3, 2), "powf": (1.7,), "elu": (0.5,)}[op]
    want, got = run_both(device, [x], lambda s: g.to_numpy(getattr(s, op)(layout, *args), g.Layout.contiguous(shape)))
    assert_close(got, want, dtype, f"{backend.value} {op} {dtype} {layout_kind}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("layout_kind", ["contiguous", "transposed"])
@pytest.mark.parametrize("src, dst", [(s, d) for s in ALL for d in ALL])
def test_to_dtype(backend, layout_kind, src, dst):
    device = device_or_skip(backend)
    x = operand(g.DType(src), SHAPE, np.random.default_rng(4))
    shape, layout = LAYOUTS[layout_kind](SHAPE)
    want, got = run_both(device, [x], lambda s: g.to_numpy(s.to_dtype(layout, g.DType(dst)), g.Layout.contiguous(shape)))
    np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} cast {src}->{dst} {layout_kind}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("cond, dtype", [(c, d) for c in ("u8", "u32", "i64") for d in ALL])
def test_where_cond(backend, cond, dtype):
    device = device_or_skip(backend)
    rng = np.random.default_rng(5)
    c = rng.integers(0, 2, SHAPE).astype(g.DType(cond).numpy)
    t, f = operand(g.DType(dtype), SHAPE, rng), operand(g.DType(dtype), SHAPE, rng)
    layout = g.Layout.contiguous(SHAPE).transpose(0, 1)
    out = g.Layout.contiguous(SHAPE[::-1])
    want, got = run_both(device, [c, t, f], lambda sc, st, sf: g.to_numpy(sc.where_cond(layout, st, layout, sf, layout), out))
    np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} where {cond} {dtype}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ALL)
def test_const_set_copy_strided_copy2d(backend, dtype):
    device = device_or_skip(backend)
    dt = g.DType(dtype)
    rng = np.random.default_rng(6)
    x, y = operand(dt, SHAPE, rng), operand(dt, SHAPE, rng)
    view = g.Layout.contiguous(SHAPE).narrow(1, 3, 20)
    full = g.Layout.contiguous(SHAPE)

    def program(a, b):
        a.const_set(7, view)
        a.copy_strided_src(b, 5, full.transpose(0, 1).narrow(0, 2, 4))
        a.copy2d(b, 3, 10, SHAPE[1], SHAPE[1], 1, 40)
        return g.to_numpy(a, full), g.to_numpy(b, full)

    (wa, wb), (ga, gb) = run_both(device, [x, y], program)
    np.testing.assert_array_equal(ga, wa, err_msg=f"{backend.value} const_set {dtype}")
    np.testing.assert_array_equal(gb, wb, err_msg=f"{backend.value} copy_strided_src / copy2d {dtype}")


REDUCE_DIMS = [(1,), (0,), (0, 1), (1, 0)]


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dims", REDUCE_DIMS, ids=str)
@pytest.mark.parametrize("op, dtype", [(o, d) for o in REGISTRY["reduce"] for d in ALL])
def test_reduce(backend, dims, op, dtype):
    device = device_or_skip(backend)
    dt = g.DType(dtype)
    x = operand(dt, (3, 5, 67), np.random.default_rng(7))
    layout = g.Layout.contiguous((3, 5, 67)).transpose(0, 2)  # a strided view, shape (67, 5, 3)
    out_shape = tuple(1 if i in {d % 3 for d in dims} else n for i, n in enumerate(layout.shape))
    want, got = run_both(device, [x], lambda s: g.to_numpy(s.reduce_op(g.ReduceOp(op), layout, dims),
                                                           g.Layout.contiguous(out_shape)))
    if op == "sum" and dt.kind == "float":
        assert_close(got, want, dtype, f"{backend.value} {op} {dtype} {dims}")
    else:
        np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} {op} {dtype} {dims}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_ops_that_fall_back_to_the_cpu(backend, dtype):
    """conv2d, matmul, index_select, gather, max_pool2d: through host memory for now."""
    device = device_or_skip(backend)
    dt = g.DType(dtype)
    rng = np.random.default_rng(8)
    img, ker = operand(dt, (2, 3, 9, 9), rng), operand(dt, (4, 3, 3, 3), rng)
    p = g.ConvParams2D(b_size=2, i_h=9, i_w=9, k_h=3, k_w=3, c_out=4, c_in=3, padding=1, stride=2)
    li, lk = g.Layout.contiguous(img.shape), g.Layout.contiguous(ker.shape)
    out = g.Layout.contiguous((2, 4, p.out_h(), p.out_w()))
    want, got = run_both(device, [img, ker], lambda a, k: g.to_numpy(a.conv2d(li, k, lk, p), out))
    assert_close(got, want, dtype, f"{backend.value} conv2d {dtype}")
    a, b = operand(dt, (2, 8, 16), rng), operand(dt, (2, 16, 5), rng)
    la, lb = g.Layout.contiguous(a.shape), g.Layout.contiguous(b.shape)
    want, got = run_both(device, [a, b], lambda x, y: g.to_numpy(x.matmul(y, g.MatmulDims(2, 8, 5, 16), la, lb),
                                                                   g.Layout.contiguous((2, 8, 5))))
    assert_close(got, want, dtype, f"{backend.value} matmul {dtype}")
    ids = np.array([3, 0, 7, 7], np.uint32)
    want, got = run_both(device, [a, ids], lambda x, i: g.to_numpy(
        x.index_select(i, la, g.Layout.contiguous((4,)), 2), g.Layout.contiguous((2, 8, 4))))
    np.testing.assert_array_equal(got, want)

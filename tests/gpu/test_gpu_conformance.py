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

"""GPU conformance: every op a GPU backend runs (its own kernels or a cpu fallback) against
the CPU backend, every declared dtype, contiguous, strided and broadcast layouts. Output
buffers are poisoned first (conftest) so that unwritten elements fail.

Runs where the backend is available (the H100 through the device tool, for cuda); elsewhere
each test skips, saying why."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import generated as g

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = yaml.safe_load((ROOT / "ops.yaml").read_text())
_REASONS = {b: b.unavailable_reason() for b in g.Backend if b is not g.Backend.CPU}
# Only the GPU backends that can run here; with none, the module is one skip that says why.
GPU_BACKENDS = [b for b, reason in _REASONS.items() if reason is None]
# Of those, the ones that run the HIP kernels on the shared GPU runtime (runtime/gpu): what is
# about those kernels or that runtime (deferred id checks, the GEMM path) is tested on these.
HIP_BACKENDS = [b for b in GPU_BACKENDS if REGISTRY["backends"][b.value].get("kernels") == "hip"]
if not GPU_BACKENDS:
    pytest.skip(
        "no GPU backend can run here: " + "; ".join(f"{b.value}: {r}" for b, r in _REASONS.items()),
        allow_module_level=True,
    )
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
    "offset": lambda shape: (
        (shape[0] - 1, shape[1] - 2),
        g.Layout.contiguous(shape).narrow(0, 1, shape[0] - 1).narrow(1, 2, shape[1] - 2),
    ),
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
    assert_close(
        got, want, dtype if family == "binary" else "u8", f"{backend.value} {family} {op} {dtype} {layout_kind}"
    )


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
    dense = g.to_device(s, layout.transpose(0, 1), device)  # copied on the device
    np.testing.assert_array_equal(g.to_vec2(dense, g.Layout.contiguous(SHAPE[::-1])), x.T)
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
@pytest.mark.parametrize(
    "op, dtype", [("affine", d) for d in ALL] + [("powf", d) for d in FLOAT] + [("elu", d) for d in FLOAT]
)
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
    want, got = run_both(
        device, [x], lambda s: g.to_numpy(s.to_dtype(layout, g.DType(dst)), g.Layout.contiguous(shape))
    )
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
    want, got = run_both(
        device, [c, t, f], lambda sc, st, sf: g.to_numpy(sc.where_cond(layout, st, layout, sf, layout), out)
    )
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
    want, got = run_both(
        device, [x], lambda s: g.to_numpy(s.reduce_op(g.ReduceOp(op), layout, dims), g.Layout.contiguous(out_shape))
    )
    if op == "sum" and dt.kind == "float":
        assert_close(got, want, dtype, f"{backend.value} {op} {dtype} {dims}")
    else:
        np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} {op} {dtype} {dims}")


NN_DTYPES = ["f32", "bf16", "f16", "f64", "i64", "u8"]


def small(dt: g.DType, shape, rng):
    """Small values: integer convolutions stay exact and in range."""
    if dt.kind == "float":
        return rng.uniform(-1, 1, shape).astype(dt.numpy)
    return rng.integers(0 if dt.kind == "uint" else -3, 4, shape).astype(dt.numpy)


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", NN_DTYPES)
def test_convolutions(backend, dtype):
    device = device_or_skip(backend)
    dt = g.DType(dtype)
    rng = np.random.default_rng(9)
    cases = [
        (
            "conv1d",
            (2, 4, 11),
            (3, 4, 3),
            g.ConvParams1D(b_size=2, l_in=11, c_out=3, c_in=4, k_size=3, padding=1, stride=2, dilation=2),
        ),
        (
            "conv_transpose1d",
            (2, 4, 7),
            (4, 3, 3),
            g.ConvTransposeParams1D(
                b_size=2, l_in=7, c_out=3, c_in=4, k_size=3, padding=1, output_padding=1, stride=2, dilation=2
            ),
        ),
        (
            "conv2d",
            (2, 2, 9, 8),
            (3, 2, 3, 2),
            g.ConvParams2D(b_size=2, i_h=9, i_w=8, k_h=3, k_w=2, c_out=3, c_in=2, padding=1, stride=2),
        ),
        (
            "conv_transpose2d",
            (1, 3, 5, 4),
            (3, 2, 3, 2),
            g.ConvTransposeParams2D(
                b_size=1, i_h=5, i_w=4, k_h=3, k_w=2, c_out=2, c_in=3, padding=1, output_padding=1, stride=2
            ),
        ),
    ]
    for op, xs, ks, p in cases:
        x, k = small(dt, xs, rng), small(dt, ks, rng)
        lx, lk = g.Layout.contiguous(xs), g.Layout.contiguous(ks)
        out_shape = (p.b_size, p.c_out, p.l_out()) if len(xs) == 3 else (p.b_size, p.c_out, p.out_h(), p.out_w())
        want, got = run_both(
            device, [x, k], lambda a, b: g.to_numpy(getattr(a, op)(lx, b, lk, p), g.Layout.contiguous(out_shape))
        )
        assert_close(got, want, dtype, f"{backend.value} {op} {dtype}")


def _permuted(shape, order):
    """A strided view of logical shape `shape`: stored with its dims in `order`, permuted back."""
    stored = tuple(shape[i] for i in order)
    return stored, g.Layout.contiguous(stored).permute(tuple(order.index(i) for i in range(len(shape))))


@pytest.mark.parametrize("backend", HIP_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16"])
@pytest.mark.parametrize("chunks", ["one chunk", "several chunks"])
def test_convolutions_through_the_blas(backend, dtype, chunks, monkeypatch):
    """The GEMM path (im2col + BLAS, BLAS + col2im) on larger shapes than above: strided
    inputs and kernels, stride, dilation, output padding, 1-D and 2-D, batches in chunks."""
    import runtime.gpu.conv

    device = device_or_skip(backend)
    runtime_ = __import__(f"runtime.{backend.value}", fromlist=["_rt"])._rt
    if not runtime_._has_blas():
        pytest.skip(f"{backend.value}: no BLAS here: the direct kernels run (test_convolutions)")
    if runtime_.vendor_nn is not None:  # cuDNN would take these (tests/gpu/test_cudnn_gpu.py): the GEMM path here
        monkeypatch.setattr(runtime_.vendor_nn, "enabled", False)
    dt = g.DType(dtype)
    rng = np.random.default_rng(21)
    if chunks != "one chunk":  # columns of 2 batches of the second case: chunks of 1 to 3 batches
        monkeypatch.setattr(runtime.gpu.conv, "CONV_COLUMN_BYTES", 2 * 16 * 3 * 3 * 17 * 15 * dt.numpy.itemsize)
    cases = [
        (
            "conv2d",
            (5, 16, 33, 31),
            (2, 0, 3, 1),
            (8, 16, 3, 3),
            (0, 2, 1, 3),
            g.ConvParams2D(b_size=5, i_h=33, i_w=31, k_h=3, k_w=3, c_out=8, c_in=16, padding=2, stride=2, dilation=2),
        ),
        (
            "conv2d",
            (5, 16, 17, 15),
            (0, 1, 2, 3),
            (8, 16, 3, 3),
            (0, 1, 2, 3),
            g.ConvParams2D(b_size=5, i_h=17, i_w=15, k_h=3, k_w=3, c_out=8, c_in=16, padding=1),
        ),
        (
            "conv1d",
            (5, 16, 70),
            (2, 0, 1),
            (8, 16, 5),
            (1, 0, 2),
            g.ConvParams1D(b_size=5, l_in=70, c_out=8, c_in=16, k_size=5, padding=3, stride=3, dilation=2),
        ),
        (
            "conv_transpose2d",
            (5, 16, 11, 9),
            (0, 2, 3, 1),
            (16, 6, 3, 2),
            (1, 0, 2, 3),
            g.ConvTransposeParams2D(
                b_size=5,
                i_h=11,
                i_w=9,
                k_h=3,
                k_w=2,
                c_out=6,
                c_in=16,
                padding=1,
                output_padding=1,
                stride=2,
                dilation=2,
            ),
        ),
        (
            "conv_transpose2d",
            (5, 16, 12, 10),
            (1, 0, 2, 3),
            (16, 6, 3, 3),
            (0, 2, 3, 1),  # stride 1: im2col
            g.ConvTransposeParams2D(b_size=5, i_h=12, i_w=10, k_h=3, k_w=3, c_out=6, c_in=16, padding=1, dilation=2),
        ),
        (
            "conv_transpose1d",
            (5, 16, 30),
            (2, 1, 0),
            (16, 6, 5),
            (1, 0, 2),
            g.ConvTransposeParams1D(b_size=5, l_in=30, c_out=6, c_in=16, k_size=5, padding=3),
        ),
        (
            "conv_transpose1d",
            (5, 16, 40),
            (0, 2, 1),
            (16, 6, 4),
            (2, 1, 0),
            g.ConvTransposeParams1D(
                b_size=5, l_in=40, c_out=6, c_in=16, k_size=4, padding=2, output_padding=2, stride=3
            ),
        ),
    ]
    for op, xs, x_order, ks, k_order, p in cases:
        (x_stored, lx), (k_stored, lk) = _permuted(xs, x_order), _permuted(ks, k_order)
        x, k = small(dt, x_stored, rng), small(dt, k_stored, rng)
        out_shape = (p.b_size, p.c_out, p.l_out()) if len(xs) == 3 else (p.b_size, p.c_out, p.out_h(), p.out_w())
        want, got = run_both(
            device, [x, k], lambda a, b: g.to_numpy(getattr(a, op)(lx, b, lk, p), g.Layout.contiguous(out_shape))
        )
        assert_close(got, want, dtype, f"{backend.value} {op} {dtype} {xs} by {ks}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", NN_DTYPES)
def test_pooling_and_upsampling(backend, dtype):
    device = device_or_skip(backend)
    dt = g.DType(dtype)
    x = operand(dt, (2, 3, 7, 9), np.random.default_rng(10))
    layout = g.Layout.contiguous((2, 3, 7, 9)).transpose(2, 3)  # (2, 3, 9, 7), strided
    for op in ("avg_pool2d", "max_pool2d"):
        want, got = run_both(
            device, [x], lambda s: g.to_numpy(getattr(s, op)(layout, (3, 2), (2, 3)), g.Layout.contiguous((2, 3, 4, 2)))
        )
        if op == "avg_pool2d" and dt.kind == "float":
            assert_close(got, want, dtype, f"{backend.value} {op} {dtype}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} {op} {dtype}")
    l1 = g.Layout.contiguous((2, 3, 63)).narrow(2, 4, 5)
    want, got = run_both(
        device, [x], lambda s: g.to_numpy(s.upsample_nearest1d(l1, 12), g.Layout.contiguous((2, 3, 12)))
    )
    np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} upsample_nearest1d {dtype}")
    want, got = run_both(
        device, [x], lambda s: g.to_numpy(s.upsample_nearest2d(layout, 11, 13), g.Layout.contiguous((2, 3, 11, 13)))
    )
    np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} upsample_nearest2d {dtype}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize(
    "ids_dtype, dtype", [(i, d) for i in ("u8", "u32", "i64") for d in ("f32", "bf16", "i64", "u8")]
)
def test_indexing(backend, ids_dtype, dtype):
    device = device_or_skip(backend)
    dt, it = g.DType(dtype), g.DType(ids_dtype).numpy
    rng = np.random.default_rng(11)
    x = operand(dt, (6, 5, 4), rng)
    lx = g.Layout.contiguous((6, 5, 4))
    strided = g.Layout.contiguous((4, 5, 6)).permute((2, 1, 0))  # (6, 5, 4), strided

    ids = np.array([4, 0, 2, 2], it)
    li = g.Layout.contiguous((4,))
    for layout in (lx, strided):
        want, got = run_both(
            device, [x, ids], lambda a, i: g.to_numpy(a.index_select(i, layout, li, 1), g.Layout.contiguous((6, 4, 4)))
        )
        np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} index_select {ids_dtype} {dtype}")

    gids = rng.integers(0, 6, (3, 4, 2)).astype(it)
    lg = g.Layout.contiguous(gids.shape)
    want, got = run_both(device, [x, gids], lambda a, i: g.to_numpy(a.gather(strided, i, lg, 0), lg))
    np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} gather {ids_dtype} {dtype}")

    sids = rng.integers(0, 5, (5, 3, 4)).astype(it)  # duplicates along dim 1
    src = operand(dt, (4, 3, 5), rng)
    lsrc = g.Layout.contiguous((4, 3, 5)).permute((2, 1, 0))  # (5, 3, 4), strided
    for op in ("scatter_set", "scatter_add"):

        def program(a, i, s):
            getattr(a, op)(lx, i, g.Layout.contiguous(sids.shape), s, lsrc, 1)
            return g.to_numpy(a, lx)

        want, got = run_both(device, [x, sids, src], program)
        np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} {op} {ids_dtype} {dtype}")

    aids = np.array([1, 4, 1, 0], it)
    asrc = operand(dt, (6, 4, 4), rng)
    want, got = run_both(
        device,
        [x, aids, asrc],
        lambda a, i, s: g.to_numpy(a.index_add(lx, i, li, s, g.Layout.contiguous((6, 4, 4)), 1), lx),
    )
    np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} index_add {ids_dtype} {dtype}")


def _index_op_calls(device, it, bad_id):
    """Each index op of a (3, 4) f32 x with one id `bad_id` among good ones along dim 0:
    (op, call) where call() launches it and returns what to read back."""
    x = device.storage_from_slice(np.arange(12, dtype=np.float32).reshape(3, 4))
    lx = g.Layout.contiguous((3, 4))
    ids = device.storage_from_slice(np.array([0, bad_id], it))
    gids = device.storage_from_slice(np.array([[0, 1, 2, 0], [1, bad_id, 0, 0]], it))
    lg = g.Layout.contiguous((2, 4))
    src = device.storage_from_slice(np.ones((2, 4), np.float32))

    def in_place(op):
        getattr(x, op)(lx, gids, lg, src, lg, 0)
        return x, lx

    return [
        ("index_select", lambda: (x.index_select(ids, lx, g.Layout.contiguous((2,)), 0), lg)),
        ("gather", lambda: (x.gather(lx, gids, lg, 0), lg)),
        ("scatter_set", lambda: in_place("scatter_set")),
        ("scatter_add", lambda: in_place("scatter_add")),
        ("index_add", lambda: (x.index_add(lx, ids, g.Layout.contiguous((2,)), src, lg, 0), lx)),
    ]


@pytest.mark.parametrize("backend", HIP_BACKENDS, ids=str)
@pytest.mark.parametrize("ids_dtype, bad_id", [("u32", 3), ("u8", 200), ("i64", -1), ("i64", 2**40)])
@pytest.mark.parametrize("reader", ["to_numpy", "synchronize"])
def test_out_of_range_ids_raise_at_the_next_synchronization(backend, ids_dtype, bad_id, reader):
    """The kernels check the ids (no host sync in the op): the typed error naming the op
    comes at the next synchronization point, once, and the flags are clear after it."""
    device = device_or_skip(backend)
    for op, call in _index_op_calls(device, g.DType(ids_dtype).numpy, bad_id):
        out, layout = call()  # queued: no error yet
        with pytest.raises(g.ShapeMismatch, match=f"{op} on {backend.value}: expected shape ids in \\[0, 3\\)"):
            if reader == "to_numpy":
                g.to_numpy(out, layout)
            else:
                device.synchronize()
        device.synchronize()  # reported once: nothing left to raise
        g.to_numpy(out, layout)


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
def test_the_first_failed_index_op_is_named_and_good_ones_pass(backend):
    device = device_or_skip(backend)
    calls = dict(_index_op_calls(device, np.uint32, 2))  # all ids good
    for op in calls:
        calls[op]()
    device.synchronize()  # no error
    bad = dict(_index_op_calls(device, np.uint32, 7))
    calls["gather"]()
    bad["scatter_add"]()
    bad["index_select"]()
    with pytest.raises(g.ShapeMismatch, match="scatter_add on"):
        device.synchronize()
    device.synchronize()


MATMUL_LAYOUTS = {
    # name: (lhs shape as stored, lhs layout, rhs shape as stored, rhs layout), b=2 m=8 k=16 n=5
    "contiguous": ((2, 8, 16), lambda s: g.Layout.contiguous(s), (2, 16, 5), lambda s: g.Layout.contiguous(s)),
    "rhs transposed": (
        (2, 8, 16),
        lambda s: g.Layout.contiguous(s),
        (2, 5, 16),
        lambda s: g.Layout.contiguous(s).transpose(1, 2),
    ),
    "lhs transposed": (
        (2, 16, 8),
        lambda s: g.Layout.contiguous(s).transpose(1, 2),
        (2, 16, 5),
        lambda s: g.Layout.contiguous(s),
    ),
    "rhs broadcast": (
        (2, 8, 16),
        lambda s: g.Layout.contiguous(s),
        (16, 5),
        lambda s: g.Layout.contiguous(s).broadcast_as((2, 16, 5)),
    ),
    "batch-strided": (
        (8, 2, 16),
        lambda s: g.Layout.contiguous(s).transpose(0, 1),
        (2, 16, 5),
        lambda s: g.Layout.contiguous(s),
    ),
}


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("kind", list(MATMUL_LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT)
def test_matmul(backend, kind, dtype):
    """Through the vendor BLAS where the backend has one, else the cpu fallback."""
    device = device_or_skip(backend)
    dt = g.DType(dtype)
    rng = np.random.default_rng(8)
    a_shape, a_layout, b_shape, b_layout = MATMUL_LAYOUTS[kind]
    a, b = operand(dt, a_shape, rng), operand(dt, b_shape, rng)
    la, lb = a_layout(a_shape), b_layout(b_shape)
    want, got = run_both(
        device,
        [a, b],
        lambda x, y: g.to_numpy(x.matmul(y, g.MatmulDims(2, 8, 5, 16), la, lb), g.Layout.contiguous((2, 8, 5))),
    )
    assert_close(got, want, dtype, f"{backend.value} matmul {dtype} {kind}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f64"])
def test_random_storages_are_reproducible(backend, dtype):
    device = device_or_skip(backend)
    layout = g.Layout.contiguous((4096,))

    def draw():
        device.set_seed(42)
        u = g.to_vec1(device.rand_uniform((4096,), g.DType(dtype), -2.0, 3.0), layout).astype(np.float64)
        n = g.to_vec1(device.rand_normal((4096,), g.DType(dtype), 1.0, 0.5), layout).astype(np.float64)
        return u, n

    (u1, n1), (u2, n2) = draw(), draw()
    np.testing.assert_array_equal(u1, u2)
    np.testing.assert_array_equal(n1, n2)
    assert -2 <= u1.min() and u1.max() <= 3 and abs(u1.mean() - 0.5) < 0.1
    assert abs(n1.mean() - 1.0) < 0.05 and abs(n1.std() - 0.5) < 0.05
    with pytest.raises(g.DTypeMismatch, match=f"rand_uniform on {backend.value}: expected dtype"):
        device.rand_uniform((4,), g.DType.U8, 0.0, 1.0)


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dims", [(1,), (0, 1), (0,)], ids=str)
@pytest.mark.parametrize("op, dtype", [(o, d) for o in REGISTRY["reduce"] for d in ("f32", "bf16", "i64", "u8")])
def test_reduce_long_groups(backend, dims, op, dtype):
    """Few, long groups: the reductions split into chunks and finish in a second pass."""
    device = device_or_skip(backend)
    dt = g.DType(dtype)
    shape = (3, 1 << 18)
    x = operand(dt, shape, np.random.default_rng(12), positive=True)  # sums without cancellation
    layout = g.Layout.contiguous(shape)
    out_shape = tuple(1 if i in dims else n for i, n in enumerate(shape))
    want, got = run_both(
        device, [x], lambda s: g.to_numpy(s.reduce_op(g.ReduceOp(op), layout, dims), g.Layout.contiguous(out_shape))
    )
    if op == "sum" and dt.kind == "float":
        assert_close(got, want, dtype, f"{backend.value} {op} {dtype} {dims}")
    else:
        np.testing.assert_array_equal(got, want, err_msg=f"{backend.value} {op} {dtype} {dims}")


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "i64"])
def test_to_device_between_two_gpus(backend, dtype):
    """A storage moved from device 0 to device 1 of one host, and ops there."""
    first = device_or_skip(backend)
    x = operand(g.DType(dtype), SHAPE, np.random.default_rng(13))
    try:
        second = g.Device(backend, 1)
        second.synchronize()
    except (g.OpgenError, ValueError) as exc:
        pytest.skip(f"{backend.value}:1 cannot run here ({exc}): one device only")
    s = first.storage_from_slice(x)
    layout = g.Layout.contiguous(SHAPE)
    for view, expect in ((layout, x), (layout.transpose(0, 1), x.T)):
        moved = g.to_device(s, view, second)
        assert moved.device() == second
        out = g.Layout.contiguous(expect.shape)
        np.testing.assert_array_equal(g.to_numpy(moved, out), expect)
        doubled = moved.binary(g.BinaryOp.ADD, moved, out, out)  # runs on device 1
        np.testing.assert_array_equal(g.to_numpy(doubled, out), expect + expect)
        back = g.to_device(doubled, out, first)
        assert back.device() == first
        np.testing.assert_array_equal(g.to_numpy(back, out), expect + expect)
    with pytest.raises(g.DeviceMismatch):
        s.binary(g.BinaryOp.ADD, g.to_device(s, layout, second), layout, layout)

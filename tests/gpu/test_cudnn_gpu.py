"""GPU conformance of the cuDNN path (runtime/gpu/cudnn.py) on cuda, against the cpu
backend with the suite's tolerances: convolutions and their transposes (1-D and 2-D, stride,
padding, dilation, output padding; strided, offset and unaligned inputs and kernels) in every
dtype it takes, and attention (bf16 / f16, full and causal, sq < skv and sq = skv, strided
views read in place and views copied first). Each case asserts that cuDNN ran it (its call
count grew), and runs once more with cuDNN off (the kernels and the BLAS path), which must
agree too; cases cuDNN does not take (causal with more queries than keys, f32 attention)
must fall back and still be right.

Skips (saying why) where cuda cannot run, or cuDNN does not load there."""

from __future__ import annotations

import math

import numpy as np
import pytest

import generated as g

_REASON = g.Backend.CUDA.unavailable_reason()
if _REASON is not None:
    pytest.skip(f"cuda: unavailable: {_REASON}", allow_module_level=True)

from runtime.cuda import _rt  # noqa: E402
from runtime.gpu import cudnn as gpu_cudnn  # noqa: E402

VENDOR = _rt.vendor_nn
if VENDOR is None or VENDOR.unavailable() is not None:
    pytest.skip(f"cuDNN: {VENDOR.unavailable() if VENDOR else 'no vendor library'}", allow_module_level=True)

CPU, CUDA = g.Device.parse("cpu"), g.Device.parse("cuda:0")
TOLERANCE = {"bf16": 2e-2, "f16": 2e-3, "f32": 1e-5, "f64": 1e-12}
NAMES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64"}
CONV_DTYPES = sorted({NAMES[d] for dtypes in gpu_cudnn.CONV_DTYPES.values() for d in dtypes})
SDPA_DTYPES = sorted(NAMES[d] for d in gpu_cudnn.SDPA_DTYPES)


def assert_close(got: np.ndarray, want: np.ndarray, dtype: str, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, what
    tol = TOLERANCE[dtype]
    want64, got64 = want.astype(np.float64), got.astype(np.float64)
    scale = float(np.abs(want64).max()) if want64.size else 1.0
    np.testing.assert_allclose(got64, want64, rtol=tol, atol=tol * scale, err_msg=what)


def _calls(op: str) -> int:
    return VENDOR.calls.get(op, 0)


def _stored(rng, dtype: str, shape, kind: str):
    """(host array, layout of a `shape` view of it): contiguous; offset: contiguous from element
    8 (still 16-byte aligned: read in place); unaligned: from element 1 (copied first);
    permuted: stored with its dims reversed but the first (copied first)."""
    dt = g.DType(dtype).numpy
    n = math.prod(shape)
    if kind == "contiguous":
        return rng.uniform(-1, 1, shape).astype(dt), g.Layout.contiguous(shape)
    if kind in ("offset", "unaligned"):
        start = 8 if kind == "offset" else 1
        return rng.uniform(-1, 1, n + start).astype(dt), g.Layout.contiguous(shape, start_offset=start)
    if kind == "permuted":
        order = (0, *range(len(shape) - 1, 0, -1))
        stored = tuple(shape[i] for i in order)
        return rng.uniform(-1, 1, stored).astype(dt), g.Layout.contiguous(stored).permute(
            tuple(order.index(i) for i in range(len(shape)))
        )
    raise ValueError(kind)


CONV_CASES = [  # op, x shape, kernel shape, params
    (
        "conv2d",
        (4, 16, 17, 15),
        (8, 16, 3, 3),
        g.ConvParams2D(b_size=4, i_h=17, i_w=15, k_h=3, k_w=3, c_out=8, c_in=16, padding=1),
    ),
    (
        "conv2d",
        (3, 8, 33, 31),
        (12, 8, 3, 2),
        g.ConvParams2D(b_size=3, i_h=33, i_w=31, k_h=3, k_w=2, c_out=12, c_in=8, padding=2, stride=2, dilation=2),
    ),
    (
        "conv1d",
        (3, 16, 70),
        (8, 16, 5),
        g.ConvParams1D(b_size=3, l_in=70, c_out=8, c_in=16, k_size=5, padding=3, stride=3, dilation=2),
    ),
    ("conv1d", (2, 8, 4096), (16, 8, 3), g.ConvParams1D(b_size=2, l_in=4096, c_out=16, c_in=8, k_size=3, padding=1)),
    (
        "conv_transpose2d",
        (3, 16, 11, 9),
        (16, 8, 3, 2),
        g.ConvTransposeParams2D(
            b_size=3, i_h=11, i_w=9, k_h=3, k_w=2, c_out=8, c_in=16, padding=1, output_padding=1, stride=2, dilation=2
        ),
    ),
    (
        "conv_transpose2d",
        (2, 16, 12, 10),
        (16, 8, 3, 3),
        g.ConvTransposeParams2D(b_size=2, i_h=12, i_w=10, k_h=3, k_w=3, c_out=8, c_in=16, padding=1),
    ),
    (
        "conv_transpose2d",
        (2, 8, 14, 14),
        (8, 8, 4, 4),
        g.ConvTransposeParams2D(b_size=2, i_h=14, i_w=14, k_h=4, k_w=4, c_out=8, c_in=8, padding=1, stride=2),
    ),
    (
        "conv_transpose1d",
        (3, 16, 40),
        (16, 8, 4),
        g.ConvTransposeParams1D(b_size=3, l_in=40, c_out=8, c_in=16, k_size=4, padding=2, output_padding=2, stride=3),
    ),
    (
        "conv_transpose1d",
        (2, 8, 30),
        (8, 8, 5),
        g.ConvTransposeParams1D(b_size=2, l_in=30, c_out=8, c_in=8, k_size=5, padding=3),
    ),
]


def _conv_both(op, x, lx, k, lk, p):
    out_shape = (p.b_size, p.c_out, p.l_out()) if len(lx.shape) == 3 else (p.b_size, p.c_out, p.out_h(), p.out_w())
    results = []
    for dev in (CPU, CUDA):
        s = getattr(dev.storage_from_slice(x), op)(lx, dev.storage_from_slice(k), lk, p)
        results.append(g.to_numpy(s, g.Layout.contiguous(out_shape)))
    return results


@pytest.mark.parametrize("views", ["contiguous", "offset", "unaligned", "permuted"])
@pytest.mark.parametrize("case", range(len(CONV_CASES)), ids=lambda i: f"{CONV_CASES[i][0]}-{i}")
@pytest.mark.parametrize("dtype", CONV_DTYPES)
def test_convolutions_through_cudnn(dtype, case, views, monkeypatch):
    op, xs, ks, p = CONV_CASES[case]
    if g.DType(dtype).numpy.name not in gpu_cudnn.CONV_DTYPES[op]:
        pytest.skip(f"cuDNN does not take {op} {dtype}")
    rng = np.random.default_rng(31 + case)
    (x, lx), (k, lk) = (
        _stored(rng, dtype, xs, views),
        _stored(rng, dtype, ks, "contiguous" if views == "offset" else views),
    )
    before = _calls(op)
    want, got = _conv_both(op, x, lx, k, lk, p)
    assert _calls(op) == before + 1, f"cuDNN did not run {op} {dtype} {views}"
    assert_close(got, want, dtype, f"cuDNN {op} {dtype} {xs} by {ks} {views}")
    monkeypatch.setattr(VENDOR, "enabled", False)
    want, own = _conv_both(op, x, lx, k, lk, p)
    assert _calls(op) == before + 1
    assert_close(own, want, dtype, f"without cuDNN: {op} {dtype} {xs} by {ks} {views}")


@pytest.mark.parametrize("setting", ["AUTOTUNE", "HEURISTICS"])
@pytest.mark.parametrize("case", range(len(CONV_CASES)), ids=lambda i: f"{CONV_CASES[i][0]}-{i}")
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_convolutions_through_cudnn_with_other_settings(dtype, case, setting, monkeypatch):
    """Autotuning on (every plan timed, the fastest kept), heuristics B: right either way
    (the tests above ran the default: the heuristics' first plan, heuristics A)."""
    op, xs, ks, p = CONV_CASES[case]
    if setting == "HEURISTICS":
        monkeypatch.setattr(gpu_cudnn, setting, ("B", "FALLBACK"))
    else:
        monkeypatch.setattr(_rt.switches, "autotune", True)
    rng = np.random.default_rng(41 + case)
    (x, lx), (k, lk) = _stored(rng, dtype, xs, "contiguous"), _stored(rng, dtype, ks, "permuted")
    before = _calls(op)
    want, got = _conv_both(op, x, lx, k, lk, p)
    assert _calls(op) == before + 1
    assert_close(got, want, dtype, f"cuDNN {op} {dtype} {xs} by {ks} {setting}")


def test_a_convolution_plan_is_built_once_per_shape():
    rng = np.random.default_rng(5)
    op, xs, ks, p = CONV_CASES[0]
    (x, lx), (k, lk) = _stored(rng, "f32", xs, "contiguous"), _stored(rng, "f32", ks, "contiguous")
    _conv_both(op, x, lx, k, lk, p)
    plans = len(VENDOR._plans)
    for _ in range(3):
        _conv_both(op, x, lx, k, lk, p)
    assert len(VENDOR._plans) == plans


SDPA_CASES = {  # (b, h, sq, skv, d)
    "square-64": (2, 3, 77, 77, 64),
    "kv-cache-128": (1, 2, 33, 300, 128),  # sq < skv: causal bottom-right
    "tiles-128": (1, 2, 128, 256, 128),
    "small-d": (2, 2, 9, 17, 16),
    "one-query": (2, 2, 1, 1000, 64),
}


def _sdpa_both(operands, scale, causal):
    op = g.nn.Sdpa(scale=scale, causal=causal)
    results = []
    for dev in (CPU, CUDA):
        (q, lq), (k, lk), (v, lv) = operands
        s, shape = dev.storage_from_slice(q).apply_op3(
            lq, dev.storage_from_slice(k), lk, dev.storage_from_slice(v), lv, op
        )
        results.append(g.to_numpy(s, g.Layout.contiguous(shape)))
    return results


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", list(SDPA_CASES))
@pytest.mark.parametrize("dtype", SDPA_DTYPES)
def test_attention_through_cudnn(dtype, shape, causal, monkeypatch):
    b, h, sq, skv, d = SDPA_CASES[shape]
    rng = np.random.default_rng(8)
    operands = [_stored(rng, dtype, (b, h, s, d), "contiguous") for s in (sq, skv, skv)]
    before = _calls("sdpa")
    want, got = _sdpa_both(operands, 1 / math.sqrt(d), causal)
    assert _calls("sdpa") == before + 1
    assert_close(got, want, dtype, f"cuDNN sdpa {dtype} {shape} causal={causal}")
    monkeypatch.setattr(VENDOR, "enabled", False)
    want, own = _sdpa_both(operands, 1 / math.sqrt(d), causal)
    assert_close(own, want, dtype, f"without cuDNN: sdpa {dtype} {shape} causal={causal}")


@pytest.mark.parametrize("dtype", SDPA_DTYPES)
def test_attention_of_strided_views(dtype):
    """q stored (b, sq, h, d) and viewed (b, h, sq, d), k and v likewise: read in place with
    their strides; then k transposed in its last two dims and v from element 1 (copied)."""
    b, h, sq, skv, d = 2, 4, 40, 56, 64
    rng = np.random.default_rng(9)
    dt = g.DType(dtype).numpy
    heads_inside = []
    for s in (sq, skv, skv):
        stored = (b, s, h, d)
        heads_inside.append((rng.uniform(-1, 1, stored).astype(dt), g.Layout.contiguous(stored).transpose(1, 2)))
    for causal in (False, True):
        before = _calls("sdpa")
        want, got = _sdpa_both(heads_inside, 0.125, causal)
        assert _calls("sdpa") == before + 1
        assert_close(got, want, dtype, f"cuDNN sdpa of (b, s, h, d) views {dtype} causal={causal}")
    stored_k = (b, h, d, skv)
    k = rng.uniform(-1, 1, stored_k).astype(dt), g.Layout.contiguous(stored_k).transpose(2, 3)
    v = _stored(rng, dtype, (b, h, skv, d), "unaligned")
    before = _calls("sdpa")
    want, got = _sdpa_both([heads_inside[0], k, v], 0.125, True)
    assert _calls("sdpa") == before + 1
    assert_close(got, want, dtype, f"cuDNN sdpa of copied views {dtype}")


@pytest.mark.parametrize("dtype", ["f32", *SDPA_DTYPES])
def test_attention_cudnn_does_not_take_falls_back(dtype):
    """Causal with more queries than keys (the first queries see no key: zeros, as the cpu)
    and f32: the other paths run, right."""
    rng = np.random.default_rng(12)
    b, h, sq, skv, d = 1, 2, 70, 40, 64
    cases = [((sq, skv, skv), True)] + ([((30, 30, 30), False)] if dtype == "f32" else [])
    for sizes, causal in cases:
        operands = [_stored(rng, dtype, (b, h, s, d), "contiguous") for s in sizes]
        before = _calls("sdpa")
        want, got = _sdpa_both(operands, 1 / math.sqrt(d), causal)
        assert _calls("sdpa") == before
        assert_close(got, want, dtype, f"sdpa {dtype} {sizes} causal={causal} (not cuDNN)")


FLASH_SHAPES = {  # test_nn_gpu.py's cases of hip/attention.hip's fused kernel, which cuDNN now takes first
    "flash-64": (2, 3, 77, 77, 64),
    "flash-64-one-key": (1, 2, 5, 1, 64),
    "flash-128-kv-cache": (1, 2, 33, 300, 128),
    "flash-128-more-queries": (1, 2, 130, 70, 128),
    "flash-128-tiles": (1, 1, 128, 256, 128),
}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", list(FLASH_SHAPES))
@pytest.mark.parametrize("dtype", SDPA_DTYPES)
def test_the_fused_kernel_still_runs_with_cudnn_off(dtype, shape, causal, monkeypatch):
    b, h, sq, skv, d = FLASH_SHAPES[shape]
    rng = np.random.default_rng(8)
    operands = [_stored(rng, dtype, (b, h, s, d), "contiguous") for s in (sq, skv, skv)]
    monkeypatch.setattr(VENDOR, "enabled", False)
    before = _calls("sdpa")
    want, got = _sdpa_both(operands, 1 / math.sqrt(d), causal)
    assert _calls("sdpa") == before
    assert_close(got, want, dtype, f"fused kernel sdpa {dtype} {shape} causal={causal}")


@pytest.mark.parametrize("tf32", [False, True], ids=["f32", "tf32"])
def test_a_plan_run_by_its_addresses_matches_the_frontends_execute(tf32, monkeypatch):
    """The same plan through runtime/gpu/cudnn_direct.py and through the frontend's execute:
    the same bits out (the direct run is what the bench times)."""
    rng = np.random.default_rng(11)
    op, xs, ks, p = CONV_CASES[0]
    (x, lx), (k, lk) = _stored(rng, "f32", xs, "contiguous"), _stored(rng, "f32", ks, "contiguous")
    monkeypatch.setattr(_rt.switches, "conv_reduced_precision_f32", tf32)
    results = []
    for direct in (True, False):
        monkeypatch.setattr(gpu_cudnn, "DIRECT", direct)
        VENDOR._plans.clear()  # the plan made again (or loaded), its way of running worked out again
        before = _calls(op)
        results.append(_conv_both(op, x, lx, k, lk, p)[1])
        assert _calls(op) == before + 1
        [plan] = [plan for key, plan in VENDOR._plans.items() if key[0] == op]
        assert (plan.direct is not None) == direct
    np.testing.assert_array_equal(results[0], results[1])


def _rewrite(storage, host: np.ndarray) -> None:
    """New values into a device storage in place (its address kept), queued on the device's stream."""
    _rt.driver.upload(storage.inner.ptr, np.ascontiguousarray(host).reshape(-1), _rt.driver.stream(0))


def _runs_on_the_same_buffers(call, inputs, fresh_values, graphs: bool, monkeypatch) -> tuple[list, int]:
    """Each call's output (as numpy) over the same input storages, their values rewritten in
    place before each call and the output dropped after (the pool hands its block back to
    the next), with graphs on or off; and the calls replayed from a graph."""
    monkeypatch.setattr(gpu_cudnn.cudnn_graphs, "ENABLED", graphs)
    VENDOR._plans.clear()  # the plan made (or loaded) again, its graphs with it
    outputs = []
    for values in fresh_values:
        for storage, host in zip(inputs, values):
            _rewrite(storage, host)
        outputs.append(call())
    return outputs, VENDOR.replays()


@pytest.mark.parametrize("case", ["conv2d-f32", "conv2d-tf32", "sdpa-bf16"])
def test_a_plan_run_again_on_its_buffers_replays_a_graph_with_the_direct_runs_bits(case, monkeypatch):
    """The same call on the same buffers six times, new input values each time: from the
    second time on a CUDA graph runs it (runtime/gpu/cudnn_graphs.py), and every output is
    the direct run's, bit for bit, and the cpu's within the tolerance: the graph reads the
    buffers' values at each replay, not those it was captured with."""
    rng = np.random.default_rng(17)
    if case.startswith("conv2d"):
        op, xs, ks, p = CONV_CASES[0]
        monkeypatch.setattr(_rt.switches, "conv_reduced_precision_f32", case.endswith("tf32"))
        shapes, dtype = (xs, ks), "f32"
        out_shape = (p.b_size, p.c_out, p.out_h(), p.out_w())
        layouts = [g.Layout.contiguous(s) for s in shapes]

        def run(dev, x, k):
            return x.conv2d(layouts[0], k, layouts[1], p), out_shape

    else:
        shapes, dtype = ((2, 3, 77, 64), (2, 3, 90, 64), (2, 3, 90, 64)), "bf16"
        layouts = [g.Layout.contiguous(s) for s in shapes]
        sdpa = g.nn.Sdpa(scale=0.125, causal=True)

        def run(dev, q, k, v):
            return q.apply_op3(layouts[0], k, layouts[1], v, layouts[2], sdpa)

    dt = g.DType(dtype).numpy
    fresh = [[rng.uniform(-1, 1, s).astype(dt) for s in shapes] for _ in range(6)]
    inputs = [CUDA.storage_from_slice(values) for values in fresh[0]]

    def call():
        out, shape = run(CUDA, *inputs)
        return g.to_numpy(out, g.Layout.contiguous(shape))

    replayed, replays = _runs_on_the_same_buffers(call, inputs, fresh, True, monkeypatch)
    assert replays >= 4, f"graphs did not replay ({VENDOR.last_capture_failure})"
    direct, none = _runs_on_the_same_buffers(call, inputs, fresh, False, monkeypatch)
    assert none == 0
    tolerance = "bf16" if dtype == "bf16" or case.endswith("tf32") else "f32"
    for n, values in enumerate(fresh):
        np.testing.assert_array_equal(replayed[n], direct[n], err_msg=f"{case} call {n + 1}")
        out, shape = run(CPU, *(CPU.storage_from_slice(v) for v in values))
        assert_close(replayed[n], g.to_numpy(out, g.Layout.contiguous(shape)), tolerance, f"{case} call {n + 1}")

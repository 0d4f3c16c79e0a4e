"""cpu NN ops (runtime.cpu.nn_ops) against float64 references written here: every dtype, on
contiguous, offset, transposed, narrowed and broadcast views (refs.make_layout), and the
shape and dtype errors. The rotary embeddings are also checked against Candle's own
reference compositions (candle-nn's rope_i_slow and rope_slow, and its rope_thd test),
transcribed to numpy, to show the three layouts are Candle's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runtime import nn_shapes
from runtime.cpu import nn_ops as nn
from runtime.errors import DTypeMismatch, ShapeMismatch
from runtime.layout import Layout

from . import refs

FLOATS = list(refs.FLOAT)
ATTENTION = ["bf16", "f16", "f32"]
KINDS = ["contig", "offset", "transposed", "narrowed", "broadcast"]
TOL = {"bf16": 1e-2, "f16": 2e-3, "f32": 1e-5, "f64": 1e-12}
EPS = 1e-5


def operand(rng, dtype: str, shape, kind: str = "contig", low: float = -3.0, high: float = 3.0):
    """(flat buffer, layout, the logical tensor as float64) of a random view of `shape`."""
    size, layout = refs.make_layout(kind, tuple(shape))
    flat = rng.uniform(low, high, size).astype(refs.NP[dtype])
    return flat, layout, refs.read_view(flat, layout).astype(np.float64)


def assert_close(result, want: np.ndarray, dtype: str) -> None:
    flat, shape = result
    assert shape == want.shape and flat.dtype == refs.NP[dtype] and flat.ndim == 1
    np.testing.assert_allclose(flat.reshape(shape).astype(np.float64), want, rtol=TOL[dtype], atol=TOL[dtype])


def by_rows(x: np.ndarray, fn) -> np.ndarray:
    """fn applied to each last-dim row of x, given as a list of Python floats."""
    return np.array([fn(list(map(float, r))) for r in x.reshape(-1, x.shape[-1])], np.float64).reshape(x.shape)


# --------------------------------------------------------------------------- references


def ref_sigmoid(x: np.ndarray) -> np.ndarray:
    return np.vectorize(lambda v: 1.0 / (1.0 + math.exp(-v)))(x)


def ref_softmax(x: np.ndarray) -> np.ndarray:
    def row(r):
        e = [math.exp(v - max(r)) for v in r]
        return [v / math.fsum(e) for v in e]

    return by_rows(x, row)


def ref_rms_norm(x: np.ndarray, alpha: np.ndarray, eps: float) -> np.ndarray:
    def row(r):
        scale = 1.0 / math.sqrt(math.fsum(v * v for v in r) / len(r) + eps)
        return [v * scale * a for v, a in zip(r, alpha)]

    return by_rows(x, row)


def ref_layer_norm(x: np.ndarray, alpha: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    def row(r):
        mean = math.fsum(r) / len(r)
        var = math.fsum((v - mean) ** 2 for v in r) / len(r)
        return [(v - mean) / math.sqrt(var + eps) * a + b for v, a, b in zip(r, alpha, beta)]

    return by_rows(x, row)


def ref_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, layout: str) -> np.ndarray:
    """By the definition, element by element: which pairs rotate together, and by which
    table entry, for each layout."""
    out = np.empty_like(x)
    d = x.shape[3]
    half = d // 2
    for b, u, w in np.ndindex(*x.shape[:3]):
        t = u if layout == "rope_thd" else w  # (b, t, h, d) or (b, h, t, d)
        for i in range(half):
            i1, i2 = (2 * i, 2 * i + 1) if layout == "rope_i" else (i, i + half)
            x1, x2, c, s = x[b, u, w, i1], x[b, u, w, i2], cos[t, i], sin[t, i]
            out[b, u, w, i1] = x1 * c - x2 * s
            out[b, u, w, i2] = x1 * s + x2 * c
    return out


def candle_rope_i_slow(x, cos, sin):
    """candle-nn rotary_emb::rope_i_slow."""
    b_sz, n_head, seq_len, n_embd = x.shape
    cos = cos[:seq_len].reshape(seq_len, n_embd // 2, 1)
    sin = sin[:seq_len].reshape(seq_len, n_embd // 2, 1)
    cos = np.broadcast_to(cos, (b_sz, 1, seq_len, n_embd // 2, 1))
    sin = np.broadcast_to(sin, (b_sz, 1, seq_len, n_embd // 2, 1))
    x = x.reshape(b_sz, n_head, seq_len, n_embd // 2, 2)
    x0, x1 = x[..., 0:1], x[..., 1:2]
    y0 = x0 * cos - x1 * sin
    y1 = x0 * sin + x1 * cos
    return np.concatenate([y0, y1], axis=-1).reshape(b_sz, n_head, seq_len, n_embd)


def candle_rotate_half(xs):
    last_dim = xs.shape[-1]
    xs1, xs2 = xs[..., : last_dim // 2], xs[..., last_dim // 2 :]
    return np.concatenate([-xs2, xs1], axis=-1)


def candle_rope_slow(x, cos, sin):
    """candle-nn rotary_emb::rope_slow."""
    seq_len = x.shape[2]
    cos = np.concatenate([cos, cos], axis=-1)[:seq_len][None, None]
    sin = np.concatenate([sin, sin], axis=-1)[:seq_len][None, None]
    return x * cos + candle_rotate_half(x) * sin


def candle_rope_thd(x, cos, sin):
    """candle-nn's test of rope_thd: rope_slow over the (b, h, t, d) transpose."""
    return candle_rope_slow(x.transpose(0, 2, 1, 3), cos, sin).transpose(0, 2, 1, 3)


CANDLE = {"rope_i": candle_rope_i_slow, "rope": candle_rope_slow, "rope_thd": candle_rope_thd}


def ref_sdpa(q, k, v, scale: float, causal: bool) -> np.ndarray:
    b, h, sq, d = q.shape
    skv = k.shape[2]
    out = np.zeros(q.shape)
    for bi, hi, i in np.ndindex(b, h, sq):
        seen = [j for j in range(skv) if not causal or j <= i + skv - sq]
        if not seen:
            continue  # a query that sees no key: zeros
        logits = [scale * math.fsum(q[bi, hi, i] * k[bi, hi, j]) for j in seen]
        top = max(logits)
        weights = [math.exp(z - top) for z in logits]
        total = math.fsum(weights)
        for w, j in zip(weights, seen):
            out[bi, hi, i] += w / total * v[bi, hi, j]
    return out


def ref_arg_sort(x: np.ndarray, ascending: bool) -> np.ndarray:
    """Equal values in index order, NaN the largest value."""

    def key(r, i):
        v = r[i]
        if isinstance(v, float) and math.isnan(v):
            return (1, 0, i) if ascending else (0, 0, i)
        return (0, v, i) if ascending else (1, -v, i)

    flat = x.reshape(-1, x.shape[-1])
    order = [sorted(range(len(r)), key=lambda i, r=r: key(r, i)) for r in flat.tolist()]
    return np.array(order, np.int64).reshape(x.shape)


# --------------------------------------------------------------------------- elementwise and rows


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_sigmoid(rng, dtype, kind):
    flat, layout, x = operand(rng, dtype, (5, 7), kind, -8, 8)
    assert_close(nn.sigmoid(flat, layout), ref_sigmoid(x), dtype)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_sigmoid_saturates_without_overflow(dtype):
    x = np.array([-1000.0, -100.0, 0.0, 100.0, 1000.0], refs.NP[dtype])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out, _ = nn.sigmoid(x, Layout.contiguous(x.shape))
    np.testing.assert_array_equal(out[[0, 2, 4]], np.array([0.0, 0.5, 1.0], x.dtype))


@pytest.mark.parametrize("cols", [1, 7, 33, 1000])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_last_dim(rng, dtype, kind, cols):
    flat, layout, x = operand(rng, dtype, (3, cols), kind, -10, 10)
    assert_close(nn.softmax_last_dim(flat, layout), ref_softmax(x), dtype)


def test_softmax_of_large_logits_subtracts_the_max():
    x = np.array([1000.0, 1000.0, 990.0], np.float32)
    out, _ = nn.softmax_last_dim(x, Layout.contiguous((3,)))
    np.testing.assert_allclose(out, ref_softmax(x.astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize("alpha_kind", ["contig", "broadcast", "narrowed"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm(rng, dtype, kind, alpha_kind):
    flat, layout, x = operand(rng, dtype, (4, 33), kind)
    a_flat, a_layout, alpha = _vector(rng, dtype, 33, alpha_kind)
    assert_close(nn.rms_norm(flat, layout, a_flat, a_layout, EPS), ref_rms_norm(x, alpha, EPS), dtype)


@pytest.mark.parametrize("alpha_kind", ["contig", "broadcast", "narrowed"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm(rng, dtype, kind, alpha_kind):
    flat, layout, x = operand(rng, dtype, (4, 33), kind, 1, 5)  # mean far from 0: the centring matters
    a_flat, a_layout, alpha = _vector(rng, dtype, 33, alpha_kind)
    b_flat, b_layout, beta = _vector(rng, dtype, 33, "offset")
    got = nn.layer_norm(flat, layout, a_flat, a_layout, b_flat, b_layout, EPS)
    assert_close(got, ref_layer_norm(x, alpha, beta, EPS), dtype)


def _vector(rng, dtype: str, n: int, kind: str):
    """A (n,) operand: a broadcast one is a single value with stride 0."""
    if kind == "broadcast":
        flat = rng.uniform(-2, 2, 3).astype(refs.NP[dtype])
        layout = Layout.contiguous((1,), start_offset=1).broadcast_as((n,))
        return flat, layout, refs.read_view(flat, layout).astype(np.float64)
    return operand(rng, dtype, (n,), kind, -2, 2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm_of_a_3d_tensor_with_rows_of_one(rng, dtype):
    flat, layout, x = operand(rng, dtype, (2, 3, 1))
    a_flat, a_layout, alpha = _vector(rng, dtype, 1, "contig")
    assert_close(nn.rms_norm(flat, layout, a_flat, a_layout, EPS), ref_rms_norm(x, alpha, EPS), dtype)


@pytest.mark.parametrize("op", ["softmax_last_dim", "sigmoid"])
def test_empty_tensors(op):
    x = np.zeros(0, np.float32)
    out, shape = getattr(nn, op)(x, Layout.contiguous((3, 0)))
    assert out.size == 0 and shape == (3, 0)


def test_norms_of_empty_rows():
    x, a = np.zeros(0, np.float32), np.ones(4, np.float32)
    out, shape = nn.rms_norm(x, Layout.contiguous((0, 4)), a, Layout.contiguous((4,)), EPS)
    assert out.size == 0 and shape == (0, 4)
    out, shape = nn.layer_norm(
        x, Layout.contiguous((0, 4)), a, Layout.contiguous((4,)), a, Layout.contiguous((4,)), EPS
    )
    assert out.size == 0 and shape == (0, 4)


# --------------------------------------------------------------------------- rotary embeddings

ROPES = ["rope_i", "rope", "rope_thd"]


def _rope_operands(rng, dtype: str, op: str, kind: str, extra_rows: int = 0):
    b, h, t, d = 2, 3, 5, 8
    shape = (b, t, h, d) if op == "rope_thd" else (b, h, t, d)
    flat, layout, x = operand(rng, dtype, shape, kind)
    tables = [operand(rng, dtype, (t + extra_rows, d // 2), "contig", -1, 1) for _ in range(2)]
    return (flat, layout, x), tables


@pytest.mark.parametrize("kind", ["contig", "offset", "transposed", "narrowed"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ROPES)
def test_rope(rng, op, dtype, kind):
    (flat, layout, x), ((cf, cl, cos), (sf, sl, sin)) = _rope_operands(rng, dtype, op, kind)
    assert_close(getattr(nn, op)(flat, layout, cf, cl, sf, sl), ref_rope(x, cos, sin, op), dtype)


@pytest.mark.parametrize("op", ROPES)
def test_rope_matches_candles_reference(rng, op):
    (flat, layout, x), ((cf, cl, cos), (sf, sl, sin)) = _rope_operands(rng, "f64", op, "contig", extra_rows=3)
    got = getattr(nn, op)(flat, layout, cf, cl, sf, sl)
    want = CANDLE[op](x, cos, sin)
    assert_close(got, want, "f64")
    np.testing.assert_allclose(ref_rope(x, cos, sin, op), want, rtol=1e-12, atol=1e-12)


def test_the_three_rope_layouts_differ_as_candle_says(rng):
    """rope_thd of x is rope of x's (1, 2) transpose, transposed back; rope_i pairs differently."""
    (flat, layout, x), ((cf, cl, cos), (sf, sl, sin)) = _rope_operands(rng, "f64", "rope", "contig")
    by_halves, _ = nn.rope(flat, layout, cf, cl, sf, sl)
    thd_flat = np.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(-1)
    by_thd, thd_shape = nn.rope_thd(thd_flat, Layout.contiguous(x.transpose(0, 2, 1, 3).shape), cf, cl, sf, sl)
    np.testing.assert_array_equal(by_thd.reshape(thd_shape).transpose(0, 2, 1, 3).reshape(-1), by_halves)
    interleaved, _ = nn.rope_i(flat, layout, cf, cl, sf, sl)
    assert not np.allclose(interleaved, by_halves)


# --------------------------------------------------------------------------- attention

SDPA_SHAPES = {  # (b, h, sq, skv, d)
    "square": (2, 3, 7, 7, 16),
    "kv-cache": (1, 2, 3, 9, 8),  # sq < skv: the last queries of a longer sequence
    "more-queries": (1, 2, 6, 4, 8),  # sq > skv: the first two queries see no key when causal
}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", list(SDPA_SHAPES))
@pytest.mark.parametrize("dtype", ATTENTION)
def test_sdpa(rng, dtype, shape, causal):
    b, h, sq, skv, d = SDPA_SHAPES[shape]
    qf, ql, q = operand(rng, dtype, (b, h, sq, d), "contig", -1, 1)
    kf, kl, k = operand(rng, dtype, (b, h, skv, d), "transposed", -1, 1)
    vf, vl, v = operand(rng, dtype, (b, h, skv, d), "broadcast", -1, 1)  # one batch, stride 0
    scale = 1 / math.sqrt(d)
    assert_close(nn.sdpa(qf, ql, kf, kl, vf, vl, scale, causal), ref_sdpa(q, k, v, scale, causal), dtype)


def test_sdpa_causal_rows_that_see_no_key_are_zero(rng):
    qf, ql, _ = operand(rng, "f32", (1, 1, 5, 4))
    kf, kl, _ = operand(rng, "f32", (1, 1, 2, 4))
    out, shape = nn.sdpa(qf, ql, kf, kl, kf, kl, 0.5, True)
    rows_ = out.reshape(shape)[0, 0]
    assert not rows_[:3].any() and rows_[3:].all()


# --------------------------------------------------------------------------- arg_sort


def _sort_operand(rng, dtype: str, shape, kind: str):
    """Few distinct values (ties); floats also get NaN, -0.0 and 0.0."""
    size, layout = refs.make_layout(kind, shape)
    values = rng.integers(0, 6, size)
    if dtype in FLOATS:
        flat = (values - 3).astype(np.float64)
        flat[rng.random(size) < 0.15] = np.nan
        flat[rng.random(size) < 0.1] = -0.0
    elif dtype == "i64":
        flat = (values - 3) * 10**12
    else:
        flat = values * (10**8 if dtype == "u32" else 1)
    flat = flat.astype(refs.NP[dtype])
    logical = refs.read_view(flat, layout)
    return flat, layout, logical.astype(np.float64) if dtype in FLOATS else logical.astype(np.int64)


@pytest.mark.parametrize("ascending", [True, False], ids=["asc", "desc"])
@pytest.mark.parametrize("kind", ["contig", "offset", "transposed", "narrowed", "broadcast"])
@pytest.mark.parametrize("dtype", list(refs.NP))
def test_arg_sort(rng, dtype, kind, ascending):
    flat, layout, x = _sort_operand(rng, dtype, (4, 37), kind)
    out, shape = nn.arg_sort(flat, layout, ascending)
    assert out.dtype == np.uint32 and shape == (4, 37)
    np.testing.assert_array_equal(out.reshape(shape), ref_arg_sort(x, ascending))


def test_arg_sort_of_a_long_row_and_of_rows_of_one(rng):
    flat, layout, x = _sort_operand(rng, "f32", (2, 5000), "contig")
    out, shape = nn.arg_sort(flat, layout, False)
    np.testing.assert_array_equal(out.reshape(shape), ref_arg_sort(x, False))
    out, shape = nn.arg_sort(np.arange(3, dtype=np.uint8), Layout.contiguous((3, 1)), True)
    np.testing.assert_array_equal(out, np.zeros(3, np.uint32))


# --------------------------------------------------------------------------- errors

F32 = np.float32


def _c(*shape) -> tuple[np.ndarray, Layout]:
    return np.zeros(math.prod(shape), F32), Layout.contiguous(shape)


SHAPE_ERRORS = {
    "softmax of a scalar": (lambda: nn.softmax_last_dim(*_c()), "softmax_last_dim", "rank >= 1"),
    "arg_sort of a scalar": (lambda: nn.arg_sort(*_c(), True), "arg_sort", "rank >= 1"),
    "rms_norm alpha too short": (lambda: nn.rms_norm(*_c(2, 7), *_c(6), EPS), "rms_norm", "alpha of shape (7,)"),
    "layer_norm beta of rank 2": (
        lambda: nn.layer_norm(*_c(2, 7), *_c(7), *_c(1, 7), EPS),
        "layer_norm",
        "beta of shape (7,)",
    ),
    "rope odd d": (lambda: nn.rope(*_c(1, 2, 3, 5), *_c(3, 2), *_c(3, 2)), "rope", "d even"),
    "rope_i rank 3": (lambda: nn.rope_i(*_c(2, 3, 4), *_c(3, 2), *_c(3, 2)), "rope_i", "(b, h, t, d)"),
    "rope cos too few rows": (lambda: nn.rope(*_c(1, 2, 3, 4), *_c(2, 2), *_c(3, 2)), "rope", "cos of shape"),
    "rope_thd sin of d": (
        lambda: nn.rope_thd(*_c(1, 3, 2, 4), *_c(3, 2), *_c(3, 4)),
        "rope_thd",
        "sin of shape (t, d/2) = (3, 2)",
    ),
    "sdpa q rank 3": (lambda: nn.sdpa(*_c(2, 3, 4), *_c(2, 3, 4), *_c(2, 3, 4), 1.0, False), "sdpa", "q of shape"),
    "sdpa k of other heads": (
        lambda: nn.sdpa(*_c(1, 2, 3, 4), *_c(1, 3, 3, 4), *_c(1, 3, 3, 4), 1.0, False),
        "sdpa",
        "k of shape (1, 2, skv, 4)",
    ),
    "sdpa no keys": (lambda: nn.sdpa(*_c(1, 2, 3, 4), *_c(1, 2, 0, 4), *_c(1, 2, 0, 4), 1.0, True), "sdpa", "skv >= 1"),
    "sdpa v unlike k": (
        lambda: nn.sdpa(*_c(1, 2, 3, 4), *_c(1, 2, 5, 4), *_c(1, 2, 6, 4), 1.0, False),
        "sdpa",
        "v of k's shape (1, 2, 5, 4)",
    ),
}


@pytest.mark.parametrize("case", list(SHAPE_ERRORS))
def test_shape_errors(case):
    call, op, expected = SHAPE_ERRORS[case]
    with pytest.raises(ShapeMismatch) as info:
        call()
    assert (info.value.op, info.value.backend) == (op, "cpu")
    assert expected in str(info.value.expected)


def test_shape_rules_name_the_backend_they_are_given():
    with pytest.raises(ShapeMismatch) as info:
        nn_shapes.rms_norm("cuda", (2, 7), (6,))
    assert info.value.backend == "cuda" and str(info.value).startswith("rms_norm on cuda: expected shape alpha")


DTYPE_ERRORS = {
    "sigmoid of u8": lambda: nn.sigmoid(np.zeros(3, np.uint8), Layout.contiguous((3,))),
    "softmax of i64": lambda: nn.softmax_last_dim(np.zeros(3, np.int64), Layout.contiguous((3,))),
    "rms_norm alpha of another dtype": lambda: nn.rms_norm(
        *_c(2, 3), np.ones(3, np.float16), Layout.contiguous((3,)), EPS
    ),
    "sdpa of f64": lambda: nn.sdpa(
        *[a for _ in range(3) for a in (np.zeros(8), Layout.contiguous((1, 1, 2, 4)))], 1.0, False
    ),
    "rope sin of another dtype": lambda: nn.rope(*_c(1, 1, 2, 4), *_c(2, 2), np.zeros(4), Layout.contiguous((2, 2))),
}


@pytest.mark.parametrize("case", list(DTYPE_ERRORS))
def test_dtype_errors(case):
    with pytest.raises(DTypeMismatch) as info:
        DTYPE_ERRORS[case]()
    assert info.value.backend == "cpu"


# --------------------------------------------------------------------------- the generated API

OPERAND_SHAPES = {
    "sigmoid": [(4, 6)],
    "softmax_last_dim": [(4, 6)],
    "rms_norm": [(4, 6), (6,)],
    "layer_norm": [(4, 6), (6,), (6,)],
    "rope_i": [(1, 2, 3, 4), (3, 2), (3, 2)],
    "rope": [(1, 2, 3, 4), (3, 2), (3, 2)],
    "rope_thd": [(1, 3, 2, 4), (3, 2), (3, 2)],
    "sdpa": [(1, 2, 3, 4)] * 3,
    "arg_sort": [(4, 6)],
}
PARAMS = {"rms_norm": (EPS,), "layer_norm": (EPS,), "sdpa": (0.5, True), "arg_sort": (False,)}


def _generated_op(op: str):
    import runtime.cpu

    g = pytest.importorskip("generated")
    if not hasattr(g, "nn"):
        pytest.skip("generated/ has no nn module yet (ops.yaml's nn ops, after `gen`)")
    if not hasattr(runtime.cpu, op):
        pytest.skip(f"runtime.cpu does not export runtime.cpu.nn_ops.{op} yet: gen writes no cpu hook for it")
    return g, {
        "sigmoid": lambda: g.nn.Sigmoid(),
        "softmax_last_dim": lambda: g.nn.SoftmaxLastDim(),
        "rms_norm": lambda: g.nn.RmsNorm(eps=EPS),
        "layer_norm": lambda: g.nn.LayerNorm(eps=EPS),
        "rope_i": lambda: g.nn.RopeI(),
        "rope": lambda: g.nn.Rope(),
        "rope_thd": lambda: g.nn.RopeThd(),
        "sdpa": lambda: g.nn.Sdpa(scale=0.5, causal=True),
        "arg_sort": lambda: g.nn.ArgSort(ascending=False),
    }[op]()


@pytest.mark.parametrize("op", list(OPERAND_SHAPES))
def test_the_generated_op_runs_these_functions_on_the_cpu(rng, op):
    """g.nn.<Op> through Storage.apply_op<n> on the cpu device gives what the runtime function
    gives called directly."""
    g, custom = _generated_op(op)
    arrays = [rng.uniform(-2, 2, shape).astype(np.float32) for shape in OPERAND_SHAPES[op]]
    layouts = [Layout.contiguous(a.shape) for a in arrays]
    cpu = g.Device.parse("cpu")
    first, *rest = [cpu.storage_from_slice(a) for a in arrays]
    args = [x for s, layout in zip(rest, layouts[1:]) for x in (s, layout)]
    out, shape = getattr(first, f"apply_op{len(arrays)}")(layouts[0], *args, custom)
    want, want_shape = getattr(nn, op)(
        *[x for a, layout in zip(arrays, layouts) for x in (a.reshape(-1), layout)], *PARAMS.get(op, ())
    )
    assert shape == want_shape
    np.testing.assert_array_equal(g.to_numpy(out, Layout.contiguous(shape)).reshape(-1), want)

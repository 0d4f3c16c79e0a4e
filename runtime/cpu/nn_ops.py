"""CPU NN ops (candle-nn's): sigmoid, softmax over the last dim, RMS and layer norms,
rotary embeddings in Candle's three layouts, scaled dot-product attention, arg_sort.

Each input is a flat cpu storage with its layout (any strides, offsets, broadcasts); each
op returns (flat contiguous result, output shape). Shapes are checked by runtime.nn_shapes,
as on the GPU. Float ops take bf16, f16, f32, f64 (sdpa: not f64), compute bf16/f16/f32 in
f32 and f64 in f64, and round once to the input dtype; every input has the first's dtype.

Semantics the GPU backends share (hip/nn.hip):
- softmax, sdpa: the row max is subtracted before exp; a row with NaN gives NaN.
- sdpa: softmax(scale * q k^T + mask) v; the causal mask is aligned bottom-right (query i
  sees key j iff j <= i + skv - sq); a query that sees no key (sq > skv) gives zeros, as in
  flash-attention.
- arg_sort: u32 indices ordering each last-dim row; equal values keep their index order
  (stable), NaN counts as the largest value (last ascending, first descending), -0.0
  equals 0.0. The order is total, so every backend returns the same indices.
"""

from __future__ import annotations

import numpy as np

from runtime import nn_shapes
from runtime.cpu.views import (
    BACKEND,
    BF16,
    DTYPES,
    F16,
    F32,
    FLOATS,
    HALF,
    U32,
    check_dtype,
    check_same_dtype,
    compute_dtype,
    contiguous_flat,
    view,
)
from runtime.layout import Layout

_ATTENTION = frozenset((BF16, F16, F32))


def _operands(op: str, allowed, first: tuple[np.ndarray, Layout], *others: tuple[np.ndarray, Layout]):
    """The views of every (buffer, layout), in the compute dtype, after the dtype checks."""
    check_dtype(op, first[0], allowed)
    for buf, _ in others:
        check_same_dtype(op, first[0], buf)
    ct = compute_dtype(first[0].dtype)
    return [view(op, buf, layout).astype(ct, copy=False) for buf, layout in (first, *others)]


def _result(y: np.ndarray, dt: np.dtype, shape: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...]]:
    return contiguous_flat(y, dt), shape


def sigmoid(x: np.ndarray, lx: Layout):
    shape = nn_shapes.sigmoid(BACKEND, lx.shape)
    (v,) = _operands("sigmoid", FLOATS, (x, lx))
    with np.errstate(over="ignore"):  # exp(-x) -> inf: the result is 0, as it should be
        return _result(1 / (1 + np.exp(-v)), x.dtype, shape)


def _softmax(v: np.ndarray) -> np.ndarray:
    if v.size == 0:
        return v
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, as on the GPU
        e = np.exp(v - v.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def softmax_last_dim(x: np.ndarray, lx: Layout):
    shape = nn_shapes.softmax_last_dim(BACKEND, lx.shape)
    (v,) = _operands("softmax_last_dim", FLOATS, (x, lx))
    return _result(_softmax(v), x.dtype, shape)


def rms_norm(x: np.ndarray, lx: Layout, alpha: np.ndarray, la: Layout, eps: float):
    shape = nn_shapes.rms_norm(BACKEND, lx.shape, la.shape)
    v, a = _operands("rms_norm", FLOATS, (x, lx), (alpha, la))
    if v.size == 0:
        return _result(v, x.dtype, shape)
    ms = np.mean(v * v, axis=-1, keepdims=True)
    return _result(v / np.sqrt(ms + v.dtype.type(eps)) * a, x.dtype, shape)


def layer_norm(x: np.ndarray, lx: Layout, alpha: np.ndarray, la: Layout, beta: np.ndarray, lb: Layout, eps: float):
    shape = nn_shapes.layer_norm(BACKEND, lx.shape, la.shape, lb.shape)
    v, a, b = _operands("layer_norm", FLOATS, (x, lx), (alpha, la), (beta, lb))
    if v.size == 0:
        return _result(v, x.dtype, shape)
    centred = v - v.mean(axis=-1, keepdims=True)
    var = np.mean(centred * centred, axis=-1, keepdims=True)  # biased, as torch and Candle
    return _result(centred / np.sqrt(var + v.dtype.type(eps)) * a + b, x.dtype, shape)


# Rotary embeddings: each pair (x1, x2) becomes (x1 cos - x2 sin, x1 sin + x2 cos), with cos and
# sin from row t (position) and column i (pair) of the (T, d/2) tables.


def _rotated(x1, x2, c, s) -> tuple[np.ndarray, np.ndarray]:
    return x1 * c - x2 * s, x1 * s + x2 * c


def rope_i(x: np.ndarray, lx: Layout, cos: np.ndarray, lc: Layout, sin: np.ndarray, ls: Layout):
    """Interleaved pairs (x[2i], x[2i+1]) of x (b, h, t, d)."""
    shape = nn_shapes.rope_i(BACKEND, lx.shape, lc.shape, ls.shape)
    v, c, s = _operands("rope_i", FLOATS, (x, lx), (cos, lc), (sin, ls))
    b, h, t, d = shape
    pairs = v.reshape(b, h, t, d // 2, 2)
    y1, y2 = _rotated(pairs[..., 0], pairs[..., 1], c[:t], s[:t])
    return _result(np.stack([y1, y2], axis=-1), x.dtype, shape)


def _rope_halves(v: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Pairs (x[i], x[i + d/2]); c and s broadcast against the halves."""
    half = v.shape[-1] // 2
    y1, y2 = _rotated(v[..., :half], v[..., half:], c, s)
    return np.concatenate([y1, y2], axis=-1)


def rope(x: np.ndarray, lx: Layout, cos: np.ndarray, lc: Layout, sin: np.ndarray, ls: Layout):
    """Halves (x[i], x[i + d/2]) of x (b, h, t, d)."""
    shape = nn_shapes.rope(BACKEND, lx.shape, lc.shape, ls.shape)
    v, c, s = _operands("rope", FLOATS, (x, lx), (cos, lc), (sin, ls))
    t = shape[2]
    return _result(_rope_halves(v, c[:t], s[:t]), x.dtype, shape)


def rope_thd(x: np.ndarray, lx: Layout, cos: np.ndarray, lc: Layout, sin: np.ndarray, ls: Layout):
    """Halves, of x (b, t, h, d)."""
    shape = nn_shapes.rope_thd(BACKEND, lx.shape, lc.shape, ls.shape)
    v, c, s = _operands("rope_thd", FLOATS, (x, lx), (cos, lc), (sin, ls))
    t = shape[1]
    return _result(_rope_halves(v, c[:t, None, :], s[:t, None, :]), x.dtype, shape)


def _visible(sq: int, skv: int) -> np.ndarray:
    """(sq, skv): query i sees key j iff j <= i + skv - sq (bottom-right causal alignment)."""
    return np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)


def sdpa(q: np.ndarray, lq: Layout, k: np.ndarray, lk: Layout, v: np.ndarray, lv: Layout, scale: float, causal: bool):
    shape = nn_shapes.sdpa(BACKEND, lq.shape, lk.shape, lv.shape)
    qq, kk, vv = _operands("sdpa", _ATTENTION, (q, lq), (k, lk), (v, lv))
    scores = qq.dtype.type(scale) * (qq @ np.swapaxes(kk, -1, -2))
    if causal:
        seen = _visible(shape[2], lk.shape[2])
        weights = np.where(seen, _softmax(np.where(seen, scores, -np.inf)), 0)  # rows that see nothing: 0
    else:
        weights = _softmax(scores)
    return _result(weights @ vv, q.dtype, shape)


def arg_sort(x: np.ndarray, lx: Layout, ascending: bool):
    shape = nn_shapes.arg_sort(BACKEND, lx.shape)
    check_dtype("arg_sort", x, DTYPES)
    keys = view("arg_sort", x, lx)
    if keys.dtype in HALF:
        keys = keys.astype(F32)  # exact; numpy's f32 sort puts NaN last, ml_dtypes' bf16 sort does not
    if ascending:
        order = np.argsort(keys, axis=-1, kind="stable")
    else:
        # A stable ascending sort of the reversed row, read backwards: descending, equal
        # values in index order, NaN first.
        order = shape[-1] - 1 - np.argsort(keys[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    return contiguous_flat(order, U32), shape

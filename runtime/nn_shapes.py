"""Shape rules of the NN ops (candle-nn's), shared by the cpu and the GPU backends.

One function per op: it takes the backend's name and the input views' shapes, returns the
output shape, and raises ShapeMismatch(op, backend, expected, got) naming what it wanted.
Both backends call these first, so they reject the same inputs with the same error."""

from __future__ import annotations

from runtime.errors import ShapeMismatch

Shape = tuple[int, ...]


def _rows(op: str, backend: str, x: Shape) -> Shape:
    """x: rows along its last dim."""
    if len(x) < 1:
        raise ShapeMismatch(op, backend, "x of rank >= 1 (rows along the last dim)", x)
    return tuple(x)


def _per_column(op: str, backend: str, what: str, shape: Shape, x: Shape) -> None:
    if tuple(shape) != (x[-1],):
        raise ShapeMismatch(op, backend, f"{what} of shape ({x[-1]},) (x's last dim)", tuple(shape))


def sigmoid(backend: str, x: Shape) -> Shape:
    return tuple(x)


def softmax_last_dim(backend: str, x: Shape) -> Shape:
    return _rows("softmax_last_dim", backend, x)


def rms_norm(backend: str, x: Shape, alpha: Shape) -> Shape:
    out = _rows("rms_norm", backend, x)
    _per_column("rms_norm", backend, "alpha", alpha, out)
    return out


def layer_norm(backend: str, x: Shape, alpha: Shape, beta: Shape) -> Shape:
    out = _rows("layer_norm", backend, x)
    _per_column("layer_norm", backend, "alpha", alpha, out)
    _per_column("layer_norm", backend, "beta", beta, out)
    return out


def _rope(op: str, backend: str, x: Shape, cos: Shape, sin: Shape, dims: str, t_dim: int) -> Shape:
    """x of rank 4 with an even last dim d; cos and sin (T, d/2) with T >= t: as in Candle,
    a table longer than the sequence is allowed and its first t rows are used."""
    if len(x) != 4 or x[3] % 2:
        raise ShapeMismatch(op, backend, f"x of shape {dims} with d even", tuple(x))
    t, half = x[t_dim], x[3] // 2
    for what, table in (("cos", cos), ("sin", sin)):
        if len(table) != 2 or table[1] != half or table[0] < t:
            raise ShapeMismatch(op, backend, f"{what} of shape (t, d/2) = ({t}, {half}), or more rows", tuple(table))
    return tuple(x)


def rope_i(backend: str, x: Shape, cos: Shape, sin: Shape) -> Shape:
    return _rope("rope_i", backend, x, cos, sin, "(b, h, t, d)", 2)


def rope(backend: str, x: Shape, cos: Shape, sin: Shape) -> Shape:
    return _rope("rope", backend, x, cos, sin, "(b, h, t, d)", 2)


def rope_thd(backend: str, x: Shape, cos: Shape, sin: Shape) -> Shape:
    return _rope("rope_thd", backend, x, cos, sin, "(b, t, h, d)", 1)


def sdpa(backend: str, q: Shape, k: Shape, v: Shape) -> Shape:
    """q (b, h, sq, d), k and v (b, h, skv, d) with d >= 1 and skv >= 1; out (b, h, sq, d)."""
    if len(q) != 4 or q[3] < 1:
        raise ShapeMismatch("sdpa", backend, "q of shape (b, h, sq, d) with d >= 1", tuple(q))
    b, h, _, d = q
    if len(k) != 4 or tuple(k[:2]) != (b, h) or k[3] != d or k[2] < 1:
        raise ShapeMismatch("sdpa", backend, f"k of shape ({b}, {h}, skv, {d}) with skv >= 1", tuple(k))
    if tuple(v) != tuple(k):
        raise ShapeMismatch("sdpa", backend, f"v of k's shape {tuple(k)}", tuple(v))
    return tuple(q)


def arg_sort(backend: str, x: Shape) -> Shape:
    return _rows("arg_sort", backend, x)

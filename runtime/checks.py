"""Argument checks every backend runs the same way, so that a bad argument gets the same
typed error on cpu, cuda and rocm (tests/conformance/test_backend_errors.py checks it):
reduce_op's dims, matmul's operand shapes."""

from __future__ import annotations

import math

from runtime.errors import ShapeMismatch


def reduce_dims(op: str, backend: str, dims: object, rank: int) -> list[int]:
    """The dims of a reduction, ascending: distinct, each in [0, rank). Negative or repeated
    dims are refused, not wrapped: Candle's reductions take them as given."""
    try:
        given = tuple(int(d) for d in dims)  # type: ignore[attr-defined]
    except TypeError:
        raise ShapeMismatch(op, backend, "dims as a sequence of ints", dims) from None
    if len(set(given)) != len(given) or any(not 0 <= d < rank for d in given):
        raise ShapeMismatch(op, backend, f"distinct dims in [0, {rank})", given)
    return sorted(given)


def matmul_dims(
    op: str, backend: str, bmnk: object, lhs_shape: tuple[int, ...], rhs_shape: tuple[int, ...]
) -> tuple[int, int, int, int]:
    """(b, m, n, k) of a matmul whose lhs is (.., m, k) and rhs (.., k, n), each with b batches
    in its leading dims; ShapeMismatch naming the operand that is not."""
    b, m, n, k = (int(v) for v in bmnk)  # type: ignore[attr-defined]
    for shape, rows, cols, what in ((lhs_shape, m, k, "lhs"), (rhs_shape, k, n, "rhs")):
        if len(shape) < 2 or tuple(shape[-2:]) != (rows, cols) or math.prod(shape[:-2]) != b:
            raise ShapeMismatch(op, backend, f"{what} of shape (..., {rows}, {cols}) with {b} batches", shape)
    return b, m, n, k

"""Argument checks every backend runs the same way, so that a bad argument gets the same
typed error on cpu, cuda and rocm (tests/conformance/test_backend_errors.py checks it)."""

from __future__ import annotations

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

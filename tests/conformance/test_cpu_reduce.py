"""reduce_op on CPU: every registry reduction x declared dtype x dims (any set, any
order) x layout, against a loop over the reduced sub-block."""

from __future__ import annotations

import numpy as np
import pytest

from generated import DType, DTypeMismatch, Layout, ReduceOp, ShapeMismatch

from . import refs
from .refs import CPU, NP, assert_close

SHAPE = (3, 4, 5)


def test_reduce(reduce_case, rng):
    op, name, dims, kind = reduce_case
    # few distinct values for argmin/argmax, so that ties (first index wins) occur
    domain = "small" if op.startswith("arg") else "any"
    s, _, layout, vals = refs.operand(name, kind, SHAPE, rng, domain)
    out = s.reduce_op(ReduceOp(op), layout, dims)
    out_shape = tuple(1 if d in dims else n for d, n in enumerate(SHAPE))
    want, scale = refs.reduce_ref(vals, op, dims, name)
    if op in ("argmin", "argmax"):
        assert out.dtype() is DType.U32
        assert_close(refs.result(out, out_shape), want, "u32", what=f"{op} {name} {dims} {kind}")
    else:
        assert out.dtype() is DType(name)
        assert_close(refs.result(out, out_shape), want, name, scale=scale if op == "sum" else None)


def test_reduce_unsupported_dtype(reduce_unsupported):
    op, name = reduce_unsupported
    s = CPU.storage_from_slice(np.ones(4, NP[name]))
    with pytest.raises(DTypeMismatch) as e:
        s.reduce_op(ReduceOp(op), Layout.contiguous((4,)), (0,))
    assert e.value.op in (op, "reduce_op")


@pytest.mark.parametrize("dims", [(3,), (0, 0), (-1,)], ids=["out-of-range", "repeated", "negative"])
def test_reduce_bad_dims(dims):
    s = CPU.storage_from_slice(np.ones(SHAPE, np.float32))
    with pytest.raises(ShapeMismatch) as e:
        s.reduce_op(ReduceOp.SUM, Layout.contiguous(SHAPE), dims)
    assert e.value.backend == "cpu"


@pytest.mark.parametrize("op", ["min", "max", "argmin", "argmax"])
def test_reduce_empty_block(op, registry):
    if op not in registry["reduce"]:
        pytest.skip(f"{op} not in registry")
    s = CPU.storage_from_slice(np.ones(0, np.float32))
    with pytest.raises(ShapeMismatch):
        s.reduce_op(ReduceOp(op), Layout.contiguous((2, 0)), (1,))

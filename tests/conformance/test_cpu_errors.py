"""Typed errors through the generated API, driven by the registry: every `same_dtype`
group, every `same_shape` group, every `dtypes:` restriction and every Storage argument
(device) of every storage op; plus layouts that do not fit their buffer."""

from __future__ import annotations

import numpy as np
import pytest

from generated import (
    BinaryOp,
    CmpOp,
    ConvParams1D,
    ConvParams2D,
    ConvTransposeParams1D,
    ConvTransposeParams2D,
    DeviceMismatch,
    DType,
    DTypeMismatch,
    Layout,
    MatmulDims,
    ReduceOp,
    ShapeMismatch,
    Storage,
    UnaryOp,
)
from generated.backends import Backend

from .conftest import REGISTRY, expand
from .refs import CPU, NP

OPS = {name: spec for name, spec in REGISTRY["storage"].items() if "hook" not in spec}
LAYOUT = Layout.contiguous((4,))

DUMMY = {
    "Layout": lambda: LAYOUT,
    "Scalar": lambda: 0,
    "float": lambda: 1.0,
    "int": lambda: 0,
    "Dims": lambda: (0,),
    "Pair": lambda: (1, 1),
    "DType": lambda: DType.F32,
    "UnaryOp": lambda: next(iter(UnaryOp)),
    "BinaryOp": lambda: next(iter(BinaryOp)),
    "CmpOp": lambda: next(iter(CmpOp)),
    "ReduceOp": lambda: next(iter(ReduceOp)),
    "MatmulDims": lambda: MatmulDims(1, 1, 1, 1),
    "ConvParams1D": lambda: ConvParams1D(b_size=1, l_in=4, c_out=1, c_in=1, k_size=1),
    "ConvParams2D": lambda: ConvParams2D(b_size=1, i_h=2, i_w=2, k_h=1, k_w=1, c_out=1, c_in=1),
    "ConvTransposeParams1D": lambda: ConvTransposeParams1D(b_size=1, l_in=4, c_out=1, c_in=1, k_size=1),
    "ConvTransposeParams2D": lambda: ConvTransposeParams2D(b_size=1, i_h=2, i_w=2, k_h=1, k_w=1, c_out=1, c_in=1),
}


def _allowed(spec: dict, arg: str) -> list[str]:
    return expand((spec.get("dtypes") or {}).get(arg))


def _storage(name: str) -> Storage:
    return CPU.storage_from_slice(np.zeros(4, NP[name]))


def _call(op: str, overrides: dict):
    """Call Storage.<op> with dummy arguments (f32 storages, or the first dtype the
    registry allows) and `overrides` by parameter name ('self' included)."""
    spec = OPS[op]
    params = spec.get("params") or {}
    args = {}
    for pname, ptype in params.items():
        if pname in overrides:
            args[pname] = overrides[pname]
        elif ptype == "Storage":
            allowed = _allowed(spec, pname)
            args[pname] = _storage("f32" if "f32" in allowed else allowed[0])
        elif ptype in DUMMY:
            args[pname] = DUMMY[ptype]()
        else:
            pytest.fail(f"test_cpu_errors has no dummy for parameter type {ptype!r} ({op}.{pname})")
    allowed = _allowed(spec, "self")
    this = overrides.get("self") or _storage("f32" if "f32" in allowed else allowed[0])
    return getattr(this, op)(*args.values())


def _cases(key: str):
    return [
        pytest.param(op, group, id=f"{op}-{'-'.join(group)}") for op, spec in OPS.items() if (group := spec.get(key))
    ]


@pytest.mark.parametrize("op,group", _cases("same_dtype"))
def test_same_dtype_groups(op, group):
    first = _allowed(OPS[op], group[0])
    a = "f32" if "f32" in first else first[0]
    b = next(d for d in _allowed(OPS[op], group[-1]) if d != a)
    for member in group[1:]:
        with pytest.raises(DTypeMismatch) as e:
            _call(op, {group[0]: _storage(a), member: _storage(b)})
        assert e.value.op == op and e.value.backend == "cpu"


@pytest.mark.parametrize("op,group", _cases("same_shape"))
def test_same_shape_groups(op, group):
    for member in group[1:]:
        with pytest.raises(ShapeMismatch) as e:
            _call(op, {group[0]: Layout.contiguous((4,)), member: Layout.contiguous((2, 2))})
        assert e.value.op == op and e.value.backend == "cpu"


def _restrictions():
    out = []
    for op, spec in OPS.items():
        for arg, dts in (spec.get("dtypes") or {}).items():
            for bad in (d for d in REGISTRY["dtypes"] if d not in expand(dts)):
                out.append(pytest.param(op, arg, bad, id=f"{op}-{arg}-{bad}"))
    return out


@pytest.mark.parametrize("op,arg,bad", _restrictions())
def test_dtype_restrictions(op, arg, bad):
    with pytest.raises(DTypeMismatch) as e:
        _call(op, {arg: _storage(bad)})
    assert e.value.op == op and e.value.backend == "cpu"


def _storage_args():
    return [
        pytest.param(op, p, id=f"{op}-{p}")
        for op, spec in OPS.items()
        for p, t in (spec.get("params") or {}).items()
        if t == "Storage"
    ]


@pytest.mark.parametrize("op,arg", _storage_args())
def test_device_mismatch(op, arg):
    foreign = Storage(Backend.CUDA, object())
    with pytest.raises(DeviceMismatch) as e:
        _call(op, {arg: foreign})
    assert e.value.op == op


# --------------------------------------------------------------------------- layouts vs buffers

BAD_LAYOUTS = {
    "too-long": Layout.contiguous((5,)),
    "offset-past-end": Layout.contiguous((2, 2), start_offset=1),
    "strided-past-end": Layout((2, 2), (3, 1)),
    "broadcast-offset": Layout((3, 2), (0, 1), 3),
}


@pytest.mark.parametrize("layout", list(BAD_LAYOUTS.values()), ids=list(BAD_LAYOUTS))
@pytest.mark.parametrize(
    "op",
    ["unary", "binary", "cmp", "reduce_op", "affine", "to_dtype", "const_set", "copy_strided_src"],
)
def test_layout_outside_buffer(op, layout):
    s = _storage("f32")
    with pytest.raises(ShapeMismatch) as e:
        if op == "unary":
            s.unary(UnaryOp.EXP, layout)
        elif op in ("binary", "cmp"):
            kind = BinaryOp.ADD if op == "binary" else CmpOp.EQ
            big = CPU.storage_from_slice(np.zeros(64, np.float32))
            getattr(s, op)(kind, big, layout, layout)
        elif op == "reduce_op":
            s.reduce_op(ReduceOp.SUM, layout, (0,))
        elif op == "affine":
            s.affine(layout, 2.0, 1.0)
        elif op == "to_dtype":
            s.to_dtype(layout, DType.F64)
        elif op == "const_set":
            s.const_set(1.0, layout)
        else:
            s.copy_strided_src(CPU.storage_from_slice(np.zeros(64, np.float32)), 0, layout)
    assert e.value.backend == "cpu"
    assert np.array_equal(s.inner, np.zeros(4, np.float32)), "failed op wrote to its input"

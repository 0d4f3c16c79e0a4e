"""Elementwise storage ops on CPU: unary, binary, cmp, affine, powf, elu, to_dtype,
where_cond, const_set, try_clone. Every registry op x declared dtype x layout kind."""

from __future__ import annotations

import math

import numpy as np
import pytest

from generated import BinaryOp, CmpOp, DType, DTypeMismatch, Layout, UnaryOp

from . import refs
from .conftest import ALL_DTYPES, FLOAT_DTYPES, REGISTRY, storage_dtypes
from .refs import CPU, FLOAT, INT, NP, as_py, assert_close, wrap

SHAPE = (3, 4)


def _dtype_named(err: Exception, name: str) -> bool:
    text = str(err)
    return name in text or str(NP[name]) in text


# --------------------------------------------------------------------------- references


def test_every_elementwise_op_has_a_reference():
    """One failure per op the registry adds without a reference, saying what to add; the
    op's cases skip, pointing here, instead of failing one by one."""
    tables = {"unary": refs.UNARY, "binary": refs.BINARY, "cmp": refs.CMP}
    missing = [
        refs.missing_reference(family, op)
        for family, table in tables.items()
        for op in REGISTRY.get(family) or {}
        if op not in table
    ]
    assert not missing, "\n".join(missing)


# --------------------------------------------------------------------------- unary


def test_unary(unary_case, rng):
    op, name, kind = unary_case
    if op not in refs.UNARY:
        pytest.skip(refs.missing_reference("unary", op) + " (test_every_elementwise_op_has_a_reference fails)")
    fref, iref, domain = refs.UNARY[op]
    if name in INT and iref is None:
        pytest.fail(f"ops.yaml declares {op} for {name} but refs.UNARY has no integer reference")
    s, flat, layout, vals = refs.operand(name, kind, SHAPE, rng, domain)
    before = flat.copy()
    out = s.unary(UnaryOp(op), layout)
    assert out.dtype() is DType(name)
    got = refs.result(out, SHAPE)
    if name in INT:
        want = [wrap(iref(v), name) for v in as_py(vals)]
    else:
        want = [fref(v) for v in as_py(vals)]
    assert_close(got, want, name, what=f"{op} {name} {kind}")
    assert np.array_equal(s.inner.view(np.uint8), before.view(np.uint8)), "input modified"


def test_unary_unsupported_dtype(unary_unsupported):
    op, name = unary_unsupported
    s = CPU.storage_from_slice(np.ones(4, NP[name]))
    with pytest.raises(DTypeMismatch) as e:
        s.unary(UnaryOp(op), Layout.contiguous((4,)))
    assert e.value.op in (op, "unary") and e.value.backend == "cpu"
    assert _dtype_named(e.value, name)


# --------------------------------------------------------------------------- binary / cmp


def _binary_operands(op, name, kinds, rng, rhs_domain="any", lhs_domain="any"):
    lk, rk = kinds
    a = refs.operand(name, lk, SHAPE, rng, lhs_domain)
    b = refs.operand(name, rk, SHAPE, rng, rhs_domain)
    return a, b


def test_binary(binary_case, rng):
    op, name, kinds = binary_case
    if op not in refs.BINARY:
        pytest.skip(refs.missing_reference("binary", op) + " (test_every_elementwise_op_has_a_reference fails)")
    fref, iref = refs.BINARY[op]
    (sa, _, la, va), (sb, _, lb, vb) = _binary_operands(op, name, kinds, rng, "nonzero" if op == "div" else "any")
    out = sa.binary(BinaryOp(op), sb, la, lb)
    assert out.dtype() is DType(name)
    got = refs.result(out, SHAPE)
    if name in INT:
        want = [wrap(iref(x, y), name) for x, y in zip(as_py(va), as_py(vb))]
        assert_close(got, want, name, what=f"{op} {name} {kinds}")
    else:
        xs, ys = as_py(va), as_py(vb)
        want = [fref(x, y) for x, y in zip(xs, ys)]
        assert_close(got, want, name, what=f"{op} {name} {kinds}")


def test_binary_unsupported_dtype(binary_unsupported):
    op, name = binary_unsupported
    s = CPU.storage_from_slice(np.ones(4, NP[name]))
    with pytest.raises(DTypeMismatch) as e:
        s.binary(BinaryOp(op), s, Layout.contiguous((4,)), Layout.contiguous((4,)))
    assert e.value.op in (op, "binary")


def test_cmp(cmp_case, rng):
    op, name, kinds = cmp_case
    if op not in refs.CMP:
        pytest.skip(refs.missing_reference("cmp", op) + " (test_every_elementwise_op_has_a_reference fails)")
    (sa, _, la, va), (sb, _, lb, vb) = _binary_operands(op, name, kinds, rng, "small", "small")
    out = sa.cmp(CmpOp(op), sb, la, lb)
    assert out.dtype() is DType.U8
    got = refs.result(out, SHAPE)
    want = [int(refs.CMP[op](x, y)) for x, y in zip(as_py(va), as_py(vb))]
    assert_close(got, want, "u8", what=f"{op} {name} {kinds}")


def test_cmp_unsupported_dtype(cmp_unsupported):
    op, name = cmp_unsupported
    s = CPU.storage_from_slice(np.ones(4, NP[name]))
    with pytest.raises(DTypeMismatch) as e:
        s.cmp(CmpOp(op), s, Layout.contiguous((4,)), Layout.contiguous((4,)))
    assert e.value.op in (op, "cmp")


# --------------------------------------------------------------------------- affine / powf / elu


AFFINE_ARGS = [(1.5, -0.25), (3.0, 7.0), (-2.0, 1.0)]


@pytest.mark.parametrize("mul,add", AFFINE_ARGS, ids=[f"m{m}a{a}" for m, a in AFFINE_ARGS])
@pytest.mark.parametrize("kind", ["contig", "transposed", "broadcast"])
@pytest.mark.parametrize("name", storage_dtypes("affine"))
def test_affine(name, kind, mul, add, rng):
    s, _, layout, vals = refs.operand(name, kind, SHAPE, rng)
    got = refs.result(s.affine(layout, mul, add), SHAPE)
    if name in INT:
        # Candle converts mul and add to the dtype first (Rust `as`), then wraps.
        m, a = refs.rust_as_int(mul, name), refs.rust_as_int(add, name)
        want = [wrap(v * m + a, name) for v in as_py(vals)]
        assert_close(got, want, name)
    else:
        xs = as_py(vals)
        want = [x * mul + add for x in xs]
        assert_close(got, want, name, scale=[abs(x * mul) + abs(add) for x in xs])


def _float_only(op: str) -> list[str]:
    return storage_dtypes(op, default=FLOAT_DTYPES)


@pytest.mark.parametrize("exponent", [2.5, -1.5, 3.0])
@pytest.mark.parametrize("kind", ["contig", "narrowed"])
@pytest.mark.parametrize("name", _float_only("powf"))
def test_powf(name, kind, exponent, rng):
    s, _, layout, vals = refs.operand(name, kind, SHAPE, rng, "pos")
    got = refs.result(s.powf(layout, exponent), SHAPE)
    assert_close(got, [math.pow(x, exponent) for x in as_py(vals)], name)


@pytest.mark.parametrize("alpha", [0.7, 2.0])
@pytest.mark.parametrize("kind", ["contig", "transposed"])
@pytest.mark.parametrize("name", _float_only("elu"))
def test_elu(name, kind, alpha, rng):
    s, _, layout, vals = refs.operand(name, kind, SHAPE, rng)
    got = refs.result(s.elu(layout, alpha), SHAPE)
    want = [x if x >= 0 else alpha * (math.exp(x) - 1.0) for x in as_py(vals)]
    assert_close(got, want, name)


@pytest.mark.parametrize("op", ["powf", "elu"])
@pytest.mark.parametrize("name", [d for d in ALL_DTYPES if d not in FLOAT_DTYPES])
def test_float_only_ops_reject_other_dtypes(op, name):
    s = CPU.storage_from_slice(np.ones(4, NP[name]))
    with pytest.raises(DTypeMismatch) as e:
        getattr(s, op)(Layout.contiguous((4,)), 2.0)
    assert e.value.op == op and e.value.backend == "cpu"


# --------------------------------------------------------------------------- to_dtype

SPECIALS = [math.nan, math.inf, -math.inf, -1.5, -0.9, 0.0, 2.5, 255.9, 256.0, 300.0, 65504.0, 4.5e9, 1e19, -1e19]


def _cast_source(name: str, rng) -> np.ndarray:
    if name in FLOAT:
        v = np.concatenate([np.array(SPECIALS), rng.normal(0, 100, 10)])
        with np.errstate(over="ignore"):
            return v.astype(NP[name])
    lo, hi = refs.int_range(name)
    edges = [lo, hi, 0, 1, 255, 256, 65535, 2**31, 2**32 - 1, -1, -256, 2**53 + 1, -(2**62)]
    edges = [e for e in edges if lo <= e <= hi]
    fixed = np.array(edges, dtype=np.int64 if name == "i64" else np.uint64).astype(NP[name])
    return np.concatenate([fixed, refs.random_values(name, 24 - len(edges), rng)])


@pytest.mark.parametrize("kind", ["contig", "transposed"])
@pytest.mark.parametrize("dst", ALL_DTYPES)
@pytest.mark.parametrize("src", ALL_DTYPES)
def test_to_dtype(src, dst, kind, rng):
    base = _cast_source(src, rng)
    shape = (4, 6)
    size, layout = refs.make_layout(kind, shape)
    assert size == base.size
    s = CPU.storage_from_slice(base)
    out = s.to_dtype(layout, DType(dst))
    assert out.dtype() is DType(dst)
    got = refs.result(out, shape)
    vals = as_py(refs.read_view(base, layout))
    if dst in INT:
        if src in INT:
            want = [wrap(v, dst) for v in vals]  # int -> int wraps (Rust `as`)
        else:
            want = [refs.rust_as_int(v, dst) for v in vals]  # truncate, saturate, NaN -> 0
        assert_close(got, want, dst, what=f"{src}->{dst}")
    else:
        # The exact value, rounded once to the target format (overflow -> inf).
        with np.errstate(over="ignore"):
            want = np.array([float(v) for v in vals]).astype(NP[dst]).astype(np.float64)
        assert_close(got, want, dst, what=f"{src}->{dst}")


# --------------------------------------------------------------------------- where_cond

WHERE_KINDS = [
    ("contig", "contig", "contig"),
    ("transposed", "broadcast", "offset"),
    ("broadcast", "narrowed", "transposed"),
]


@pytest.mark.parametrize("kinds", WHERE_KINDS, ids=["-".join(k) for k in WHERE_KINDS])
@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("cond", storage_dtypes("where_cond"))
def test_where_cond(cond, name, kinds, rng):
    ck, tk, fk = kinds
    size, cl = refs.make_layout(ck, SHAPE)
    lo, hi = refs.int_range(cond)
    cflat = rng.choice(np.array([0, 1, 2, hi] + ([lo] if lo else []), dtype=object), size).astype(NP[cond])
    sc = CPU.storage_from_slice(cflat)
    st, _, tl, tv = refs.operand(name, tk, SHAPE, rng)
    sf, _, fl, fv = refs.operand(name, fk, SHAPE, rng)
    out = sc.where_cond(cl, st, tl, sf, fl)
    assert out.dtype() is DType(name)
    c = as_py(refs.read_view(cflat, cl))
    want = [t if ci != 0 else f for ci, t, f in zip(c, as_py(tv), as_py(fv))]
    assert_close(refs.result(out, SHAPE), want, name)


# --------------------------------------------------------------------------- const_set / try_clone


@pytest.mark.parametrize("kind", ["contig", "offset", "transposed", "narrowed", "broadcast"])
@pytest.mark.parametrize("name", storage_dtypes("const_set"))
def test_const_set(name, kind, rng):
    size, layout = refs.make_layout(kind, SHAPE)
    flat = refs.random_values(name, size, rng)
    s = CPU.storage_from_slice(flat)
    value = 7 if name in INT else -1.25
    assert s.const_set(value, layout) is None
    after = as_py(refs.to_numpy(s, Layout.contiguous((size,))))
    before = as_py(flat)
    inside = refs.offsets_of(layout)
    for i in range(size):
        assert after[i] == (value if i in inside else before[i]), (i, after[i])


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_const_set_int_value_on_any_dtype(name, rng):
    s = CPU.storage_from_slice(refs.random_values(name, 6, rng))
    s.const_set(3, Layout.contiguous((2, 3)))
    assert as_py(refs.to_numpy(s, Layout.contiguous((6,)))) == [3] * 6


@pytest.mark.parametrize("name", storage_dtypes("try_clone"))
def test_try_clone(name, rng):
    flat = refs.random_values(name, 12, rng)
    s = CPU.storage_from_slice(flat)
    layout = Layout.contiguous((3, 4))
    c = s.try_clone(layout)
    assert c.dtype() is DType(name) and c.device() == CPU
    assert as_py(refs.to_numpy(c, layout)) == as_py(flat.reshape(3, 4))
    s.const_set(1, layout)  # the clone does not share memory
    assert as_py(refs.to_numpy(c, layout)) == as_py(flat.reshape(3, 4))


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_dtype_and_device(name):
    s = CPU.storage_from_slice(np.zeros(3, NP[name]))
    assert s.dtype() is DType(name)
    assert s.device() == CPU


# --------------------------------------------------------------------------- results are new buffers


def _fresh_cases():
    f32 = DType.F32
    return {
        "unary": lambda s, l: s.unary(UnaryOp(next(iter(UnaryOp))), l),
        "binary": lambda s, l: s.binary(BinaryOp(next(iter(BinaryOp))), s, l, l),
        "affine-identity": lambda s, l: s.affine(l, 1.0, 0.0),
        "to_dtype-same": lambda s, l: s.to_dtype(l, f32),
        "try_clone": lambda s, l: s.try_clone(l),
        "where_cond": lambda s, l: CPU.storage_from_slice(np.ones(12, np.uint8)).where_cond(l, s, l, s, l),
    }


@pytest.mark.parametrize("op", list(_fresh_cases()))
def test_result_does_not_alias_input(op, rng):
    s = CPU.storage_from_slice(refs.random_values("f32", 12, rng, "pos"))
    before = s.inner.copy()
    out = _fresh_cases()[op](s, Layout.contiguous((3, 4)))
    assert not np.shares_memory(out.inner, s.inner)
    out.const_set(0, Layout.contiguous((out.inner.size,)))
    assert np.array_equal(s.inner, before)

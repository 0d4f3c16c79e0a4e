"""gather, scatter_set, scatter_add, index_select, index_add on CPU (torch semantics),
against loops. Index dtypes come from the registry (`dtypes: {ids: ...}`)."""

from __future__ import annotations

import numpy as np
import pytest

from generated import DType, DTypeMismatch, Layout, ShapeMismatch

from . import refs
from .conftest import storage_dtypes
from .refs import CPU, INT, NP, as_py, assert_close, wrap

SHAPE = (3, 4, 5)
DIMS = [0, 1, 2]


def _ids_storage(ids_name: str, values: np.ndarray, kind: str = "contig"):
    """Storage + layout holding integer `values` (any shape) in layout `kind`."""
    size, layout = refs.make_layout(kind, values.shape)
    flat = np.zeros(size, dtype=NP[ids_name])
    for idx in np.ndindex(*values.shape):
        off = layout.start_offset + sum(i * s for i, s in zip(idx, layout.stride))
        flat[off] = values[idx]
    return CPU.storage_from_slice(flat), layout


def _plain(values: np.ndarray, name: str) -> np.ndarray:
    return np.array(as_py(values), dtype=object).reshape(values.shape) if name in INT else values.astype(np.float64)


# --------------------------------------------------------------------------- gather


@pytest.mark.parametrize("ids_kind", ["contig", "transposed"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("ids_name", storage_dtypes("gather", "ids"))
@pytest.mark.parametrize("name", storage_dtypes("gather"))
def test_gather(name, ids_name, dim, ids_kind, rng):
    s, _, layout, vals = refs.operand(name, "transposed" if ids_kind == "contig" else "narrowed", SHAPE, rng)
    ids_shape = list(SHAPE)
    ids_shape[dim] = 6  # more ids than the source has rows along dim
    ids_shape[(dim + 1) % 3] -= 1  # and fewer along another dim (torch allows <=)
    ids = rng.integers(0, SHAPE[dim], size=ids_shape)
    si, li = _ids_storage(ids_name, ids, ids_kind)
    out = s.gather(layout, si, li, dim)
    assert out.dtype() is DType(name)
    want = np.empty(ids.shape, dtype=object)
    for idx in np.ndindex(*ids.shape):
        src = list(idx)
        src[dim] = ids[idx]
        want[idx] = vals[tuple(src)]
    assert_close(refs.result(out, ids.shape), [refs.as_py(np.array([v], NP[name]))[0] for v in want.reshape(-1)], name)


# --------------------------------------------------------------------------- scatter


def _scatter_case(name, ids_name, dim, rng, unique: bool, dst_kind: str):
    dst_size, dst_layout = refs.make_layout(dst_kind, SHAPE)
    dst_flat = refs.random_values(name, dst_size, rng, "small" if name in INT else "any")
    ids_shape = list(SHAPE)
    ids_shape[dim] = SHAPE[dim] - 1 if unique else 7
    ids_shape[(dim + 1) % 3] -= 1
    ids = np.empty(ids_shape, dtype=np.int64)
    for rest in np.ndindex(*[n for d, n in enumerate(ids_shape) if d != dim]):
        line = rng.permutation(SHAPE[dim])[: ids_shape[dim]] if unique else rng.integers(0, SHAPE[dim], ids_shape[dim])
        for i, v in enumerate(line):
            idx = list(rest)
            idx.insert(dim, i)
            ids[tuple(idx)] = v
    src_shape = tuple(n + 1 for n in ids_shape)  # src may be larger than ids
    ss, _, sl, svals = refs.operand(name, "transposed", src_shape, rng)
    si, li = _ids_storage(ids_name, ids)
    return CPU.storage_from_slice(dst_flat), dst_flat, dst_layout, ss, sl, svals, si, li, ids


@pytest.mark.parametrize("dst_kind", ["contig", "offset"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("ids_name", storage_dtypes("scatter_set", "ids"))
@pytest.mark.parametrize("name", storage_dtypes("scatter_set"))
def test_scatter_set(name, ids_name, dim, dst_kind, rng):
    d, flat, dl, ss, sl, svals, si, li, ids = _scatter_case(name, ids_name, dim, rng, True, dst_kind)
    assert d.scatter_set(dl, si, li, ss, sl, dim) is None
    want = refs.read_view(flat, dl).copy()
    for idx in np.ndindex(*ids.shape):
        tgt = list(idx)
        tgt[dim] = ids[idx]
        want[tuple(tgt)] = svals[idx]
    whole = refs.to_numpy(d, Layout.contiguous((flat.size,)))
    assert_close(refs.read_view(whole, dl), as_py(want), name)
    outside = sorted(set(range(flat.size)) - refs.offsets_of(dl))
    assert as_py(whole[outside]) == as_py(flat[outside])


@pytest.mark.parametrize("dst_kind", ["contig", "offset"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("ids_name", storage_dtypes("scatter_add", "ids"))
@pytest.mark.parametrize("name", storage_dtypes("scatter_add"))
def test_scatter_add(name, ids_name, dim, dst_kind, rng):
    d, flat, dl, ss, sl, svals, si, li, ids = _scatter_case(name, ids_name, dim, rng, False, dst_kind)
    assert d.scatter_add(dl, si, li, ss, sl, dim) is None
    want = _plain(refs.read_view(flat, dl), name).astype(object)
    scale = np.abs(_plain(refs.read_view(flat, dl), name).astype(np.float64))
    sv = _plain(svals, name)
    for idx in np.ndindex(*ids.shape):
        tgt = list(idx)
        tgt[dim] = ids[idx]
        want[tuple(tgt)] += sv[idx]
        scale[tuple(tgt)] += abs(float(sv[idx]))
    if name in INT:
        want = np.vectorize(lambda v: wrap(int(v), name), otypes=[object])(want)
    whole = refs.to_numpy(d, Layout.contiguous((flat.size,)))
    assert_close(refs.read_view(whole, dl), want, name, scale=scale)
    outside = sorted(set(range(flat.size)) - refs.offsets_of(dl))
    assert as_py(whole[outside]) == as_py(flat[outside])


@pytest.mark.parametrize("op", ["scatter_set", "scatter_add"])
def test_scatter_needs_contiguous_destination(op, rng):
    d, flat, _, ss, sl, _, si, li, _ = _scatter_case("f32", "u32", 0, rng, True, "contig")
    _, transposed = refs.make_layout("transposed", SHAPE)
    with pytest.raises(ShapeMismatch) as e:
        getattr(d, op)(transposed, si, li, ss, sl, 0)
    assert e.value.op == op


# --------------------------------------------------------------------------- index_select / index_add


@pytest.mark.parametrize("kinds", [("contig", "contig"), ("transposed", "narrowed")], ids=["contig", "strided"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("ids_name", storage_dtypes("index_select", "ids"))
@pytest.mark.parametrize("name", storage_dtypes("index_select"))
def test_index_select(name, ids_name, dim, kinds, rng):
    s, _, layout, vals = refs.operand(name, kinds[0], SHAPE, rng)
    ids = rng.integers(0, SHAPE[dim], size=6)  # with duplicates, any order
    si, li = _ids_storage(ids_name, ids, kinds[1])
    out = s.index_select(si, layout, li, dim)
    out_shape = SHAPE[:dim] + (6,) + SHAPE[dim + 1 :]
    assert out.dtype() is DType(name)
    want = np.empty(out_shape, dtype=vals.dtype)
    for idx in np.ndindex(*out_shape):
        src = list(idx)
        src[dim] = ids[idx[dim]]
        want[idx] = vals[tuple(src)]
    assert_close(refs.result(out, out_shape), as_py(want), name)


@pytest.mark.parametrize("kinds", [("contig", "contig"), ("transposed", "narrowed")], ids=["contig", "strided"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("ids_name", storage_dtypes("index_add", "ids"))
@pytest.mark.parametrize("name", storage_dtypes("index_add"))
def test_index_add(name, ids_name, dim, kinds, rng):
    s, flat, layout, vals = refs.operand(name, kinds[0], SHAPE, rng)
    before = flat.copy()
    ids = rng.integers(0, SHAPE[dim], size=6)
    si, li = _ids_storage(ids_name, ids, kinds[1])
    src_shape = SHAPE[:dim] + (6,) + SHAPE[dim + 1 :]
    ss, _, sl, svals = refs.operand(name, kinds[0], src_shape, rng)
    out = s.index_add(layout, si, li, ss, sl, dim)
    assert out.dtype() is DType(name)
    want = _plain(vals, name).astype(object)
    scale = np.abs(_plain(vals, name).astype(np.float64))
    sv = _plain(svals, name)
    for idx in np.ndindex(*src_shape):
        tgt = list(idx)
        tgt[dim] = ids[idx[dim]]
        want[tuple(tgt)] += sv[idx]
        scale[tuple(tgt)] += abs(float(sv[idx]))
    if name in INT:
        want = np.vectorize(lambda v: wrap(int(v), name), otypes=[object])(want)
    assert_close(refs.result(out, SHAPE), want, name, scale=scale)
    assert np.array_equal(s.inner.view(np.uint8), before.view(np.uint8)), "index_add modified its input"


# --------------------------------------------------------------------------- errors


def _bad_ids(ids_name: str) -> list[int]:
    return [SHAPE[0], 100] + ([-1] if ids_name == "i64" else [])


@pytest.mark.parametrize("ids_name", storage_dtypes("gather", "ids"))
@pytest.mark.parametrize("op", ["gather", "index_select", "index_add", "scatter_set", "scatter_add"])
def test_out_of_range_ids(op, ids_name, rng):
    for bad in _bad_ids(ids_name):
        s, _, layout, _ = refs.operand("f32", "contig", SHAPE, rng)
        if op in ("index_select", "index_add"):
            ids = np.array([0, bad, 1])
        else:
            ids = np.zeros(SHAPE, dtype=np.int64)
            ids[1, 2, 3] = bad
        if ids_name != "i64" and bad > np.iinfo(NP[ids_name]).max:
            continue
        si, li = _ids_storage(ids_name, ids)
        with pytest.raises(ShapeMismatch) as e:
            if op == "gather":
                s.gather(layout, si, li, 0)
            elif op == "index_select":
                s.index_select(si, layout, li, 0)
            else:
                src_shape = (3,) + SHAPE[1:] if op == "index_add" else SHAPE
                ss, _, sl, _ = refs.operand("f32", "contig", src_shape, rng)
                getattr(s, op)(layout, si, li, ss, sl, 0)
        assert e.value.op == op and e.value.backend == "cpu", bad


@pytest.mark.parametrize("ids_name", [d for d in refs.NP if d not in storage_dtypes("gather", "ids")])
@pytest.mark.parametrize("op", ["gather", "index_select", "scatter_add"])
def test_ids_dtype_rejected(op, ids_name, rng):
    s, _, layout, _ = refs.operand("f32", "contig", SHAPE, rng)
    si = CPU.storage_from_slice(np.zeros(SHAPE, NP[ids_name]))
    li = Layout.contiguous(SHAPE)
    with pytest.raises(DTypeMismatch) as e:
        if op == "gather":
            s.gather(layout, si, li, 0)
        elif op == "index_select":
            s.index_select(si, layout, Layout.contiguous((3,)), 0)
        else:
            s.scatter_add(layout, si, li, s, layout, 0)
    assert e.value.op == op


def test_index_select_needs_1d_ids(rng):
    s, _, layout, _ = refs.operand("f32", "contig", SHAPE, rng)
    si, li = _ids_storage("u32", np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ShapeMismatch):
        s.index_select(si, layout, li, 0)


def test_index_add_src_shape(rng):
    s, _, layout, _ = refs.operand("f32", "contig", SHAPE, rng)
    si, li = _ids_storage("u32", np.array([0, 1]))
    ss, _, sl, _ = refs.operand("f32", "contig", (3,) + SHAPE[1:], rng)  # 3 rows for 2 ids
    with pytest.raises(ShapeMismatch):
        s.index_add(layout, si, li, ss, sl, 0)


def test_gather_ids_rank(rng):
    s, _, layout, _ = refs.operand("f32", "contig", SHAPE, rng)
    si, li = _ids_storage("u32", np.zeros((3, 4), dtype=np.int64))
    with pytest.raises(ShapeMismatch):
        s.gather(layout, si, li, 0)

"""matmul, copy_strided_src and copy2d on CPU."""

from __future__ import annotations

import numpy as np
import pytest

from generated import DType, Layout, MatmulDims, ShapeMismatch

from . import refs
from .conftest import storage_dtypes
from .refs import CPU, as_py, assert_close

B, M, N, K = 2, 3, 4, 5


def _matmul_layouts(case: str):
    """(lhs buffer size, lhs layout, rhs buffer size, rhs layout) for a layout case."""
    if case == "contig":
        return B * M * K, Layout.contiguous((B, M, K)), B * K * N, Layout.contiguous((B, K, N))
    if case == "lhs-transposed":
        return B * M * K, Layout.contiguous((B, K, M)).transpose(1, 2), B * K * N + 3, Layout.contiguous((B, K, N), 3)
    if case == "rhs-transposed":
        return B * M * K, Layout.contiguous((B, M, K)), B * K * N, Layout.contiguous((B, N, K)).transpose(1, 2)
    if case == "rhs-broadcast":  # one rhs for every batch (batch stride 0)
        return B * M * K, Layout.contiguous((B, M, K)), K * N, Layout.contiguous((1, K, N)).broadcast_as((B, K, N))
    if case == "4d-narrowed":  # batch dims (1, 2); lhs is a column block of a wider matrix
        lhs = Layout.contiguous((1, B, M, K + 2)).narrow(3, 1, K)
        return B * M * (K + 2), lhs, B * K * N, Layout.contiguous((1, B, K, N))
    raise ValueError(case)


CASES = ["contig", "lhs-transposed", "rhs-transposed", "rhs-broadcast", "4d-narrowed"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", storage_dtypes("matmul"))
def test_matmul(name, case, rng):
    ls, ll, rs, rl = _matmul_layouts(case)
    domain = "small" if name in ("u8", "i64") else "any"
    lflat, rflat = refs.random_values(name, ls, rng, domain), refs.random_values(name, rs, rng, domain)
    lhs, rhs = CPU.storage_from_slice(lflat), CPU.storage_from_slice(rflat)
    out = lhs.matmul(rhs, MatmulDims(B, M, N, K), ll, rl)
    assert out.dtype() is DType(name)
    a = refs.read_view(lflat, ll).reshape(B, M, K)
    b = refs.read_view(rflat, rl).reshape(B, K, N)
    want, scale = refs.matmul_ref(a, b, name)
    assert_close(refs.result(out, (B, M, N)), want, name, scale=scale, what=f"matmul {name} {case}")


@pytest.mark.parametrize(
    "bmnk",
    [MatmulDims(B, M, N, K + 1), MatmulDims(B + 1, M, N, K), MatmulDims(B, M + 1, N, K), MatmulDims(B, M, N - 1, K)],
    ids=["k", "b", "m", "n"],
)
def test_matmul_shape_mismatch(bmnk, rng):
    ls, ll, rs, rl = _matmul_layouts("contig")
    lhs = CPU.storage_from_slice(refs.random_values("f32", ls, rng))
    rhs = CPU.storage_from_slice(refs.random_values("f32", rs, rng))
    with pytest.raises(ShapeMismatch) as e:
        lhs.matmul(rhs, bmnk, ll, rl)
    assert e.value.op == "matmul" and e.value.backend == "cpu"


# --------------------------------------------------------------------------- copies


@pytest.mark.parametrize("kind", ["contig", "offset", "transposed", "narrowed", "broadcast"])
@pytest.mark.parametrize("name", storage_dtypes("copy_strided_src"))
def test_copy_strided_src(name, kind, rng):
    shape = (3, 4)
    s, _, layout, vals = refs.operand(name, kind, shape, rng)
    dst_flat = refs.random_values(name, 12 + 6, rng)
    d = CPU.storage_from_slice(dst_flat)
    assert s.copy_strided_src(d, 2, layout) is None
    got = as_py(refs.to_numpy(d, Layout.contiguous((18,))))
    want = as_py(dst_flat)
    want[2:14] = as_py(vals)
    assert got == want


def test_copy_strided_src_overflow(rng):
    s, _, layout, _ = refs.operand("f32", "contig", (3, 4), rng)
    d = CPU.storage_from_slice(np.zeros(13, np.float32))
    with pytest.raises(ShapeMismatch) as e:
        s.copy_strided_src(d, 2, layout)
    assert e.value.op == "copy_strided_src"


COPY2D = {
    "strided": dict(d1=3, d2=4, src_stride1=6, dst_stride1=5, src_offset=2, dst_offset=3),
    "packed": dict(d1=2, d2=5, src_stride1=5, dst_stride1=5, src_offset=1, dst_offset=0),
    "one-row": dict(d1=1, d2=7, src_stride1=0, dst_stride1=0, src_offset=4, dst_offset=9),
    "dst-packed": dict(d1=3, d2=4, src_stride1=7, dst_stride1=4, src_offset=1, dst_offset=2),
    "src-packed": dict(d1=3, d2=4, src_stride1=4, dst_stride1=6, src_offset=5, dst_offset=0),
}


@pytest.mark.parametrize("case", list(COPY2D))
@pytest.mark.parametrize("name", storage_dtypes("copy2d"))
def test_copy2d(name, case, rng):
    a = COPY2D[case]
    src_flat, dst_flat = refs.random_values(name, 30, rng), refs.random_values(name, 25, rng)
    s, d = CPU.storage_from_slice(src_flat), CPU.storage_from_slice(dst_flat)
    assert s.copy2d(d, a["d1"], a["d2"], a["src_stride1"], a["dst_stride1"], a["src_offset"], a["dst_offset"]) is None
    want, src = as_py(dst_flat), as_py(src_flat)
    for i in range(a["d1"]):
        for j in range(a["d2"]):
            want[a["dst_offset"] + i * a["dst_stride1"] + j] = src[a["src_offset"] + i * a["src_stride1"] + j]
    assert as_py(refs.to_numpy(d, Layout.contiguous((25,)))) == want
    assert as_py(refs.to_numpy(s, Layout.contiguous((30,)))) == src


@pytest.mark.parametrize("which", ["src", "dst"])
def test_copy2d_out_of_bounds(which):
    s = CPU.storage_from_slice(np.zeros(10, np.float32))
    d = CPU.storage_from_slice(np.zeros(10, np.float32))
    args = (3, 4, 4, 3, 0, 0) if which == "src" else (2, 4, 4, 5, 0, 2)
    with pytest.raises(ShapeMismatch) as e:
        s.copy2d(d, *args)
    assert e.value.op == "copy2d"

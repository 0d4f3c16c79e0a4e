"""Convolutions, pooling and nearest upsampling on CPU, against naive loops."""

from __future__ import annotations

import pytest

from generated import (
    ConvParams1D,
    ConvParams2D,
    ConvTransposeParams1D,
    ConvTransposeParams2D,
    DType,
    ShapeMismatch,
)

from . import refs
from .conftest import storage_dtypes
from .refs import INT, assert_close

CONV1D = {
    "plain": ConvParams1D(b_size=2, l_in=7, c_out=2, c_in=3, k_size=3),
    "pad1-stride2": ConvParams1D(b_size=2, l_in=8, c_out=3, c_in=2, k_size=3, padding=1, stride=2),
    "pad2-dil2": ConvParams1D(b_size=1, l_in=6, c_out=2, c_in=2, k_size=2, padding=2, dilation=2),
}
CONV_T1D = {
    "plain": ConvTransposeParams1D(b_size=2, l_in=5, c_out=2, c_in=3, k_size=3),
    "stride2-pad1-outpad1": ConvTransposeParams1D(
        b_size=2, l_in=4, c_out=3, c_in=2, k_size=3, padding=1, output_padding=1, stride=2
    ),
    "stride3-dil2-pad2": ConvTransposeParams1D(
        b_size=1, l_in=3, c_out=2, c_in=2, k_size=2, padding=2, output_padding=2, stride=3, dilation=2
    ),
    "stride2-outpad1": ConvTransposeParams1D(b_size=1, l_in=3, c_out=2, c_in=2, k_size=2, output_padding=1, stride=2),
}
CONV2D = {
    "plain": ConvParams2D(b_size=2, i_h=5, i_w=6, k_h=3, k_w=2, c_out=3, c_in=2),
    "pad1-stride2": ConvParams2D(b_size=1, i_h=6, i_w=5, k_h=3, k_w=3, c_out=2, c_in=2, padding=1, stride=2),
    "pad1-dil2": ConvParams2D(b_size=1, i_h=5, i_w=5, k_h=2, k_w=3, c_out=2, c_in=3, padding=1, dilation=2),
}
CONV_T2D = {
    "plain": ConvTransposeParams2D(b_size=2, i_h=3, i_w=4, k_h=2, k_w=3, c_out=2, c_in=3),
    "stride2-pad1-outpad1": ConvTransposeParams2D(
        b_size=1, i_h=3, i_w=3, k_h=3, k_w=3, c_out=2, c_in=2, padding=1, output_padding=1, stride=2
    ),
    "dil2-pad1": ConvTransposeParams2D(b_size=1, i_h=3, i_w=2, k_h=2, k_w=2, c_out=3, c_in=2, padding=1, dilation=2),
    "stride2-outpad1": ConvTransposeParams2D(
        b_size=1, i_h=2, i_w=3, k_h=2, k_w=2, c_out=2, c_in=2, output_padding=1, stride=2
    ),
}
CONV_KINDS = ["contig", "permuted"]


def _domain(name):
    return "small" if name in INT else "any"


def _run_conv(op, name, kind, p, x_shape, k_shape, out_shape, ref, rng):
    sx, _, lx, vx = refs.operand(name, kind, x_shape, rng, _domain(name))
    # the kernel gets the other layout kind, so both operands see both
    sk, _, lk, vk = refs.operand(name, "transposed" if kind == "contig" else "offset", k_shape, rng, _domain(name))
    out = getattr(sx, op)(lx, sk, lk, p)
    assert out.dtype() is DType(name)
    want, scale = ref(vx, vk, p, name)
    assert_close(refs.result(out, out_shape), want, name, scale=scale, what=f"{op} {name} {kind}")


@pytest.mark.parametrize("kind", CONV_KINDS)
@pytest.mark.parametrize("case", list(CONV1D))
@pytest.mark.parametrize("name", storage_dtypes("conv1d"))
def test_conv1d(name, case, kind, rng):
    p = CONV1D[case]
    _run_conv(
        "conv1d",
        name,
        kind,
        p,
        (p.b_size, p.c_in, p.l_in),
        (p.c_out, p.c_in, p.k_size),
        (p.b_size, p.c_out, p.l_out()),
        refs.conv1d_ref,
        rng,
    )


@pytest.mark.parametrize("kind", CONV_KINDS)
@pytest.mark.parametrize("case", list(CONV_T1D))
@pytest.mark.parametrize("name", storage_dtypes("conv_transpose1d"))
def test_conv_transpose1d(name, case, kind, rng):
    p = CONV_T1D[case]
    _run_conv(
        "conv_transpose1d",
        name,
        kind,
        p,
        (p.b_size, p.c_in, p.l_in),
        (p.c_in, p.c_out, p.k_size),
        (p.b_size, p.c_out, p.l_out()),
        refs.conv_transpose1d_ref,
        rng,
    )


@pytest.mark.parametrize("kind", CONV_KINDS)
@pytest.mark.parametrize("case", list(CONV2D))
@pytest.mark.parametrize("name", storage_dtypes("conv2d"))
def test_conv2d(name, case, kind, rng):
    p = CONV2D[case]
    _run_conv(
        "conv2d",
        name,
        kind,
        p,
        (p.b_size, p.c_in, p.i_h, p.i_w),
        (p.c_out, p.c_in, p.k_h, p.k_w),
        (p.b_size, p.c_out, p.out_h(), p.out_w()),
        refs.conv2d_ref,
        rng,
    )


@pytest.mark.parametrize("kind", CONV_KINDS)
@pytest.mark.parametrize("case", list(CONV_T2D))
@pytest.mark.parametrize("name", storage_dtypes("conv_transpose2d"))
def test_conv_transpose2d(name, case, kind, rng):
    p = CONV_T2D[case]
    _run_conv(
        "conv_transpose2d",
        name,
        kind,
        p,
        (p.b_size, p.c_in, p.i_h, p.i_w),
        (p.c_in, p.c_out, p.k_h, p.k_w),
        (p.b_size, p.c_out, p.out_h(), p.out_w()),
        refs.conv_transpose2d_ref,
        rng,
    )


@pytest.mark.parametrize(
    "op,params,x_shape,k_shape",
    [
        ("conv1d", CONV1D["plain"], (2, 3, 6), (2, 3, 3)),  # l_in differs from params
        ("conv1d", CONV1D["plain"], (2, 3, 7), (2, 2, 3)),  # kernel c_in differs
        ("conv_transpose1d", CONV_T1D["plain"], (2, 3, 5), (2, 3, 3)),  # kernel is (c_in, c_out, k)
        ("conv2d", CONV2D["plain"], (2, 2, 5, 6), (3, 2, 2, 2)),
        ("conv_transpose2d", CONV_T2D["plain"], (2, 3, 3, 4), (3, 2, 2, 2)),
    ],
    ids=["conv1d-input", "conv1d-kernel", "conv_transpose1d-kernel", "conv2d-kernel", "conv_transpose2d-kernel"],
)
def test_conv_shape_mismatch(op, params, x_shape, k_shape, rng):
    sx, _, lx, _ = refs.operand("f32", "contig", x_shape, rng)
    sk, _, lk, _ = refs.operand("f32", "contig", k_shape, rng)
    with pytest.raises(ShapeMismatch) as e:
        getattr(sx, op)(lx, sk, lk, params)
    assert e.value.op == op and e.value.backend == "cpu"


# --------------------------------------------------------------------------- pooling

POOLS = [((2, 2), (2, 2)), ((3, 2), (1, 2)), ((2, 3), (3, 1))]
POOL_SHAPE = (2, 3, 6, 7)


@pytest.mark.parametrize("kind", ["contig", "transposed", "broadcast"])
@pytest.mark.parametrize("ks", POOLS, ids=[f"k{k[0]}x{k[1]}-s{s[0]}x{s[1]}" for k, s in POOLS])
@pytest.mark.parametrize("name", storage_dtypes("max_pool2d"))
def test_max_pool2d(name, ks, kind, rng):
    k, st = ks
    s, _, layout, vals = refs.operand(name, kind, POOL_SHAPE, rng)
    want, _ = refs.pool_ref(vals, k, st, name, "max")
    out = s.max_pool2d(layout, k, st)
    assert out.dtype() is DType(name)
    assert_close(refs.result(out, want.shape), want, name)


@pytest.mark.parametrize("kind", ["contig", "transposed", "broadcast"])
@pytest.mark.parametrize("ks", POOLS, ids=[f"k{k[0]}x{k[1]}-s{s[0]}x{s[1]}" for k, s in POOLS])
@pytest.mark.parametrize("name", storage_dtypes("avg_pool2d"))
def test_avg_pool2d(name, ks, kind, rng):
    k, st = ks
    s, _, layout, vals = refs.operand(name, kind, POOL_SHAPE, rng)
    want, scale = refs.pool_ref(vals, k, st, name, "avg")
    out = s.avg_pool2d(layout, k, st)
    assert out.dtype() is DType(name)
    assert_close(refs.result(out, want.shape), want, name, scale=scale)


@pytest.mark.parametrize("op", ["avg_pool2d", "max_pool2d"])
def test_pool_kernel_larger_than_input(op, rng):
    s, _, layout, _ = refs.operand("f32", "contig", (1, 1, 2, 3), rng)
    with pytest.raises(ShapeMismatch):
        getattr(s, op)(layout, (3, 3), (1, 1))


# --------------------------------------------------------------------------- upsampling

UP1 = [(5, 10), (7, 3), (5, 8), (4, 4)]
UP2 = [((3, 4), (6, 8)), ((5, 4), (3, 7)), ((2, 3), (5, 5))]


@pytest.mark.parametrize("kind", ["contig", "transposed", "narrowed"])
@pytest.mark.parametrize("sizes", UP1, ids=[f"{a}to{b}" for a, b in UP1])
@pytest.mark.parametrize("name", storage_dtypes("upsample_nearest1d"))
def test_upsample_nearest1d(name, sizes, kind, rng):
    l_in, size = sizes
    s, _, layout, vals = refs.operand(name, kind, (2, 3, l_in), rng)
    out = s.upsample_nearest1d(layout, size)
    assert out.dtype() is DType(name)
    want = refs.upsample1d_ref(vals, size)
    assert_close(refs.result(out, want.shape), refs.as_py(want), name)


@pytest.mark.parametrize("kind", ["contig", "transposed", "broadcast"])
@pytest.mark.parametrize("sizes", UP2, ids=[f"{a[0]}x{a[1]}to{b[0]}x{b[1]}" for a, b in UP2])
@pytest.mark.parametrize("name", storage_dtypes("upsample_nearest2d"))
def test_upsample_nearest2d(name, sizes, kind, rng):
    (h, w), (oh, ow) = sizes
    s, _, layout, vals = refs.operand(name, kind, (2, 2, h, w), rng)
    out = s.upsample_nearest2d(layout, oh, ow)
    assert out.dtype() is DType(name)
    want = refs.upsample2d_ref(vals, oh, ow)
    assert_close(refs.result(out, want.shape), refs.as_py(want), name)

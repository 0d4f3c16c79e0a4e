"""CPU convolutions, pooling and nearest upsampling (re-exported by `runtime.cpu`).

Vectorised with sliding windows + tensordot (im2col); transposed convolutions loop
over kernel taps only. bf16/f16 are computed in f32; integer dtypes in their own
dtype (wrapping, as Candle's integer kernels do).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from runtime.cpu.views import (
    F64 as _F64,
    HALF as _HALF,
    INTS as _INTS,
    check_same_dtype as _check_same_dtype,
    check_shape as _check_shape,
    compute_dtype as _compute_dtype,
    pair as _pair,
    shape_error as _shape_error,
    view as _view,
)
from runtime.layout import Layout as _Layout


def _result(out: np.ndarray, dt: np.dtype) -> np.ndarray:
    out = np.ascontiguousarray(out)
    if out.dtype != dt:
        out = out.astype(dt)
    return out.reshape(-1)


def _conv_inputs(op, buf, layout, kernel, kernel_layout, x_shape, k_shape):
    _check_same_dtype(op, buf, kernel)
    _check_shape(op, "input", layout.shape, x_shape)
    _check_shape(op, "kernel", kernel_layout.shape, k_shape)
    ct = _compute_dtype(buf.dtype)
    x = _view(op, buf, layout).astype(ct, copy=False)
    w = _view(op, kernel, kernel_layout).astype(ct, copy=False)
    return x, w


def _check_geometry(op: str, p, out_sizes: tuple[int, ...]) -> None:
    if p.stride < 1 or p.dilation < 1 or p.padding < 0 or getattr(p, "output_padding", 0) < 0:
        raise _shape_error(op, "stride >= 1, dilation >= 1, padding >= 0", p)
    if any(s <= 0 for s in out_sizes):
        raise _shape_error(op, "a positive output size", out_sizes)


def conv1d(buf: np.ndarray, layout: _Layout, kernel: np.ndarray, kernel_layout: _Layout, params) -> np.ndarray:
    """(b, c_in, l_in) * (c_out, c_in, k) -> (b, c_out, l_out)."""
    op, p = "conv1d", params
    x, w = _conv_inputs(op, buf, layout, kernel, kernel_layout, (p.b_size, p.c_in, p.l_in), (p.c_out, p.c_in, p.k_size))
    l_out = p.l_out()
    _check_geometry(op, p, (l_out, p.k_size))
    if p.padding:
        x = np.pad(x, ((0, 0), (0, 0), (p.padding, p.padding)))
    span = p.dilation * (p.k_size - 1) + 1
    win = sliding_window_view(x, span, axis=2)[:, :, :: p.stride, :: p.dilation][:, :, :l_out]
    out = np.tensordot(win, w, axes=([1, 3], [1, 2]))  # (b, l_out, c_out)
    return _result(out.transpose(0, 2, 1), buf.dtype)


def conv_transpose1d(
    buf: np.ndarray, layout: _Layout, kernel: np.ndarray, kernel_layout: _Layout, params
) -> np.ndarray:
    """(b, c_in, l_in) * (c_in, c_out, k) -> (b, c_out, l_out)."""
    op, p = "conv_transpose1d", params
    x, w = _conv_inputs(op, buf, layout, kernel, kernel_layout, (p.b_size, p.c_in, p.l_in), (p.c_in, p.c_out, p.k_size))
    l_out = p.l_out()
    _check_geometry(op, p, (l_out, p.k_size, p.l_in))
    s, d = p.stride, p.dilation
    contrib = np.tensordot(x, w, axes=([1], [0])).transpose(0, 2, 3, 1)  # (b, c_out, k, l_in)
    full = (p.l_in - 1) * s + d * (p.k_size - 1) + 1
    acc = np.zeros((p.b_size, p.c_out, max(full, p.padding + l_out)), x.dtype)
    span = (p.l_in - 1) * s + 1
    for t in range(p.k_size):
        acc[:, :, t * d : t * d + span : s] += contrib[:, :, t]
    return _result(acc[:, :, p.padding : p.padding + l_out], buf.dtype)


def conv2d(buf: np.ndarray, layout: _Layout, kernel: np.ndarray, kernel_layout: _Layout, params) -> np.ndarray:
    """(b, c_in, h, w) * (c_out, c_in, k_h, k_w) -> (b, c_out, out_h, out_w)."""
    op, p = "conv2d", params
    x, w = _conv_inputs(
        op, buf, layout, kernel, kernel_layout, (p.b_size, p.c_in, p.i_h, p.i_w), (p.c_out, p.c_in, p.k_h, p.k_w)
    )
    oh, ow = p.out_h(), p.out_w()
    _check_geometry(op, p, (oh, ow, p.k_h, p.k_w))
    if p.padding:
        pd = p.padding
        x = np.pad(x, ((0, 0), (0, 0), (pd, pd), (pd, pd)))
    s, d = p.stride, p.dilation
    span = (d * (p.k_h - 1) + 1, d * (p.k_w - 1) + 1)
    win = sliding_window_view(x, span, axis=(2, 3))[:, :, ::s, ::s, ::d, ::d][:, :, :oh, :ow]
    out = np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3]))  # (b, oh, ow, c_out)
    return _result(out.transpose(0, 3, 1, 2), buf.dtype)


def conv_transpose2d(
    buf: np.ndarray, layout: _Layout, kernel: np.ndarray, kernel_layout: _Layout, params
) -> np.ndarray:
    """(b, c_in, h, w) * (c_in, c_out, k_h, k_w) -> (b, c_out, out_h, out_w)."""
    op, p = "conv_transpose2d", params
    x, w = _conv_inputs(
        op, buf, layout, kernel, kernel_layout, (p.b_size, p.c_in, p.i_h, p.i_w), (p.c_in, p.c_out, p.k_h, p.k_w)
    )
    oh, ow = p.out_h(), p.out_w()
    _check_geometry(op, p, (oh, ow, p.k_h, p.k_w, p.i_h, p.i_w))
    s, d, pd = p.stride, p.dilation, p.padding
    contrib = np.tensordot(x, w, axes=([1], [0])).transpose(0, 3, 4, 5, 1, 2)  # (b, c_out, kh, kw, h, w)
    full_h = (p.i_h - 1) * s + d * (p.k_h - 1) + 1
    full_w = (p.i_w - 1) * s + d * (p.k_w - 1) + 1
    acc = np.zeros((p.b_size, p.c_out, max(full_h, pd + oh), max(full_w, pd + ow)), x.dtype)
    span_h, span_w = (p.i_h - 1) * s + 1, (p.i_w - 1) * s + 1
    for i in range(p.k_h):
        for j in range(p.k_w):
            acc[:, :, i * d : i * d + span_h : s, j * d : j * d + span_w : s] += contrib[:, :, i, j]
    return _result(acc[:, :, pd : pd + oh, pd : pd + ow], buf.dtype)


def _pool_windows(op: str, buf, layout: _Layout, kernel_size, stride) -> np.ndarray:
    if len(layout.shape) != 4:
        raise _shape_error(op, "a (b, c, h, w) input", layout.shape)
    kh, kw = _pair(op, kernel_size, "kernel_size")
    sh, sw = _pair(op, stride, "stride")
    h, w = layout.shape[2:]
    if kh < 1 or kw < 1 or sh < 1 or sw < 1 or kh > h or kw > w:
        raise _shape_error(op, f"a kernel within ({h}, {w}) and positive strides", ((kh, kw), (sh, sw)))
    x = _view(op, buf, layout)
    return sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]


def avg_pool2d(buf: np.ndarray, layout: _Layout, kernel_size, stride) -> np.ndarray:
    """Mean over each window (no padding); integer dtypes truncate the exact mean toward zero."""
    win = _pool_windows("avg_pool2d", buf, layout, kernel_size, stride)
    n = win.shape[-1] * win.shape[-2]
    dt = buf.dtype
    if dt in _INTS:
        total = np.sum(win, axis=(-2, -1), dtype=np.int64 if dt.kind == "i" else np.uint64)
        if dt.kind == "i":
            out = np.sign(total) * (np.abs(total) // n)
        else:
            out = total // np.uint64(n)
    else:
        out = np.sum(win, axis=(-2, -1), dtype=_F64) / n
    return _result(out, dt)


def max_pool2d(buf: np.ndarray, layout: _Layout, kernel_size, stride) -> np.ndarray:
    win = _pool_windows("max_pool2d", buf, layout, kernel_size, stride)
    if buf.dtype in _HALF:
        win = win.astype(_compute_dtype(buf.dtype))
    return _result(win.max(axis=(-2, -1)), buf.dtype)


def _nearest(op: str, size_in: int, size_out: int) -> np.ndarray:
    if size_out < 0:
        raise _shape_error(op, "a non-negative target size", size_out)
    if size_in == 0 and size_out > 0:
        raise _shape_error(op, "a non-empty input", size_in)
    return (np.arange(size_out, dtype=np.int64) * size_in) // max(size_out, 1)


def upsample_nearest1d(buf: np.ndarray, layout: _Layout, size: int) -> np.ndarray:
    """(b, c, l) -> (b, c, size); source index floor(i * l / size)."""
    op = "upsample_nearest1d"
    if len(layout.shape) != 3:
        raise _shape_error(op, "a (b, c, l) input", layout.shape)
    x = _view(op, buf, layout)
    return _result(x[:, :, _nearest(op, x.shape[2], int(size))], buf.dtype)


def upsample_nearest2d(buf: np.ndarray, layout: _Layout, height: int, width: int) -> np.ndarray:
    """(b, c, h, w) -> (b, c, height, width); source index floor(i * in / out) per axis."""
    op = "upsample_nearest2d"
    if len(layout.shape) != 4:
        raise _shape_error(op, "a (b, c, h, w) input", layout.shape)
    x = _view(op, buf, layout)
    hi = _nearest(op, x.shape[2], int(height))
    wi = _nearest(op, x.shape[3], int(width))
    return _result(x[:, :, hi[:, None], wi[None, :]], buf.dtype)

"""Shared helpers of the CPU runtime: dtypes, strided views of flat buffers, typed errors.

A CPU storage is a 1-D, C-contiguous numpy array; a `Layout` (shape, element strides,
start offset) views it. Everything here is on the hot path of every op, so the
contiguous cases avoid `as_strided` and any Python-level loop over dims.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
from numpy.lib.stride_tricks import as_strided

from runtime.errors import DTypeMismatch, ShapeMismatch
from runtime.layout import Layout

BACKEND = "cpu"

U8 = np.dtype(np.uint8)
U32 = np.dtype(np.uint32)
I64 = np.dtype(np.int64)
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)

#: The element types a CPU storage may hold (ops.yaml `dtypes`).
DTYPES = (U8, U32, I64, BF16, F16, F32, F64)
SUPPORTED = frozenset(DTYPES)
FLOATS = frozenset((BF16, F16, F32, F64))
INTS = frozenset((U8, U32, I64))
#: Dtypes accepted as indices (ops.yaml dtype set `index`).
INDEX = INTS
#: Half-precision types are computed in f32 (ops.yaml `compute: f32`).
HALF = frozenset((BF16, F16))


def names(dtypes) -> list[str]:
    """Sorted dtype names, as DTypeMismatch's `expected`."""
    return sorted(str(np.dtype(d)) for d in dtypes)


def compute_dtype(dt: np.dtype) -> np.dtype:
    return F32 if dt in HALF else dt


def unsupported(op: str, dt: np.dtype, allowed, backend: str = BACKEND) -> DTypeMismatch:
    return DTypeMismatch(op, backend, expected=names(allowed), got=str(dt))


def check_dtype(op: str, buf: np.ndarray, allowed) -> None:
    if buf.dtype not in allowed:
        raise unsupported(op, buf.dtype, allowed)


def check_same_dtype(op: str, a: np.ndarray, b: np.ndarray) -> None:
    if a.dtype != b.dtype:
        raise DTypeMismatch(op, BACKEND, expected=str(a.dtype), got=str(b.dtype))


def shape_error(op: str, expected: object, got: object, backend: str = BACKEND) -> ShapeMismatch:
    return ShapeMismatch(op, backend, expected=expected, got=got)


def check_shape(op: str, what: str, got: tuple, expected: tuple) -> None:
    if tuple(got) != tuple(expected):
        raise shape_error(op, f"{what} of shape {tuple(expected)}", tuple(got))


def _outside(op: str, buf: np.ndarray, layout: Layout) -> ShapeMismatch:
    return shape_error(op, f"a layout within a buffer of {buf.size} elements", layout)


def strided(op: str, buf: np.ndarray, layout: Layout, writeable: bool = False) -> np.ndarray:
    """The n-d view of `buf` that `layout` describes (any strides, 0 and negative included)."""
    shape, stride, start = layout.shape, layout.stride, layout.start_offset
    if layout.elem_count == 0:
        if start > buf.size:
            raise _outside(op, buf, layout)
        return buf[:0].reshape(shape)
    lo = hi = start
    for d, s in zip(shape, stride):
        if s > 0:
            hi += (d - 1) * s
        else:
            lo += (d - 1) * s
    if lo < 0 or hi >= buf.size:
        raise _outside(op, buf, layout)
    item = buf.itemsize
    return as_strided(buf[start:], shape, [s * item for s in stride], writeable=writeable)


def view(op: str, buf: np.ndarray, layout: Layout) -> np.ndarray:
    """The n-d view of `buf` with `layout.shape` (read-only unless contiguous)."""
    if layout.is_contiguous:
        start = layout.start_offset
        end = start + layout.elem_count
        if end > buf.size:
            raise _outside(op, buf, layout)
        return buf[start:end].reshape(layout.shape)
    return strided(op, buf, layout)


def writable_view(op: str, buf: np.ndarray, layout: Layout) -> np.ndarray:
    if layout.is_contiguous:
        return view(op, buf, layout)
    return strided(op, buf, layout, writeable=True)


def operand(op: str, buf: np.ndarray, layout: Layout) -> np.ndarray:
    """For elementwise ops: a 1-D slice when contiguous (the buffer itself when it is
    the whole buffer), otherwise the n-d strided view. Either way, applying an
    elementwise function and `.reshape(-1)` gives the contiguous result."""
    if layout.is_contiguous:
        start = layout.start_offset
        n = layout.elem_count
        if start == 0 and n == buf.size:
            return buf
        if start + n > buf.size:
            raise _outside(op, buf, layout)
        return buf[start : start + n]
    return strided(op, buf, layout)


def contiguous_flat(x: np.ndarray, dt: np.dtype | None = None) -> np.ndarray:
    """A new (or freshly computed) array as the flat contiguous result of dtype `dt`."""
    if dt is not None and x.dtype != dt:
        x = x.astype(dt)
    return np.ascontiguousarray(x).reshape(-1)


def size_of(op: str, shape, backend: str = BACKEND) -> int:
    try:
        dims = tuple(int(d) for d in shape)
    except TypeError:
        raise shape_error(op, "a shape (sequence of ints)", shape, backend) from None
    if any(d < 0 for d in dims):
        raise shape_error(op, "non-negative dims", dims, backend)
    return math.prod(dims)


def pair(op: str, value, what: str) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)):
        return int(value), int(value)
    try:
        a, b = value
    except (TypeError, ValueError):
        raise shape_error(op, f"{what} as a pair of ints", value) from None
    return int(a), int(b)


def rust_as_int(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Float array -> integer dtype with Rust `as` semantics: truncate toward zero,
    saturate at the bounds, NaN -> 0."""
    xf = np.asarray(x, dtype=F64)
    info = np.iinfo(dt)
    xf = np.where(np.isnan(xf), 0.0, xf)
    if dt == I64:
        top = xf >= 9.223372036854775808e18  # 2**63 is the first f64 above i64::MAX
        out = np.clip(xf, -9.223372036854775808e18, 9.223372036854774784e18).astype(I64)
        out[top] = info.max
        return out
    return np.trunc(np.clip(xf, float(info.min), float(info.max))).astype(dt)


def rust_as_scalar(value: float, dt: np.dtype):
    """A Python number as a numpy scalar of `dt`, Rust `as` style for float -> int."""
    if dt in INTS:
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            # int -> int: wrap like Rust `as`.
            return np.array(int(value) & ((1 << (8 * dt.itemsize)) - 1), dtype=np.uint64).astype(dt)[()]
        return rust_as_int(np.array([float(value)]), dt)[0]
    return np.array(float(value), dtype=F64).astype(dt)[()]


def ids_array(op: str, ids: np.ndarray, layout: Layout, size: int) -> np.ndarray:
    """Index view as intp, every id checked to lie in [0, size)."""
    check_dtype(op, ids, INDEX)
    idx = view(op, ids, layout)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= size:
            bad = lo if lo < 0 else hi
            raise shape_error(op, f"ids in [0, {size})", bad)
    return idx.astype(np.intp, copy=False)


def _float_dtype(op: str, dtype, backend: str) -> np.dtype:
    dt = np.dtype(dtype.numpy)
    if dt not in FLOATS:
        raise unsupported(op, dt, FLOATS, backend)
    return dt


def sample_uniform(
    rng: np.random.Generator, shape, dtype, low: float, high: float, backend: str = BACKEND
) -> np.ndarray:
    """Flat uniform samples in [low, high) of a float dtype (f64 drawn in f64, others in f32);
    shared by every backend that draws on the host (`backend`: the one its errors name)."""
    dt = _float_dtype("rand_uniform", dtype, backend)
    n = size_of("rand_uniform", shape, backend)
    ct = F64 if dt == F64 else F32
    r = rng.random(n, dtype=ct)
    return (ct.type(low) + ct.type(high - low) * r).astype(dt, copy=False)


def sample_normal(
    rng: np.random.Generator, shape, dtype, mean: float, std: float, backend: str = BACKEND
) -> np.ndarray:
    """Flat normal samples of a float dtype, as sample_uniform."""
    dt = _float_dtype("rand_normal", dtype, backend)
    n = size_of("rand_normal", shape, backend)
    ct = F64 if dt == F64 else F32
    r = rng.standard_normal(n, dtype=ct)
    return (r * ct.type(std) + ct.type(mean)).astype(dt, copy=False)

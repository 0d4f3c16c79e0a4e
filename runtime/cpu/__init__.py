"""CPU backend runtime: Candle's `BackendStorage` on flat numpy buffers.

A CPU storage's `inner` is a 1-D, C-contiguous numpy array of one of the seven
registry dtypes (bfloat16 from ml_dtypes); a `Layout` views it. Every op that returns
a storage returns a NEW flat contiguous array whose shape is implied by the op (Candle
style). The generated `Storage.<op>` calls `<op>(self_inner, *args)` in registry order;
device methods are called as `<name>(ordinal, *args)`. Errors are typed
(runtime.errors) and name the op and "cpu".

Convolutions, pooling and upsampling live in `runtime.cpu.nn`; candle-nn's ops (softmax, norms,
rope, attention, arg_sort) in `runtime.cpu.nn_ops`; quantized storage (GGML blocks) in
`runtime.cpu.quant`; the view helpers in `runtime.cpu.views`.
"""

from __future__ import annotations

import numpy as np

from runtime.cpu.nn import (
    avg_pool2d,
    conv1d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    max_pool2d,
    upsample_nearest1d,
    upsample_nearest2d,
)
from runtime.cpu.nn_ops import (
    arg_sort,
    layer_norm,
    rms_norm,
    rope,
    rope_i,
    rope_thd,
    sdpa,
    sigmoid,
    softmax_last_dim,
)

# Zero-copy exchange (DLPack), called by generated View and from_dlpack.
from runtime.cpu.interop import dlpack_device, from_dlpack, to_dlpack
from runtime.cpu.quant import (
    q_data,
    q_dequantize,
    q_dequantize_f16,
    q_device,
    q_dtype,
    q_matmul,
    q_size_in_bytes,
    qstorage_from_bytes,
    quantize,
    qzeros,
)
from runtime.cpu.views import (
    BACKEND as _BACKEND,
    DTYPES as _DTYPES,
    F32 as _F32,
    F64 as _F64,
    FLOATS as _FLOATS,
    HALF as _HALF,
    INDEX as _INDEX,
    INTS as _INTS,
    SUPPORTED as _SUPPORTED,
    U8 as _U8,
    check_dtype as _check_dtype,
    check_same_dtype as _check_same_dtype,
    compute_dtype as _compute_dtype,
    contiguous_flat as _contiguous_flat,
    ids_array as _ids_array,
    names as _names,
    operand as _operand,
    rust_as_int as _rust_as_int,
    sample_normal as _sample_normal,
    sample_uniform as _sample_uniform,
    rust_as_scalar as _rust_as_scalar,
    shape_error as _shape_error,
    size_of as _size_of,
    strided as _strided,
    unsupported as _unsupported,
    view as _view,
    writable_view as _writable_view,
)

# Collectives (runtime/comm): MPI through mpi4py, called by generated Comm.
from runtime.comm.calls import (
    comm_agree,
    comm_all_gather,
    comm_all_reduce,
    comm_all_to_all,
    comm_barrier,
    comm_broadcast,
    comm_count,
    comm_recv,
    comm_reduce,
    comm_reduce_scatter,
    comm_send,
    comm_send_recv,
    comm_split,
    comm_synchronize,
)
from runtime.comm.mpi import comm_world
from runtime.checks import matmul_dims as _matmul_dims, reduce_dims as _reduce_dims
from runtime.errors import DTypeMismatch as _DTypeMismatch
from runtime.layout import Layout as _Layout
from runtime.params import Kernel as _Kernel, MatmulDims as _MatmulDims

__all__ = [
    # backend
    "availability", "to_numpy", "to_host", "from_host",
    # device methods
    "zeros", "ones", "alloc_uninit", "storage_from_slice", "rand_uniform", "rand_normal",
    "set_seed", "synchronize", "location", "supports_bf16",
    # storage ops
    "try_clone", "dtype", "device", "const_set", "affine", "powf", "elu", "cmp", "reduce_op",
    "to_dtype", "unary", "binary", "where_cond", "conv1d", "conv_transpose1d", "conv2d",
    "conv_transpose2d", "avg_pool2d", "max_pool2d", "upsample_nearest1d", "upsample_nearest2d",
    "gather", "scatter_set", "scatter_add", "index_select", "index_add", "matmul",
    "copy_strided_src", "copy2d",
    # quantized storage (runtime.cpu.quant): device methods, then QStorage's q_<method>
    "quantize", "qzeros", "qstorage_from_bytes", "q_dtype", "q_device", "q_size_in_bytes", "q_data",
    "q_dequantize", "q_dequantize_f16", "q_matmul",
    # nn ops (runtime.cpu.nn_ops), called by the hooks of generated/nn.py
    "sigmoid", "softmax_last_dim", "rms_norm", "layer_norm", "rope_i", "rope", "rope_thd", "sdpa", "arg_sort",
    # interop (runtime.cpu.interop), called by generated View and from_dlpack
    "to_dlpack", "dlpack_device", "from_dlpack",
    # collectives (runtime.comm), called by generated Comm
    "comm_world", "comm_count", "comm_agree", "comm_all_reduce", "comm_all_gather", "comm_reduce_scatter",
    "comm_broadcast", "comm_reduce", "comm_all_to_all", "comm_send", "comm_recv", "comm_send_recv",
    "comm_barrier", "comm_synchronize", "comm_split",
]  # fmt: skip

_rng = np.random.default_rng()
_BOOL = np.dtype(np.bool_)


# --------------------------------------------------------------------------- backend


def availability() -> None:
    """The CPU backend is always available."""
    return None


def to_numpy(buf: np.ndarray, layout: _Layout) -> np.ndarray:
    """A contiguous copy of the view, with `layout.shape`."""
    return np.array(_view("to_numpy", buf, layout), order="C", copy=True)


def to_host(buf: np.ndarray) -> np.ndarray:
    """The flat host buffer (for CPU: the buffer itself, not a copy)."""
    return buf


def _host_array(op: str, array) -> np.ndarray:
    a = np.asarray(array)
    if a.dtype not in _SUPPORTED:
        raise _unsupported(op, a.dtype, _DTYPES)
    return np.array(a, order="C", copy=True).reshape(-1)


def from_host(ordinal: int, array) -> np.ndarray:
    """A flat C-order copy of a host array."""
    return _host_array("from_host", array)


# --------------------------------------------------------------------------- device


def _dtype_of(op: str, dtype) -> np.dtype:
    dt = np.dtype(getattr(dtype, "numpy", dtype))
    if dt not in _SUPPORTED:
        raise _unsupported(op, dt, _DTYPES)
    return dt


def zeros(ordinal: int, shape, dtype) -> np.ndarray:
    return np.zeros(_size_of("zeros", shape), _dtype_of("zeros", dtype))


def ones(ordinal: int, shape, dtype) -> np.ndarray:
    return np.ones(_size_of("ones", shape), _dtype_of("ones", dtype))


def alloc_uninit(ordinal: int, shape, dtype) -> np.ndarray:
    return np.empty(_size_of("alloc_uninit", shape), _dtype_of("alloc_uninit", dtype))


def storage_from_slice(ordinal: int, array) -> np.ndarray:
    """A flat C-order copy of any numpy array (or array-like)."""
    return _host_array("storage_from_slice", array)


def rand_uniform(ordinal: int, shape, dtype, low: float, high: float) -> np.ndarray:
    return _sample_uniform(_rng, shape, dtype, low, high)


def rand_normal(ordinal: int, shape, dtype, mean: float, std: float) -> np.ndarray:
    return _sample_normal(_rng, shape, dtype, mean, std)


def set_seed(ordinal: int, seed: int) -> None:
    global _rng
    _rng = np.random.default_rng(seed)


def synchronize(ordinal: int) -> None:
    return None


def location(ordinal: int) -> str:
    return "cpu"


def supports_bf16(ordinal: int) -> bool:
    return True


# --------------------------------------------------------------------------- storage basics


def try_clone(buf: np.ndarray, layout: _Layout) -> np.ndarray:
    return buf.copy()


def dtype(buf: np.ndarray) -> np.dtype:
    return buf.dtype


def device(buf: np.ndarray) -> int:
    return 0


def _scalar_value(op: str, value, dt: np.dtype):
    """`value` as a scalar of `dt`: numpy scalars / 0-d arrays must already have `dt`
    (Candle's Scalar carries its dtype); Python numbers are cast like Rust `as`."""
    inner = getattr(value, "value", None)  # a Scalar record wrapping a number
    if inner is not None and not isinstance(value, (np.generic, np.ndarray)):
        value = inner
    vdt = getattr(value, "dtype", None)
    if vdt is not None:
        vdt = np.dtype(getattr(vdt, "numpy", vdt))
        if vdt != dt:
            raise _DTypeMismatch(op, _BACKEND, expected=str(dt), got=str(vdt))
        return np.asarray(value, dtype=dt)[()]
    if isinstance(value, (bool, int, float, np.bool_)):
        if dt in _INTS and isinstance(value, (int, np.bool_)) and not isinstance(value, bool):
            info = np.iinfo(dt)
            if not info.min <= int(value) <= info.max:
                raise _DTypeMismatch(op, _BACKEND, expected=f"a value representable as {dt}", got=value)
        return _rust_as_scalar(float(value) if isinstance(value, (bool, np.bool_)) else value, dt)
    raise _DTypeMismatch(op, _BACKEND, expected=f"a scalar of {dt}", got=type(value).__name__)


def const_set(buf: np.ndarray, value, layout: _Layout) -> None:
    v = _scalar_value("const_set", value, buf.dtype)
    _writable_view("const_set", buf, layout)[...] = v


# --------------------------------------------------------------------------- elementwise


def _kernel_fn(kernel: _Kernel, dt: np.dtype):
    f = kernel.by_dtype.get(dt)
    if f is None:
        raise _DTypeMismatch(kernel.op, _BACKEND, expected=_names(kernel.by_dtype), got=str(dt))
    return f


def unary(buf: np.ndarray, kernel: _Kernel, layout: _Layout) -> np.ndarray:
    f = kernel.by_dtype.get(buf.dtype)
    if f is None:
        f = _kernel_fn(kernel, buf.dtype)
    if layout.dense_count == buf.size:
        out = f(buf)  # the whole buffer: the common case, kept cheap
        if out is buf:
            out = out.copy()
    else:
        out = f(_operand(kernel.op, buf, layout)).reshape(-1)
    result = kernel.result
    if result is not None:
        return out.astype(result, copy=False)
    return out


def _pair_operands(op: str, lhs, lhs_layout: _Layout, rhs, rhs_layout: _Layout):
    if lhs_layout.shape != rhs_layout.shape:
        raise _shape_error(op, f"rhs of shape {lhs_layout.shape}", rhs_layout.shape)
    if lhs_layout.is_contiguous and rhs_layout.is_contiguous:
        return _operand(op, lhs, lhs_layout), _operand(op, rhs, rhs_layout)
    return _view(op, lhs, lhs_layout), _view(op, rhs, rhs_layout)


def binary(buf: np.ndarray, kernel: _Kernel, rhs: np.ndarray, lhs_layout: _Layout, rhs_layout: _Layout) -> np.ndarray:
    dt = buf.dtype
    f = kernel.by_dtype.get(dt)
    if f is None:
        f = _kernel_fn(kernel, dt)
    rdt = rhs.dtype
    if rdt is not dt and rdt != dt:
        _check_same_dtype(kernel.op, buf, rhs)
    if (
        lhs_layout.dense_count == buf.size == rhs.size == rhs_layout.dense_count
        and lhs_layout.shape == rhs_layout.shape
    ):
        out = f(buf, rhs)  # whole buffers: the common case, kept cheap
        if out is buf or out is rhs:
            out = out.copy()
    else:
        x, y = _pair_operands(kernel.op, buf, lhs_layout, rhs, rhs_layout)
        out = f(x, y)
        if out.ndim != 1:
            out = out.reshape(-1)
        elif out is x or out is y:
            out = out.copy()
    result = kernel.result
    if result is not None:
        if out.dtype is _BOOL and (result is _U8 or result == _U8):
            return out.view(_U8)  # comparisons: reinterpret, no copy
        return out.astype(result, copy=False)
    return out


def cmp(buf: np.ndarray, kernel: _Kernel, rhs: np.ndarray, lhs_layout: _Layout, rhs_layout: _Layout) -> np.ndarray:
    """Comparison: u8 (0 or 1) with the layouts' shape."""
    out = binary(buf, kernel, rhs, lhs_layout, rhs_layout)
    return out if out.dtype is _U8 else (out != 0).view(_U8)


def affine(buf: np.ndarray, layout: _Layout, mul: float, add: float) -> np.ndarray:
    """x * mul + add, with mul and add first converted to the dtype (Rust `as`)."""
    dt = buf.dtype
    x = _operand("affine", buf, layout)
    m, a = _rust_as_scalar(mul, dt), _rust_as_scalar(add, dt)
    if dt in _HALF:
        # Candle's half types round after each operation.
        prod = (x.astype(_F32) * _F32.type(m)).astype(dt).astype(_F32)
        out = (prod + _F32.type(a)).astype(dt)
    else:
        out = x * m + a
    return _contiguous_flat(out, dt)


def _float_operand(op: str, buf: np.ndarray, layout: _Layout) -> np.ndarray:
    _check_dtype(op, buf, _FLOATS)
    return _operand(op, buf, layout).astype(_compute_dtype(buf.dtype), copy=False)


def powf(buf: np.ndarray, layout: _Layout, exponent: float) -> np.ndarray:
    x = _float_operand("powf", buf, layout)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        out = np.power(x, x.dtype.type(exponent))
    return _contiguous_flat(out, buf.dtype)


def elu(buf: np.ndarray, layout: _Layout, alpha: float) -> np.ndarray:
    """x if x >= 0 (sign bit clear) else alpha * (exp(x) - 1)."""
    x = _float_operand("elu", buf, layout)
    a = x.dtype.type(np.array(alpha, dtype=_F64).astype(buf.dtype))
    neg = (np.exp(np.minimum(x, 0)) - 1) * a
    return _contiguous_flat(np.where(np.signbit(x), neg, x), buf.dtype)


def to_dtype(buf: np.ndarray, layout: _Layout, dtype) -> np.ndarray:
    """Cast, with Rust `as` semantics (float -> int truncates and saturates, NaN -> 0;
    int -> int wraps)."""
    dst = _dtype_of("to_dtype", dtype)
    src = buf.dtype
    x = _operand("to_dtype", buf, layout)
    if src == dst:
        return np.array(x, copy=True).reshape(-1)
    if src in _FLOATS and dst in _INTS:
        out = _rust_as_int(x, dst)
    elif dst in _FLOATS:
        with np.errstate(over="ignore"):  # out of range -> inf, as Rust's `as`
            out = x.astype(_F64).astype(dst) if src in _INTS and dst in _HALF else x.astype(dst)
    else:
        out = x.astype(dst)  # int -> int wraps, as Rust's `as`
    return _contiguous_flat(out)


def where_cond(
    buf: np.ndarray,
    layout: _Layout,
    on_true: np.ndarray,
    true_layout: _Layout,
    on_false: np.ndarray,
    false_layout: _Layout,
) -> np.ndarray:
    op = "where_cond"
    _check_dtype(op, buf, _INDEX)
    _check_same_dtype(op, on_true, on_false)
    shape = layout.shape
    if true_layout.shape != shape or false_layout.shape != shape:
        raise _shape_error(op, f"branches of shape {shape}", (true_layout.shape, false_layout.shape))
    if layout.is_contiguous and true_layout.is_contiguous and false_layout.is_contiguous:
        c = _operand(op, buf, layout)
        t, f = _operand(op, on_true, true_layout), _operand(op, on_false, false_layout)
    else:
        c, t, f = _view(op, buf, layout), _view(op, on_true, true_layout), _view(op, on_false, false_layout)
    return np.where(c != 0, t, f).reshape(-1)


# --------------------------------------------------------------------------- reductions


def reduce_op(buf: np.ndarray, kernel: _Kernel, layout: _Layout, dims) -> np.ndarray:
    """Reduce over `dims` (any set, any order); reduced dims keep size 1. The reduced
    dims are moved last in ascending order and flattened, so argmin/argmax give the
    row-major flat index within the reduced sub-block (u32)."""
    f = _kernel_fn(kernel, buf.dtype)
    op = kernel.op
    shape = layout.shape
    rank = len(shape)
    rdims = _reduce_dims(op, _BACKEND, dims, rank)
    x = _view(op, buf, layout)
    keep = [d for d in range(rank) if d not in rdims]
    red = 1
    for d in rdims:
        red *= shape[d]
    kept_shape = tuple(shape[d] for d in keep)
    if rdims != list(range(len(keep), rank)):
        x = x.transpose(keep + rdims)
    x = x.reshape(kept_shape + (red,))
    try:
        out = f(x)
    except ValueError as e:  # min/max/argmin/argmax of an empty sub-block
        raise _shape_error(op, "a non-empty reduced sub-block", shape) from e
    out = np.asarray(out)
    if kernel.result is not None:
        out = out.astype(kernel.result, copy=False)
    elif out.dtype != buf.dtype:
        out = out.astype(buf.dtype)
    return np.ascontiguousarray(out).reshape(-1)


# --------------------------------------------------------------------------- indexing


def _check_dim(op: str, dim: int, rank: int) -> int:
    if not 0 <= int(dim) < rank:
        raise _shape_error(op, f"dim in [0, {rank})", dim)
    return int(dim)


def _same_rank_within(op: str, what: str, small: tuple, big: tuple, skip: int | None) -> None:
    if len(small) != len(big) or any(s > b for i, (s, b) in enumerate(zip(small, big)) if i != skip):
        raise _shape_error(op, f"{what} within {big}" + (f" (except dim {skip})" if skip is not None else ""), small)


def gather(buf: np.ndarray, layout: _Layout, ids: np.ndarray, ids_layout: _Layout, dim: int) -> np.ndarray:
    """out[i][j][k] = x[ids[i][j][k]][j][k] (dim 0); out has the shape of ids."""
    op = "gather"
    x = _view(op, buf, layout)
    dim = _check_dim(op, dim, x.ndim)
    _same_rank_within(op, "ids", ids_layout.shape, x.shape, dim)
    idx = _ids_array(op, ids, ids_layout, x.shape[dim])
    xs = x[tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(idx.shape))]
    return np.take_along_axis(xs, idx, axis=dim).reshape(-1)


def _scatter_target(op: str, buf, layout, ids, ids_layout, src, src_layout, dim):
    _check_same_dtype(op, buf, src)
    if not layout.is_contiguous:
        raise _shape_error(op, "a contiguous destination layout", layout)
    dst = _view(op, buf, layout)
    dim = _check_dim(op, dim, dst.ndim)
    s = _view(op, src, src_layout)
    _same_rank_within(op, "ids", ids_layout.shape, s.shape, None)
    _same_rank_within(op, "ids", ids_layout.shape, dst.shape, dim)
    idx = _ids_array(op, ids, ids_layout, dst.shape[dim])
    s = s[tuple(slice(0, n) for n in idx.shape)]
    return dst, idx, s, dim


def scatter_set(buf, layout, ids, ids_layout, src, src_layout, dim) -> None:
    """In place: x[ids[i][j][k]][j][k] = src[i][j][k] (dim 0)."""
    dst, idx, s, dim = _scatter_target("scatter_set", buf, layout, ids, ids_layout, src, src_layout, dim)
    dst[_scatter_index(idx, dim)] = s


def scatter_add(buf, layout, ids, ids_layout, src, src_layout, dim) -> None:
    """In place: x[ids[i][j][k]][j][k] += src[i][j][k] (dim 0); duplicates accumulate."""
    dst, idx, s, dim = _scatter_target("scatter_add", buf, layout, ids, ids_layout, src, src_layout, dim)
    np.add.at(dst, _scatter_index(idx, dim), s)


def _scatter_index(idx: np.ndarray, dim: int) -> tuple:
    """The fancy index addressing dst[..., idx[i, j, k], ...] for every position of idx
    (idx may be smaller than dst in every dim)."""
    where = list(np.ix_(*(np.arange(n) for n in idx.shape)))
    where[dim] = idx
    return tuple(where)


def _ids_1d(op: str, ids_layout: _Layout) -> None:
    if len(ids_layout.shape) != 1:
        raise _shape_error(op, "1-D ids", ids_layout.shape)


def index_select(buf: np.ndarray, ids: np.ndarray, layout: _Layout, ids_layout: _Layout, dim: int) -> np.ndarray:
    op = "index_select"
    x = _view(op, buf, layout)
    dim = _check_dim(op, dim, x.ndim)
    _ids_1d(op, ids_layout)
    idx = _ids_array(op, ids, ids_layout, x.shape[dim])
    return np.take(x, idx, axis=dim).reshape(-1)


def index_add(buf, layout, ids, ids_layout, src, src_layout, dim) -> np.ndarray:
    """A contiguous copy of x with src's slices added at ids along dim (duplicates accumulate)."""
    op = "index_add"
    _check_same_dtype(op, buf, src)
    out = np.array(_view(op, buf, layout), order="C", copy=True)
    dim = _check_dim(op, dim, out.ndim)
    _ids_1d(op, ids_layout)
    s = _view(op, src, src_layout)
    expected = out.shape[:dim] + ids_layout.shape + out.shape[dim + 1 :]
    if s.shape != expected:
        raise _shape_error(op, f"src of shape {expected}", s.shape)
    idx = _ids_array(op, ids, ids_layout, out.shape[dim])
    np.add.at(out, (slice(None),) * dim + (idx,), s)
    return out.reshape(-1)


# --------------------------------------------------------------------------- matmul and copies


def matmul(buf: np.ndarray, rhs: np.ndarray, bmnk: _MatmulDims, lhs_layout: _Layout, rhs_layout: _Layout) -> np.ndarray:
    """(b, m, k) @ (b, k, n) -> (b, m, n), contiguous; half types computed in f32."""
    op = "matmul"
    _check_same_dtype(op, buf, rhs)
    b, m, n, k = _matmul_dims(op, _BACKEND, bmnk, lhs_layout.shape, rhs_layout.shape)
    a = _view(op, buf, lhs_layout).reshape(b, m, k)
    c = _view(op, rhs, rhs_layout).reshape(b, k, n)
    dt = buf.dtype
    if dt in _HALF:
        out = np.matmul(a.astype(_F32), c.astype(_F32)).astype(dt)
    else:
        out = np.matmul(a, c)
    return _contiguous_flat(out, dt)


def copy_strided_src(buf: np.ndarray, dst: np.ndarray, dst_offset: int, src_layout: _Layout) -> None:
    """In place: write the src view, contiguous, into dst from dst_offset."""
    op = "copy_strided_src"
    _check_same_dtype(op, buf, dst)
    n = src_layout.elem_count
    if dst_offset < 0 or dst_offset + n > dst.size:
        raise _shape_error(op, f"{n} elements from offset {dst_offset} within {dst.size}", dst_offset + n)
    x = _operand(op, buf, src_layout)
    dst[dst_offset : dst_offset + n].reshape(x.shape)[...] = x


def copy2d(
    buf: np.ndarray,
    dst: np.ndarray,
    d1: int,
    d2: int,
    src_stride1: int,
    dst_stride1: int,
    src_offset: int,
    dst_offset: int,
) -> None:
    """In place: for i < d1, dst[dst_offset + i*dst_stride1 : +d2] = buf[src_offset + i*src_stride1 : +d2]."""
    op = "copy2d"
    _check_same_dtype(op, buf, dst)
    if min(d1, d2, src_stride1, dst_stride1, src_offset, dst_offset) < 0:
        args = (d1, d2, src_stride1, dst_stride1, src_offset, dst_offset)
        raise _shape_error(op, "non-negative sizes, strides and offsets", args)
    if d1 == 0 or d2 == 0:
        return
    src_end = src_offset + (d1 - 1) * src_stride1 + d2
    dst_end = dst_offset + (d1 - 1) * dst_stride1 + d2
    if src_end > buf.size:
        raise _shape_error(op, f"a source within {buf.size} elements", src_end)
    if dst_end > dst.size:
        raise _shape_error(op, f"a destination within {dst.size} elements", dst_end)
    if src_stride1 == d2 and dst_stride1 == d2:
        dst[dst_offset:dst_end] = buf[src_offset:src_end]
        return
    s = _strided(op, buf, _Layout((d1, d2), (src_stride1, 1), src_offset))
    d = _strided(op, dst, _Layout((d1, d2), (dst_stride1, 1), dst_offset), writeable=True)
    d[...] = s

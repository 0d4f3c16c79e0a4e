"""GPU NN ops (candle-nn's) for the cuda and rocm backends, over hip/nn.hip's kernels.

The functions of runtime/cpu/nn_ops.py, with the GpuRuntime first and the op's launch table
last ((KernelPattern, numpy dtype) -> generated launch wrapper); runtime/gpu/exports.py
binds them with functools.partial(fn, _rt) for each vendor. Each returns (GpuBuffer, shape).

Layouts: the kernels read contiguous tensors. A contiguous view is read in place (at its
offset); any other view is first copied dense on the device (GpuRuntime._dense) by
copy_strided_<dtype>, which the op's `kernel:` in ops.yaml lists and its launch table holds
under (COPY_STRIDED, dtype). sigmoid reads any view directly, as the unary ops do.
Shapes are checked by runtime/nn_shapes.py, as on the cpu; dtypes by the launch table.

sdpa on cuda (sm_80+, bf16/f16, head dim 64 or 128) is hip/attention.hip's fused flash-attention
kernel; elsewhere gemm, hip/nn.hip's sdpa_softmax, gemm: S = Q K^T and O = P V run in the vendor
BLAS (the driver's strided-batched gemm: tensor cores through cuBLAS / hipBLAS), S is held in
the input dtype (f32 accumulation inside each gemm) and replaced in place by P."""

from __future__ import annotations

import math

import numpy as np

from generated.kernel_facts import (  # ops.yaml's kernel_facts, shared with hip/nn.hip and hip/attention.hip
    FLASH_ROWS_D64,
    FLASH_ROWS_D128,
    FLASH_THREADS_D64,
    FLASH_THREADS_D128,
    LOOSE_VALUES,
    ROW_BLOCK_MAX,
    ROW_BYTES,
    SORT_CHUNK,
    SORT_PER,
    KernelPattern as K,
)
from runtime import nn_shapes
from runtime.errors import DTypeMismatch, NotImplementedForBackend, ShapeMismatch
from runtime.gpu.launch import BLOCK
from runtime.gpu.memory import GpuBuffer, _fits, _same_ordinal
from runtime.layout import Layout

#: The ops.yaml `kernel:` pattern of the strided copy in the tables of the ops below that read
#: contiguous inputs (every table key is (pattern, dtype)).
COPY_STRIDED = K.COPY_STRIDED_SELF


def _kernel(rt, op: str, pattern: K, table: dict, first: tuple[GpuBuffer, Layout], *others: tuple[GpuBuffer, Layout]):
    """The launch wrapper of `pattern` for the first input's dtype, after the buffer, dtype and
    device checks."""
    fn = rt._entry(table, (pattern, first[0].dtype), op)
    for buf, layout in (first, *others):
        _fits(op, rt.name, buf, layout)
        if buf.dtype != first[0].dtype:
            raise DTypeMismatch(op, rt.name, str(first[0].dtype), str(buf.dtype))
        _same_ordinal(op, rt.name, first[0], buf)
    return fn


def _contiguous(rt, op: str, table: dict, *operands: tuple[GpuBuffer, Layout]) -> list[tuple[GpuBuffer, Layout]]:
    """Each (buffer, layout) as the kernels read it: a contiguous view in place (at its
    offset), any other copied dense on the device first. Hold the result until the kernels
    are launched."""
    return [
        (buf, layout) if layout.is_contiguous else rt._dense(buf, layout, _copy(rt, op, table, buf))
        for buf, layout in operands
    ]


def _copy(rt, op: str, table: dict, buf: GpuBuffer):
    """The launch wrapper of copy_strided_<dtype> for buf's dtype, from op's table."""
    return rt._entry(table, (COPY_STRIDED, buf.dtype), op)


def _at(views: list[tuple[GpuBuffer, Layout]]) -> list[int]:
    """The device addresses of the views' first elements."""
    return [buf.at(layout) for buf, layout in views]


def _rows_geometry(rt, ordinal: int, nrows: int, ncols: int, itemsize: int) -> tuple[int, int]:
    """(grid, block) of a row kernel: a block per row, its threads holding ROW_BYTES of the
    row each (a power of two from 32 to ROW_BLOCK_MAX); as many blocks as rows, up to 32 per
    multiprocessor (the kernels loop over the rest)."""
    per_thread = ROW_BYTES // itemsize
    if ncols % (16 // itemsize):  # no 16-byte packs (hip/nn.hip's row_values)
        per_thread = min(per_thread, LOOSE_VALUES)
    block = min(ROW_BLOCK_MAX, max(32, 1 << (-(-ncols // per_thread) - 1).bit_length()))
    return max(1, min(nrows, rt.driver.multiprocessors(ordinal) * 32)), block


def _launch_rows(rt, fn, ordinal: int, shape: tuple[int, ...], itemsize: int, *args) -> None:
    """fn(nrows, ncols, *args) over the last-dim rows of `shape`."""
    ncols = shape[-1]
    nrows = math.prod(shape) // ncols
    grid, block = _rows_geometry(rt, ordinal, nrows, ncols, itemsize)
    fn(rt.launch, grid, block, rt.stream(ordinal), nrows, ncols, *args)


def sigmoid(rt, x: GpuBuffer, lx: Layout, table: dict):
    shape = nn_shapes.sigmoid(rt.name, lx.shape)
    fn = _kernel(rt, "sigmoid", K.SIGMOID_SELF, table, (x, lx))
    out = rt.alloc(x.ordinal, lx.elem_count, x.dtype)
    if out.size:
        info, keep = (0, None) if lx.is_contiguous else rt._info(x.ordinal, lx.shape, lx.stride)
        fn(
            rt.launch,
            rt.geometry(out.size, x.ordinal),
            BLOCK,
            rt.stream(x.ordinal),
            out.size,
            lx.rank,
            info,
            x.at(lx),
            out.ptr,
        )
    return out, shape


def softmax_last_dim(rt, x: GpuBuffer, lx: Layout, table: dict):
    shape = nn_shapes.softmax_last_dim(rt.name, lx.shape)
    fn = _kernel(rt, "softmax_last_dim", K.SOFTMAX_LAST_DIM_SELF, table, (x, lx))
    out = rt.alloc(x.ordinal, lx.elem_count, x.dtype)
    if out.size:
        views = _contiguous(rt, "softmax_last_dim", table, (x, lx))
        _launch_rows(rt, fn, x.ordinal, shape, x.dtype.itemsize, *_at(views), out.ptr)
    return out, shape


def rms_norm(rt, x: GpuBuffer, lx: Layout, alpha: GpuBuffer, la: Layout, eps: float, table: dict):
    shape = nn_shapes.rms_norm(rt.name, lx.shape, la.shape)
    fn = _kernel(rt, "rms_norm", K.RMS_NORM_SELF, table, (x, lx), (alpha, la))
    out = rt.alloc(x.ordinal, lx.elem_count, x.dtype)
    if out.size:
        views = _contiguous(rt, "rms_norm", table, (x, lx), (alpha, la))
        _launch_rows(rt, fn, x.ordinal, shape, x.dtype.itemsize, float(eps), *_at(views), out.ptr)
    return out, shape


def layer_norm(
    rt, x: GpuBuffer, lx: Layout, alpha: GpuBuffer, la: Layout, beta: GpuBuffer, lb: Layout, eps: float, table: dict
):
    shape = nn_shapes.layer_norm(rt.name, lx.shape, la.shape, lb.shape)
    fn = _kernel(rt, "layer_norm", K.LAYER_NORM_SELF, table, (x, lx), (alpha, la), (beta, lb))
    out = rt.alloc(x.ordinal, lx.elem_count, x.dtype)
    if out.size:
        views = _contiguous(rt, "layer_norm", table, (x, lx), (alpha, la), (beta, lb))
        _launch_rows(rt, fn, x.ordinal, shape, x.dtype.itemsize, float(eps), *_at(views), out.ptr)
    return out, shape


def _rope(rt, op: str, pattern: K, check, x, lx, cos, lc, sin, ls, table, sizes):
    """Launch the rope kernel `op` as fn(*sizes(shape), x, cos, sin, out), a thread per pair."""
    shape = check(rt.name, lx.shape, lc.shape, ls.shape)
    fn = _kernel(rt, op, pattern, table, (x, lx), (cos, lc), (sin, ls))
    out = rt.alloc(x.ordinal, lx.elem_count, x.dtype)
    if out.size:
        views = _contiguous(rt, op, table, (x, lx), (cos, lc), (sin, ls))
        fn(
            rt.launch,
            rt.geometry(out.size // 2, x.ordinal),
            BLOCK,
            rt.stream(x.ordinal),
            *sizes(shape),
            *_at(views),
            out.ptr,
        )
    return out, shape


def rope_i(rt, x, lx, cos, lc, sin, ls, table):
    return _rope(
        rt,
        "rope_i",
        K.ROPE_I_SELF,
        nn_shapes.rope_i,
        x,
        lx,
        cos,
        lc,
        sin,
        ls,
        table,
        lambda s: (s[0] * s[1], s[2] * s[3]),
    )


def rope(rt, x, lx, cos, lc, sin, ls, table):
    return _rope(
        rt,
        "rope",
        K.ROPE_SELF,
        nn_shapes.rope,
        x,
        lx,
        cos,
        lc,
        sin,
        ls,
        table,
        lambda s: (s[0] * s[1], s[2] * s[3], s[3]),
    )


def rope_thd(rt, x, lx, cos, lc, sin, ls, table):
    return _rope(rt, "rope_thd", K.ROPE_THD_SELF, nn_shapes.rope_thd, x, lx, cos, lc, sin, ls, table, lambda s: s)


#: hip/attention.hip's fused attention (cuda, sm_80 and later): head dim -> (threads a block, query
#: rows a block), ops.yaml's FLASH_THREADS_D<hd> and FLASH_ROWS_D<hd> (the kernel loops over the
#: work items of any grid).
_FLASH_GEOMETRY = {64: (FLASH_THREADS_D64, FLASH_ROWS_D64), 128: (FLASH_THREADS_D128, FLASH_ROWS_D128)}
#: The fused kernels' `kernel:` patterns of sdpa, by head dim.
_FLASH_PATTERNS = {64: K.FLASH_ATTENTION_SELF_D64, 128: K.FLASH_ATTENTION_SELF_D128}


def _flash_kernel(rt, table: dict, dtype: np.dtype, d: int, ordinal: int):
    """The launch wrapper of hip/attention.hip's fused kernel for this call (ops.yaml keys it
    (pattern, dtype) in sdpa's table), or None where it does not apply: it needs NVIDIA tensor
    cores (sm_80 and later: mma.sync on bf16 / f16), and exists for bf16 and f16 and head dims
    64 and 128. Elsewhere (f32, other head dims, AMD) sdpa runs gemm, sdpa_softmax, gemm."""
    fn = table.get((_FLASH_PATTERNS.get(d), dtype))
    if rt.name != "cuda" or fn is None or d not in _FLASH_GEOMETRY:
        return None
    arch = getattr(rt.driver, "arch", lambda ordinal: "")(ordinal)
    if not arch.startswith("sm_") or int(arch[3:].rstrip("abf") or 0) < 80:
        return None
    return fn


def _flash_sdpa(
    rt,
    fn,
    ordinal: int,
    batch: int,
    sq: int,
    skv: int,
    d: int,
    scale: float,
    causal: bool,
    q: int,
    k: int,
    v: int,
    out: int,
) -> None:
    """(bh, sq, skv, scale, causal, q, k, v, out) through the generated launch wrapper."""
    threads, rows = _FLASH_GEOMETRY[d]
    fn(
        rt.launch,
        batch * -(-sq // rows),
        threads,
        rt.stream(ordinal),
        batch,
        sq,
        skv,
        float(scale),
        int(bool(causal)),
        q,
        k,
        v,
        out,
    )


def sdpa(
    rt,
    q: GpuBuffer,
    lq: Layout,
    k: GpuBuffer,
    lk: Layout,
    v: GpuBuffer,
    lv: Layout,
    scale: float,
    causal: bool,
    table: dict,
):
    """Per (b, h): O = softmax(scale * Q K^T + mask) V.

    cuda, bf16 / f16, head dim 64 or 128: hip/attention.hip's fused (flash) kernel, the scores
    never stored. Otherwise: S = Q K^T (sq, skv), P = softmax(scale * S + mask) in place, O =
    P V. Row-major matrices are the column-major BLAS's transposes, so the gemms compute
    S^T = K Q^T and O^T = V^T P^T (as GpuRuntime.matmul maps row-major onto the BLAS)."""
    shape = nn_shapes.sdpa(rt.name, lq.shape, lk.shape, lv.shape)
    fn = _kernel(rt, "sdpa", K.SDPA_SOFTMAX_SELF, table, (q, lq), (k, lk), (v, lv))
    b, h, sq, d = shape
    skv, batch = lk.shape[2], b * h
    if rt.vendor_nn is not None and (out := rt.vendor_nn.sdpa(q, lq, k, lk, v, lv, scale, causal, table)) is not None:
        return out, shape
    # the kernel orders the scores before scaling them: a positive scale (and a finite, nonzero
    # one in f32 units); 32-bit positions
    fits = max(sq, skv, batch) < 1 << 30 and 1e-30 < scale < 1e30
    flash = _flash_kernel(rt, table, q.dtype, d, q.ordinal) if fits else None
    gemm = getattr(rt.driver, "gemm", None)
    if gemm is None and flash is None:
        raise NotImplementedForBackend(rt.name, "sdpa (needs the driver's BLAS gemm)")
    out = rt.alloc(q.ordinal, b * h * sq * d, q.dtype)
    if not out.size:
        return out, shape
    views = _contiguous(rt, "sdpa", table, (q, lq), (k, lk), (v, lv))
    if flash is not None and any(p % 16 for p in _at(views)):  # the kernel copies 16-byte chunks
        views = [rt._dense(buf, layout, _copy(rt, "sdpa", table, buf)) for buf, layout in views]
    qp, kp, vp = _at(views)
    if flash is not None and not (qp % 16 or kp % 16 or vp % 16):
        _flash_sdpa(rt, flash, q.ordinal, batch, sq, skv, d, scale, causal, qp, kp, vp, out.ptr)
        return out, shape
    if gemm is None:
        raise NotImplementedForBackend(rt.name, "sdpa (needs the driver's BLAS gemm)")
    scores = rt.alloc(q.ordinal, batch * sq * skv, q.dtype)
    stream = rt.stream(q.ordinal)
    reduced = rt.switches.gemm_reduced(q.dtype)  # the GEMM switch of q's dtype (runtime/gpu/switches.py)
    gemm(
        q.ordinal,
        stream.handle,
        q.dtype,
        True,
        False,
        skv,
        sq,
        d,
        kp,
        d,
        skv * d,
        qp,
        d,
        sq * d,
        scores.ptr,
        skv,
        sq * skv,
        batch,
        reduced=reduced,
    )
    grid, block = _rows_geometry(rt, q.ordinal, batch * sq, skv, q.dtype.itemsize)
    fn(rt.launch, grid, block, stream, batch * sq, skv, sq, float(scale), int(bool(causal)), scores.ptr)
    gemm(
        q.ordinal,
        stream.handle,
        q.dtype,
        False,
        False,
        d,
        sq,
        skv,
        vp,
        d,
        skv * d,
        scores.ptr,
        skv,
        sq * skv,
        out.ptr,
        d,
        sq * d,
        batch,
        reduced=reduced,
    )
    return out, shape


def arg_sort(rt, x: GpuBuffer, lx: Layout, ascending: bool, table: dict):
    """A bitonic sort of each row's (key, index) pairs, the row padded to a power of two
    (hip/nn.hip). Rows of up to SORT_CHUNK elements: one launch, in shared memory. Longer
    rows: chunks sorted in shared memory, then for each merge size k past a chunk, one
    launch per stage of distance >= a chunk over global pairs (arg_sort_merge) and one for
    the stages below it (arg_sort_local), the last writing the indices."""
    shape = nn_shapes.arg_sort(rt.name, lx.shape)
    ncols = shape[-1]
    if ncols >= 2**32:
        raise ShapeMismatch("arg_sort", rt.name, "rows of fewer than 2^32 elements (u32 indices)", ncols)
    local = _kernel(rt, "arg_sort", K.ARG_SORT_LOCAL_SELF, table, (x, lx))
    out = rt.alloc(x.ordinal, lx.elem_count, np.dtype(np.uint32))
    if not out.size:
        return out, shape
    [(src, view)] = _contiguous(rt, "arg_sort", table, (x, lx))
    merge = rt._entry(table, (K.ARG_SORT_MERGE_SELF, x.dtype), "arg_sort")
    nrows, pad = out.size // ncols, 1 << (ncols - 1).bit_length()
    chunk = min(pad, SORT_CHUNK)
    stream, up = rt.stream(x.ordinal), int(bool(ascending))
    grid = max(1, min(nrows * (pad // chunk), rt.driver.multiprocessors(x.ordinal) * 8))
    packed = x.dtype.itemsize <= 4 and pad <= SORT_CHUNK
    threads = max(64, pad // SORT_PER) if packed else min(1024, max(32, chunk // 2))  # 64: whole warps on AMD too
    if pad == chunk:
        local(rt.launch, grid, threads, stream, nrows, ncols, pad, up, 2, pad, src.at(view), 0, 0, out.ptr)
        return out, shape
    keys = rt.alloc(x.ordinal, nrows * pad, np.dtype(np.uint64))
    idx = rt.alloc(x.ordinal, nrows * pad, np.dtype(np.uint32))
    local(rt.launch, grid, threads, stream, nrows, ncols, pad, up, 2, chunk, src.at(view), keys.ptr, idx.ptr, 0)
    k = 2 * chunk
    while k <= pad:
        j = k // 2
        while j >= chunk:
            merge(
                rt.launch, rt.geometry(nrows * pad // 2, x.ordinal), BLOCK, stream, nrows, pad, k, j, keys.ptr, idx.ptr
            )
            j //= 2
        last = k == pad
        local(
            rt.launch, grid, threads, stream, nrows, ncols, pad, up, k, k, 0, keys.ptr, idx.ptr, out.ptr if last else 0
        )
        k *= 2
    return out, shape

"""GGML quantized storage on the GPU backends (cuda, rocm): the blocks live on the device and
the kernels of hip/quantized.hip dequantize them and multiply them by f32 activations as given;
those of hip/qmatvec_q8.hip multiply them by x quantized to q8_1 on the device (QMatMul's default,
as ggml's and Candle's CUDA backends; the switch qmatmul_exact_x keeps x as given).
Quantizing runs on the host (runtime.ggml), as GGML itself quantizes these formats on the CPU.

Every function takes the GpuRuntime first: runtime/gpu/exports.py binds them with
functools.partial for each vendor. The ops that launch kernels get the launch wrappers as `table`, a dict from
(KernelPattern, format name "q4_0", ...) to the generated `launch_<kernel>` of that format, as
the storage ops of runtime/gpu/ get theirs; matmul's also holds copy_strided_f32, keyed
(KernelPattern.COPY_STRIDED_X, numpy dtype), for an x it must make dense."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import generated.kernel_facts as _kernel_facts
from generated.kernel_facts import (
    DYNAMIC_SHARED_SPARE,
    QMATVEC_FAST_ROWS_Q4_0,
    QMATVEC_FAST_ROWS_Q4_1,
    QMATVEC_FAST_ROWS_Q8_0,
    QMATVEC_FAST_THREADS,
    QMATVEC_K_ROWS_Q4_K,
    QMATVEC_K_ROWS_Q6_K,
    QMATVEC_Q8_BULK_BLOCKS,
    QMATVEC_Q8_BULK_PER_SM,
    QMATVEC_Q8_BULK_ROWS,
    QMATVEC_Q8_LANE_ITEMS,
    QMATVEC_Q8_LANE_K_ONE_BLOCKS,
    QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS,
    QMATVEC_Q8_LANE_UNITS,
    QMATVEC_Q8_LANE_UNITS_F,
    QMATVEC_Q8_LANE_UNITS_K_ONE,
    QMATVEC_Q8_LANE_UNITS_MANY,
    QMATVEC_Q8_LONG_K,
    QMATVEC_Q8_LONG_X_SHARED,
    QMATVEC_Q8_LONG_X_SHARED_BLOCKS,
    QMATVEC_Q8_LONG_X_SHARED_K,
    QMATVEC_Q8_MMA_F_FROM,
    QMATVEC_Q8_MMA_F_THREADS,
    QMATVEC_Q8_MMA_F_TILES,
    QMATVEC_Q8_MMA_F_WIDE_THREADS,
    QMATVEC_Q8_MMA_Q_FROM,
    QMATVEC_Q8_MMA_Q_N,
    QMATVEC_Q8_MMA_Q_PAIR_BLOCKS,
    QMATVEC_Q8_MMA_Q_STAGES,
    QMATVEC_Q8_MMA_Q_X4_BLOCKS,
    QMATVEC_Q8_MMA_TILES_F,
    QMATVEC_Q8_MMA_WIDE_N,
    QMATVEC_Q8_STREAM_BLOCKS,
    QMATVEC_Q8_STREAM_K,
    QMATVEC_Q8_STREAM_PAIR_WARPS,
    QMATVEC_Q8_STREAM_PAIR_WARPS_K,
    QMATVEC_Q8_STREAM_PAIRS,
    QMATVEC_Q8_STREAM_ROWS,
    QMATVEC_Q8_STREAM_WARPS,
    QMATVEC_Q8_STREAM_WIDE_K,
    QMATVEC_Q8_THREADS,
    QMATVEC_Q8_TWO_BLOCKS,
    QMATVEC_ROWS,
    QMATVEC_THREADS,
    KernelPattern as K,
)
from runtime import ggml
from runtime.errors import DTypeMismatch, ShapeMismatch
from runtime.gpu.launch import BLOCK
from runtime.gpu.memory import GpuBuffer, _fits, _same_ordinal
from runtime.gpu.runtime import GpuRuntime
from runtime.layout import Layout

#: qmatvec_*'s launch, hip/quantized.hip's block sizes and rows per item: one source, ops.yaml's
#: `kernel_facts` (generated/kernel_facts.py here, OPGEN_<NAME> in the kernels).
#: The general and tiled paths: (rows per item, threads per block).
QMATVEC_DEFAULT = (QMATVEC_ROWS, QMATVEC_THREADS)
#: The dp4a path of q4_0, q4_1 and q8_0 (cuda, sm_80 and up): (rows per item, threads per
#: block), hip/quantized.hip's (F::kFastRows, F::kFastSplit * kThreads). Other block sizes
#: take the general path.
QMATVEC_FAST = {
    "q4_0": (QMATVEC_FAST_ROWS_Q4_0, QMATVEC_FAST_THREADS),
    "q4_1": (QMATVEC_FAST_ROWS_Q4_1, QMATVEC_FAST_THREADS),
    "q8_0": (QMATVEC_FAST_ROWS_Q8_0, QMATVEC_FAST_THREADS),
}
#: The K path of q4_k and q6_k (every backend; integer dot products on cuda sm_80 and up):
#: (rows per item, threads per block), hip/quantized.hip's (F::kKRows, kThreads).
QMATVEC_K = {"q4_k": (QMATVEC_K_ROWS_Q4_K, QMATVEC_THREADS), "q6_k": (QMATVEC_K_ROWS_Q6_K, QMATVEC_THREADS)}
#: Lanes in a group of qmatvec_q8_1_* (compat.h's OPGEN_LANE_GROUP, on every device).
LANE_GROUP = 32
#: What qmatvec_q8_1_*'s entry and grid follow, ops.yaml's kernel facts: when each group of lanes
#: takes its own items (q8_by_group), when the tensor cores multiply (q8_mma: float weights from
#: MMA_F_FROM, the blocks of 32 from MMA_Q_FROM on MMA_Q_N weight rows, those of MMA_Q_X4_BLOCKS
#: from the class of 4; a FROM of 0: never) and in items of how many tiles (float weights
#: MMA_TILES_F from MMA_WIDE_N weight rows, else MMA_F_TILES; the blocks of 32 two where MMA_Q_PAIR_BLOCKS
#: has their bit and the stages fit, q8_tiles); how many blocks read x from shared memory at
#: one row of x (q8_x_shared: the long units of LONG_K and LONG_X_SHARED up to LONG_X_SHARED_K
#: values of x, at most LONG_X_SHARED_BLOCKS a multiprocessor where that is not 0); which blocks
#: of 32 stream one row's weights through the bulk copy engine (q8_bulk: BULK_BLOCKS, items of
#: BULK_ROWS weight rows, BULK_PER_SM blocks a multiprocessor); which take qmatvec_q8_1_one_<fmt>
#: for one row of x (q8_one_apart: BULK_BLOCKS, TWO_BLOCKS); which blocks of 256 stream one row's
#: weights whole through dynamic shared memory (q8_stream: STREAM_K; STREAM_WARPS reading warps
#: of STREAM_ROWS weight rows a step, twice that for STREAM_PAIRS, at most STREAM_PAIR_WARPS of
#: those of STREAM_PAIR_WARPS_K; STREAM_BLOCKS blocks of each at most, twice that for
#: STREAM_WIDE_K).
QMATVEC_Q8_GRID_FACTS = {
    "QMATVEC_Q8_LANE_UNITS": QMATVEC_Q8_LANE_UNITS,
    "QMATVEC_Q8_LANE_UNITS_MANY": QMATVEC_Q8_LANE_UNITS_MANY,
    "QMATVEC_Q8_LANE_ITEMS": QMATVEC_Q8_LANE_ITEMS,
    "QMATVEC_Q8_LANE_UNITS_F": QMATVEC_Q8_LANE_UNITS_F,
    "QMATVEC_Q8_LANE_K_ONE_BLOCKS": QMATVEC_Q8_LANE_K_ONE_BLOCKS,
    "QMATVEC_Q8_LANE_UNITS_K_ONE": QMATVEC_Q8_LANE_UNITS_K_ONE,
    "QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS": QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS,
    "QMATVEC_Q8_MMA_F_FROM": QMATVEC_Q8_MMA_F_FROM,
    "QMATVEC_Q8_MMA_TILES_F": QMATVEC_Q8_MMA_TILES_F,
    "QMATVEC_Q8_MMA_F_TILES": QMATVEC_Q8_MMA_F_TILES,
    "QMATVEC_Q8_MMA_WIDE_N": QMATVEC_Q8_MMA_WIDE_N,
    "QMATVEC_Q8_MMA_Q_FROM": QMATVEC_Q8_MMA_Q_FROM,
    "QMATVEC_Q8_MMA_Q_N": QMATVEC_Q8_MMA_Q_N,
    "QMATVEC_Q8_MMA_Q_X4_BLOCKS": QMATVEC_Q8_MMA_Q_X4_BLOCKS,
    "QMATVEC_Q8_MMA_Q_PAIR_BLOCKS": QMATVEC_Q8_MMA_Q_PAIR_BLOCKS,
    "QMATVEC_Q8_MMA_F_THREADS": QMATVEC_Q8_MMA_F_THREADS,
    "QMATVEC_Q8_MMA_F_WIDE_THREADS": QMATVEC_Q8_MMA_F_WIDE_THREADS,
    "QMATVEC_Q8_LONG_K": QMATVEC_Q8_LONG_K,
    "QMATVEC_Q8_LONG_X_SHARED": QMATVEC_Q8_LONG_X_SHARED,
    "QMATVEC_Q8_LONG_X_SHARED_K": QMATVEC_Q8_LONG_X_SHARED_K,
    "QMATVEC_Q8_LONG_X_SHARED_BLOCKS": QMATVEC_Q8_LONG_X_SHARED_BLOCKS,
    "QMATVEC_Q8_BULK_BLOCKS": QMATVEC_Q8_BULK_BLOCKS,
    "QMATVEC_Q8_BULK_ROWS": QMATVEC_Q8_BULK_ROWS,
    "QMATVEC_Q8_BULK_PER_SM": QMATVEC_Q8_BULK_PER_SM,
    "QMATVEC_Q8_TWO_BLOCKS": QMATVEC_Q8_TWO_BLOCKS,
    "QMATVEC_Q8_STREAM_K": QMATVEC_Q8_STREAM_K,
    "QMATVEC_Q8_STREAM_WARPS": QMATVEC_Q8_STREAM_WARPS,
    "QMATVEC_Q8_STREAM_ROWS": QMATVEC_Q8_STREAM_ROWS,
    "QMATVEC_Q8_STREAM_BLOCKS": QMATVEC_Q8_STREAM_BLOCKS,
    "QMATVEC_Q8_STREAM_WIDE_K": QMATVEC_Q8_STREAM_WIDE_K,
    "QMATVEC_Q8_STREAM_PAIRS": QMATVEC_Q8_STREAM_PAIRS,
    "QMATVEC_Q8_STREAM_PAIR_WARPS": QMATVEC_Q8_STREAM_PAIR_WARPS,
    "QMATVEC_Q8_STREAM_PAIR_WARPS_K": QMATVEC_Q8_STREAM_PAIR_WARPS_K,
}
#: What qmatvec_q8_1_*'s weight rows per item follow (q8_item_rows), ops.yaml's kernel facts that
#: hip/qmatvec_q8.hip is built with: QMATVEC_Q8_ROWS_X* (blocks of 32; _ROWS_X4_NARROW and
#: _ROWS_X1_NARROW below QMATVEC_Q8_NARROW_N weight rows), QMATVEC_Q8_ROWS_K_X* (blocks of 256;
#: _ROWS_K_X1_TWO, _ROWS_K_X2_TWO) and QMATVEC_Q8_ROWS_F_X* (f32, f16, bf16), by x rows class (1,
#: 2, up to 4, more: 8 at a time); with the grid's facts, whose lane rule the narrow rows follow.
QMATVEC_Q8_ROWS_FACTS = {
    **QMATVEC_Q8_GRID_FACTS,
    **{name: getattr(_kernel_facts, name) for name in dir(_kernel_facts) if name.startswith("QMATVEC_Q8_ROWS")},
    "QMATVEC_Q8_NARROW_N": _kernel_facts.QMATVEC_Q8_NARROW_N,
}
#: The blocks of 32 in the order of their bits in QMATVEC_Q8_MMA_Q_X4_BLOCKS (and the kernel's
#: QMATVEC_Q8_WIDE_BLOCKS).
BLOCK32_BITS = ("q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1")
#: The blocks of 256 in the order of their bits in QMATVEC_Q8_ROWS_K_X2_TWO (and QMATVEC_Q8_WIDE_K).
BLOCK256_BITS = ("q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k")


def has_bit(mask: int, fmt: str) -> bool:
    """Whether a fact's mask of a bit each format (BLOCK32_BITS or BLOCK256_BITS, by fmt's block)
    has fmt's bit: hip/qmatvec_q8.hip's kBlock32In / kBlock256In."""
    bits = BLOCK32_BITS if fmt in BLOCK32_BITS else BLOCK256_BITS
    return bool(mask >> bits.index(fmt) & 1)


#: The first compute capability with mma.sync of tf32 and s8 (hip/qmatvec_q8.hip's OPGEN_QMATVEC_MMA).
MMA_TF32_ARCH = 80
#: The first compute capability with the bulk copy engine (hip/qmatvec_q8.hip's OPGEN_QMATVEC_BULK).
BULK_ARCH = 90
#: (format, x rows class) where the exact-x kernel (qmatvec_<fmt>) was measured faster than the
#: quantized-x one, over the four shapes of bench/ggml.py together: QMatMul takes it there with
#: the switch qmatmul_exact_x off too (H100, 2026-11-28: q6_K at one row 77.7 µs against 87.4 at
#: 16384²; the blocks of 256 reading whole 16-byte pieces (QMATVEC_Q8_WIDE_K) took q4_K of one
#: row and q6_K of two off this set: bench/results/ggml-q8-explore-h100.md). Where the stream
#: product takes q6_K's one row (q8_stream) the quantized-x path runs all the same (H200,
#: 2026-11-29, 43d3928: 53.2 µs against 62.3 at 16384², 16.1 against 21.3 at 4096 x 14336:
#: quantized_x).
EXACT_X_FASTER: frozenset[tuple[str, int]] = frozenset({("q6_k", 1)})
#: (format, x rows class) that keep the exact-x kernel up to EXACT_X_SMALL_ELEMS weights: one
#: launch, where the quantized-x path's two (quantize x, then the product) cost more host time
#: than the product's GPU time (a warm q4_0 4096 x 4096 call: 0.017 ms against 0.009 on the
#: H100, bench/results/first-call-h100.md; on the GPU alone 4.9 + 2 µs against 4.5).
EXACT_X_SMALL: frozenset[tuple[str, int]] = frozenset({("q4_0", 1), ("q8_0", 1)})
EXACT_X_SMALL_ELEMS = 4096 * 4096
#: Rows of x from which QMatMul dequantizes the weight once and runs the f32 BLAS GEMM instead
#: of qmatvec, which reads the weight again for every row; by format, the others' value under
#: None: where the two cross, measured (bench/gpu.py --parts qmatmul; figures: bench/results/NOTES.md,
#: "Tuning figures"). Since then q4_1 takes the dp4a path and q4_k / q6_k the integer K path
#: (faster products, commit 736c5fc): their crossings were not measured
#: again, so these stay as they were (low, on the side of the GEMM).
QMATMUL_GEMM_ROWS = {"q4_0": 24, "q8_0": 24, "q4_k": 20, "q6_k": 16, None: 12}
#: The f32 weights dequantize + GEMM holds at once: slabs of W's rows up to this size.
GEMM_SLAB_BYTES = 64 << 20


@dataclass(eq=False)
class QGpuBuffer:
    """The `inner` of a GPU QStorage: the blocks of `fmt`, as bytes on the device. Only
    host-to-device copies and memsets write them, never a kernel: qmatvec_q4_0 / q4_1 / q4_k /
    q6_k on sm_90 read their first weight rows before waiting for the kernel before them
    (hip/quantized.hip, qmatvec_fast and qmatvec_k), which relies on it."""

    fmt: str
    buf: GpuBuffer  # uint8


def _format(op: str, rt: GpuRuntime, fmt) -> str:
    return ggml.format_of(op, fmt, rt.name).name


def _blocks(op: str, rt: GpuRuntime, fmt: str, elem_count: int) -> int:
    """Blocks holding elem_count weights; a partial block is an error."""
    return ggml.block_count(op, ggml.FORMATS[fmt], elem_count, rt.name)


# -- storages ------------------------------------------------------------------------------
def quantize(rt: GpuRuntime, ordinal: int, array: np.ndarray, fmt) -> QGpuBuffer:
    """`array`'s values (read as f32) as blocks of `fmt`, quantized on the host and uploaded."""
    name = _format("quantize", rt, fmt)
    values = np.ascontiguousarray(array, dtype=np.float32).reshape(-1)
    _blocks("quantize", rt, name, values.size)
    return QGpuBuffer(name, rt.from_host(ordinal, ggml.quantize(values, name)))


def qzeros(rt: GpuRuntime, ordinal: int, elem_count: int, fmt) -> QGpuBuffer:
    """elem_count weights of zero-filled blocks (GGML's zeros: every scale 0)."""
    name = _format("quantize", rt, fmt)
    nbytes = _blocks("quantize", rt, name, elem_count) * ggml.FORMATS[name].nbytes
    buf = rt.alloc(ordinal, nbytes, np.dtype(np.uint8))
    if nbytes:
        rt.driver.memset(buf.ptr, nbytes, rt.stream(ordinal).handle)
    return QGpuBuffer(name, buf)


def qstorage_from_bytes(rt: GpuRuntime, ordinal: int, data: np.ndarray, fmt) -> QGpuBuffer:
    """Blocks of `fmt` given as their bytes (a GGUF tensor's data, say), uploaded as they are."""
    name = _format("quantize", rt, fmt)
    raw = np.asarray(data)
    if raw.dtype != np.uint8:
        raise DTypeMismatch("quantize", rt.name, "uint8 bytes", str(raw.dtype))
    block_bytes = ggml.FORMATS[name].nbytes
    if raw.size % block_bytes:
        raise ShapeMismatch("quantize", rt.name, f"a multiple of {block_bytes} bytes ({name} blocks)", raw.size)
    return QGpuBuffer(name, rt.from_host(ordinal, raw.reshape(-1)))


def q_dtype(rt: GpuRuntime, q: QGpuBuffer) -> str:
    return q.fmt


def q_device(rt: GpuRuntime, q: QGpuBuffer) -> int:
    return q.buf.ordinal


def q_size_in_bytes(rt: GpuRuntime, q: QGpuBuffer) -> int:
    return q.buf.size


def q_data(rt: GpuRuntime, q: QGpuBuffer) -> np.ndarray:
    """A host copy of the blocks (uint8)."""
    return rt.to_host(q.buf)


# -- kernels -------------------------------------------------------------------------------
def _kernel(op: str, rt: GpuRuntime, table: dict, pattern: K, fmt: str):
    fn = table.get((pattern, fmt))
    if fn is None:
        formats = sorted(str(k[1]) for k in table if k[0] == pattern)
        raise DTypeMismatch(op, rt.name, f"one of {', '.join(formats)}", fmt)
    return fn


def _grid(rt: GpuRuntime, ordinal: int, items: int) -> int:
    """A thread block per item, capped as GpuRuntime.geometry caps every grid-stride kernel."""
    return rt.geometry(items * BLOCK, ordinal)


def qmatvec_launch(rt: GpuRuntime, fmt: str) -> tuple[int, int]:
    """(outputs per item, threads per block) of qmatvec_<fmt> on `rt`: the launch gives each
    item (that many rows of W against one row of x) a block. The kernels stride over items,
    so any grid is correct; this one fills the device once."""
    if rt.name == "cuda" and fmt in QMATVEC_FAST:
        return QMATVEC_FAST[fmt]
    if fmt in QMATVEC_K:
        return QMATVEC_K[fmt]
    return QMATVEC_DEFAULT


def _dequantize(rt: GpuRuntime, q: QGpuBuffer, elem_count: int, table: dict, dtype) -> GpuBuffer:
    pattern = K.DEQUANTIZE_SELF_F32 if dtype == np.float32 else K.DEQUANTIZE_SELF_F16
    fn = _kernel("dequantize", rt, table, pattern, q.fmt)
    blocks = _blocks("dequantize", rt, q.fmt, elem_count)
    if blocks * ggml.FORMATS[q.fmt].nbytes > q.buf.size:
        raise ShapeMismatch(
            "dequantize",
            rt.name,
            f"at most {q.buf.size // ggml.FORMATS[q.fmt].nbytes * ggml.FORMATS[q.fmt].block} "
            f"elements ({q.buf.size} bytes of {q.fmt})",
            elem_count,
        )
    ordinal = q.buf.ordinal
    out = rt.alloc(ordinal, elem_count, np.dtype(dtype))
    if elem_count:  # a thread per 8 weights (the plain formats: and per value past the last 8)
        fn(
            rt.launch,
            rt.geometry(-(-elem_count // 8), ordinal),
            BLOCK,
            rt.stream(ordinal),
            q.buf.ptr,
            out.ptr,
            elem_count,
        )
    return out


def q_dequantize(rt: GpuRuntime, q: QGpuBuffer, elem_count: int, table: dict) -> GpuBuffer:
    """The first elem_count weights as f32, bit for bit the cpu backend's (GGML's arithmetic);
    `table`: (pattern, format) -> launch wrapper of dequantize_<fmt>_f32."""
    return _dequantize(rt, q, elem_count, table, np.float32)


def q_dequantize_f16(rt: GpuRuntime, q: QGpuBuffer, elem_count: int, table: dict) -> GpuBuffer:
    """The first elem_count weights as f16 (the f32 values rounded to nearest even);
    `table`: (pattern, format) -> launch wrapper of dequantize_<fmt>_f16."""
    return _dequantize(rt, q, elem_count, table, np.float16)


def q_matmul(
    rt: GpuRuntime, q: QGpuBuffer, x: GpuBuffer, x_layout: Layout, shape: tuple[int, int], table: dict
) -> GpuBuffer:
    """x @ W^T: W the (n, k) weight matrix of `q` (row-major blocks), x f32 of shape (..., k)
    in any layout; the result is f32 (..., n), contiguous. `table`: (pattern, format) -> launch
    wrapper of the kernels: for a few rows qmatvec_q8_1_<fmt> (quantized_x: x in q8_1, each weight
    read once for 8 rows of x) or qmatvec_<fmt> (x as given, a row of x re-reads W, from L2 where
    W fits); from gemm_rows(format) rows, W dequantized once and the BLAS GEMM
    (_dequantized_gemm)."""
    n, k = shape
    fn = _kernel("qmatmul", rt, table, K.QMATVEC_SELF, q.fmt)
    per_block, block_bytes = ggml.FORMATS[q.fmt].block, ggml.FORMATS[q.fmt].nbytes
    if x.dtype != np.float32:
        raise DTypeMismatch("qmatmul", rt.name, "float32", str(x.dtype))
    if k % per_block or n * (k // per_block) * block_bytes != q.buf.size:
        raise ShapeMismatch(
            "qmatmul",
            rt.name,
            f"({n}, {k}) weights in {q.buf.size} bytes of {q.fmt} blocks ({per_block} weights each, along k)",
            shape,
        )
    if x_layout.rank == 0 or x_layout.shape[-1] != k:
        raise ShapeMismatch("qmatmul", rt.name, f"x of shape (..., {k})", x_layout.shape)
    _fits("qmatmul", rt.name, x, x_layout)
    _same_ordinal("qmatmul", rt.name, q.buf, x)
    ordinal = x.ordinal
    rows = math.prod(x_layout.shape[:-1])
    out = rt.alloc(ordinal, rows * n, np.dtype(np.float32))
    if not out.size:
        return out
    stream = rt.stream(ordinal)
    if k == 0:
        rt.driver.memset(out.ptr, out.nbytes, stream.handle)
        return out
    # the kernels read x contiguous, 16-byte aligned: a strided x is copied dense on the device
    dense, _ = rt._dense(x, x_layout, rt._entry(table, (K.COPY_STRIDED_X, x.dtype), "qmatmul"))
    # qmatvec reads x in 16-byte pieces of 8 weights: a plain format's k % 8 takes the GEMM
    ragged = k % 8 != 0
    if (ragged or rows >= gemm_rows(q.fmt)) and _dequantized_gemm(rt, q, dense, out, n, k, rows, table):
        return out
    if ragged:
        raise ShapeMismatch("qmatmul", rt.name, f"k a multiple of 8 for {q.fmt} without a BLAS", shape)
    if quantized_x(rt, q.fmt, rows, n, k, x.ordinal):
        qmatvec_q8_1(rt, q, dense, out, n, k, rows, table)
        return out
    item_rows, threads = qmatvec_launch(rt, q.fmt)
    items = -(-n // item_rows) * rows
    fn(rt.launch, _grid(rt, ordinal, items), threads, stream, q.buf.ptr, dense.ptr, out.ptr, n, k, rows)
    return out


def x_rows_class(rows: int) -> int:
    """The x rows qmatvec_q8_1_* takes at once for `rows` rows: 1, 2, 4 or 8."""
    return 1 if rows == 1 else 2 if rows == 2 else 4 if rows <= 4 else 8


def quantized_x(rt: GpuRuntime, fmt: str, rows: int, n: int, k: int, ordinal: int = 0) -> bool:
    """Whether QMatMul of `fmt`, W (n, k), takes qmatvec_q8_1_<fmt>: f32 / f16 / bf16 weights where
    k fills its 32-byte units (their product there is x's own in f32 sums; on the tensor cores,
    q8_mma, x in two tf32 parts of about 21 bits together), the block formats unless
    the switch qmatmul_exact_x is on or the exact-x kernel is faster for these rows
    (EXACT_X_FASTER, but where the stream product takes them, q8_stream; EXACT_X_SMALL for small
    weights)."""
    if fmt in ggml.PLAIN:
        return k * ggml.FORMATS[fmt].nbytes % 32 == 0
    if rt.switches.qmatmul_exact_x:
        return False
    return not exact_x_measured_faster(fmt, rows, n, k) or q8_stream(rt, ordinal, fmt, rows, k, 0)


def exact_x_measured_faster(fmt: str, rows: int, n: int, k: int) -> bool:
    """Whether a block format's exact-x kernel is the default for `rows` rows of x against W (n,
    k): EXACT_X_FASTER, and EXACT_X_SMALL up to EXACT_X_SMALL_ELEMS weights."""
    key = (fmt, x_rows_class(rows))
    return key in EXACT_X_FASTER or (key in EXACT_X_SMALL and n * k <= EXACT_X_SMALL_ELEMS)


def x_q8_1_bytes(rows: int, k: int) -> int:
    """Bytes of x (rows, k) in q8_1 as quantize_q8_1 writes it: the int8 quants, then a float2
    (d, d * the sum of the quants) per 16 of them; for one row of k a multiple of 2048, then the
    row as the stream product holds it in shared memory (hip/qmatvec_q8.hip's x_has_stream_image:
    stream_x_bytes), which it copies whole."""
    image = stream_x_bytes(k // 256) if rows == 1 and k % 2048 == 0 else 0
    return rows * k + rows * k // 16 * 8 + image


def qmatvec_q8_1(
    rt: GpuRuntime,
    q: QGpuBuffer,
    x: GpuBuffer,
    out: GpuBuffer,
    n: int,
    k: int,
    rows: int,
    table: dict,
    xq: GpuBuffer | None = None,
) -> None:
    """out (rows, n) = x (rows, k, dense) @ W^T by hip/qmatvec_q8.hip: x quantized to q8_1 into
    `xq` (allocated here unless given: x_q8_1_bytes), then the product; f32 / f16 / bf16
    weights read x itself; qmatvec_q8_1_mma_<fmt> where the tensor cores multiply (q8_mma), else
    qmatvec_q8_1_few_<fmt> for one or two rows of x (one row: qmatvec_q8_1_one_<fmt> where
    q8_one_apart, qmatvec_q8_1_stream_<fmt> where q8_stream). Two launches on x's stream."""
    ordinal, stream, nx = x.ordinal, rt.stream(x.ordinal), x_rows_class(rows)
    streamed = q8_stream(rt, ordinal, q.fmt, rows, k, q.buf.ptr)
    mma = not streamed and q8_mma(rt, ordinal, q.fmt, nx, n)
    wide = mma and q8_wide(q.fmt, n)
    entry = K.QMATVEC_Q8_1_STREAM_SELF if streamed else q8_entry(nx, mma, wide, q8_one_apart(q.fmt))
    fn = _kernel("qmatmul", rt, table, entry, q.fmt)
    if q.fmt in ggml.PLAIN:
        xq = x
    else:
        if xq is None:
            xq = rt.alloc(ordinal, x_q8_1_bytes(rows, k), np.dtype(np.uint8))
        quantize_x = rt._entry(table, (K.QUANTIZE_Q8_1_X, x.dtype), "qmatmul")
        quantize_x(rt.launch, rt.geometry(rows * k // 4, ordinal), BLOCK, stream, x.ptr, xq.ptr, rows, k)
    if streamed:
        grid, threads = q8_stream_launch(rt, ordinal, q.fmt, n, k)
    else:
        grid = q8_grid(rt, ordinal, q.fmt, n, k, rows, q8_item_rows(q.fmt, nx, n, k), mma=mma)
        threads = q8_threads(q.fmt, mma, wide=wide)
    fn(rt.launch, grid, threads, stream, q.buf.ptr, x.ptr, xq.ptr, out.ptr, n, k, rows)


def q8_wide(fmt: str, n: int, facts=QMATVEC_Q8_GRID_FACTS) -> bool:
    """Whether float weights of n rows on the tensor cores take qmatvec_q8_1_mma_wide_<fmt>
    (from QMATVEC_Q8_MMA_WIDE_N rows: items of MMA_TILES_F tiles, its own launch bounds)."""
    return fmt in ggml.PLAIN and n >= facts["QMATVEC_Q8_MMA_WIDE_N"]


def q8_threads(fmt: str, mma: bool, facts=QMATVEC_Q8_GRID_FACTS, wide: bool = False) -> int:
    """Threads per block of qmatvec_q8_1's entry: float weights on the tensor cores
    QMATVEC_Q8_MMA_F_THREADS, or QMATVEC_Q8_MMA_F_WIDE_THREADS in the wide entry (q8_wide; their
    launch bounds, hip/qmatvec_q8.hip's kMmaThreads and kMmaWideThreads), every other
    QMATVEC_Q8_THREADS."""
    if not (mma and fmt in ggml.PLAIN):
        return QMATVEC_Q8_THREADS
    return facts["QMATVEC_Q8_MMA_F_WIDE_THREADS" if wide else "QMATVEC_Q8_MMA_F_THREADS"]


def q8_entry(nx: int, mma: bool, wide: bool = False, apart: bool = False) -> K:
    """The entry point of qmatvec_q8_1 for the x rows class nx: the tensor cores' where they
    multiply (q8_mma; float weights of many rows their wide one, q8_wide), else one or two rows'
    own (their launch bounds; one row its own entry where `apart`, q8_one_apart), else the
    general one."""
    if mma:
        return K.QMATVEC_Q8_1_MMA_WIDE_SELF if wide else K.QMATVEC_Q8_1_MMA_SELF
    if nx == 1 and apart:
        return K.QMATVEC_Q8_1_ONE_SELF
    return K.QMATVEC_Q8_1_FEW_SELF if nx <= 2 else K.QMATVEC_Q8_1_SELF


def q8_one_apart(fmt: str, facts=QMATVEC_Q8_GRID_FACTS) -> bool:
    """Whether one row of x of `fmt` takes qmatvec_q8_1_one_<fmt> (hip/qmatvec_q8.hip's kOneApart):
    the long units that copy x into shared memory (q8_long_x_shared), and the blocks of 32 of
    BULK_BLOCKS (their stages; on a device without bulk copies that entry takes the product of
    few) and of TWO_BLOCKS (two blocks a lane's unit), so that the entry of two rows holds none of
    them; every other format's one row takes qmatvec_q8_1_few_<fmt>, as two rows do."""
    if fmt in BLOCK32_BITS:
        return has_bit(facts["QMATVEC_Q8_BULK_BLOCKS"] | facts["QMATVEC_Q8_TWO_BLOCKS"], fmt)
    return q8_long_x_shared(fmt, facts)


def q8_long_x_shared(fmt: str, facts=QMATVEC_Q8_GRID_FACTS) -> bool:
    """Whether one row of x of `fmt` takes long units that copy x into shared memory (LONG_K and
    LONG_X_SHARED both have its bit)."""
    if fmt not in BLOCK256_BITS:
        return False
    return has_bit(facts["QMATVEC_Q8_LONG_K"] & facts["QMATVEC_Q8_LONG_X_SHARED"], fmt)


def bulk_copies(rt: GpuRuntime, ordinal: int) -> bool:
    """Whether hip/qmatvec_q8.hip has its bulk-copy product on this device: cuda, sm_90 and up."""
    return _cuda_from(rt, ordinal, BULK_ARCH)


def _cuda_from(rt: GpuRuntime, ordinal: int, arch: int) -> bool:
    """Whether the device is cuda of compute capability `arch` or later (the cuda driver asks the
    device's compute capability once)."""
    return rt.name == "cuda" and int(rt.driver.arch(ordinal).removeprefix("sm_")) >= arch


def q8_bulk(rt: GpuRuntime, ordinal: int, fmt: str, rows: int, k: int, facts=QMATVEC_Q8_GRID_FACTS) -> bool:
    """Whether qmatvec_q8_1_one_<fmt> streams the weights through the bulk copy engine
    (hip/qmatvec_q8.hip's bulk_fits, the weight's buffer being 16-byte aligned): one row of x of
    BULK_BLOCKS, k a multiple of 256, cuda sm_90 and up."""
    if rows != 1 or fmt not in BLOCK32_BITS or k % 256:
        return False
    return has_bit(facts["QMATVEC_Q8_BULK_BLOCKS"], fmt) and bulk_copies(rt, ordinal)


#: Shared memory a block of compute capability 9.0 may have (STREAM_BLOCK_SHARED, 227 KiB), less
#: its static shared memory and the DYNAMIC_SHARED_SPARE left to other kernels' blocks: the
#: dynamic shared memory q8_stream counts on (the driver gives qmatvec_q8_1_stream_<fmt> that,
#: DYNAMIC_SHARED_KERNELS; q8_stream asks the device for STREAM_BLOCK_SHARED, so that the kernel's
#: stream_fits agrees with it and never falls back to its slow product).
STREAM_BLOCK_SHARED = 232448
STREAM_STATIC = 1152  # its full and empty barriers, 64 of each, and x's, in 128-byte units
STREAM_SHARED = STREAM_BLOCK_SHARED - STREAM_STATIC - DYNAMIC_SHARED_SPARE


def q8_stream(rt: GpuRuntime, ordinal: int, fmt: str, rows: int, k: int, w: int, facts=QMATVEC_Q8_GRID_FACTS) -> bool:
    """Whether one row of x of `fmt` takes qmatvec_q8_1_stream_<fmt> (hip/qmatvec_q8.hip's
    stream_fits): a stream_shape on cuda sm_90 and up whose blocks may have STREAM_SHARED bytes of
    dynamic shared memory beside DYNAMIC_SHARED_SPARE (a device with less takes the other
    products), the weights `w` 16-byte aligned."""
    if not (w % 16 == 0 and stream_shape(fmt, rows, k, facts) and bulk_copies(rt, ordinal)):
        return False
    return rt.driver.shared_per_block(ordinal) >= STREAM_BLOCK_SHARED


def stream_shape(fmt: str, rows: int, k: int, facts=QMATVEC_Q8_GRID_FACTS) -> bool:
    """Whether `rows` rows of x of `fmt` against weight rows of k values are a product that
    qmatvec_q8_1_stream_<fmt> takes where the bulk copy engine is: one row, a block of 256 of
    STREAM_K, k a multiple of 2048 of at least STREAM_BLOCKS blocks, x's row and two slots of each
    of stream_warps' warps within STREAM_SHARED bytes."""
    if rows != 1 or fmt not in BLOCK256_BITS or k % 2048:
        return False
    if not has_bit(facts["QMATVEC_Q8_STREAM_K"], fmt) or k // 256 < facts["QMATVEC_Q8_STREAM_BLOCKS"]:
        return False
    return _stream_bytes(fmt, k, stream_warps(fmt, k, facts), 2, facts) <= STREAM_SHARED


def stream_warps(fmt: str, k: int, facts=QMATVEC_Q8_GRID_FACTS) -> int:
    """Warps that read qmatvec_q8_1_stream_<fmt>'s slots (its block has one more, which fills
    them; the kernel counts them from its block): STREAM_WARPS (STREAM_PAIR_WARPS for the formats
    of STREAM_PAIRS and STREAM_PAIR_WARPS_K), or as many as leave room for two slots each beside
    x's row (at k = 16384: q3_K's pairs of rows of 64 blocks 7, q6_K's chunks of 32 blocks 15), at
    least one."""
    few = _stream_pairs(fmt, facts) and has_bit(facts["QMATVEC_Q8_STREAM_PAIR_WARPS_K"], fmt)
    most = facts["QMATVEC_Q8_STREAM_PAIR_WARPS" if few else "QMATVEC_Q8_STREAM_WARPS"]
    room = (STREAM_SHARED - stream_x_bytes(k // 256) - 16) // (2 * _stream_slot_bytes(fmt, k, facts))
    return max(1, min(most, room))


def _stream_pairs(fmt: str, facts) -> bool:
    """Whether qmatvec_q8_1_stream_<fmt>'s warps take twice STREAM_ROWS rows a step (STREAM_PAIRS)."""
    return has_bit(facts["QMATVEC_Q8_STREAM_PAIRS"], fmt)


def _stream_rows(fmt: str, facts) -> int:
    """Weight rows a reading warp of qmatvec_q8_1_stream_<fmt> takes a step."""
    return facts["QMATVEC_Q8_STREAM_ROWS"] * (2 if _stream_pairs(fmt, facts) else 1)


def _stream_slot_bytes(fmt: str, k: int, facts) -> int:
    """The bytes of a reading warp's slot: a step's rows (_stream_rows) of a chunk, at most
    STREAM_BLOCKS blocks (twice that for STREAM_WIDE_K)."""
    wide = has_bit(facts["QMATVEC_Q8_STREAM_WIDE_K"], fmt)
    blocks = min(k // 256, facts["QMATVEC_Q8_STREAM_BLOCKS"] * (2 if wide else 1))
    return _stream_rows(fmt, facts) * blocks * ggml.FORMATS[fmt].nbytes


def _stream_bytes(fmt: str, k: int, warps: int, slots: int, facts) -> int:
    """Dynamic shared memory x's row and `slots` slots of each of `warps` reading warps take."""
    return stream_x_bytes(k // 256) + slots * warps * _stream_slot_bytes(fmt, k, facts) + 16


def stream_x_bytes(blocks: int) -> int:
    """Shared memory x's row takes in qmatvec_q8_1_stream_<fmt> (hip/qmatvec_q8.hip's
    stream_x_bytes): a block of 256's quants in 17 pieces of 16 bytes, its 8 d and the 16 sums of
    its halves' quants (16-bit)."""
    return blocks * (17 * 16 + 32 + 32)


def q8_stream_launch(
    rt: GpuRuntime, ordinal: int, fmt: str, n: int, k: int, facts=QMATVEC_Q8_GRID_FACTS
) -> tuple[int, int]:
    """qmatvec_q8_1_stream_<fmt>'s grid and threads: a block a multiprocessor (its shared memory
    holds one), or a block per group of STREAM_ROWS weight rows where there are fewer;
    stream_warps reading warps and the filling one."""
    groups = -(-n // _stream_rows(fmt, facts))
    return max(1, min(groups, rt._sms(ordinal))), 32 * (stream_warps(fmt, k, facts) + 1)


def q8_item_rows(fmt: str, nx: int, n: int, k: int, facts=QMATVEC_Q8_ROWS_FACTS) -> int:
    """qmatvec_q8_1_<fmt>'s weight rows per item for the x rows class `nx` (x_rows_class) and a
    weight (n, k): the blocks of 32 below QMATVEC_Q8_NARROW_N rows take QMATVEC_Q8_ROWS_X4_NARROW at
    3 or 4 rows of x, and those of _ROWS_X1_NARROW_BLOCKS _ROWS_X1_NARROW at one row where groups of
    lanes take the items (k / 32 at most LANE_UNITS units a lane); the blocks of 256 of
    QMATVEC_Q8_ROWS_K_X2_TWO two at 2 rows, those of _ROWS_K_X1_TWO two at one. `facts`: those of a
    build (bench/ggml.py --explore), by default shipped."""
    if fmt in ggml.PLAIN:
        return facts[f"QMATVEC_Q8_ROWS_F_X{nx}"]
    if ggml.FORMATS[fmt].block == 256:
        two = nx in (1, 2) and has_bit(facts[f"QMATVEC_Q8_ROWS_K_X{nx}_TWO"], fmt)
        return 2 if two else facts[f"QMATVEC_Q8_ROWS_K_X{nx}"]
    narrow = n < facts["QMATVEC_Q8_NARROW_N"]
    if narrow and nx == 4:
        return facts["QMATVEC_Q8_ROWS_X4_NARROW"]
    narrow_one = has_bit(facts["QMATVEC_Q8_ROWS_X1_NARROW_BLOCKS"], fmt)
    if narrow_one and narrow and nx == 1 and q8_by_group(fmt, nx, q8_units(fmt, k), 0, facts):
        return facts["QMATVEC_Q8_ROWS_X1_NARROW"]
    return facts[f"QMATVEC_Q8_ROWS_X{nx}"]


def q8_units(fmt: str, k: int) -> int:
    """qmatvec_q8_1_<fmt>'s units in a weight row of k: 32 weights of a block format, 32 bytes of
    a float one."""
    if fmt in ggml.PLAIN:
        return k * ggml.FORMATS[fmt].nbytes // 32
    return k // 32


def q8_by_group(
    fmt: str, nx: int, units: int, items: int, facts: dict[str, int] = QMATVEC_Q8_GRID_FACTS, full: bool = True
) -> bool:
    """Whether qmatvec_q8_1_<fmt> gives each group of lanes its own items (hip/qmatvec_q8.hip's
    by_groups) for the x rows class nx: a weight row of at most LANE_UNITS units per lane, or (nx
    of 4 and 8) of at most LANE_UNITS_MANY where there are LANE_ITEMS items or more; float weights:
    at most LANE_UNITS_F; one row of x of the blocks of 256 of LANE_K_ONE_BLOCKS also at most
    LANE_UNITS_K_ONE where `full` (q8_grid: where x is in shared memory, from
    LANE_K_ONE_SHARED_ITEMS items). `facts`: those of a build (bench/ggml.py --explore), by default shipped."""
    if fmt in ggml.PLAIN:
        return units <= facts["QMATVEC_Q8_LANE_UNITS_F"] * LANE_GROUP
    one = nx == 1 and fmt in BLOCK256_BITS and has_bit(facts["QMATVEC_Q8_LANE_K_ONE_BLOCKS"], fmt)
    if one and full and units <= facts["QMATVEC_Q8_LANE_UNITS_K_ONE"] * LANE_GROUP:
        return True
    many = units <= facts["QMATVEC_Q8_LANE_UNITS_MANY"] * LANE_GROUP and items >= facts["QMATVEC_Q8_LANE_ITEMS"]
    return units <= facts["QMATVEC_Q8_LANE_UNITS"] * LANE_GROUP or (nx >= 4 and many)


def tensor_cores(rt: GpuRuntime, ordinal: int) -> bool:
    """Whether hip/qmatvec_q8.hip has its tensor-core product on this device: cuda, sm_80 and up."""
    return _cuda_from(rt, ordinal, MMA_TF32_ARCH)


def q8_mma(rt: GpuRuntime, ordinal: int, fmt: str, nx: int, n: int, facts=QMATVEC_Q8_GRID_FACTS) -> bool:
    """Whether qmatvec_q8_1 of `fmt` multiplies on the tensor cores (qmatvec_q8_1_mma_<fmt>) for
    the x rows class nx against n weight rows, on cuda sm_80 and up: float weights from
    QMATVEC_Q8_MMA_F_FROM, the blocks of 32 from QMATVEC_Q8_MMA_Q_FROM (from 4, the class of 3
    and 4 rows, where QMATVEC_Q8_MMA_Q_X4_BLOCKS has the format's bit) where n is at least
    QMATVEC_Q8_MMA_Q_N. `facts`: those of a build (bench/ggml.py --explore), by default shipped."""
    if fmt in ggml.PLAIN:
        start = facts["QMATVEC_Q8_MMA_F_FROM"]
    elif ggml.FORMATS[fmt].block == 32:
        start = facts["QMATVEC_Q8_MMA_Q_FROM"] if n >= facts["QMATVEC_Q8_MMA_Q_N"] else 0
        if start > 4 and has_bit(facts["QMATVEC_Q8_MMA_Q_X4_BLOCKS"], fmt):
            start = 4
    else:
        return False
    return 0 < start <= nx and tensor_cores(rt, ordinal)


def q8_grid(
    rt: GpuRuntime,
    ordinal: int,
    fmt: str,
    n: int,
    k: int,
    rows: int,
    item_rows: int,
    facts=QMATVEC_Q8_GRID_FACTS,
    mma: bool | None = None,
) -> int:
    """qmatvec_q8_1_<fmt>'s grid: a block per item, or per QMATVEC_Q8_THREADS / LANE_GROUP items
    where the kernel gives each group of lanes its own (q8_by_group); on the tensor cores
    (q8_mma) a block per item of tiles of 16 weight rows (float weights MMA_TILES_F of them from
    MMA_WIDE_N weight rows, else MMA_F_TILES; the blocks of 32 q8_tiles) and 8 rows of x; the bulk
    product (q8_bulk) BULK_PER_SM blocks a multiprocessor, or a block per item. `mma`: q8_mma's
    answer where the caller has it. Any grid is correct (the kernel strides over items)."""
    nx = x_rows_class(rows)
    if q8_bulk(rt, ordinal, fmt, rows, k, facts):  # a block's stages stay in flight across its items
        return max(1, min(-(-n // facts["QMATVEC_Q8_BULK_ROWS"]), rt._sms(ordinal) * facts["QMATVEC_Q8_BULK_PER_SM"]))
    if q8_mma(rt, ordinal, fmt, nx, n, facts) if mma is None else mma:
        if fmt in ggml.PLAIN:
            tiles = facts["QMATVEC_Q8_MMA_TILES_F" if q8_wide(fmt, n, facts) else "QMATVEC_Q8_MMA_F_TILES"]
        else:
            tiles = q8_tiles(fmt, facts)
        return _grid(rt, ordinal, -(-n // (16 * tiles)) * -(-rows // 8))
    items = -(-n // item_rows) * -(-rows // nx)
    shared = q8_x_shared(rt, fmt, rows, k, facts)
    full = not shared or items >= facts["QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS"]
    if q8_by_group(fmt, nx, q8_units(fmt, k), items, facts, full):
        items = -(-items // (QMATVEC_Q8_THREADS // LANE_GROUP))
    per_sm = facts["QMATVEC_Q8_LONG_X_SHARED_BLOCKS"]
    if per_sm and shared:  # each block copies x once: fewer copies
        each = -(-items // (rt._sms(ordinal) * per_sm))  # items a block, as even as can be
        items = -(-items // each)
    return _grid(rt, ordinal, items)


def q8_x_shared(rt: GpuRuntime, fmt: str, rows: int, k: int, facts=QMATVEC_Q8_GRID_FACTS) -> bool:
    """Whether qmatvec_q8_1_<fmt> reads x from shared memory (hip/qmatvec_q8.hip's kXShared):
    cuda, one row of x of a format of q8_long_x_shared, k at most LONG_X_SHARED_K."""
    if rt.name != "cuda" or rows != 1:
        return False
    return q8_long_x_shared(fmt, facts) and k <= facts["QMATVEC_Q8_LONG_X_SHARED_K"]


def q8_tiles(fmt: str, facts=QMATVEC_Q8_GRID_FACTS) -> int:
    """Tiles of 16 weight rows in an item of the blocks of 32 on the tensor cores: two where
    QMATVEC_Q8_MMA_Q_PAIR_BLOCKS has the format's bit and two stages of two tiles fit the 48 KiB
    of static shared memory (hip/qmatvec_q8.hip's kMmaTiles and q8_stage, mirrored here)."""
    if not has_bit(facts["QMATVEC_Q8_MMA_Q_PAIR_BLOCKS"], fmt):
        return 1
    nbytes, warps = ggml.FORMATS[fmt].nbytes, QMATVEC_Q8_THREADS // 32
    align = min(nbytes & -nbytes, 16)
    row = (16 - align + 4 * nbytes + 15) // 16 | 1
    pieces = 16 * 2 * row + 8 * 9 + 32  # a stage: weights, x's quants, x's scales
    fit = (48 * 1024 - 4 * 32 * 4 * 2 * warps) // (16 * pieces * warps)
    return 2 if min(fit, QMATVEC_Q8_MMA_Q_STAGES) >= 2 else 1


def gemm_rows(fmt: str) -> int:
    """Rows of x from which QMatMul of `fmt` takes dequantize + GEMM (QMATMUL_GEMM_ROWS)."""
    return QMATMUL_GEMM_ROWS.get(fmt, QMATMUL_GEMM_ROWS[None])


def _dequantized_gemm(
    rt: GpuRuntime, q: QGpuBuffer, x: GpuBuffer, out: GpuBuffer, n: int, k: int, rows: int, table: dict
) -> bool:
    """out (rows, n) = x (rows, k) @ W^T with W dequantized to f32 (bit for bit the cpu's
    weights) and the driver's BLAS GEMM in f32: a row of x then costs a share of one read of
    W, where qmatvec reads it again per row. W is taken in slabs of rows of at most
    GEMM_SLAB_BYTES as f32 (a vocabulary-sized weight would need gigabytes at once), each
    dequantized into one reused buffer, then multiplied into its columns of out. False, with
    nothing written, where the driver has no BLAS (rocm without hipBLAS): the caller takes
    qmatvec."""
    gemm = getattr(rt.driver, "gemm", None)
    if gemm is None or not getattr(rt.driver, "blas_available", lambda: True)():
        return False
    fn = rt._entry(table, (K.DEQUANTIZE_SELF_F32, q.fmt), "qmatmul")
    row_bytes = k // ggml.FORMATS[q.fmt].block * ggml.FORMATS[q.fmt].nbytes
    slab = max(1, min(n, GEMM_SLAB_BYTES // (4 * k)))
    w = rt.alloc(x.ordinal, slab * k, np.dtype(np.float32))
    stream = rt.stream(x.ordinal)
    for n0 in range(0, n, slab):
        m = min(slab, n - n0)
        fn(rt.launch, rt.geometry(-(-m * k // 8), x.ordinal), BLOCK, stream, q.buf.ptr + n0 * row_bytes, w.ptr, m * k)
        # column-major: out^T rows n0.. (m x rows, ld n) = W slab (k x m, transposed) . x^T (k x rows)
        gemm(
            x.ordinal,
            stream.handle,
            np.dtype(np.float32),
            True,
            False,
            m,
            rows,
            k,
            w.ptr,
            k,
            0,
            x.ptr,
            k,
            0,
            out.ptr + 4 * n0,
            n,
            0,
            1,
            reduced=rt.switches.gemm_reduced(np.dtype(np.float32)),
        )
    return True

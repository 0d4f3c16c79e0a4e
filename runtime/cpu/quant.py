"""The cpu backend's quantized storage: GGML blocks in host memory (Candle's QStorage::Cpu).

A QBuffer holds the blocks exactly as GGML lays them out (runtime.ggml), so bytes read from
or written to a GGUF file pass through unchanged. Matmul dequantizes the weight and runs a
float32 matmul, which is what Candle's QMatMul computes up to its activation quantization.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime import ggml
from runtime.cpu.views import BACKEND, F16, F32, FLOATS, contiguous_flat, names, shape_error, view
from runtime.errors import DTypeMismatch
from runtime.layout import Layout


@dataclass(frozen=True)
class QBuffer:
    fmt: str  # a key of ggml.FORMATS
    data: np.ndarray  # 1-D uint8, the GGML blocks


def quantize(ordinal, array: np.ndarray, fmt) -> QBuffer:
    """Device.quantize: a host float array of any shape -> blocks of its f32 values."""
    f = ggml.format_of("quantize", fmt)
    host = np.asarray(array)
    if host.dtype not in FLOATS:
        raise DTypeMismatch("quantize", BACKEND, expected=names(FLOATS), got=str(host.dtype))
    return QBuffer(f.name, ggml.quantize(host.astype(F32, copy=False), f.name))


def qzeros(ordinal, elem_count: int, fmt) -> QBuffer:
    """Blocks that dequantize to `elem_count` zeros (every GGML field zero)."""
    f = ggml.format_of("qzeros", fmt)
    return QBuffer(f.name, np.zeros(ggml.block_count("qzeros", f, int(elem_count)) * f.nbytes, dtype=np.uint8))


def qstorage_from_bytes(ordinal, data: np.ndarray, fmt) -> QBuffer:
    """Raw GGML bytes (a whole number of blocks) -> a QBuffer owning a copy."""
    f = ggml.format_of("qstorage_from_bytes", fmt)
    return QBuffer(f.name, ggml.block_view(data, f.name, op="qstorage_from_bytes").view(np.uint8).copy())


def q_dtype(q: QBuffer) -> str:
    return q.fmt


def q_device(q: QBuffer) -> int:
    return 0  # the cpu has one device, ordinal 0, as runtime.cpu.device says


def q_size_in_bytes(q: QBuffer) -> int:
    return int(q.data.size)


def q_data(q: QBuffer) -> np.ndarray:
    return q.data.copy()


def q_dequantize(q: QBuffer, elem_count: int) -> np.ndarray:
    """The first `elem_count` values (a whole number of blocks), flat f32."""
    return ggml.dequantize(_leading_blocks("dequantize", q, elem_count), q.fmt, elem_count)


def q_dequantize_f16(q: QBuffer, elem_count: int) -> np.ndarray:
    """As q_dequantize, rounded to f16 (Candle dequantizes to f32, then converts)."""
    return ggml.dequantize(_leading_blocks("dequantize_f16", q, elem_count), q.fmt, elem_count).astype(F16)


def _leading_blocks(op: str, q: QBuffer, elem_count: int) -> np.ndarray:
    f = ggml.FORMATS[q.fmt]
    size = ggml.block_count(op, f, int(elem_count)) * f.nbytes
    if size > q.data.size:
        raise shape_error(op, f"at most {q.data.size // f.nbytes * f.block} elements ({f.name})", elem_count)
    return q.data[:size]


def q_matmul(q: QBuffer, x: np.ndarray, x_layout: Layout, shape: tuple[int, int]) -> np.ndarray:
    """QMatMul forward: x (..., k) @ W.T with W (n, k) = `shape` quantized row-major;
    the flat f32 result has shape (..., n)."""
    op = "qmatmul"
    n, k = _weight_shape(q, shape)
    if x.dtype != F32:
        raise DTypeMismatch(op, BACKEND, expected="float32", got=str(x.dtype))
    if x_layout.rank < 1 or x_layout.shape[-1] != k:
        raise shape_error(op, f"x of shape (..., {k})", x_layout.shape)
    w = ggml.dequantize(q.data, q.fmt, n * k).reshape(n, k)
    return contiguous_flat(np.matmul(view(op, x, x_layout), w.T), F32)


def _weight_shape(q: QBuffer, shape) -> tuple[int, int]:
    f = ggml.FORMATS[q.fmt]
    try:
        n, k = (int(d) for d in shape)
    except (TypeError, ValueError):
        raise shape_error("qmatmul", "a weight shape (n, k)", shape) from None
    count = q.data.size // f.nbytes * f.block
    # GGML quantizes row by row: each row of W is a whole number of blocks.
    if n < 0 or k < 0 or k % f.block or n * k != count:
        raise shape_error("qmatmul", f"(n, k) with k % {f.block} == 0 and n * k == {count} ({f.name})", (n, k))
    return n, k

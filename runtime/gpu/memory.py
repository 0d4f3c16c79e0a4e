"""GPU memory: buffers (GpuBuffer) from the driver's stream-ordered pool, small blocks
recycled per device in bins of their power-of-two size, host <-> device copies, the device
methods that make storage (zeros, ones, random), and the checks that a view fits its buffer."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from generated.kernel_facts import KernelPattern as K
from runtime.errors import ShapeMismatch
from runtime.gpu.state import RuntimeState
from runtime.layout import Layout

SMALL_BLOCK = 1 << 20  # bytes: buffers up to this size are recycled by the runtime itself
SMALL_CACHE_LIMIT = 256 << 20  # bytes of dropped small buffers kept per device
BIN_SIZES_KEPT = 4096  # distinct small allocation sizes whose block size is remembered
# Tests set OPGEN_POISON=1: fresh buffers are filled with 0xFF bytes (NaN, or the largest
# integer) so that an element a kernel fails to write cannot pass as a right answer.
POISON = os.environ.get("OPGEN_POISON") == "1"


@dataclass(eq=False, slots=True)
class GpuBuffer:
    """A flat device buffer, the `inner` of a GPU Storage; freed (stream-ordered) when dropped."""

    ptr: int
    size: int  # elements
    dtype: np.dtype
    ordinal: int
    release: Callable[[], None] | None = field(default=None, repr=False)

    def __del__(self) -> None:  # cheaper than weakref.finalize on every op's output
        if self.release is not None:
            self.release()

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def at(self, layout: Layout) -> int:
        """Device address of the layout's first element."""
        return self.ptr + layout.start_offset * self.dtype.itemsize


class _PooledBuffer(GpuBuffer):
    """A GpuBuffer in one of the runtime's small blocks (GpuRuntime._alloc): dropped, the
    block goes back to its bin. Cheaper than a GpuBuffer with a release callable, on the
    hot path of small ops: no functools.partial per buffer, and _alloc sets the slots
    itself instead of calling the dataclass __init__."""

    __slots__ = ("bin",)
    bin: _Bin

    def __del__(self) -> None:
        # _Bin.give's body, inlined: a finalizer is called from C, each frame it adds costs
        # as much as the block lookup in _alloc (bench/host_latency.py counts it).
        bin_ = self.bin
        kept = bin_.kept
        total = kept.bytes + bin_.size
        if total > SMALL_CACHE_LIMIT:
            bin_.driver_free(self.ptr, bin_.stream)
            return
        bin_.free.append(self.ptr)
        kept.bytes = total


_new_pooled: Callable[[type[_PooledBuffer]], _PooledBuffer] = object.__new__


class _Kept:
    """The bytes of one device's dropped small blocks (at most SMALL_CACHE_LIMIT)."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


class _Bin:
    """One device's dropped small blocks of one size; `give` is a block's release
    (_PooledBuffer.__del__ runs the same statements itself)."""

    __slots__ = ("ordinal", "size", "kept", "free", "driver_free", "stream")

    def __init__(
        self, ordinal: int, size: int, kept: _Kept, driver_free: Callable[[int, Any], None], stream: Any
    ) -> None:
        self.ordinal, self.size, self.kept = ordinal, size, kept
        self.free: list[int] = []
        self.driver_free, self.stream = driver_free, stream

    def give(self, ptr: int) -> None:
        kept = self.kept
        total = kept.bytes + self.size
        if total > SMALL_CACHE_LIMIT:
            self.driver_free(ptr, self.stream)
            return
        self.free.append(ptr)
        kept.bytes = total


class Memory(RuntimeState):
    """GpuRuntime's buffers and the device methods that make them. Its state (the bins,
    `_rngs`) is set up by GpuRuntime; it uses Launch's `_entry`, Elementwise's `_dense_copy`
    (to_device of a strided view) and Indexing's `raise_bad_ids` (at host reads)."""

    # -- memory -----------------------------------------------------------------------------
    def alloc(self, ordinal: int, size: int, dtype: np.dtype) -> GpuBuffer:
        self.driver.activate(ordinal)
        return self._alloc(ordinal, size, dtype, self.driver.stream(ordinal))

    def _alloc(self, ordinal: int, size: int, dtype: np.dtype, stream: Any) -> GpuBuffer:
        """alloc on a device already made current, `stream` its driver stream.

        Blocks up to SMALL_BLOCK bytes come from this device's free list of their
        power-of-two size (the driver's pool costs two driver calls per op, a third of a
        small op's time); dropped, they return to it (_Bin.give). All work of a device runs
        on its one stream, so a block reused there is ordered after every kernel that used
        it before, as with the pool's own async free."""
        nbytes = size * dtype.itemsize or 1
        buf: GpuBuffer
        if nbytes <= SMALL_BLOCK:
            bin_ = self._bin_of.get((ordinal, nbytes))
            if bin_ is None:
                bin_ = self._bin(ordinal, nbytes, stream)
            free = bin_.free
            if free:
                ptr = free.pop()
                bin_.kept.bytes -= bin_.size
            else:
                ptr = self.driver.alloc(bin_.size, stream)
            buf = _new_pooled(_PooledBuffer)
            buf.ptr, buf.size, buf.dtype, buf.ordinal, buf.release, buf.bin = ptr, size, dtype, ordinal, None, bin_
        else:
            ptr = self.driver.alloc(nbytes, stream)
            buf = GpuBuffer(ptr, size, dtype, ordinal, functools.partial(self.driver.free, ptr, stream))
        if POISON:
            self.driver.memset(ptr, nbytes, stream, 0xFF)
        return buf

    def _bin(self, ordinal: int, nbytes: int, stream: Any) -> _Bin:
        """The bin of the block size that holds `nbytes`, remembered for `nbytes` (for the
        first BIN_SIZES_KEPT distinct sizes: past them, looked up by block size each time)."""
        size = max(256, 1 << (nbytes - 1).bit_length())
        bin_ = self._bins.get((ordinal, size))
        if bin_ is None:
            kept = self._kept.setdefault(ordinal, _Kept())
            bin_ = self._bins[(ordinal, size)] = _Bin(ordinal, size, kept, self.driver.free, stream)
        if len(self._bin_of) < BIN_SIZES_KEPT:
            self._bin_of[(ordinal, nbytes)] = bin_
        return bin_

    def from_host(self, ordinal: int, array: np.ndarray) -> GpuBuffer:
        host = np.ascontiguousarray(array).reshape(-1)
        buf = self.alloc(ordinal, host.size, host.dtype)
        if host.size:
            self.driver.upload(buf.ptr, host, self.driver.stream(ordinal))
        return buf

    def to_host(self, buf: GpuBuffer) -> np.ndarray:
        host = np.empty(buf.size, buf.dtype)
        if buf.size:
            self.driver.activate(buf.ordinal)
            self.driver.download(host, buf.ptr, self.driver.stream(buf.ordinal))
            self.raise_bad_ids(buf.ordinal)
        return host

    def to_numpy(self, buf: GpuBuffer, layout: Layout) -> np.ndarray:
        _fits("to_numpy", self.name, buf, layout)
        if layout.is_contiguous:
            host = np.empty(layout.elem_count, buf.dtype)
            if host.size:
                self.driver.activate(buf.ordinal)
                self.driver.download(host, buf.at(layout), self.driver.stream(buf.ordinal))
                self.raise_bad_ids(buf.ordinal)
            return host.reshape(layout.shape)
        flat = self.to_host(buf)
        itemsize = flat.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            flat[layout.start_offset :], layout.shape, [s * itemsize for s in layout.stride]
        )
        return np.ascontiguousarray(view)

    def zeros(self, ordinal: int, shape: tuple[int, ...], dtype) -> GpuBuffer:
        buf = self.alloc(ordinal, math.prod(shape), dtype.numpy)
        self.driver.memset(buf.ptr, buf.nbytes, self.driver.stream(ordinal))
        return buf

    def ones(self, ordinal: int, shape: tuple[int, ...], dtype) -> GpuBuffer:
        return self.from_host(ordinal, np.ones(math.prod(shape), dtype.numpy))

    def alloc_uninit(self, ordinal: int, shape: tuple[int, ...], dtype) -> GpuBuffer:
        return self.alloc(ordinal, math.prod(shape), dtype.numpy)

    def storage_from_slice(self, ordinal: int, array: np.ndarray) -> GpuBuffer:
        return self.from_host(ordinal, array)

    def try_clone(self, buf: GpuBuffer, layout: Layout) -> GpuBuffer:
        out = self.alloc(buf.ordinal, buf.size, buf.dtype)
        self.driver.copy(out.ptr, buf.ptr, buf.nbytes, self.driver.stream(buf.ordinal))
        return out

    def to_device(self, buf: GpuBuffer, layout: Layout, ordinal: int, table: dict | None = None) -> GpuBuffer:
        """Within the backend: a contiguous copy of the view, on `ordinal`. A strided view is
        first made dense on its own device by copy_strided_<dtype> (`table`: the launch table
        of copy_strided_src); the dense bytes are copied device to device, peer to peer
        between two devices (on the destination's stream, ordered with both devices' streams
        by the driver). Two devices that cannot copy peer to peer, or a strided view without
        `table`, go through host memory."""
        if not layout.is_contiguous and table is not None:
            _fits("to_device", self.name, buf, layout)
            dense = self._dense_copy(buf, layout, self._entry(table, (K.COPY_STRIDED_SELF, buf.dtype), "to_device"))
            if ordinal == buf.ordinal:
                return dense
            buf, layout = dense, Layout.contiguous(layout.shape)
        if layout.is_contiguous:
            out = self.alloc(ordinal, layout.elem_count, buf.dtype)
            stream = self.driver.stream(ordinal)
            if ordinal == buf.ordinal:
                self.driver.copy(out.ptr, buf.at(layout), out.nbytes, stream)
                return out
            if not out.size or self.driver.peer_copy(out.ptr, ordinal, buf.at(layout), buf.ordinal, out.nbytes, stream):
                return out
        return self.from_host(ordinal, self.to_numpy(buf, layout))

    # Random storages: drawn on the host from one generator per device, then uploaded (a first
    # version; curand / hiprand would draw on the device).
    def set_seed(self, ordinal: int, seed: int) -> None:
        self.driver.activate(ordinal)  # a device that cannot run says so here too
        self._rngs[ordinal] = np.random.default_rng(seed)

    def _rng(self, ordinal: int) -> np.random.Generator:
        return self._rngs.setdefault(ordinal, np.random.default_rng())

    # The samplers are the cpu runtime's, imported on first use: loading runtime.cpu (and
    # ml_dtypes) costs a GPU-only program ~0.1 s at import for two rarely used ops.
    def rand_uniform(self, ordinal: int, shape, dtype, low: float, high: float) -> GpuBuffer:
        from runtime.cpu.views import sample_uniform

        return self.from_host(ordinal, sample_uniform(self._rng(ordinal), shape, dtype, low, high, self.name))

    def rand_normal(self, ordinal: int, shape, dtype, mean: float, std: float) -> GpuBuffer:
        from runtime.cpu.views import sample_normal

        return self.from_host(ordinal, sample_normal(self._rng(ordinal), shape, dtype, mean, std, self.name))

    @staticmethod
    def dtype(buf: GpuBuffer) -> np.dtype:
        return buf.dtype

    @staticmethod
    def device(buf: GpuBuffer) -> int:
        return buf.ordinal


def _fits(op: str, backend: str, buf: GpuBuffer, layout: Layout) -> None:
    # every op checks: a contiguous view's end needs no sum over its dims
    end = layout.start_offset + layout.elem_count if layout.is_contiguous else layout.max_offset()
    if end > buf.size:
        raise ShapeMismatch(op, backend, f"a layout within {buf.size} elements", layout)


def _same_ordinal(op: str, backend: str, a: GpuBuffer, b: GpuBuffer) -> None:
    if a.ordinal != b.ordinal:
        from runtime.errors import DeviceMismatch

        raise DeviceMismatch(op, backend, f"{backend}:{a.ordinal}", f"{backend}:{b.ordinal}")

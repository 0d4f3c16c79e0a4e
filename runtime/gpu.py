"""The GPU runtime shared by the cuda and rocm backends.

What differs between vendors is a `Driver`: memory, copies, module loading, launches and
the runtime compiler (runtime/cuda.py, runtime/rocm.py, one short class each). Everything
else lives here once: buffers from the driver's stream-ordered pool, the compiled-kernel
cache (on disk and per device), launch geometry, and the storage ops written against the
generated launch wrappers, which reach the runtime as arguments."""

from __future__ import annotations

import ctypes
import math
import os
import struct
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from generated.kernel_facts import PASS0_HEADER, REDUCE_CODES, KernelPattern as K
from runtime.cpu_views import sample_normal, sample_uniform
from runtime.checks import reduce_dims
from runtime.errors import DTypeMismatch, OpgenError, ShapeMismatch
from runtime.gpu_compile import KernelCache, cache_key  # noqa: F401  (KernelCache: bench/gpu.py)
from runtime.layout import Layout

BLOCK = 256
SMALL_BLOCK = 1 << 20  # bytes: buffers up to this size are recycled by the runtime itself
SMALL_CACHE_LIMIT = 256 << 20  # bytes of dropped small buffers kept per device
BIN_SIZES_KEPT = 4096  # distinct small allocation sizes whose block size is remembered
# Reductions of at most this many groups, split into chunks, run in one launch whose last
# block reduces the chunks' partial states: one warp per group of a 256-thread block.
FEW_GROUPS = BLOCK // 32
# Index ops whose id checks may wait, per device, for the next synchronization (IdChecks):
# one u32 flag each on the device; when all are in use the next index op synchronizes.
ID_FLAG_SLOTS = 4096
# Convolutions through the BLAS: bytes of im2col / col2im columns at a time (batches past it
# are done in chunks), and the dtypes that take that path (the BLAS has f32 accumulation
# for the half types; the transposes sum the GEMM's rounded columns, so only f32 and f64).
CONV_COLUMN_BYTES = 512 << 20
CONV_GEMM_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
CONV_TRANSPOSE_GEMM_DTYPES = frozenset({"float32", "float64"})  # of stride > 1 (stride 1: as a convolution)
# Tests set OPGEN_POISON=1: fresh buffers are filled with 0xFF bytes (NaN, or the largest
# integer) so that an element a kernel fails to write cannot pass as a right answer.
POISON = os.environ.get("OPGEN_POISON") == "1"
HIP_DIR = Path(__file__).resolve().parent.parent / "hip"  # kernel sources and the headers they share


class GpuError(OpgenError, RuntimeError):
    """A driver or compiler call failed; names the call (or kernel) and the backend."""

    def __init__(self, backend: str, call: str, detail: str) -> None:
        self.backend, self.call, self.detail = backend, call, detail
        super().__init__(f"{backend}: {call} failed: {detail}")


class Driver(Protocol):
    """The vendor layer. Pointers are ints; `stream(ordinal)` is the device's op stream."""

    name: str

    def availability(self) -> str | None: ...
    def arch(self, ordinal: int) -> str: ...
    def multiprocessors(self, ordinal: int) -> int: ...
    def compiler_version(self) -> str: ...
    def compile(self, source: str, name: str, arch: str) -> bytes: ...
    def activate(self, ordinal: int) -> None: ...
    def stream(self, ordinal: int) -> Any: ...
    def alloc(self, nbytes: int, stream: Any) -> int: ...
    def free(self, ptr: int, stream: Any) -> None: ...
    def upload(self, ptr: int, host: np.ndarray, stream: Any) -> None: ...
    def download(self, host: np.ndarray, ptr: int, stream: Any) -> None: ...
    def copy(self, dst: int, src: int, nbytes: int, stream: Any) -> None: ...
    def peer_copy(self, dst: int, dst_ordinal: int, src: int, src_ordinal: int, nbytes: int, stream: Any) -> bool: ...
    def memset(self, ptr: int, nbytes: int, stream: Any, byte: int = 0) -> None: ...
    def load(self, image: bytes) -> Any: ...
    def function(self, module: Any, name: str) -> Any: ...
    def launch(self, fn: Any, grid: int, block: int, stream: Any, args: tuple, types: tuple) -> None: ...
    def synchronize(self, ordinal: int) -> None: ...
    def blas_available(self) -> bool: ...
    def gemm(self, ordinal: int, stream: Any, dtype: np.dtype, trans_a: bool, trans_b: bool, m: int, n: int, k: int,
             a: int, lda: int, stride_a: int, b: int, ldb: int, stride_b: int, c: int, ldc: int, stride_c: int,
             batch: int) -> None: ...


class PreparingDriver(Driver, Protocol):
    """A driver that prepares each function's launch once (runtime/cuda.py's): GpuRuntime
    looks `launcher` up with getattr, and a driver without it launches through `launch`."""

    def launcher(self, fn: Any, types: tuple) -> Callable[[int, int, Any, tuple, tuple], None]: ...


@dataclass(frozen=True)
class DeviceStream:
    """The stream ops of one device run on; the launch wrappers hand it back to `launch`."""

    ordinal: int
    handle: Any


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


# struct codes of the ctypes types launch wrappers pack arguments as (kernel_sigs.CTYPES).
STRUCT_CODES = {ctypes.c_size_t: "N", ctypes.c_void_p: "P", ctypes.c_int: "i", ctypes.c_uint: "I",
          ctypes.c_uint8: "B", ctypes.c_uint16: "H", ctypes.c_uint32: "I", ctypes.c_int32: "i",
          ctypes.c_int64: "q", ctypes.c_float: "f", ctypes.c_double: "d"}


class _Arguments:
    """One signature's kernel arguments, laid out as a C struct of them (native alignment:
    each at an address its type allows), and the array of pointers to them."""

    __slots__ = ("types", "pack", "values", "pointers", "address")

    def __init__(self, types: tuple) -> None:
        self.types = types
        self.pack = struct.Struct("@" + "".join(STRUCT_CODES[t] for t in types)).pack_into
        fields = type("Fields", (ctypes.Structure,), {"_fields_": [(f"a{i}", t) for i, t in enumerate(types)]})
        self.values = fields()
        base = ctypes.addressof(self.values)
        self.pointers = (ctypes.c_void_p * max(len(types), 1))(
            *(base + getattr(fields, f"a{i}").offset for i in range(len(types))))
        self.address = ctypes.addressof(self.pointers)

    def fill(self, args: tuple) -> int:
        """Pack `args` into the buffer; the address of the array of pointers to them."""
        try:
            self.pack(self.values, 0, *args)
        except struct.error:  # what ctypes also takes: None pointers, ints wrapped to the type's width
            self.pack(self.values, 0, *(t(a).value or 0 for t, a in zip(self.types, args)))
        return self.address


def kernel_params(local: Any, types: tuple, args: tuple) -> int:
    """The address of the array of pointers to `args` packed as `types` (the C form of
    kernelParams). One buffer per signature and thread serves every launch (the driver
    copies the values when the launch is made), filled by one struct.pack_into."""
    try:
        cache = local.params
    except AttributeError:
        cache = local.params = {}
    entry = cache.get(types)
    if entry is None:
        entry = cache[types] = _Arguments(types)
    return entry.fill(args)


class _Kept:
    """The bytes of one device's dropped small blocks (at most SMALL_CACHE_LIMIT)."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


class _Bin:
    """One device's dropped small blocks of one size; `give` is a block's release."""

    __slots__ = ("ordinal", "size", "kept", "free", "driver_free", "stream")

    def __init__(self, ordinal: int, size: int, kept: _Kept, driver_free: Callable[[int, Any], None],
                 stream: Any) -> None:
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


@dataclass(eq=False)
class IdChecks:
    """One device's range checks of index-op ids, done by the kernels themselves.

    Reading the ids on the host would make every index op wait for the device (a gather of
    4M ids: 18.6 ms, against 0.06 ms on the device). Instead each launch gets a flag word of
    `flags` (one per op since the last check), which its kernel sets when an id lies outside
    the dim; the kernel gives 0 for such an id (or skips it) and never reads or writes
    through it. The flags are read at the device's next synchronization point (to_host,
    to_numpy, synchronize), where the first failed op's ShapeMismatch is raised, as CUDA
    itself reports a device-side assert at the next synchronizing call. So a bad id is
    still a typed error naming the op, but later than on the cpu backend, and the op's
    output (or, for scatter_* in place, the destination) holds the good ids' results."""

    flags: GpuBuffer
    pending: list = field(default_factory=list)  # (op, dim size) of each flag in use, in order


class GpuRuntime:
    """Backend-neutral GPU storage ops over one Driver."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.name = driver.name
        self.cache = KernelCache(driver.name)
        self._functions: dict[tuple[int, str, str], Any] = {}
        # (ordinal, source, name) -> the driver's prepared launch of that function
        self._launches: dict[tuple[int, str, str], Callable[..., None]] = {}
        self._sources: dict[str, str] = {}
        self._modules: dict[tuple[int, str], Any] = {}
        self._streams: dict[int, DeviceStream] = {}
        self._rngs: dict[int, np.random.Generator] = {}
        self._bins: dict[tuple[int, int], _Bin] = {}  # (ordinal, block size) -> its bin
        self._bin_of: dict[tuple[int, int], _Bin] = {}  # (ordinal, nbytes asked for) -> its bin
        self._kept: dict[int, _Kept] = {}  # ordinal -> bytes its bins hold
        self._scratch: dict[int, GpuBuffer] = {}
        self._multiprocessors: dict[int, int] = {}
        self._id_checks: dict[int, IdChecks] = {}
        self._blas: bool | None = None  # whether the driver's BLAS can run (convolutions ask)

    # -- availability and devices ---------------------------------------------------------
    def availability(self) -> str | None:
        return self.driver.availability()

    def synchronize(self, ordinal: int) -> None:
        self.driver.activate(ordinal)
        self.driver.synchronize(ordinal)
        self.raise_bad_ids(ordinal)

    def location(self, ordinal: int) -> str:
        return f"{self.name}:{ordinal}"

    def supports_bf16(self, ordinal: int) -> bool:
        return True

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
            release = functools.partial(bin_.give, ptr)
        else:
            ptr = self.driver.alloc(nbytes, stream)
            release = functools.partial(self.driver.free, ptr, stream)
        buf = GpuBuffer(ptr, size, dtype, ordinal, release)
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
            flat[layout.start_offset:], layout.shape, [s * itemsize for s in layout.stride])
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

    def rand_uniform(self, ordinal: int, shape, dtype, low: float, high: float) -> GpuBuffer:
        return self.from_host(ordinal, sample_uniform(self._rng(ordinal), shape, dtype, low, high))

    def rand_normal(self, ordinal: int, shape, dtype, mean: float, std: float) -> GpuBuffer:
        return self.from_host(ordinal, sample_normal(self._rng(ordinal), shape, dtype, mean, std))

    @staticmethod
    def dtype(buf: GpuBuffer) -> np.dtype:
        return buf.dtype

    @staticmethod
    def device(buf: GpuBuffer) -> int:
        return buf.ordinal

    # -- kernels ----------------------------------------------------------------------------
    def launch(self, source: str, name: str, grid: int, block: int, stream: DeviceStream,
               args: tuple, types: tuple) -> None:
        """Run entry point `name` of `source` (a .hip path); the generated wrappers call this."""
        call = self._launches.get((stream.ordinal, source, name))
        if call is None:
            call = self._prepare(stream.ordinal, source, name, types)
        call(grid, block, stream.handle, args, types)

    def _prepare(self, ordinal: int, source: str, name: str, types: tuple) -> Callable[..., None]:
        """The function's launch, prepared once: the driver's `launcher` where it has one."""
        key = (ordinal, source, name)
        fn = self._functions.get(key)
        if fn is None:
            fn = self._functions[key] = self.driver.function(self._module(ordinal, source), name)
        launcher = getattr(self.driver, "launcher", None)
        if launcher is not None:
            call = launcher(fn, types)
        else:
            launch = self.driver.launch

            def call(grid, block, stream, args, types, fn=fn):
                launch(fn, grid, block, stream, args, types)
        self._launches[key] = call
        return call

    def _module(self, ordinal: int, source: str) -> Any:
        module = self._modules.get((ordinal, source))
        if module is None:
            self.driver.activate(ordinal)
            text = self._sources.get(source)
            if text is None:
                text = self._sources[source] = Path(source).read_text(encoding="utf-8")
            arch = self.driver.arch(ordinal)
            key = cache_key(self.name, text, arch, self.driver.compiler_version())
            image = self.cache.get_or_compile(key, lambda: self.driver.compile(text, Path(source).name, arch))
            module = self._modules[(ordinal, source)] = self.driver.load(image)
        return module

    def stream(self, ordinal: int) -> DeviceStream:
        self.driver.activate(ordinal)
        stream = self._streams.get(ordinal)
        if stream is None:
            stream = self._streams[ordinal] = DeviceStream(ordinal, self.driver.stream(ordinal))
        return stream

    def geometry(self, numel: int, ordinal: int) -> int:
        """Blocks for a grid-stride kernel over `numel` elements: enough to fill the device
        several times over (64 blocks per multiprocessor: on the H100, exp f32 over 64M
        elements ran at 2,913 GB/s of device time against 2,874 with 32 and 2,775 with 8;
        bench/gpu.py --parts explore)."""
        blocks = -(-numel // BLOCK)
        if blocks <= 64:  # below any device's cap (a multiprocessor takes 64)
            return blocks or 1
        return max(1, min(blocks, self._sms(ordinal) * 64))

    def _sms(self, ordinal: int) -> int:
        sms = self._multiprocessors.get(ordinal)
        if sms is None:
            sms = self._multiprocessors[ordinal] = self.driver.multiprocessors(ordinal)
        return sms

    def _info(self, ordinal: int, *arrays: tuple[int, ...]) -> tuple[int, GpuBuffer | None]:
        """Dims and strides as the kernels read them (size_t[]), on the device."""
        host = np.array([v for a in arrays for v in a], dtype=np.uint64)
        buf = self.from_host(ordinal, host)
        return buf.ptr, buf

    # -- elementwise ops through the generated kernels --------------------------------------
    def _launcher(self, kernel, dtype: np.dtype, op: str):
        fn = kernel.by_dtype.get(dtype)
        if fn is None:
            expected = ", ".join(sorted(str(d) for d in kernel.by_dtype))
            raise DTypeMismatch(op, self.name, f"one of {expected}", str(dtype))
        return fn

    # unary and binary are the hot path of small ops (a 1,024-element exp is all host time):
    # unary inlines the checks of _launcher and _fits where they pass on a contiguous view,
    # and both make the device current once (alloc and stream would each do it again).
    def unary(self, buf: GpuBuffer, kernel, layout: Layout) -> GpuBuffer:
        dtype = buf.dtype
        fn = kernel.by_dtype.get(dtype)
        if fn is None:
            self._launcher(kernel, dtype, kernel.op)  # raises DTypeMismatch
        n = layout.elem_count
        contiguous = layout.is_contiguous
        if not contiguous or layout.start_offset + n > buf.size:
            _fits(kernel.op, self.name, buf, layout)  # raises ShapeMismatch where it does not fit
        ordinal = buf.ordinal
        self.driver.activate(ordinal)
        stream = self._streams.get(ordinal) or self.stream(ordinal)
        out = self._alloc(ordinal, n, kernel.result or dtype, stream.handle)
        if not n:
            return out
        info, keep = (0, None) if contiguous else self._info(ordinal, layout.shape, layout.stride)
        fn(self.launch, self.geometry(n, ordinal), BLOCK, stream,
           n, len(layout.shape), info, buf.ptr + layout.start_offset * dtype.itemsize, out.ptr)
        return out

    def binary(self, buf: GpuBuffer, kernel, rhs: GpuBuffer, lhs_layout: Layout, rhs_layout: Layout) -> GpuBuffer:
        fn = self._launcher(kernel, buf.dtype, kernel.op)
        _fits(kernel.op, self.name, buf, lhs_layout)
        _fits(kernel.op, self.name, rhs, rhs_layout)
        _same_ordinal(kernel.op, self.name, buf, rhs)
        ordinal = buf.ordinal
        self.driver.activate(ordinal)
        stream = self._streams.get(ordinal) or self.stream(ordinal)
        out = self._alloc(ordinal, lhs_layout.elem_count, kernel.result or buf.dtype, stream.handle)
        if not out.size:
            return out
        both_contiguous = lhs_layout.is_contiguous and rhs_layout.is_contiguous
        info, keep = (0, None) if both_contiguous else self._info(
            ordinal, lhs_layout.shape, lhs_layout.stride, rhs_layout.stride)
        fn(self.launch, self.geometry(out.size, ordinal), BLOCK, stream,
           out.size, lhs_layout.rank, info, buf.at(lhs_layout), rhs.at(rhs_layout), out.ptr)
        return out

    cmp = binary  # same kernels' shape: the Kernel's result dtype (u8) sizes the output

    # -- ops through the hand-written kernels: `table` is the op's launch table --------------
    def _entry(self, table: dict, key: tuple, op: str):
        fn = table.get(key)
        if fn is None:
            got = ", ".join(str(k) for k in key[1:])  # key: (KernelPattern, *values)
            raise DTypeMismatch(op, self.name, "a dtype its kernels cover", got)
        return fn

    def _map(self, op: str, buf: GpuBuffer, layout: Layout, table: dict, key: tuple, out_dtype=None, extra=(),
             before=()):
        """The common shape (numel, num_dims, info, [before...], inp, out, [extra...]): a
        strided input, a contiguous output of the layout's shape."""
        fn = self._entry(table, key, op)
        _fits(op, self.name, buf, layout)
        out = self.alloc(buf.ordinal, layout.elem_count, out_dtype or buf.dtype)
        if out.size:
            stream = self.stream(buf.ordinal)
            info, keep = (0, None) if layout.is_contiguous else self._info(buf.ordinal, layout.shape, layout.stride)
            fn(self.launch, self.geometry(out.size, buf.ordinal), BLOCK, stream,
               out.size, layout.rank, info, *before, buf.at(layout), out.ptr, *extra)
        return out

    def affine(self, buf: GpuBuffer, layout: Layout, mul: float, add: float, table: dict) -> GpuBuffer:
        return self._map("affine", buf, layout, table, (K.AFFINE_SELF, buf.dtype), extra=(_scalar(mul, buf.dtype), _scalar(add, buf.dtype)))

    def powf(self, buf: GpuBuffer, layout: Layout, exponent: float, table: dict) -> GpuBuffer:
        return self._map("powf", buf, layout, table, (K.POWF_SELF, buf.dtype), before=(float(exponent),))

    def elu(self, buf: GpuBuffer, layout: Layout, alpha: float, table: dict) -> GpuBuffer:
        return self._map("elu", buf, layout, table, (K.ELU_SELF, buf.dtype), before=(_scalar(alpha, buf.dtype),))

    def to_dtype(self, buf: GpuBuffer, layout: Layout, dtype, table: dict) -> GpuBuffer:
        return self._map("to_dtype", buf, layout, table, (K.CAST_SELF_DTYPE, buf.dtype, dtype.numpy), out_dtype=dtype.numpy)

    def where_cond(self, buf: GpuBuffer, layout: Layout, on_true: GpuBuffer, true_layout: Layout,
                   on_false: GpuBuffer, false_layout: Layout, table: dict) -> GpuBuffer:
        fn = self._entry(table, (K.WHERE_COND_SELF_ON_TRUE, buf.dtype, on_true.dtype), "where_cond")
        for b, l in ((buf, layout), (on_true, true_layout), (on_false, false_layout)):
            _fits("where_cond", self.name, b, l)
            _same_ordinal("where_cond", self.name, buf, b)
        out = self.alloc(buf.ordinal, layout.elem_count, on_true.dtype)
        if out.size:
            stream = self.stream(buf.ordinal)
            dense = layout.is_contiguous and true_layout.is_contiguous and false_layout.is_contiguous
            info, keep = (0, None) if dense else self._info(
                buf.ordinal, layout.shape, layout.stride, true_layout.stride, false_layout.stride)
            fn(self.launch, self.geometry(out.size, buf.ordinal), BLOCK, stream, out.size, layout.rank, info,
               buf.at(layout), on_true.at(true_layout), on_false.at(false_layout), out.ptr)
        return out

    def const_set(self, buf: GpuBuffer, value, layout: Layout, table: dict) -> None:
        fn = self._entry(table, (K.CONST_SET_SELF, buf.dtype), "const_set")
        _fits("const_set", self.name, buf, layout)
        if layout.elem_count:
            stream = self.stream(buf.ordinal)
            info, keep = (0, None) if layout.is_contiguous else self._info(buf.ordinal, layout.shape, layout.stride)
            fn(self.launch, self.geometry(layout.elem_count, buf.ordinal), BLOCK, stream,
               layout.elem_count, layout.rank, info, _scalar(value, buf.dtype), buf.at(layout))

    def copy_strided_src(self, buf: GpuBuffer, dst: GpuBuffer, dst_offset: int, src_layout: Layout,
                         table: dict) -> None:
        fn = self._entry(table, (K.COPY_STRIDED_SELF, buf.dtype), "copy_strided_src")
        _fits("copy_strided_src", self.name, buf, src_layout)
        if dst_offset + src_layout.elem_count > dst.size:
            raise ShapeMismatch("copy_strided_src", self.name, f"at most {dst.size - dst_offset} elements",
                                src_layout.elem_count)
        if src_layout.elem_count:
            self._copy_view(fn, buf, src_layout, dst.ptr + dst_offset * dst.dtype.itemsize)

    def _copy_view(self, copy, buf: GpuBuffer, layout: Layout, dst_ptr: int) -> None:
        """The view's elements, in order, to dst_ptr on the view's device: `copy` is the
        launch wrapper of copy_strided_<dtype> (hip/fill_copy.hip)."""
        stream = self.stream(buf.ordinal)
        info, keep = (0, None) if layout.is_contiguous else self._info(buf.ordinal, layout.shape, layout.stride)
        copy(self.launch, self.geometry(layout.elem_count, buf.ordinal), BLOCK, stream,
             layout.elem_count, layout.rank, info, buf.at(layout), dst_ptr)

    def copy2d(self, buf: GpuBuffer, dst: GpuBuffer, d1: int, d2: int, src_stride1: int, dst_stride1: int,
               src_offset: int, dst_offset: int, table: dict) -> None:
        fn = self._entry(table, (K.COPY2D_SELF, buf.dtype), "copy2d")
        if d1 and d2:
            last_src = src_offset + (d1 - 1) * src_stride1 + d2
            last_dst = dst_offset + (d1 - 1) * dst_stride1 + d2
            if last_src > buf.size or last_dst > dst.size:
                raise ShapeMismatch("copy2d", self.name, f"rows within {buf.size} / {dst.size} elements",
                                    (last_src, last_dst))
            itemsize = buf.dtype.itemsize
            stream = self.stream(buf.ordinal)
            fn(self.launch, self.geometry(d1 * d2, buf.ordinal), BLOCK, stream, buf.ptr + src_offset * itemsize,
               dst.ptr + dst_offset * itemsize, d1, d2, src_stride1, dst_stride1)

    # -- convolutions, pooling, upsampling: one thread per output element ---------------------
    def _nn(self, op: str, pattern: K, buf: GpuBuffer, layout: Layout, table: dict, out_shape: tuple[int, ...],
            head: tuple, info_of: tuple, tail: tuple) -> GpuBuffer:
        """Launch (dst_numel, *head, info, *tail, dst) over a fresh contiguous output."""
        fn = self._entry(table, (pattern, buf.dtype), op)
        _fits(op, self.name, buf, layout)
        out = self.alloc(buf.ordinal, math.prod(out_shape), buf.dtype)
        if out.size:
            stream = self.stream(buf.ordinal)
            info, keep = self._info(buf.ordinal, *info_of)
            fn(self.launch, self.geometry(out.size, buf.ordinal), BLOCK, stream, out.size, *head, info, *tail, out.ptr)
        return out

    def _conv_operands(self, op, buf, layout, kernel, kernel_layout):
        _fits(op, self.name, kernel, kernel_layout)
        _same_ordinal(op, self.name, buf, kernel)
        return (layout.shape, layout.stride, kernel_layout.shape, kernel_layout.stride), \
            (buf.at(layout), kernel.at(kernel_layout))

    def conv1d(self, buf, layout, kernel, kernel_layout, p, table):
        info_of, ptrs = self._conv_operands("conv1d", buf, layout, kernel, kernel_layout)
        (b, c_in, l_in), (sb, sc, sl) = layout.shape, layout.stride
        geometry = _ConvGeometry(b, c_in, 1, l_in, kernel_layout.shape[0], 1, kernel_layout.shape[2], 1, p.l_out(),
                                 p.stride, p.padding, 0, p.dilation, (sb, sc, 0, sl))
        if self._conv_by_gemm(buf, kernel, geometry, CONV_GEMM_DTYPES):
            return self._conv_gemm("conv1d", buf, layout, kernel, kernel_layout, table, geometry)
        return self._nn("conv1d", K.CONV1D_SELF, buf, layout, table, (p.b_size, p.c_out, p.l_out()),
                        (p.l_out(), p.stride, p.padding, p.dilation), info_of, ptrs)

    def conv_transpose1d(self, buf, layout, kernel, kernel_layout, p, table):
        info_of, ptrs = self._conv_operands("conv_transpose1d", buf, layout, kernel, kernel_layout)
        (b, c_in, l_in), (sb, sc, sl) = layout.shape, layout.stride
        geometry = _ConvGeometry(b, c_in, 1, l_in, kernel_layout.shape[1], 1, kernel_layout.shape[2], 1, p.l_out(),
                                 p.stride, p.padding, 0, p.dilation, (sb, sc, 0, sl))
        if p.stride == 1 and self._conv_by_gemm(buf, kernel, geometry, CONV_GEMM_DTYPES):
            return self._conv_gemm("conv_transpose1d", buf, layout, kernel, kernel_layout.permute((1, 0, 2)), table,
                                   geometry, flipped=True)
        if self._conv_by_gemm(buf, kernel, geometry, CONV_TRANSPOSE_GEMM_DTYPES):
            return self._conv_transpose_gemm("conv_transpose1d", buf, layout, kernel, kernel_layout, table, geometry)
        return self._nn("conv_transpose1d", K.CONV_TRANSPOSE1D_SELF, buf, layout, table, (p.b_size, p.c_out, p.l_out()),
                        (p.l_out(), p.stride, p.padding, p.output_padding, p.dilation), info_of, ptrs)

    def conv2d(self, buf, layout, kernel, kernel_layout, p, table):
        info_of, ptrs = self._conv_operands("conv2d", buf, layout, kernel, kernel_layout)
        (b, c_in, h_in, w_in), (c_out, _, k_h, k_w) = layout.shape, kernel_layout.shape
        geometry = _ConvGeometry(b, c_in, h_in, w_in, c_out, k_h, k_w, p.out_h(), p.out_w(), p.stride, p.padding,
                                 p.padding, p.dilation, tuple(layout.stride))
        if self._conv_by_gemm(buf, kernel, geometry, CONV_GEMM_DTYPES):
            return self._conv_gemm("conv2d", buf, layout, kernel, kernel_layout, table, geometry)
        return self._nn("conv2d", K.CONV2D_SELF, buf, layout, table, (p.b_size, p.c_out, p.out_h(), p.out_w()),
                        (p.out_w(), p.out_h(), p.stride, p.padding, p.dilation), info_of, ptrs)

    def conv_transpose2d(self, buf, layout, kernel, kernel_layout, p, table):
        info_of, ptrs = self._conv_operands("conv_transpose2d", buf, layout, kernel, kernel_layout)
        (b, c_in, h_in, w_in), (_, c_out, k_h, k_w) = layout.shape, kernel_layout.shape
        geometry = _ConvGeometry(b, c_in, h_in, w_in, c_out, k_h, k_w, p.out_h(), p.out_w(), p.stride, p.padding,
                                 p.padding, p.dilation, tuple(layout.stride))
        if p.stride == 1 and self._conv_by_gemm(buf, kernel, geometry, CONV_GEMM_DTYPES):
            return self._conv_gemm("conv_transpose2d", buf, layout, kernel, kernel_layout.permute((1, 0, 2, 3)), table,
                                   geometry, flipped=True)
        if self._conv_by_gemm(buf, kernel, geometry, CONV_TRANSPOSE_GEMM_DTYPES):
            return self._conv_transpose_gemm("conv_transpose2d", buf, layout, kernel, kernel_layout, table, geometry)
        return self._nn("conv_transpose2d", K.CONV_TRANSPOSE2D_SELF, buf, layout, table, (p.b_size, p.c_out, p.out_h(), p.out_w()),
                        (p.out_w(), p.out_h(), p.stride, p.padding, p.output_padding, p.dilation), info_of, ptrs)

    # -- convolutions through the BLAS: im2col + GEMM, GEMM + col2im ---------------------------
    def _conv_by_gemm(self, buf: GpuBuffer, kernel: GpuBuffer, g: _ConvGeometry, dtypes: frozenset) -> bool:
        """Whether the GEMM path takes this convolution: a float dtype it covers, a BLAS,
        nothing empty, output planes the kernels index in 32 bits."""
        if buf.dtype.name not in dtypes or kernel.dtype != buf.dtype or not self._has_blas():
            return False
        sizes = (g.batch, g.c_in, g.c_out, g.h_in * g.w_in, g.k_h * g.k_w, g.h_out * g.w_out)
        return all(sizes) and max(g.h_in * g.w_in, g.h_out * g.w_out) < 2**31

    def _has_blas(self) -> bool:
        """Whether the driver has a BLAS here (asked once)."""
        if self._blas is None:
            available = getattr(self.driver, "blas_available", None)
            self._blas = bool(available and available())
        return self._blas

    def _conv_gemm(self, op, buf, layout, kernel, kernel_layout, table, g: _ConvGeometry,
                   flipped: bool = False) -> GpuBuffer:
        """out[b] (c_out, positions) = kernel (c_out, taps) @ col[b] (taps, positions), col
        made by im2col_<dt> from the strided input; batches in chunks of CONV_COLUMN_BYTES.
        Column-major, the BLAS computes out[b]^T = col[b]^T kernel^T: col first.
        `flipped`: a transposed convolution of stride 1, kernel_layout its kernel viewed as
        (c_out, c_in, ..): the taps read the input backwards (hip/conv.hip's im2col)."""
        dtype, ordinal, itemsize = buf.dtype, buf.ordinal, buf.dtype.itemsize
        weights, _ = self._dense(kernel, kernel_layout, self._entry(table, (K.COPY_STRIDED_SELF, dtype), op))
        im2col = self._entry(table, (K.IM2COL_SELF, dtype), op)
        taps, positions = g.c_in * g.k_h * g.k_w, g.h_out * g.w_out
        out = self.alloc(ordinal, g.batch * g.c_out * positions, dtype)
        per_batch = max(1, CONV_COLUMN_BYTES // (taps * positions * itemsize))
        chunk = min(g.batch, per_batch)
        col = self.alloc(ordinal, chunk * taps * positions, dtype)
        stream = self.stream(ordinal)
        sb, sc, sh, sw = g.strides
        step, offset_y, offset_x = (-g.dilation, g.pad_h, g.padding) if flipped else (g.dilation, -g.pad_h, -g.padding)
        for b0 in range(0, g.batch, chunk):
            n = min(chunk, g.batch - b0)
            rows = n * taps
            im2col(self.launch, min(rows, self._sms(ordinal) * 16), BLOCK, stream, rows, g.c_in, g.h_in, g.w_in,
                   g.k_h, g.k_w, g.h_out, g.w_out, g.stride, step, offset_y, offset_x, sb, sc, sh, sw,
                   buf.at(layout) + b0 * sb * itemsize, col.ptr)
            self.driver.gemm(ordinal, stream.handle, dtype, False, False, positions, g.c_out, taps,
                             col.ptr, positions, taps * positions, weights.ptr, taps, 0, out.ptr + b0 * g.c_out * positions * itemsize, positions,
                             g.c_out * positions, n)
        return out

    def _conv_transpose_gemm(self, op, buf, layout, kernel, kernel_layout, table, g: _ConvGeometry) -> GpuBuffer:
        """col[b] (c_out * taps, inputs) = kernel^T (c_out * taps, c_in) @ x[b] (c_in, inputs)
        through the BLAS, then col2im_<dt> sums each output's taps; batches in chunks."""
        dtype, ordinal, itemsize = buf.dtype, buf.ordinal, buf.dtype.itemsize
        copy = self._entry(table, (K.COPY_STRIDED_SELF, dtype), op)
        weights, _ = self._dense(kernel, kernel_layout, copy)
        x, _ = self._dense(buf, layout, copy)
        col2im = self._entry(table, (K.COL2IM_SELF, dtype), op)
        taps, inputs, positions = g.c_out * g.k_h * g.k_w, g.h_in * g.w_in, g.h_out * g.w_out
        out = self.alloc(ordinal, g.batch * g.c_out * positions, dtype)
        chunk = min(g.batch, max(1, CONV_COLUMN_BYTES // (taps * inputs * itemsize)))
        col = self.alloc(ordinal, chunk * taps * inputs, dtype)
        stream = self.stream(ordinal)
        for b0 in range(0, g.batch, chunk):
            n = min(chunk, g.batch - b0)
            self.driver.gemm(ordinal, stream.handle, dtype, False, True, inputs, taps, g.c_in,
                             x.ptr + b0 * g.c_in * inputs * itemsize, inputs, g.c_in * inputs, weights.ptr, taps, 0,
                             col.ptr, inputs, taps * inputs, n)
            rows = n * g.c_out
            col2im(self.launch, min(rows, self._sms(ordinal) * 16), BLOCK, stream, rows, g.k_h, g.k_w, g.h_in,
                   g.w_in, g.h_out, g.w_out, g.stride, g.padding, g.pad_h, g.dilation, col.ptr,
                   out.ptr + b0 * g.c_out * positions * itemsize)
        return out

    def _pool(self, op, pattern, buf, layout, kernel_size, stride, table):
        (kh, kw), (sh, sw) = kernel_size, stride
        b, c, h, w = layout.shape
        out_shape = (b, c, (h - kh) // sh + 1, (w - kw) // sw + 1)
        return self._nn(op, pattern, buf, layout, table, out_shape, (kw, kh, sw, sh), (layout.shape, layout.stride),
                        (buf.at(layout),))

    def avg_pool2d(self, buf, layout, kernel_size, stride, table):
        return self._pool("avg_pool2d", K.AVG_POOL2D_SELF, buf, layout, kernel_size, stride, table)

    def max_pool2d(self, buf, layout, kernel_size, stride, table):
        return self._pool("max_pool2d", K.MAX_POOL2D_SELF, buf, layout, kernel_size, stride, table)

    def upsample_nearest1d(self, buf, layout, size, table):
        b, c, _ = layout.shape
        return self._nn("upsample_nearest1d", K.UPSAMPLE_NEAREST1D_SELF, buf, layout, table, (b, c, size), (size,),
                        (layout.shape, layout.stride), (buf.at(layout),))

    def upsample_nearest2d(self, buf, layout, height, width, table):
        b, c, _, _ = layout.shape
        return self._nn("upsample_nearest2d", K.UPSAMPLE_NEAREST2D_SELF, buf, layout, table, (b, c, height, width), (width, height),
                        (layout.shape, layout.stride), (buf.at(layout),))

    # -- indexing: the kernels check the ids (IdChecks), read at the next synchronization ----
    def _id_flag(self, op: str, buf: GpuBuffer, ids: GpuBuffer, ids_layout: Layout, size: int) -> int:
        """The device address of the flag word for one launch of `op` over ids in [0, size)."""
        _fits(op, self.name, ids, ids_layout)
        _same_ordinal(op, self.name, buf, ids)
        ordinal = buf.ordinal
        checks = self._id_checks.get(ordinal)
        if checks is None:
            flags = self.alloc(ordinal, ID_FLAG_SLOTS, np.dtype(np.uint32))
            self.driver.memset(flags.ptr, flags.nbytes, self.driver.stream(ordinal))
            checks = self._id_checks[ordinal] = IdChecks(flags)
        elif len(checks.pending) == ID_FLAG_SLOTS:  # every flag in use: read them now
            self.driver.activate(ordinal)
            self.raise_bad_ids(ordinal)
        checks.pending.append((op, size))
        return checks.flags.ptr + 4 * (len(checks.pending) - 1)

    def raise_bad_ids(self, ordinal: int) -> None:
        """Read the flags of the index ops launched on `ordinal` since the last check and
        raise the first failed op's ShapeMismatch (the device made current by the caller).
        One download of len(pending) words, which waits for the device: only at points
        that synchronize anyway, and only when index ops ran."""
        checks = self._id_checks.get(ordinal)
        if checks is None or not checks.pending:
            return
        pending, checks.pending = checks.pending, []
        host = np.empty(len(pending), np.uint32)
        stream = self.driver.stream(ordinal)
        self.driver.download(host, checks.flags.ptr, stream)
        bad = np.flatnonzero(host)
        if bad.size:
            self.driver.memset(checks.flags.ptr, host.nbytes, stream)
            op, size = pending[int(bad[0])]
            raise ShapeMismatch(op, self.name, f"ids in [0, {size})",
                                "an id out of range (found by the kernel; reported at this synchronization)")

    def _dense(self, buf: GpuBuffer, layout: Layout, copy) -> tuple[GpuBuffer, Layout]:
        """The view as a contiguous, offset-free buffer where a kernel needs one: the view
        itself where it is one, else a copy made on the device (see _dense_copy)."""
        if layout.is_contiguous and layout.start_offset == 0:
            return buf, layout
        return self._dense_copy(buf, layout, copy), Layout.contiguous(layout.shape)

    def _dense_copy(self, buf: GpuBuffer, layout: Layout, copy) -> GpuBuffer:
        """A fresh contiguous copy of the view on its device, made by `copy`: the launch
        wrapper of copy_strided_<dtype>, which the calling op's launch table carries (its
        ops.yaml `kernel:` names copy_strided_{self}, or {x}, {ids}: the argument copied).
        The caller has checked that the view fits its buffer."""
        out = self.alloc(buf.ordinal, layout.elem_count, buf.dtype)
        if out.size:
            self._copy_view(copy, buf, layout, out.ptr)
        return out

    def gather(self, buf, layout, ids, ids_layout, dim, table):
        fn = self._entry(table, (K.GATHER_IDS_SELF, ids.dtype, buf.dtype), "gather")
        _fits("gather", self.name, buf, layout)
        bad = self._id_flag("gather", buf, ids, ids_layout, layout.shape[dim])
        out = self.alloc(buf.ordinal, ids_layout.elem_count, buf.dtype)
        if out.size:
            stream = self.stream(buf.ordinal)
            info, keep = self._info(buf.ordinal, ids_layout.shape, ids_layout.stride, layout.stride)
            fn(self.launch, self.geometry(out.size, buf.ordinal), BLOCK, stream, out.size, ids_layout.rank, info,
               dim, ids.at(ids_layout), buf.at(layout), out.ptr, layout.shape[dim], bad)
        return out

    def _scatter(self, op, pattern, buf, layout, ids, ids_layout, src, src_layout, dim, table):
        fn = self._entry(table, (pattern, ids.dtype, buf.dtype), op)
        _fits(op, self.name, buf, layout)
        _fits(op, self.name, src, src_layout)
        bad = self._id_flag(op, buf, ids, ids_layout, layout.shape[dim])
        if ids_layout.elem_count:
            stream = self.stream(buf.ordinal)
            info, keep = self._info(buf.ordinal, ids_layout.shape, ids_layout.stride, src_layout.stride, layout.stride)
            fn(self.launch, self.geometry(ids_layout.elem_count, buf.ordinal), BLOCK, stream, ids_layout.elem_count,
               ids_layout.rank, info, dim, ids.at(ids_layout), src.at(src_layout), buf.at(layout), layout.shape[dim],
               bad)

    def scatter_set(self, buf, layout, ids, ids_layout, src, src_layout, dim, table):
        self._scatter("scatter_set", K.SCATTER_SET_IDS_SELF, buf, layout, ids, ids_layout, src, src_layout, dim, table)

    def scatter_add(self, buf, layout, ids, ids_layout, src, src_layout, dim, table):
        self._scatter("scatter_add", K.SCATTER_ADD_IDS_SELF, buf, layout, ids, ids_layout, src, src_layout, dim, table)

    def index_select(self, buf, ids, layout, ids_layout, dim, table):
        fn = self._entry(table, (K.INDEX_SELECT_IDS_SELF, ids.dtype, buf.dtype), "index_select")
        _fits("index_select", self.name, buf, layout)
        bad = self._id_flag("index_select", buf, ids, ids_layout, layout.shape[dim])
        src, src_layout = self._dense(buf, layout, self._entry(table, (K.COPY_STRIDED_SELF, buf.dtype), "index_select"))
        left, right = math.prod(layout.shape[:dim]), math.prod(layout.shape[dim + 1:])
        n_ids = ids_layout.elem_count
        out = self.alloc(buf.ordinal, left * n_ids * right, buf.dtype)
        if out.size:
            stream = self.stream(buf.ordinal)
            # contiguous ids need no dims and strides on the device (an upload per call)
            info, keep = (0, None) if ids_layout.is_contiguous else self._info(
                buf.ordinal, ids_layout.shape, ids_layout.stride)
            fn(self.launch, self.geometry(out.size, buf.ordinal), BLOCK, stream, out.size, ids_layout.rank, info,
               ids.at(ids_layout), src.ptr, out.ptr, left, layout.shape[dim], n_ids, right, bad)
        return out

    def index_add(self, buf, layout, ids, ids_layout, src, src_layout, dim, table):
        fn = self._entry(table, (K.INDEX_ADD_IDS_SELF, ids.dtype, buf.dtype), "index_add")
        _fits("index_add", self.name, buf, layout)
        _fits("index_add", self.name, src, src_layout)
        bad = self._id_flag("index_add", buf, ids, ids_layout, layout.shape[dim])
        copy = self._entry(table, (K.COPY_STRIDED_SELF, buf.dtype), "index_add")
        ids_dense, _ = self._dense(ids, ids_layout, self._entry(table, (K.COPY_STRIDED_IDS, ids.dtype), "index_add"))
        src_dense, _ = self._dense(src, src_layout, copy)
        out = self._dense_copy(buf, layout, copy)  # a contiguous copy of self, then add
        left, right = math.prod(layout.shape[:dim]), math.prod(layout.shape[dim + 1:])
        if left * right and ids_layout.elem_count:
            stream = self.stream(buf.ordinal)
            fn(self.launch, self.geometry(left * right, buf.ordinal), BLOCK, stream, ids_dense.ptr,
               ids_layout.elem_count, src_dense.ptr, out.ptr, left, src_layout.shape[dim], layout.shape[dim], right,
               bad)
        return out

    # -- matmul through the vendor BLAS (row-major storage, column-major BLAS) -----------------
    def matmul(self, buf: GpuBuffer, rhs: GpuBuffer, bmnk, lhs_layout: Layout, rhs_layout: Layout,
               table: dict) -> GpuBuffer:
        """C = A @ B per batch, A (b, m, k) and B (b, k, n) views, C contiguous (b, m, n).
        Row-major C is column-major C^T = B^T A^T: the BLAS gets B first. A view whose last
        two dims are transposed needs no copy; other strided views are made dense first, on
        the device (`table`: dtype -> launch wrapper of copy_strided_<dtype>)."""
        b, m, n, k = bmnk
        for layout, rows, cols, what in ((lhs_layout, m, k, "lhs"), (rhs_layout, k, n, "rhs")):
            if layout.rank < 2 or layout.shape[-2:] != (rows, cols) or math.prod(layout.shape[:-2]) != b:
                raise ShapeMismatch("matmul", self.name, f"{what} of shape (.., {rows}, {cols}) with {b} batches",
                                    layout.shape)
        _fits("matmul", self.name, buf, lhs_layout)
        _fits("matmul", self.name, rhs, rhs_layout)
        _same_ordinal("matmul", self.name, buf, rhs)
        out = self.alloc(buf.ordinal, b * m * n, buf.dtype)
        if not out.size:
            return out
        if k == 0:
            self.driver.memset(out.ptr, out.nbytes, self.stream(buf.ordinal).handle)
            return out
        lhs_buf, lhs_view = buf, lhs_layout
        if (a := _gemm_operand(lhs_view, m, k)) is None:
            lhs_buf, lhs_view = self._dense(buf, lhs_layout, self._entry(table, (K.COPY_STRIDED_SELF, buf.dtype), "matmul"))
            a = _gemm_operand(lhs_view, m, k)
        rhs_buf, rhs_view = rhs, rhs_layout
        if (bb := _gemm_operand(rhs_view, k, n)) is None:
            rhs_buf, rhs_view = self._dense(rhs, rhs_layout, self._entry(table, (K.COPY_STRIDED_SELF, rhs.dtype), "matmul"))
            bb = _gemm_operand(rhs_view, k, n)
        stream = self.stream(buf.ordinal)
        self.driver.gemm(buf.ordinal, stream.handle, buf.dtype, bb[0], a[0], n, m, k,
                         rhs_buf.at(rhs_view), bb[1], bb[2], lhs_buf.at(lhs_view), a[1], a[2],
                         out.ptr, n, m * n, b)
        return out

    def reduce_op(self, buf: GpuBuffer, kernel, layout: Layout, dims: tuple[int, ...], table: dict) -> GpuBuffer:
        """Reduced dims keep size 1. The kernels reduce consecutive groups: the reduced dims
        are moved last (in ascending order, as the cpu backend numbers argmin/argmax), then
        adjacent dims merged where the view allows (kept with kept, reduced with reduced).

        hip/reduce.hip covers a group with a thread, a warp or a block (it picks; the grid
        here follows its choice). Groups too few to fill the device are split into chunks
        (from 256 elements): reduce_chunks_<dt> pass 1 writes a partial state per chunk,
        pass 2 reduces them. Up to FEW_GROUPS groups (a sum over all dims: one) take pass 0,
        both in one launch, its last block finishing, with the scratch of _pass0_scratch;
        more take two launches (one block could not finish them quickly)."""
        op = kernel.op
        fn = self._entry(table, (K.FAST_OP_SELF, op, buf.dtype), "reduce_op")
        _fits(op, self.name, buf, layout)
        reduced = reduce_dims(op, self.name, dims, layout.rank)
        kept = [d for d in range(layout.rank) if d not in reduced]
        view = layout.permute(tuple(kept + reduced))
        group = math.prod(layout.shape[d] for d in reduced)
        out_count = math.prod(layout.shape[d] for d in kept)
        result = np.dtype(np.uint32) if op in ("argmin", "argmax") else buf.dtype
        if group == 0:
            if op != "sum":
                raise ShapeMismatch(op, self.name, "a non-empty reduction", layout.shape)
            out = self.alloc(buf.ordinal, out_count, result)
            self.driver.memset(out.ptr, out.nbytes, self.stream(buf.ordinal).handle)
            return out
        out = self.alloc(buf.ordinal, out_count, result)
        if not out.size:
            return out

        def merged(shape, stride):
            """Size-1 dims dropped, then each dim folded into the one before it where
            that one steps over it exactly (row-major order is unchanged)."""
            dims_: list[list[int]] = []
            for n, s in zip(shape, stride):
                if n == 1:
                    continue
                if dims_ and dims_[-1][1] == s * n:
                    dims_[-1] = [dims_[-1][0] * n, s]
                else:
                    dims_.append([n, s])
            return dims_

        nkept = len(kept)
        kept_dims = merged(view.shape[:nkept], view.stride[:nkept])
        red_dims = merged(view.shape[nkept:], view.stride[nkept:])
        shape = tuple(n for n, _ in kept_dims + red_dims)
        stride = tuple(s for _, s in kept_dims + red_dims)
        flat = Layout(shape, stride, view.start_offset)
        stream = self.stream(buf.ordinal)
        info, keep = (0, None) if flat.is_contiguous else self._info(buf.ordinal, flat.shape, flat.stride)
        sms = self._sms(buf.ordinal)
        block = 256
        # The way hip/reduce.hip covers an item (its thread_per_item and kWarpItemMax).
        by_thread = (not flat.is_contiguous and len(red_dims) == 1 and red_dims[0][1] != 1
                     and len(kept_dims) >= 1 and kept_dims[-1][1] == 1)
        # Items to fill the device (threads, or warps) and the fewest elements worth an
        # item; fewer groups than that are split into chunks (two launches). Warps: on the
        # H100, sum f32 over 64M elements ran at 2,612 GB/s of device time in 4,224 chunks
        # (32 per multiprocessor), 2,312 in 16,896, 2,023 in 33,792 (bench/gpu.py --parts
        # explore).
        if by_thread:
            want, least = sms * 4096, 64
        else:
            want, least = sms * 32, min(1024, max(128, group // 32))
        chunks = 1
        if out_count < want and group >= 2 * least:
            chunks = max(1, min(-(-want // out_count), group // least))
        length = group if chunks == 1 else -(-(-(-group // chunks)) // 16) * 16  # the kernel's chunk_length
        items = out_count * chunks

        def grid_for(n_items: int, item_length: int, thread_items: bool, warp_max: int = 65536) -> int:
            if thread_items:
                per_block = block
            elif item_length <= warp_max:  # the kernel's kWarpItemMax / kWarpPartialMax: a warp per item
                per_block = block // 32  # warps per block (AMD's 64-wide waves: half of them idle)
            else:
                per_block = 1
            return max(1, min(-(-n_items // per_block), sms * 64))

        numel = flat.elem_count
        if chunks == 1:
            fn(self.launch, grid_for(items, length, by_thread), block, stream, numel, group, flat.rank, info,
               buf.at(view), out.ptr)
            return out
        chunked = self._entry(table, (K.REDUCE_CHUNKS_SELF, buf.dtype), "reduce_op")
        if out_count <= FEW_GROUPS and not by_thread:
            scratch = self._pass0_scratch(buf.ordinal, PASS0_HEADER + items * 16)
            chunked(self.launch, grid_for(items, length, False), block, stream, REDUCE_CODES[op], 0, numel, group,
                    flat.rank, info, chunks, buf.at(view), scratch.ptr, out.ptr)
            return out
        partial = self.alloc(buf.ordinal, items * 16, np.dtype(np.uint8))  # 16 bytes: the largest state
        # pass 2: a block per group past 1024 partial states, as wide as allowed
        block2 = 1024 if chunks > 1024 else block
        for pass_, grid, threads in ((1, grid_for(items, length, by_thread), block),
                                     (2, grid_for(out_count, chunks, False, 1024), block2)):
            chunked(self.launch, grid, threads, stream, REDUCE_CODES[op], pass_, numel, group, flat.rank, info, chunks,
                    buf.at(view), partial.ptr, out.ptr)
        return out

    def _pass0_scratch(self, ordinal: int, nbytes: int) -> GpuBuffer:
        """reduce_chunks_<dt> pass 0's scratch on the device: its block counter (zeroed
        here once; each launch's last block zeroes it again), then the partial states. One
        per device, kept and grown, so a reduction allocates nothing; launches on the
        device's one stream never overlap, so they can share it."""
        scratch = self._scratch.get(ordinal)
        if scratch is None or scratch.nbytes < nbytes:
            scratch = self.alloc(ordinal, nbytes, np.dtype(np.uint8))
            self.driver.memset(scratch.ptr, nbytes, self.driver.stream(ordinal))
            self._scratch[ordinal] = scratch  # the one replaced is freed after the launches queued on it
        return scratch


@dataclass(frozen=True)
class _ConvGeometry:
    """A convolution as the GEMM path sees it, 1-D ones as one row (h = k_h = 1, pad_h = 0):
    sizes, Candle's stride / padding / dilation, and the input's strides (b, c, h, w)."""

    batch: int
    c_in: int
    h_in: int
    w_in: int
    c_out: int
    k_h: int
    k_w: int
    h_out: int
    w_out: int
    stride: int
    padding: int
    pad_h: int
    dilation: int
    strides: tuple[int, int, int, int]


def _scalar(value, dtype: np.dtype):
    """A Python number as a kernel's scalar argument of `dtype`: converted as the cpu backend
    converts (Rust `as`), and f16/bf16 passed as their bit patterns."""
    from runtime.cpu_views import rust_as_scalar

    scalar = rust_as_scalar(value, dtype)
    if dtype.itemsize == 2 and dtype.kind not in "iu":
        return int(np.asarray(scalar, dtype).view(np.uint16))
    return scalar.item()


def _gemm_operand(layout: Layout, rows: int, cols: int) -> tuple[bool, int, int] | None:
    """(transposed, leading dimension, batch stride) of a row-major (.., rows, cols) view as
    the column-major BLAS sees it, or None when it needs a dense copy first."""
    r, c = layout.stride[-2], layout.stride[-1]
    batch = _batch_stride(layout)
    if batch is None:
        return None
    if (c == 1 or cols == 1) and (r >= cols or rows == 1):
        return False, max(r if rows > 1 else cols, cols, 1), batch
    if (r == 1 or rows == 1) and (c >= rows or cols == 1):
        return True, max(c if cols > 1 else rows, rows, 1), batch
    return None


def _batch_stride(layout: Layout) -> int | None:
    """One stride for all the batch dims, when they collapse into one (0 broadcasts)."""
    dims = [(d, s) for d, s in zip(layout.shape[:-2], layout.stride[:-2]) if d != 1]
    if not dims:
        return 0
    for (d0, s0), (d1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * d1:
            return None
    return dims[-1][1]


def _fits(op: str, backend: str, buf: GpuBuffer, layout: Layout) -> None:
    # every op checks: a contiguous view's end needs no sum over its dims
    end = layout.start_offset + layout.elem_count if layout.is_contiguous else layout.max_offset()
    if end > buf.size:
        raise ShapeMismatch(op, backend, f"a layout within {buf.size} elements", layout)


def _same_ordinal(op: str, backend: str, a: GpuBuffer, b: GpuBuffer) -> None:
    if a.ordinal != b.ordinal:
        from runtime.errors import DeviceMismatch

        raise DeviceMismatch(op, backend, f"{backend}:{a.ordinal}", f"{backend}:{b.ordinal}")

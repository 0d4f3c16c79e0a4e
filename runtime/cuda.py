"""cuda backend runtime: NVIDIA GPUs through cuda-python (driver API + NVRTC).

All of it is the Driver below, the vendor layer of runtime/gpu.py: memory from the
device's stream-ordered pool, copies, module loading and launches on one stream per
device. The storage ops themselves are runtime/gpu.py's, shared with rocm. Importing this
module never fails: cuda-python and libcuda are loaded on first use, and availability()
says what is missing."""

from __future__ import annotations

import ctypes
import functools
import operator
import struct
import threading

import numpy as np

from generated.kernel_facts import PROGRAMMATIC_KERNELS
from runtime.errors import BackendUnavailable
from runtime import gpu_interop, gpu_nn, gpu_quant
from runtime.gpu import STRUCT_CODES, GpuError, GpuRuntime, kernel_params


@functools.cache
def _driver_api():
    from cuda.bindings import driver  # noqa: PLC0415  (optional dependency)

    return driver


@functools.cache
def _libcuda_symbol(name: str):
    """A libcuda entry point through ctypes, or None where it cannot be had (launches then
    go through cuda-python). The library is the one cuda-python has loaded: the same
    contexts. As cuda-python's bindings do, ctypes releases the GIL during the call."""
    _driver_api()  # cuda-python loads libcuda first; then ctypes opens that same library
    for library in ("libcuda.so.1", "libcuda.so"):
        try:
            return getattr(ctypes.CDLL(library), name)
        except (OSError, AttributeError):
            continue
    return None


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h), cuLaunchKernelEx's first argument."""

    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p),
                ("numAttrs", ctypes.c_uint)]


class _LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute (cuda.h): an id, padding to 8 bytes, a 64-byte value union."""

    _fields_ = [("id", ctypes.c_uint), ("pad", ctypes.c_uint), ("value", ctypes.c_int), ("rest", ctypes.c_char * 60)]


#: CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (cuda.h's CUlaunchAttributeID).
_PROGRAMMATIC_SERIALIZATION = 6

#: PROGRAMMATIC_KERNELS (ops.yaml's kernel_facts): kernels launched with programmatic stream
#: serialization (compute capability 9.0 and up): each executes griddepcontrol.wait before it
#: reads or writes device memory (all it does before is an L2 prefetch of its weights), so it
#: may start while the kernel before it in the stream still runs, and its launch and first
#: loads overlap that kernel's end (hip/quantized.hip, at wait_for_predecessor; its generated
#: entry points assert that each kernel named there waits).


# cuInit failures, by error name (the enum's members differ between cuda-python releases).
_INIT_ERRORS = {
    "CUDA_ERROR_NO_DEVICE": "no device",
    "CUDA_ERROR_INSUFFICIENT_DRIVER": "driver too old",
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE": "driver too old",
}


@functools.cache
def _cublas():
    """cuBLAS through nvmath-python's bindings (the `gpu` extra installs both; imported on
    first use, so a machine without them or without a GPU still imports this module)."""
    from nvmath.bindings import cublas  # noqa: PLC0415  (optional dependency)

    return cublas


# cudaDataType, cublasComputeType and the host scalar type of alpha/beta, by dtype.
_GEMM_TYPES = {
    np.dtype("float16"): (2, 68, np.float32),   # CUDA_R_16F, CUBLAS_COMPUTE_32F
    np.dtype("float32"): (0, 68, np.float32),   # CUDA_R_32F, CUBLAS_COMPUTE_32F
    np.dtype("float64"): (1, 70, np.float64),   # CUDA_R_64F, CUBLAS_COMPUTE_64F
}
try:
    import ml_dtypes

    _GEMM_TYPES[np.dtype(ml_dtypes.bfloat16)] = (14, 68, np.float32)  # CUDA_R_16BF
except ImportError:  # pragma: no cover
    pass


def _dim(value) -> ctypes.c_uint:
    """A grid or block size as cuLaunchKernel's unsigned int (cuda-python's checks)."""
    value = operator.index(value)
    if not 0 <= value < 2**32:
        raise OverflowError(f"launch dimension {value} out of range for unsigned int")
    return ctypes.c_uint(value)


class CudaDriver:
    name = "cuda"

    def __init__(self) -> None:
        self._contexts: dict[int, object] = {}
        self._streams: dict[int, object] = {}
        self._devices: dict[int, object] = {}
        self._local = threading.local()  # per thread: the current ordinal, the launch argument holders
        self._programmatic: set[int] = set()  # functions of PROGRAMMATIC_KERNELS built for sm_90 and up
        self._blas_handles: dict[int, int] = {}  # ordinal -> cuBLAS handle
        self._blas_streams: dict[int, int | None] = {}  # ordinal -> the stream its handle is bound to

    def _call(self, what: str, result):
        err, *rest = result
        if int(err) != 0:
            cu = _driver_api()
            name = cu.cuGetErrorName(err)[1]
            raise GpuError(self.name, what, name.decode() if isinstance(name, bytes) else str(err))
        return rest[0] if len(rest) == 1 else rest

    def availability(self) -> str | None:
        try:
            cu = _driver_api()
        except ImportError:
            return "library not found (cuda-python is not installed)"
        try:
            err, = cu.cuInit(0)
        except RuntimeError as exc:  # libcuda itself is missing
            return f"library not found (libcuda): {exc}"
        if int(err) != 0:
            name = cu.cuGetErrorName(err)[1]
            name = name.decode() if isinstance(name, bytes) else str(err)
            return _INIT_ERRORS.get(name, f"cuInit failed: {name}")
        try:
            from runtime import gpu_compile

            gpu_compile.nvrtc_version()
        except Exception as exc:  # noqa: BLE001  (any failure to load the compiler)
            return f"library not found (libnvrtc): {exc}"
        return None

    def _device(self, ordinal: int):
        device = self._devices.get(ordinal)
        if device is None:
            cu = _driver_api()
            self._call("cuInit", cu.cuInit(0))
            device = self._devices[ordinal] = self._call(f"cuDeviceGet({ordinal})", cu.cuDeviceGet(ordinal))
        return device

    def _attribute(self, ordinal: int, attribute) -> int:
        return self._call("cuDeviceGetAttribute", _driver_api().cuDeviceGetAttribute(attribute, self._device(ordinal)))

    def arch(self, ordinal: int) -> str:
        a = _driver_api().CUdevice_attribute
        major = self._attribute(ordinal, a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self._attribute(ordinal, a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        return f"sm_{major}{minor}"

    @functools.cache
    def multiprocessors(self, ordinal: int) -> int:
        return self._attribute(ordinal, _driver_api().CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)

    def compiler_version(self) -> str:
        from runtime import gpu_compile

        return f"nvrtc {gpu_compile.nvrtc_version()}"

    def compile(self, source: str, name: str, arch: str) -> bytes:
        from runtime import gpu_compile

        return gpu_compile.compile_cuda(source, name, arch)

    def activate(self, ordinal: int) -> None:
        if getattr(self._local, "ordinal", None) == ordinal:  # contexts are current per thread
            return
        context = self._contexts.get(ordinal)
        if context is None:
            # Every device operation comes through here first: one that cannot run says why.
            reason = self.availability()
            if reason is not None:
                raise BackendUnavailable(self.name, reason)
            cu = _driver_api()
            device = self._device(ordinal)
            context = self._contexts[ordinal] = self._call("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(device))
            # Freed memory stays in the pool for the next op instead of going back to the driver.
            pool = self._call("cuDeviceGetDefaultMemPool", cu.cuDeviceGetDefaultMemPool(device))
            threshold = cu.cuuint64_t(2**64 - 1)
            self._call("cuMemPoolSetAttribute", cu.cuMemPoolSetAttribute(
                pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, threshold))
        self._call("cuCtxSetCurrent", _driver_api().cuCtxSetCurrent(context))
        self._local.ordinal = ordinal

    def stream(self, ordinal: int):
        stream = self._streams.get(ordinal)
        if stream is None:
            cu = _driver_api()
            flags = cu.CUstream_flags.CU_STREAM_NON_BLOCKING
            stream = self._streams[ordinal] = self._call("cuStreamCreate", cu.cuStreamCreate(flags))
        return stream

    def alloc(self, nbytes: int, stream) -> int:
        err, ptr = _driver_api().cuMemAllocAsync(nbytes, stream)
        if int(err):  # the call's name is formatted only on failure: allocations are hot
            self._call(f"cuMemAllocAsync({nbytes})", (err,))
        return int(ptr)

    def free(self, ptr: int, stream) -> None:
        try:
            _driver_api().cuMemFreeAsync(ptr, stream)
        except Exception:  # noqa: BLE001  (at interpreter exit the driver may be gone)
            pass

    def upload(self, ptr: int, host: np.ndarray, stream) -> None:
        self._call("cuMemcpyHtoDAsync", _driver_api().cuMemcpyHtoDAsync(ptr, host.ctypes.data, host.nbytes, stream))

    def download(self, host: np.ndarray, ptr: int, stream) -> None:
        cu = _driver_api()
        self._call("cuMemcpyDtoHAsync", cu.cuMemcpyDtoHAsync(host.ctypes.data, ptr, host.nbytes, stream))
        self._call("cuStreamSynchronize", cu.cuStreamSynchronize(stream))

    def copy(self, dst: int, src: int, nbytes: int, stream) -> None:
        self._call("cuMemcpyDtoDAsync", _driver_api().cuMemcpyDtoDAsync(dst, src, nbytes, stream))

    def memset(self, ptr: int, nbytes: int, stream, byte: int = 0) -> None:
        self._call("cuMemsetD8Async", _driver_api().cuMemsetD8Async(ptr, byte, nbytes, stream))

    def peer_copy(self, dst: int, dst_ordinal: int, src: int, src_ordinal: int, nbytes: int, stream) -> bool:
        """Copy between two devices' memory on `stream` (the destination's), after the work
        queued on the source's stream; the source's stream waits for the copy in turn, so
        that a free or a write queued there later cannot overtake it. False where the two
        devices cannot copy peer to peer (the runtime then goes through host memory)."""
        cu = _driver_api()
        self.activate(src_ordinal)  # events are recorded in their stream's context
        src_stream = self.stream(src_ordinal)
        ready = self._event(src_stream)
        self.activate(dst_ordinal)
        try:
            self._call("cuStreamWaitEvent", cu.cuStreamWaitEvent(stream, ready, 0))
            err, = cu.cuMemcpyPeerAsync(dst, self._contexts[dst_ordinal], src, self._contexts[src_ordinal], nbytes,
                                        stream)
            if err == cu.CUresult.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
                return False
            self._call("cuMemcpyPeerAsync", (err,))
            done = self._event(stream)
            try:
                self._call("cuStreamWaitEvent", cu.cuStreamWaitEvent(src_stream, done, 0))  # across contexts
            finally:
                cu.cuEventDestroy(done)  # released once the waits on it are done
        finally:
            cu.cuEventDestroy(ready)
        return True

    def _event(self, stream):
        """A fresh event (in the current context) recorded on `stream`."""
        cu = _driver_api()
        event = self._call("cuEventCreate", cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING))
        try:
            self._call("cuEventRecord", cu.cuEventRecord(event, stream))
        except GpuError:
            cu.cuEventDestroy(event)
            raise
        return event

    # -- interop (runtime/gpu_interop.py) ---------------------------------------------------
    dlpack_device_type = 2  # kDLCUDA
    dlpack_default_stream = 1  # CU_STREAM_LEGACY: what DLPack's stream=None means on CUDA

    @staticmethod
    def stream_id(stream) -> int:
        return int(stream)

    def wait(self, waiter, producer) -> None:
        """`waiter` (a stream, or a foreign stream's int handle) waits for the work queued
        so far on `producer`; both in the current context."""
        cu = _driver_api()
        event = self._event(producer)
        try:
            self._call("cuStreamWaitEvent", cu.cuStreamWaitEvent(waiter, event, 0))
        finally:
            cu.cuEventDestroy(event)  # released once the wait is done

    def pointer_device(self, ptr: int) -> int:
        """The ordinal of the device holding `ptr` (driver initialized through device 0)."""
        self.activate(getattr(self._local, "ordinal", None) or 0)
        cu = _driver_api()
        attribute = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        return int(self._call("cuPointerGetAttribute", cu.cuPointerGetAttribute(attribute, ptr)))

    def load(self, image: bytes):
        return self._call("cuModuleLoadData", _driver_api().cuModuleLoadData(image))

    def function(self, module, name: str):
        cu = _driver_api()
        fn = self._call(f"cuModuleGetFunction({name})", cu.cuModuleGetFunction(module, name.encode()))
        if name in PROGRAMMATIC_KERNELS:
            version = self._call("cuFuncGetAttribute", cu.cuFuncGetAttribute(
                cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_BINARY_VERSION, fn))
            if version >= 90:  # griddepcontrol and the launch attribute: sm_90 and up
                self._programmatic.add(int(fn))
        return fn

    def launch(self, fn, grid: int, block: int, stream, args: tuple, types: tuple) -> None:
        address = kernel_params(self._local, types, args)
        cu_launch = _libcuda_symbol("cuLaunchKernel")
        if cu_launch is None:
            err, = _driver_api().cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, address, 0)
        else:
            err = cu_launch(ctypes.c_void_p(int(fn)), _dim(grid), 1, 1, _dim(block), 1, 1, 0,
                            ctypes.c_void_p(int(stream)), ctypes.c_void_p(address), None)
        if int(err):
            self._raise_launch(err)

    def launcher(self, fn, types: tuple):
        """`launch` of `fn`, prepared once (GpuRuntime keeps it per function), through
        cuLaunchKernelEx: four arguments for ctypes to convert, all made here, against
        eleven for cuLaunchKernel. One buffer (owned by the thread that made it) holds the
        kernel's arguments as `types` and after them the launch config; each launch fills
        both with one struct.pack_into (the arguments, then the grid and block dims), and
        the stream's handle is written when the stream changes. Other threads, other
        signatures and values the pack refuses take `launch`. The functions of
        PROGRAMMATIC_KERNELS (as `function` found them) carry the programmatic stream
        serialization attribute; `launch` never does."""
        launch_ex = _libcuda_symbol("cuLaunchKernelEx")
        fields = [(f"a{i}", t) for i, t in enumerate(types)] + [("config", _LaunchConfig),
                                                                 ("attribute", _LaunchAttribute)]
        frame_type = type("Frame", (ctypes.Structure,), {"_fields_": fields})
        layout = struct.Struct("@" + "".join(STRUCT_CODES[t] for t in types) + "0P" + "IIII")
        if launch_ex is None or layout.size != frame_type.config.offset + 16:
            return lambda grid, block, stream, args, types_: self.launch(fn, grid, block, stream, args, types_)
        frame = frame_type()
        base = ctypes.addressof(frame)
        pointers = (ctypes.c_void_p * max(len(types), 1))(
            *(base + getattr(frame_type, f"a{i}").offset for i in range(len(types))))
        config = frame.config
        config.blockDimY = config.blockDimZ = 1  # sharedMemBytes, attrs, numAttrs: 0
        if int(fn) in self._programmatic:
            frame.attribute.id, frame.attribute.value = _PROGRAMMATIC_SERIALIZATION, 1
            config.attrs, config.numAttrs = base + frame_type.attribute.offset, 1
        config_address = ctypes.c_void_p(base + frame_type.config.offset)
        params = ctypes.c_void_p(ctypes.addressof(pointers))
        function = ctypes.c_void_p(int(fn))
        pack = layout.pack_into
        owner, get_ident = threading.get_ident(), threading.get_ident
        last_stream = None

        def launch(grid: int, block: int, stream, args: tuple, types_: tuple) -> None:
            nonlocal last_stream
            if (types_ is not types and types_ != types) or get_ident() != owner:
                self.launch(fn, grid, block, stream, args, types_)
                return
            try:
                pack(frame, 0, *args, grid, 1, 1, block)
            except struct.error:  # None pointers, ints to wrap, dims out of range: as `launch` does
                self.launch(fn, grid, block, stream, args, types_)
                return
            if stream is not last_stream:
                config.hStream, last_stream = int(stream), stream
            err = launch_ex(config_address, function, params, None)
            if err:
                self._raise_launch(err)

        launch.keep = (frame, pointers)  # what the addresses above point into
        return launch

    def _raise_launch(self, err) -> None:
        """GpuError for a launch's error code, named as cuda-python names it."""
        detail = f"error {int(err)}"
        try:
            cu = _driver_api()
            name = cu.cuGetErrorName(cu.CUresult(int(err)))[1]
            detail = name.decode() if isinstance(name, bytes) else detail
        except Exception:  # noqa: BLE001  (a code this cuda-python does not know: the number)
            pass
        raise GpuError(self.name, "cuLaunchKernel", detail)

    def synchronize(self, ordinal: int) -> None:
        self._call("cuStreamSynchronize", _driver_api().cuStreamSynchronize(self.stream(ordinal)))

    def blas_available(self) -> bool:
        """Whether `gemm` can run: nvmath-python imports and finds the cuBLAS library."""
        try:
            _cublas().get_cudart_version()
        except Exception:  # noqa: BLE001  (ImportError, or the library or driver not found)
            return False
        return True

    def _blas_handle(self, ordinal: int, stream) -> int:
        """The device's cuBLAS handle (made in its primary context, current here), bound to
        `stream` so that its GEMMs are ordered with our kernels."""
        cublas = _cublas()
        handle = self._blas_handles.get(ordinal)
        if handle is None:
            handle = self._blas_handles[ordinal] = cublas.create()
            self._blas_streams[ordinal] = None
        if self._blas_streams[ordinal] != int(stream):
            cublas.set_stream(handle, int(stream))
            self._blas_streams[ordinal] = int(stream)
        return handle

    def gemm(self, ordinal, stream, dtype, trans_a, trans_b, m, n, k, a, lda, stride_a, b, ldb, stride_b,
             c, ldc, stride_c, batch) -> None:
        """Column-major strided-batched GEMM on our stream, through cuBLAS (nvmath-python's
        binding of cublasGemmStridedBatchedEx). f32 computes in f32 (no TF32), as the cpu."""
        try:
            cublas = _cublas()
        except ImportError:
            raise BackendUnavailable(self.name, "matmul needs cuBLAS through nvmath-python "
                                                "(pip install 'opgen[gpu]')") from None
        data, compute, scalar = _GEMM_TYPES[np.dtype(dtype)]
        one, zero = np.ones(1, scalar), np.zeros(1, scalar)
        try:
            handle = self._blas_handle(ordinal, stream)
            cublas.gemm_strided_batched_ex(
                handle, int(trans_a), int(trans_b), m, n, k, one.ctypes.data, a, data, lda, stride_a,
                b, data, ldb, stride_b, zero.ctypes.data, c, data, ldc, stride_c, batch, compute, -1)
        except cublas.cuBLASError as exc:
            raise GpuError(self.name, "cublasGemmStridedBatchedEx", str(exc)) from None


_rt = GpuRuntime(CudaDriver())

# The runtime functions the generated arms call; `gen parity` reads this list.
availability = _rt.availability
to_host = _rt.to_host
from_host = _rt.from_host
to_numpy = _rt.to_numpy
to_device = _rt.to_device
zeros = _rt.zeros
ones = _rt.ones
alloc_uninit = _rt.alloc_uninit
storage_from_slice = _rt.storage_from_slice
synchronize = _rt.synchronize
location = _rt.location
supports_bf16 = _rt.supports_bf16
set_seed = _rt.set_seed
rand_uniform = _rt.rand_uniform
rand_normal = _rt.rand_normal
try_clone = _rt.try_clone
dtype = _rt.dtype
device = _rt.device
unary = _rt.unary
binary = _rt.binary
cmp = _rt.cmp
affine = _rt.affine
powf = _rt.powf
elu = _rt.elu
to_dtype = _rt.to_dtype
where_cond = _rt.where_cond
const_set = _rt.const_set
copy_strided_src = _rt.copy_strided_src
copy2d = _rt.copy2d
reduce_op = _rt.reduce_op
matmul = _rt.matmul
conv1d = _rt.conv1d
conv_transpose1d = _rt.conv_transpose1d
conv2d = _rt.conv2d
conv_transpose2d = _rt.conv_transpose2d
avg_pool2d = _rt.avg_pool2d
max_pool2d = _rt.max_pool2d
upsample_nearest1d = _rt.upsample_nearest1d
upsample_nearest2d = _rt.upsample_nearest2d
gather = _rt.gather
scatter_set = _rt.scatter_set
scatter_add = _rt.scatter_add
index_select = _rt.index_select
index_add = _rt.index_add

# candle-nn's ops (runtime/gpu_nn.py), called by the hooks of generated/nn.py.
sigmoid = functools.partial(gpu_nn.sigmoid, _rt)
softmax_last_dim = functools.partial(gpu_nn.softmax_last_dim, _rt)
rms_norm = functools.partial(gpu_nn.rms_norm, _rt)
layer_norm = functools.partial(gpu_nn.layer_norm, _rt)
rope_i = functools.partial(gpu_nn.rope_i, _rt)
rope = functools.partial(gpu_nn.rope, _rt)
rope_thd = functools.partial(gpu_nn.rope_thd, _rt)
sdpa = functools.partial(gpu_nn.sdpa, _rt)
arg_sort = functools.partial(gpu_nn.arg_sort, _rt)

# Quantized storage (runtime/gpu_quant.py): Device's quantize, qzeros, qstorage_from_bytes
# and QStorage's q_<method>.
quantize = functools.partial(gpu_quant.quantize, _rt)
qzeros = functools.partial(gpu_quant.qzeros, _rt)
qstorage_from_bytes = functools.partial(gpu_quant.qstorage_from_bytes, _rt)
q_dtype = functools.partial(gpu_quant.q_dtype, _rt)
q_device = functools.partial(gpu_quant.q_device, _rt)
q_size_in_bytes = functools.partial(gpu_quant.q_size_in_bytes, _rt)
q_data = functools.partial(gpu_quant.q_data, _rt)
q_dequantize = functools.partial(gpu_quant.q_dequantize, _rt)
q_dequantize_f16 = functools.partial(gpu_quant.q_dequantize_f16, _rt)
q_matmul = functools.partial(gpu_quant.q_matmul, _rt)

# Zero-copy exchange (runtime/gpu_interop.py), called by generated View and from_dlpack.
dlpack_device = functools.partial(gpu_interop.dlpack_device, _rt)
to_dlpack = functools.partial(gpu_interop.to_dlpack, _rt)
from_dlpack = functools.partial(gpu_interop.from_dlpack, _rt)
cuda_array_interface = functools.partial(gpu_interop.cuda_array_interface, _rt)
from_cuda_array_interface = functools.partial(gpu_interop.from_cuda_array_interface, _rt)

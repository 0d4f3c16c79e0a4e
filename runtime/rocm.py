"""rocm backend runtime: AMD GPUs through hip-python (HIP runtime + hiprtc).

The Driver below is the vendor layer of runtime/gpu.py, the twin of runtime/cuda.py; the
storage ops are runtime/gpu.py's. Importing this module never fails: hip-python and the
ROCm runtime are loaded on first use, and availability() says what is missing.

matmul goes through hipBLAS (hip-python's binding, loaded on first use): without
libhipblas it raises BackendUnavailable, saying so.

NOT RUN ON AMD HARDWARE: no AMD GPU was available. CI loads the ROCm runtime and compiles
every kernel for AMD targets through hiprtc; availability() is tested to report "no
device". The device paths (memory, copies, peer copies between two GPUs, events, module
loading, launches, the hipBLAS GEMM, DLPack) run in tests/gpu/test_rocm_fake.py against a
recording fake of hip-python that checks every call's arguments and the packing of kernel
arguments, and computes a few kernels with numpy; none has run on an AMD GPU. Of the GEMM, only the argument mapping is
tested (the enums and their values, the call hip-python receives, the error without
libhipblas); Debian bookworm ships neither hipBLAS nor rocBLAS, so no hipBLAS call has
ever been made."""

from __future__ import annotations

import ctypes
import functools
import threading

import ml_dtypes
import numpy as np

from runtime.errors import BackendUnavailable
from runtime.gpu import interop as gpu_interop, nn as gpu_nn, quant as gpu_quant
from runtime.gpu.driver import GpuError
from runtime.gpu.launch import kernel_params
from runtime.gpu.runtime import GpuRuntime

# hip-python looks for libamdhip64.so; Debian's ROCm 5.x ships only libamdhip64.so.5.
_LIBRARIES = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5")


@functools.cache
def _hip():
    from hip import chip  # noqa: PLC0415  (optional dependency)

    for name in _LIBRARIES:
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        chip.DLL = name.encode()
        break
    from hip import hip  # noqa: PLC0415

    return hip


# hip-python 6.2 binds hipBLAS 2.x (ROCm 6), where the GEMM taking hipDataType and
# hipblasComputeType_t is exported as ..._v2: the unsuffixed 2.x symbol takes the
# deprecated hipblasDatatype_t, and hipBLAS 3 (ROCm 7) renamed _v2 to the unsuffixed name.
# A library without the symbol is refused rather than called with the wrong enums.
_HIPBLAS_LIBRARIES = ("libhipblas.so", "libhipblas.so.2")
_GEMM = "hipblasGemmStridedBatchedEx_v2"

# hipDataType and hipblasComputeType_t member names, and the host type of alpha/beta, by
# dtype: halves accumulate in f32, as on cuda.
_GEMM_TYPES = {
    np.dtype("float16"): ("HIP_R_16F", "HIPBLAS_COMPUTE_32F", np.float32),
    np.dtype("float32"): ("HIP_R_32F", "HIPBLAS_COMPUTE_32F", np.float32),
    np.dtype("float64"): ("HIP_R_64F", "HIPBLAS_COMPUTE_64F", np.float64),
    np.dtype(ml_dtypes.bfloat16): ("HIP_R_16BF", "HIPBLAS_COMPUTE_32F", np.float32),
}


@functools.cache
def _hipblas():
    """hip-python's hipBLAS binding, pointed at a libhipblas that exports the GEMM it calls
    (hip-python opens `chipblas.DLL` at the first call, by default libhipblas.so, which
    runtime-only installs lack)."""
    for name in _HIPBLAS_LIBRARIES:
        try:
            library = ctypes.CDLL(name)
        except OSError:
            continue
        if not hasattr(library, _GEMM):
            raise BackendUnavailable("rocm", f"matmul needs hipBLAS 2.x (ROCm 6): {name} has no {_GEMM}")
        from hip import chipblas  # noqa: PLC0415  (optional dependency)

        chipblas.DLL = name.encode()
        from hip import hipblas  # noqa: PLC0415

        return hipblas
    raise BackendUnavailable("rocm", "matmul needs hipBLAS: library not found (libhipblas)")


def _name(hip, err) -> str:
    return str(hip.hipGetErrorName(err)[1])


class HipDriver:
    name = "rocm"

    def __init__(self) -> None:
        self._streams: dict[int, object] = {}
        self._blas_handles: dict[int, object] = {}
        self._ready: set[int] = set()
        self._local = threading.local()  # per thread: the launch argument holders

    def _call(self, what: str, result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise GpuError(self.name, what, _name(_hip(), err))
        return rest[0] if len(rest) == 1 else rest

    def availability(self) -> str | None:
        if not any(_loadable(n) for n in _LIBRARIES):
            return "library not found (libamdhip64)"
        try:
            hip = _hip()
        except ImportError:
            return "library not found (hip-python is not installed)"
        err, count = hip.hipGetDeviceCount()
        if int(err) != 0 or count == 0:
            name = _name(hip, err) if int(err) != 0 else "hipErrorNoDevice"
            return "no device" if name == "hipErrorNoDevice" else f"hipGetDeviceCount failed: {name}"
        try:
            from runtime.gpu import compile as gpu_compile

            gpu_compile.hiprtc_version()
        except Exception as exc:  # noqa: BLE001  (any failure to load the compiler)
            return f"library not found (hiprtc): {exc}"
        return None

    def arch(self, ordinal: int) -> str:
        props = self._call("hipGetDeviceProperties", _hip().hipGetDeviceProperties(ordinal))
        name = props.gcnArchName
        return (name.decode() if isinstance(name, bytes) else str(name)).split(":")[0]

    @functools.cache
    def multiprocessors(self, ordinal: int) -> int:
        hip = _hip()
        attribute = hip.hipDeviceAttribute_t.hipDeviceAttributeMultiprocessorCount
        return self._call("hipDeviceGetAttribute", hip.hipDeviceGetAttribute(attribute, ordinal))

    def compiler_version(self) -> str:
        from runtime.gpu import compile as gpu_compile

        return f"hiprtc {gpu_compile.hiprtc_version()}"

    def compile(self, source: str, name: str, arch: str) -> bytes:
        from runtime.gpu import compile as gpu_compile

        return gpu_compile.compile_rocm(source, name, arch)

    def activate(self, ordinal: int) -> None:
        if ordinal not in self._ready:
            reason = self.availability()
            if reason is not None:
                raise BackendUnavailable(self.name, reason)
            self._ready.add(ordinal)
        self._call(f"hipSetDevice({ordinal})", _hip().hipSetDevice(ordinal))

    def stream(self, ordinal: int):
        stream = self._streams.get(ordinal)
        if stream is None:
            hip = _hip()
            stream = self._streams[ordinal] = self._call(
                "hipStreamCreateWithFlags", hip.hipStreamCreateWithFlags(hip.hipStreamNonBlocking))
        return stream

    def alloc(self, nbytes: int, stream) -> int:
        err, ptr = _hip().hipMallocAsync(nbytes, stream)
        if int(err):  # the call's name is formatted only on failure: allocations are hot
            self._call(f"hipMallocAsync({nbytes})", (err,))
        return int(ptr)

    def free(self, ptr: int, stream) -> None:
        try:
            _hip().hipFreeAsync(ptr, stream)
        except Exception:  # noqa: BLE001  (at interpreter exit the runtime may be gone)
            pass

    def upload(self, ptr: int, host: np.ndarray, stream) -> None:
        self._call("hipMemcpyHtoDAsync", _hip().hipMemcpyHtoDAsync(ptr, host.ctypes.data, host.nbytes, stream))

    def download(self, host: np.ndarray, ptr: int, stream) -> None:
        hip = _hip()
        self._call("hipMemcpyDtoHAsync", hip.hipMemcpyDtoHAsync(host.ctypes.data, ptr, host.nbytes, stream))
        self._call("hipStreamSynchronize", hip.hipStreamSynchronize(stream))

    def copy(self, dst: int, src: int, nbytes: int, stream) -> None:
        self._call("hipMemcpyDtoDAsync", _hip().hipMemcpyDtoDAsync(dst, src, nbytes, stream))

    def memset(self, ptr: int, nbytes: int, stream, byte: int = 0) -> None:
        self._call("hipMemsetD8Async", _hip().hipMemsetD8Async(ptr, byte, nbytes, stream))

    def peer_copy(self, dst: int, dst_ordinal: int, src: int, src_ordinal: int, nbytes: int, stream) -> bool:
        """Copy between two devices' memory on `stream` (the destination's), after the work
        queued on the source's stream; the source's stream waits for the copy in turn, so
        that a free or a write queued there later cannot overtake it. False where the two
        devices cannot copy peer to peer (the runtime then goes through host memory)."""
        hip = _hip()
        self.activate(src_ordinal)  # events are recorded on their own device's streams
        src_stream = self.stream(src_ordinal)
        ready = self._event(src_stream)
        self.activate(dst_ordinal)
        try:
            self._call("hipStreamWaitEvent", hip.hipStreamWaitEvent(stream, ready, 0))
            err, = hip.hipMemcpyPeerAsync(dst, dst_ordinal, src, src_ordinal, nbytes, stream)
            if err == hip.hipError_t.hipErrorPeerAccessUnsupported:
                return False
            self._call("hipMemcpyPeerAsync", (err,))
            done = self._event(stream)
            try:
                self._call("hipStreamWaitEvent", hip.hipStreamWaitEvent(src_stream, done, 0))  # across devices
            finally:
                hip.hipEventDestroy(done)  # released once the waits on it are done
        finally:
            hip.hipEventDestroy(ready)
        return True

    def _event(self, stream):
        """A fresh event (on the current device) recorded on `stream`."""
        hip = _hip()
        event = self._call("hipEventCreateWithFlags", hip.hipEventCreateWithFlags(hip.hipEventDisableTiming))
        try:
            self._call("hipEventRecord", hip.hipEventRecord(event, stream))
        except GpuError:
            hip.hipEventDestroy(event)
            raise
        return event

    # -- interop (runtime/gpu/interop.py) ---------------------------------------------------
    dlpack_device_type = 10  # kDLROCM
    dlpack_default_stream = 0  # the null stream: what DLPack's stream=None means on ROCm

    @staticmethod
    def stream_id(stream) -> int:
        return int(stream or 0)

    def wait(self, waiter, producer) -> None:
        """`waiter` (a stream, or a foreign stream's int handle) waits for the work queued
        so far on `producer`; both on the current device."""
        hip = _hip()
        event = self._event(producer)
        try:
            self._call("hipStreamWaitEvent", hip.hipStreamWaitEvent(waiter, event, 0))
        finally:
            hip.hipEventDestroy(event)  # released once the wait is done

    def load(self, image: bytes):
        return self._call("hipModuleLoadData", _hip().hipModuleLoadData(image))

    def function(self, module, name: str):
        return self._call(f"hipModuleGetFunction({name})", _hip().hipModuleGetFunction(module, name.encode()))

    def launch(self, fn, grid: int, block: int, stream, args: tuple, types: tuple) -> None:
        address = kernel_params(self._local, types, args)
        err, = _hip().hipModuleLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, address, None)
        if int(err):
            self._call("hipModuleLaunchKernel", (err,))

    def synchronize(self, ordinal: int) -> None:
        self._call("hipStreamSynchronize", _hip().hipStreamSynchronize(self.stream(ordinal)))

    def _blas(self, ordinal: int, stream):
        """The device's hipBLAS handle, created on first use (the device is current: the
        runtime activated it), bound to the device's stream, which never changes."""
        handle = self._blas_handles.get(ordinal)
        if handle is None:
            hipblas = _hipblas()
            status, handle = hipblas.hipblasCreate()
            self._blas_status("hipblasCreate", status)
            self._blas_status("hipblasSetStream", hipblas.hipblasSetStream(handle, stream)[0])
            self._blas_handles[ordinal] = handle
        return handle

    def _blas_status(self, what: str, status) -> None:
        if int(status) != 0:
            raise GpuError(self.name, what, getattr(status, "name", str(status)))

    def blas_available(self) -> bool:
        """Whether `gemm` can run: a libhipblas with the GEMM it calls loads."""
        try:
            _hipblas()
        except BackendUnavailable:
            return False
        return True

    def gemm(self, ordinal, stream, dtype, trans_a, trans_b, m, n, k, a, lda, stride_a, b, ldb, stride_b,
             c, ldc, stride_c, batch) -> None:
        """Column-major strided-batched GEMM on our stream, through hipBLAS: the twin of
        CudaDriver.gemm."""
        hipblas = _hipblas()
        data_name, compute_name, scalar = _GEMM_TYPES[np.dtype(dtype)]
        data = getattr(_hip().hipDataType, data_name)
        compute = getattr(hipblas.hipblasComputeType_t, compute_name)
        op = hipblas.hipblasOperation_t
        one, zero = np.ones(1, scalar), np.zeros(1, scalar)  # host scalars: the default pointer mode
        status, = hipblas.hipblasGemmStridedBatchedEx_v2(
            self._blas(ordinal, stream), op.HIPBLAS_OP_T if trans_a else op.HIPBLAS_OP_N,
            op.HIPBLAS_OP_T if trans_b else op.HIPBLAS_OP_N, m, n, k, one, a, data, lda, stride_a,
            b, data, ldb, stride_b, zero, c, data, ldc, stride_c, batch, compute,
            hipblas.hipblasGemmAlgo_t.HIPBLAS_GEMM_DEFAULT)
        self._blas_status(_GEMM, status)


def _loadable(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


_rt = GpuRuntime(HipDriver())

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

# candle-nn's ops (runtime/gpu/nn.py), called by the hooks of generated/nn.py.
sigmoid = functools.partial(gpu_nn.sigmoid, _rt)
softmax_last_dim = functools.partial(gpu_nn.softmax_last_dim, _rt)
rms_norm = functools.partial(gpu_nn.rms_norm, _rt)
layer_norm = functools.partial(gpu_nn.layer_norm, _rt)
rope_i = functools.partial(gpu_nn.rope_i, _rt)
rope = functools.partial(gpu_nn.rope, _rt)
rope_thd = functools.partial(gpu_nn.rope_thd, _rt)
sdpa = functools.partial(gpu_nn.sdpa, _rt)
arg_sort = functools.partial(gpu_nn.arg_sort, _rt)

# Quantized storage (runtime/gpu/quant.py): Device's quantize, qzeros, qstorage_from_bytes
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

# Zero-copy exchange (runtime/gpu/interop.py), called by generated View and from_dlpack;
# the CUDA Array Interface is CUDA's.
dlpack_device = functools.partial(gpu_interop.dlpack_device, _rt)
to_dlpack = functools.partial(gpu_interop.to_dlpack, _rt)
from_dlpack = functools.partial(gpu_interop.from_dlpack, _rt)

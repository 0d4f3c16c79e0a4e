"""rocm backend runtime: AMD GPUs through hip-python (HIP runtime + hiprtc).

The Driver below is all this module adds to the shared GPU runtime (runtime/gpu/): the
calls StreamDriver makes, named in hip-python, and what differs (activation, the compiler,
launches, hipBLAS); the twin of runtime/cuda.py. The runtime functions the generated arms
call come from runtime/gpu/exports.py, bound to this module's runtime. Importing this module
never fails: hip-python and the ROCm runtime are loaded on first use, and availability() says
what is missing.

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
import importlib
import threading

import ml_dtypes
import numpy as np

from runtime.errors import BackendUnavailable
from runtime.gpu.driver import DriverCalls, GpuError, StreamDriver
from runtime.gpu.launch import kernel_params
from runtime.gpu.runtime import GpuRuntime, export

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


class HipDriver(StreamDriver):
    name = "rocm"
    calls = DriverCalls(
        alloc="hipMallocAsync",
        free="hipFreeAsync",
        upload="hipMemcpyHtoDAsync",
        download="hipMemcpyDtoHAsync",
        copy="hipMemcpyDtoDAsync",
        memset="hipMemsetD8Async",
        stream_synchronize="hipStreamSynchronize",
        stream_wait_event="hipStreamWaitEvent",
        event_record="hipEventRecord",
        event_destroy="hipEventDestroy",
        stream_query="hipStreamQuery",
        event_query="hipEventQuery",
        module_load="hipModuleLoadData",
        module_function="hipModuleGetFunction",
    )

    def __init__(self) -> None:
        super().__init__()
        self._blas_handles: dict[int, object] = {}
        self._ready: set[int] = set()
        self._local = threading.local()  # per thread: the launch argument holders

    def api(self):
        return _hip()

    def error_name(self, err) -> str:
        return _name(_hip(), err)

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

    @functools.cache  # noqa: B019  (one driver per backend, for the whole process)
    def multiprocessors(self, ordinal: int) -> int:
        hip = _hip()
        attribute = hip.hipDeviceAttribute_t.hipDeviceAttributeMultiprocessorCount
        return self._call("hipDeviceGetAttribute", hip.hipDeviceGetAttribute(attribute, ordinal))

    def shared_per_block(self, ordinal: int) -> int:
        hip = _hip()
        attribute = hip.hipDeviceAttribute_t.hipDeviceAttributeMaxSharedMemoryPerBlock
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

    def create_stream(self):
        hip = _hip()
        return self._call("hipStreamCreateWithFlags", hip.hipStreamCreateWithFlags(hip.hipStreamNonBlocking))

    def create_event(self):
        hip = _hip()
        return self._call("hipEventCreateWithFlags", hip.hipEventCreateWithFlags(hip.hipEventDisableTiming))

    def copy_peer(self, dst: int, dst_ordinal: int, src: int, src_ordinal: int, nbytes: int, stream) -> bool:
        hip = _hip()
        (err,) = hip.hipMemcpyPeerAsync(dst, dst_ordinal, src, src_ordinal, nbytes, stream)
        if err == hip.hipError_t.hipErrorPeerAccessUnsupported:
            return False
        self._call("hipMemcpyPeerAsync", (err,))
        return True

    # -- interop (runtime/gpu/interop.py) ---------------------------------------------------
    dlpack_device_type = 10  # kDLROCM
    dlpack_default_stream = 0  # the null stream: what DLPack's stream=None means on ROCm

    @staticmethod
    def stream_id(stream) -> int:
        return int(stream or 0)

    def launch(self, fn, grid: int, block: int, stream, args: tuple, types: tuple) -> None:
        address = kernel_params(self._local, types, args)
        (err,) = _hip().hipModuleLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, address, None)
        if int(err):
            self._call("hipModuleLaunchKernel", (err,))

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

    def gemm(
        self,
        ordinal,
        stream,
        dtype,
        trans_a,
        trans_b,
        m,
        n,
        k,
        a,
        lda,
        stride_a,
        b,
        ldb,
        stride_b,
        c,
        ldc,
        stride_c,
        batch,
        *,
        reduced=False,
    ) -> None:
        """Column-major strided-batched GEMM on our stream, through hipBLAS: the twin of
        CudaDriver.gemm, in full precision whatever `reduced` says (runtime/gpu/switches.py)."""
        hipblas = _hipblas()
        data_name, compute_name, scalar = _GEMM_TYPES[np.dtype(dtype)]
        data = getattr(_hip().hipDataType, data_name)
        compute = getattr(hipblas.hipblasComputeType_t, compute_name)
        op = hipblas.hipblasOperation_t
        one, zero = np.ones(1, scalar), np.zeros(1, scalar)  # host scalars: the default pointer mode
        (status,) = hipblas.hipblasGemmStridedBatchedEx_v2(
            self._blas(ordinal, stream),
            op.HIPBLAS_OP_T if trans_a else op.HIPBLAS_OP_N,
            op.HIPBLAS_OP_T if trans_b else op.HIPBLAS_OP_N,
            m,
            n,
            k,
            one,
            a,
            data,
            lda,
            stride_a,
            b,
            data,
            ldb,
            stride_b,
            zero,
            c,
            data,
            ldc,
            stride_c,
            batch,
            compute,
            hipblas.hipblasGemmAlgo_t.HIPBLAS_GEMM_DEFAULT,
        )
        self._blas_status(_GEMM, status)


def _loadable(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


_driver = HipDriver()
_rt = GpuRuntime(_driver)
export(_rt)  # the import below binds the runtime functions the generated arms call to _rt
from runtime.gpu.exports import *  # noqa: E402, F403  (runtime/gpu/exports.py; `gen parity` reads them there)


def _rccl():
    from runtime.comm.rccl import rccl_module  # noqa: PLC0415  (loaded with the first Comm)

    return rccl_module()


from runtime.comm.calls import *  # noqa: E402, F403  (comm_<op>: the generated Comm's arms, forwarded to GpuComm)


def comm_world(timeout: float):
    """Collectives through RCCL (runtime/comm/rccl.py): every process of the launch, on the device
    of its local rank."""
    from runtime.comm import gpu as comm_gpu, rccl  # noqa: PLC0415  (loaded with the first Comm)

    lib = rccl.RcclLibrary(_rccl())
    count = _driver._call("hipGetDeviceCount", _hip().hipGetDeviceCount())
    return comm_gpu.GpuComm.world(_rt, lib, timeout, int(count), _driver)


# The generated launch tables come with the backend's runtime, as a library's kernel tables come
# with its import: the first op on a device pays for its own kernel, not for importing every
# entry point's wrapper (bench/results/NOTES.md, "First calls and precision modes").
importlib.import_module("generated.kernels_hip")

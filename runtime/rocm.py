"""rocm backend runtime: AMD GPUs through hip-python (HIP runtime + hiprtc).

The Driver below is the vendor layer of runtime/gpu.py, the twin of runtime/cuda.py; the
storage ops are runtime/gpu.py's. Importing this module never fails: hip-python and the
ROCm runtime are loaded on first use, and availability() says what is missing.

NOT RUN ON AMD HARDWARE: no AMD GPU was available. CI loads the ROCm runtime and compiles
every kernel for AMD targets through hiprtc; availability() is tested to report "no
device"; the device paths (memory, copies, launches) have not run."""

from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np

from runtime.errors import BackendUnavailable
from runtime.gpu import GpuError, GpuRuntime, kernel_params

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


def _name(hip, err) -> str:
    return str(hip.hipGetErrorName(err)[1])


class HipDriver:
    name = "rocm"

    def __init__(self) -> None:
        self._streams: dict[int, object] = {}
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
            from runtime import gpu_compile

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
        from runtime import gpu_compile

        return f"hiprtc {gpu_compile.hiprtc_version()}"

    def compile(self, source: str, name: str, arch: str) -> bytes:
        from runtime import gpu_compile

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
        return int(self._call(f"hipMallocAsync({nbytes})", _hip().hipMallocAsync(nbytes, stream)))

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

    def load(self, image: bytes):
        return self._call("hipModuleLoadData", _hip().hipModuleLoadData(image))

    def function(self, module, name: str):
        return self._call(f"hipModuleGetFunction({name})", _hip().hipModuleGetFunction(module, name.encode()))

    def launch(self, fn, grid: int, block: int, stream, args: tuple, types: tuple) -> None:
        address = kernel_params(self._local, types, args)
        self._call("hipModuleLaunchKernel", _hip().hipModuleLaunchKernel(
            fn, grid, 1, 1, block, 1, 1, 0, stream, address, None))

    def synchronize(self, ordinal: int) -> None:
        self._call("hipStreamSynchronize", _hip().hipStreamSynchronize(self.stream(ordinal)))


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

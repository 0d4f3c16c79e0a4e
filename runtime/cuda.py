"""cuda backend runtime: NVIDIA GPUs through cuda-python (driver API + NVRTC).

The Driver below is all this module adds to the shared GPU runtime (runtime/gpu/): the
calls StreamDriver makes (memory from the device's stream-ordered pool, copies, events, module
loading, on one stream per device), named in cuda-python, and what is CUDA's own: contexts,
NVRTC, prepared launches through cuLaunchKernelEx, cuBLAS. The runtime functions the generated
arms call come from runtime/gpu/exports.py, bound to this module's runtime; the CUDA Array
Interface is added here. Importing this module never fails: cuda-python and libcuda are loaded
on first use, and availability() says what is missing."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import importlib.util
import operator
import os
import struct
import sys
import threading
import types
from typing import Any

import numpy as np

from generated.kernel_facts import DYNAMIC_SHARED_KERNELS, DYNAMIC_SHARED_SPARE, PROGRAMMATIC_KERNELS
from runtime.errors import BackendUnavailable
from runtime.gpu import blas_graphs, interop as gpu_interop
from runtime.gpu.cudnn import Cudnn
from runtime.gpu.driver import DriverCalls, GpuError, StreamDriver
from runtime.gpu.launch import STRUCT_CODES, kernel_params
from runtime.gpu.runtime import GpuRuntime, export


@functools.cache
def _driver_api():
    # Kernels loaded when first launched, not all of a module at once (CUDA's lazy loading,
    # read by the driver at cuInit): a first call loads the functions it runs. torch sets the
    # same default; a value the user set is kept.
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    from cuda.bindings import driver  # noqa: PLC0415  (optional dependency)

    return driver


@functools.cache
def _libcuda_symbol(name: str, hold_gil: bool = False):
    """A libcuda entry point through ctypes, or None where it cannot be had (launches then
    go through cuda-python). The library is the one cuda-python has loaded: the same
    contexts. As cuda-python's bindings do, ctypes releases the GIL during the call, unless
    `hold_gil` (ctypes.PyDLL: the call keeps it, saving its release and retaking)."""
    _driver_api()  # cuda-python loads libcuda first; then ctypes opens that same library
    for library in ("libcuda.so.1", "libcuda.so"):
        try:
            return getattr((ctypes.PyDLL if hold_gil else ctypes.CDLL)(library), name)
        except (OSError, AttributeError):
            continue
    return None


#: Whether prepared launches (CudaDriver.launcher) keep the GIL during cuLaunchKernelEx.
#: The call only queues work (it waits only when the launch queue is full), so other
#: Python threads lose little, and a small op saves the GIL's release and retaking (torch's
#: launches keep it too; figures: bench/results/NOTES.md). bench/gpu.py --parts latency times both.
LAUNCH_HOLDS_GIL = True


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h), cuLaunchKernelEx's first argument."""

    _fields_ = [
        ("gridDimX", ctypes.c_uint),
        ("gridDimY", ctypes.c_uint),
        ("gridDimZ", ctypes.c_uint),
        ("blockDimX", ctypes.c_uint),
        ("blockDimY", ctypes.c_uint),
        ("blockDimZ", ctypes.c_uint),
        ("sharedMemBytes", ctypes.c_uint),
        ("hStream", ctypes.c_void_p),
        ("attrs", ctypes.c_void_p),
        ("numAttrs", ctypes.c_uint),
    ]


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
    first use, so a machine without them or without a GPU still imports this module).

    The binding alone: `nvmath/__init__` imports the whole of nvmath (linalg, fft, cuda.core:
    most of a first matmul's time), which the binding does not need. Where nvmath is not
    imported yet, bare stand-ins of the two packages give their paths while the binding and
    its own modules import, and are taken out after: a later `import nvmath` runs the package
    as ever and finds its binding already loaded. Any failure of that takes the plain import."""
    with _IMPORT_LOCK:
        if "nvmath" not in sys.modules:
            try:
                return _binding_alone("nvmath", ("nvmath", "nvmath.bindings"), "nvmath.bindings.cublas")
            except ImportError:
                raise
            except Exception:  # noqa: BLE001, S110  (another layout of the package: imported whole)
                pass
        from nvmath.bindings import cublas  # noqa: PLC0415  (optional dependency)

        return cublas


_IMPORT_LOCK = threading.Lock()
_blas_loaded = False


def load_blas() -> None:
    """Load cuBLAS, once per process: nvmath's binding and the libraries behind it, 65 of the
    122 ms of a first matmul on the H200. A device's first use calls it, as torch loads its
    libraries with its import, so that a first matmul pays for its own work alone. A failure is
    left for the first matmul, which reports it where it matters. OPGEN_BLAS_PRELOAD=0 leaves
    the loading to the first matmul. (Loaded on a thread of its own instead, it held up the
    first convolution: libcudnn loads cublasLt too, and the loader takes one library at a time.)"""
    global _blas_loaded
    if _blas_loaded or os.environ.get("OPGEN_BLAS_PRELOAD", "1") == "0":
        return
    _blas_loaded = True
    with contextlib.suppress(Exception):
        _cublas().get_cudart_version()  # the first call into the binding loads the libraries


def _binding_alone(top: str, packages: tuple[str, ...], module: str):
    """Import `module` with `packages` (top first, each inside the one before) as bare modules
    holding their paths, not run; the stand-ins are removed after, whatever happens."""
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"No module named {top!r}")
    paths = list(spec.submodule_search_locations)
    made = []
    try:
        for name in packages:
            stand_in = types.ModuleType(name)
            stand_in.__path__ = [os.path.join(p, *name.split(".")[1:]) for p in paths]
            sys.modules[name] = stand_in
            made.append(name)
        return importlib.import_module(module)
    finally:
        for name in made:
            sys.modules.pop(name, None)


# cudaDataType, cublasComputeType and the host scalar type of alpha/beta, by dtype; and where
# reduced precision is allowed (runtime/gpu/switches.py), the compute and scalar types then:
# f32 on TF32 tensor cores, f16 accumulating in f16 (as Candle's switches do), bf16 in f32 with
# its split-K reductions allowed in bf16 (the math mode below; cuBLAS has no bf16 accumulation).
_REDUCED_TYPES = {
    np.dtype("float16"): (64, np.float16),  # CUBLAS_COMPUTE_16F
    np.dtype("float32"): (77, np.float32),  # CUBLAS_COMPUTE_32F_FAST_TF32
}
# cublasMath_t: CUBLAS_DEFAULT_MATH, and that with CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
# (split-K partial sums of the half types kept in the compute type, f32, not the output type).
_MATH_DEFAULT, _MATH_F32_REDUCTIONS = 0, 16
_HALF_TYPES = (2, 14)  # CUDA_R_16F, CUDA_R_16BF
_GEMM_TYPES = {
    np.dtype("float16"): (2, 68, np.float32),  # CUDA_R_16F, CUBLAS_COMPUTE_32F
    np.dtype("float32"): (0, 68, np.float32),  # CUDA_R_32F, CUBLAS_COMPUTE_32F
    np.dtype("float64"): (1, 70, np.float64),  # CUDA_R_64F, CUBLAS_COMPUTE_64F
}


#: Bytes of the workspace each device's cuBLAS handle is given (cublasSetWorkspace, from the
#: device's pool, kept for the process; torch gives its handles one too). Without one, cuBLAS
#: uses a workspace of its own: bench/matmul_host.py times both. OPGEN_CUBLAS_WORKSPACE_MB sets
#: the size; 0 leaves cuBLAS's own.
BLAS_WORKSPACE = int(os.environ.get("OPGEN_CUBLAS_WORKSPACE_MB", "32")) << 20


# alpha = 1 and beta = 0 in each scalar type, made once: cuBLAS reads them (host pointer mode)
# before the call returns, and never writes them.
def _constant(value: float, scalar: Any) -> int:
    """The address of `value` as a `scalar`, held for the process (read-only)."""
    held = np.full(1, value, scalar)
    held.flags.writeable = False
    _HELD.append(held)
    return held.ctypes.data


_HELD: list[np.ndarray] = []
_SCALARS: dict[Any, tuple[int, int]] = {
    t: (_constant(1, t), _constant(0, t)) for t in (np.float16, np.float32, np.float64)
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


class CudaDriver(StreamDriver):
    name = "cuda"
    calls = DriverCalls(
        alloc="cuMemAllocAsync",
        free="cuMemFreeAsync",
        upload="cuMemcpyHtoDAsync",
        download="cuMemcpyDtoHAsync",
        copy="cuMemcpyDtoDAsync",
        memset="cuMemsetD8Async",
        stream_synchronize="cuStreamSynchronize",
        stream_wait_event="cuStreamWaitEvent",
        event_record="cuEventRecord",
        event_destroy="cuEventDestroy",
        stream_query="cuStreamQuery",
        event_query="cuEventQuery",
        module_load="cuModuleLoadData",
        module_function="cuModuleGetFunction",
    )

    def __init__(self) -> None:
        super().__init__()
        self._contexts: dict[int, object] = {}
        self._devices: dict[int, object] = {}
        self._local = threading.local()  # per thread: the current ordinal, the launch argument holders
        self._programmatic: set[int] = set()  # functions of PROGRAMMATIC_KERNELS built for sm_90 and up
        self._dynamic_shared: dict[int, int] = {}  # functions of DYNAMIC_SHARED_KERNELS -> their launches' bytes
        self._blas_handles: dict[int, int] = {}  # ordinal -> cuBLAS handle
        self._blas_streams: dict[int, int | None] = {}  # ordinal -> the stream its handle is bound to
        self._blas_math: dict[int, int] = {}  # ordinal -> the math mode its handle is set to
        self._blas_workspaces: dict[int, int] = {}  # ordinal -> the workspace set on its handle
        self._capture_streams: dict[int, Any] = {}  # ordinal -> the stream GEMM graphs are recorded on
        self._blas_lock = threading.Lock()  # held by each GEMM: the handle's stream stays put meanwhile
        self.gemm_graphs = blas_graphs.GemmGraphs(self._capture_gemm, self.graph_launcher, self.destroy_graph)
        self.last_capture_failure: str | None = None  # why the last GEMM graph could not be captured

    def api(self):
        return _driver_api()

    def error_name(self, err) -> str:
        name = _driver_api().cuGetErrorName(err)[1]
        return name.decode() if isinstance(name, bytes) else str(err)

    def availability(self) -> str | None:
        try:
            cu = _driver_api()
        except ImportError:
            return "library not found (cuda-python is not installed)"
        try:
            (err,) = cu.cuInit(0)
        except RuntimeError as exc:  # libcuda itself is missing
            return f"library not found (libcuda): {exc}"
        if int(err) != 0:
            name = cu.cuGetErrorName(err)[1]
            name = name.decode() if isinstance(name, bytes) else str(err)
            return _INIT_ERRORS.get(name, f"cuInit failed: {name}")
        try:
            from runtime.gpu import compile as gpu_compile

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

    @functools.cache  # noqa: B019  (one driver per backend, for the whole process; QMatMul asks per call)
    def arch(self, ordinal: int) -> str:
        a = _driver_api().CUdevice_attribute
        major = self._attribute(ordinal, a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self._attribute(ordinal, a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        return f"sm_{major}{minor}"

    @functools.cache  # noqa: B019  (as arch)
    def shared_per_block(self, ordinal: int) -> int:
        """The shared memory a block may have on the device, opted in (static and dynamic)."""
        a = _driver_api().CUdevice_attribute
        return self._attribute(ordinal, a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)

    def device_name(self, ordinal: int) -> str:
        """The device's name (the plan cache keys on it: runtime/gpu/plan_cache.py)."""
        raw = self._call("cuDeviceGetName", _driver_api().cuDeviceGetName(256, self._device(ordinal)))
        return bytes(raw).split(b"\0", 1)[0].decode(errors="replace")

    @functools.cache  # noqa: B019  (one driver per backend, for the whole process)
    def multiprocessors(self, ordinal: int) -> int:
        return self._attribute(ordinal, _driver_api().CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)

    def compiler_version(self) -> str:
        from runtime.gpu import compile as gpu_compile

        return f"nvrtc {gpu_compile.nvrtc_version()}"

    def compile(self, source: str, name: str, arch: str) -> bytes:
        from runtime.gpu import compile as gpu_compile

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
            context = self._contexts[ordinal] = self._call(
                "cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(device)
            )
            load_blas()
            # Freed memory stays in the pool for the next op instead of going back to the driver.
            pool = self._call("cuDeviceGetDefaultMemPool", cu.cuDeviceGetDefaultMemPool(device))
            threshold = cu.cuuint64_t(2**64 - 1)
            self._call(
                "cuMemPoolSetAttribute",
                cu.cuMemPoolSetAttribute(pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, threshold),
            )
        self._call("cuCtxSetCurrent", _driver_api().cuCtxSetCurrent(context))
        self._local.ordinal = ordinal

    def create_stream(self):
        cu = _driver_api()
        return self._call("cuStreamCreate", cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))

    def create_event(self):
        cu = _driver_api()
        return self._call("cuEventCreate", cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING))

    def copy_peer(self, dst: int, dst_ordinal: int, src: int, src_ordinal: int, nbytes: int, stream) -> bool:
        cu = _driver_api()  # contexts name the devices
        (err,) = cu.cuMemcpyPeerAsync(
            dst, self._contexts[dst_ordinal], src, self._contexts[src_ordinal], nbytes, stream
        )
        if err == cu.CUresult.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
            return False
        self._call("cuMemcpyPeerAsync", (err,))
        return True

    # -- graphs (runtime/gpu/cudnn_graphs.py, blas_graphs.py) --------------------------------
    def capture_graph(self, stream, record):
        """The work `record()` queues on `stream` (a stream no other thread uses), captured and
        instantiated (a CUgraphExec), not run. GpuError where the capture or instantiation
        fails, or record's own error; the stream's capture is ended either way."""
        cu = _driver_api()
        mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        self._call("cuStreamBeginCapture", cu.cuStreamBeginCapture(stream, mode))
        try:
            record()
        finally:
            err, graph = cu.cuStreamEndCapture(stream)
        self._call("cuStreamEndCapture", (err,))
        instantiate = getattr(cu, "cuGraphInstantiateWithFlags", cu.cuGraphInstantiate)  # (graph, flags) either way
        try:
            return self._call("cuGraphInstantiate", instantiate(graph, 0))
        finally:
            cu.cuGraphDestroy(graph)

    def graph_launcher(self, graph):
        """launch(stream): `graph` replayed on the stream (an int handle), through libcuda's
        cuGraphLaunch by ctypes, the GIL kept (as prepared kernel launches do); cuda-python's
        where ctypes cannot have it."""
        launch = _libcuda_symbol("cuGraphLaunch", LAUNCH_HOLDS_GIL)
        if launch is None:

            def through_binding(stream: int) -> None:
                self._call("cuGraphLaunch", _driver_api().cuGraphLaunch(graph, stream))

            return through_binding
        handle = ctypes.c_void_p(int(graph))
        last = [0, ctypes.c_void_p(0)]  # the last stream, and it as ctypes passes it

        def launch_graph(stream: int) -> None:
            if stream != last[0]:
                last[0], last[1] = stream, ctypes.c_void_p(stream)
            err = launch(handle, last[1])
            if err:
                self._call("cuGraphLaunch", (_driver_api().CUresult(err),))

        return launch_graph

    def destroy_graph(self, graph) -> None:
        _driver_api().cuGraphExecDestroy(graph)

    # -- interop (runtime/gpu/interop.py) ---------------------------------------------------
    dlpack_device_type = 2  # kDLCUDA
    dlpack_default_stream = 1  # CU_STREAM_LEGACY: what DLPack's stream=None means on CUDA

    @staticmethod
    def stream_id(stream) -> int:
        return int(stream)

    def pointer_device(self, ptr: int) -> int:
        """The ordinal of the device holding `ptr` (driver initialized through device 0)."""
        self.activate(getattr(self._local, "ordinal", None) or 0)
        cu = _driver_api()
        attribute = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        return int(self._call("cuPointerGetAttribute", cu.cuPointerGetAttribute(attribute, ptr)))

    def function(self, module, name: str):
        fn = super().function(module, name)
        if name in PROGRAMMATIC_KERNELS:
            cu = _driver_api()
            version = self._call(
                "cuFuncGetAttribute",
                cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_BINARY_VERSION, fn),
            )
            if version >= 90:  # griddepcontrol and the launch attribute: sm_90 and up
                self._programmatic.add(int(fn))
        if name in DYNAMIC_SHARED_KERNELS:
            self._dynamic_shared[int(fn)] = self._allow_dynamic_shared(fn)
        return fn

    def _allow_dynamic_shared(self, fn) -> int:
        """Raises `fn`'s dynamic shared memory to all the current device lets a block have beside
        fn's static shared memory, less DYNAMIC_SHARED_SPARE (room for other kernels' small blocks
        on its multiprocessor); the bytes its launches then ask for."""
        cu = _driver_api()
        ordinal = getattr(self._local, "ordinal", None) or 0
        most = self.shared_per_block(ordinal)
        static = self._call(
            "cuFuncGetAttribute", cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn)
        )
        dynamic = max(0, int(most) - int(static) - DYNAMIC_SHARED_SPARE)
        attribute = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        self._call("cuFuncSetAttribute", cu.cuFuncSetAttribute(fn, attribute, dynamic))
        return dynamic

    def launch(self, fn, grid: int, block: int, stream, args: tuple, types: tuple) -> None:
        address = kernel_params(self._local, types, args)
        shared = self._dynamic_shared.get(int(fn), 0)
        cu_launch = _libcuda_symbol("cuLaunchKernel")
        if cu_launch is None:
            (err,) = _driver_api().cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shared, stream, address, 0)
        else:
            err = cu_launch(
                ctypes.c_void_p(int(fn)),
                _dim(grid),
                1,
                1,
                _dim(block),
                1,
                1,
                shared,
                ctypes.c_void_p(int(stream)),
                ctypes.c_void_p(address),
                None,
            )
        if int(err):
            self._raise_launch(err)

    def launcher(self, fn, types: tuple):
        """`launch` of `fn`, prepared once (GpuRuntime keeps it per function), through
        cuLaunchKernelEx: four arguments for ctypes to convert, all made here, against
        eleven for cuLaunchKernel. One buffer (owned by the thread that made it) holds the
        kernel's arguments as `types` and after them the launch config; each launch fills
        the arguments and the grid's x dim with one struct.pack_into (y and z are 1 for
        good), and the block's x dim and the stream's handle are written when they change.
        Other threads, other signatures and values the pack refuses take `launch`. The
        functions of PROGRAMMATIC_KERNELS (as `function` found them) carry the programmatic
        stream serialization attribute; `launch` never does. Those of DYNAMIC_SHARED_KERNELS
        ask for the dynamic shared memory `function` allowed them, either way."""
        launch_ex = _libcuda_symbol("cuLaunchKernelEx", LAUNCH_HOLDS_GIL)
        fields = [(f"a{i}", t) for i, t in enumerate(types)] + [
            ("config", _LaunchConfig),
            ("attribute", _LaunchAttribute),
        ]
        frame_type: Any = type("Frame", (ctypes.Structure,), {"_fields_": fields})  # its fields: these types
        layout = struct.Struct("@" + "".join(STRUCT_CODES[t] for t in types) + "0P" + "I")
        if launch_ex is None or layout.size != frame_type.config.offset + 4:
            return lambda grid, block, stream, args, types_: self.launch(fn, grid, block, stream, args, types_)
        frame = frame_type()
        base = ctypes.addressof(frame)
        pointers = (ctypes.c_void_p * max(len(types), 1))(
            *(base + getattr(frame_type, f"a{i}").offset for i in range(len(types)))
        )
        config = frame.config
        # attrs, numAttrs: 0; sharedMemBytes those of DYNAMIC_SHARED_KERNELS' functions
        config.gridDimY = config.gridDimZ = config.blockDimY = config.blockDimZ = 1
        config.sharedMemBytes = self._dynamic_shared.get(int(fn), 0)
        block_at = frame_type.config.offset + _LaunchConfig.blockDimX.offset
        pack_block = struct.Struct("@I").pack_into  # range-checked as the grid is
        if int(fn) in self._programmatic:
            frame.attribute.id, frame.attribute.value = _PROGRAMMATIC_SERIALIZATION, 1
            config.attrs, config.numAttrs = base + frame_type.attribute.offset, 1
        config_address = ctypes.c_void_p(base + frame_type.config.offset)
        params = ctypes.c_void_p(ctypes.addressof(pointers))
        function = ctypes.c_void_p(int(fn))
        pack = layout.pack_into
        owner, get_ident = threading.get_ident(), threading.get_ident
        last_stream = last_block = None

        def launch(grid: int, block: int, stream, args: tuple, types_: tuple) -> None:
            nonlocal last_stream, last_block
            if (types_ is not types and types_ != types) or get_ident() != owner:
                self.launch(fn, grid, block, stream, args, types_)
                return
            try:
                pack(frame, 0, *args, grid)
                if block is not last_block:
                    pack_block(frame, block_at, block)
                    last_block = block
            except struct.error:  # None pointers, ints to wrap, dims out of range: as `launch` does
                last_block = None  # a refused pack leaves its bytes zeroed
                self.launch(fn, grid, block, stream, args, types_)
                return
            if stream is not last_stream:
                config.hStream, last_stream = int(stream), stream
            err = launch_ex(config_address, function, params, None)
            if err:
                self._raise_launch(err)

        # what the addresses above point into (mypy has no model of a function's attributes)
        launch.keep = (frame, pointers)  # type: ignore[attr-defined]
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

    def blas_available(self) -> bool:
        """Whether `gemm` can run: nvmath-python imports and finds the cuBLAS library."""
        try:
            _cublas().get_cudart_version()
        except Exception:  # noqa: BLE001  (ImportError, or the library or driver not found)
            return False
        return True

    def _blas_handle(self, ordinal: int, stream) -> int:
        """The device's cuBLAS handle (made in its primary context, current here), bound to
        `stream` so that its GEMMs are ordered with our kernels, and given BLAS_WORKSPACE bytes
        of workspace."""
        cublas = _cublas()
        handle = self._blas_handles.get(ordinal)
        if handle is None:
            handle = self._blas_handles[ordinal] = cublas.create()
            self._blas_math[ordinal] = _MATH_DEFAULT
            self._blas_streams[ordinal] = None
        if self._blas_streams[ordinal] != int(stream):
            cublas.set_stream(handle, int(stream))
            self._blas_streams[ordinal] = int(stream)
            if BLAS_WORKSPACE:  # set_stream has put the handle back on cuBLAS's own workspace
                workspace = self._blas_workspaces.get(ordinal)
                if workspace is None:
                    workspace = self._blas_workspaces[ordinal] = self.alloc(BLAS_WORKSPACE, stream)
                cublas.set_workspace(handle, workspace, BLAS_WORKSPACE)
        return handle

    def _set_math(self, ordinal: int, handle: int, mode: int) -> None:
        """Set the handle's math mode where it differs (a new handle's is the default)."""
        if self._blas_math.get(ordinal, _MATH_DEFAULT) != mode:
            _cublas().set_math_mode(handle, mode)
            self._blas_math[ordinal] = mode

    def _capture_gemm(self, shape: tuple, args: tuple) -> Any:
        """The GEMM of `args` as a graph (runtime/gpu/blas_graphs.py): recorded on the device's
        capture stream, the handle bound to it meanwhile (and given the workspace again), then
        to the device's stream again; None where it fails (last_capture_failure says why)."""
        ordinal, cublas = shape[0], _cublas()
        stream = self._blas_streams[ordinal]
        try:
            capture = self._capture_streams.get(ordinal)
            if capture is None:
                capture = self._capture_streams[ordinal] = self.create_stream()
            self._blas_handle(ordinal, capture)
            try:
                return self.capture_graph(capture, lambda: cublas.gemm_strided_batched_ex(*args))
            finally:
                self._blas_handle(ordinal, stream)
        except Exception as exc:  # noqa: BLE001  (a GEMM cuBLAS cannot record: it is called as ever)
            self.last_capture_failure = f"{type(exc).__name__}: {exc}"
            return None

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
        """Column-major strided-batched GEMM on our stream, through cuBLAS (nvmath-python's
        binding of cublasGemmStridedBatchedEx). f32 computes in f32 (no TF32), as the cpu, and
        the half types accumulate in f32, their split-K sums too; unless `reduced`
        (_REDUCED_TYPES)."""
        try:
            cublas = _cublas()
        except ImportError:
            raise BackendUnavailable(
                self.name, "matmul needs cuBLAS through nvmath-python (pip install 'opgen[gpu]')"
            ) from None
        dtype = np.dtype(dtype)
        data, compute, scalar = _GEMM_TYPES[dtype]
        if reduced and dtype in _REDUCED_TYPES:
            compute, scalar = _REDUCED_TYPES[dtype]
        one, zero = _SCALARS[scalar]
        with self._blas_lock:  # a capture rebinds the handle: no other thread's GEMM meanwhile
            try:
                handle = self._blas_handle(ordinal, stream)
                if data in _HALF_TYPES:
                    self._set_math(ordinal, handle, _MATH_DEFAULT if reduced else _MATH_F32_REDUCTIONS)
                args = (
                    handle,
                    int(trans_a),
                    int(trans_b),
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
                    -1,
                )
                if blas_graphs.ENABLED:
                    strides = (lda, stride_a, ldb, stride_b, ldc, stride_c, batch)
                    shape = (ordinal, self._blas_math.get(ordinal), args[1:7], strides, data, compute)
                    if self.gemm_graphs.run(shape, (a, b, c), int(stream), args):
                        return
                cublas.gemm_strided_batched_ex(*args)
            except cublas.cuBLASError as exc:
                raise GpuError(self.name, "cublasGemmStridedBatchedEx", str(exc)) from None


_driver = CudaDriver()
_rt = GpuRuntime(_driver)
_rt.vendor_nn = Cudnn(_rt)  # convolutions and attention through cuDNN where it loads
export(_rt)  # the import below binds the runtime functions the generated arms call to _rt
from runtime.gpu.exports import *  # noqa: E402, F403  (runtime/gpu/exports.py; `gen parity` reads them there)


def comm_world(timeout: float):
    """Collectives through NCCL (runtime/comm/nccl.py): every process of the launch, on the device
    of its local rank."""
    from runtime.comm import gpu as comm_gpu, nccl  # noqa: PLC0415  (loaded with the first Comm)

    lib = nccl.library()
    cu = _driver_api()
    _driver._call("cuInit", cu.cuInit(0))
    count = _driver._call("cuDeviceGetCount", cu.cuDeviceGetCount())
    return comm_gpu.GpuComm.world(_rt, lib, timeout, int(count), _driver)


from runtime.comm.calls import *  # noqa: E402, F403  (comm_<op>: the generated Comm's arms, forwarded to GpuComm)

# The CUDA Array Interface is CUDA's (runtime/gpu/interop.py).
cuda_array_interface = functools.partial(gpu_interop.cuda_array_interface, _rt)
from_cuda_array_interface = functools.partial(gpu_interop.from_cuda_array_interface, _rt)

# The generated launch tables come with the backend's runtime, as a library's kernel tables come
# with its import: the first op on a device pays for its own kernel, not for importing every
# entry point's wrapper (bench/results/NOTES.md, "First calls and precision modes").
importlib.import_module("generated.kernels_hip")

"""The vendor layer of the GPU runtime: what a Driver gives, the part of it written once for
both vendors (StreamDriver, over a few primitives of each binding), and the error every driver
or compiler call raises. A vendor module (runtime/cuda.py, runtime/rocm.py) is its driver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import numpy as np

from runtime.errors import OpgenError


class GpuError(OpgenError, RuntimeError):
    """A driver or compiler call failed; names the call (or kernel) and the backend."""

    def __init__(self, backend: str, call: str, detail: str) -> None:
        self.backend, self.call, self.detail = backend, call, detail
        super().__init__(f"{backend}: {call} failed: {detail}")


class Driver(Protocol):
    """The vendor layer. Pointers are ints; `stream(ordinal)` is the device's op stream."""

    name: str
    # interop (runtime/gpu/interop.py): DLPack's device type (kDLCUDA / kDLROCM) and what its
    # `stream` of None means (CUDA's legacy default stream 1, HIP's null stream 0)
    dlpack_device_type: int
    dlpack_default_stream: int

    def availability(self) -> str | None: ...
    def arch(self, ordinal: int) -> str: ...
    def multiprocessors(self, ordinal: int) -> int: ...
    def shared_per_block(self, ordinal: int) -> int: ...  # bytes of shared memory a block may have
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
    def stream_id(self, stream: Any) -> int: ...
    def wait(self, waiter: Any, producer: Any) -> None: ...
    def blas_available(self) -> bool: ...
    def gemm(
        self,
        ordinal: int,
        stream: Any,
        dtype: np.dtype,
        trans_a: bool,
        trans_b: bool,
        m: int,
        n: int,
        k: int,
        a: int,
        lda: int,
        stride_a: int,
        b: int,
        ldb: int,
        stride_b: int,
        c: int,
        ldc: int,
        stride_c: int,
        batch: int,
        *,
        reduced: bool = False,
    ) -> None: ...

    # `reduced`: the GEMM may compute in reduced precision (runtime/gpu/switches.py says how
    # much for each dtype); off, f32 computes in f32 and the half types accumulate in f32.


class PreparingDriver(Driver, Protocol):
    """A driver that prepares each function's launch once (runtime/cuda.py's): GpuRuntime
    looks `launcher` up with getattr, and a driver without it launches through `launch`."""

    def launcher(self, fn: Any, types: tuple) -> Callable[[int, int, Any, tuple, tuple], None]: ...


class ArrayInterfaceDriver(Driver, Protocol):
    """A driver that finds the device of a pointer (runtime/cuda.py's): the CUDA Array
    Interface gives a pointer alone, and runtime/cuda.py alone binds it."""

    def pointer_device(self, ptr: int) -> int: ...


class GraphDriver(Driver, Protocol):
    """A driver that records a stream's work as a graph and replays it (runtime/cuda.py's):
    runtime/gpu/cudnn.py looks `capture_graph` up with getattr, and runs every call directly
    where a driver has none."""

    def capture_graph(self, stream: Any, record: Callable[[], None]) -> Any: ...
    def graph_launcher(self, graph: Any) -> Callable[[int], None]: ...
    def destroy_graph(self, graph: Any) -> None: ...


# "Not ready" of a stream or event query: CUDA_ERROR_NOT_READY and hipErrorNotReady are both 600.
NOT_READY = 600


class DriverCalls(NamedTuple):
    """The names, in a vendor's Python binding (cuda-python's driver module, hip-python's hip),
    of the calls that both spell alike but for the name: same arguments, and each returns
    (error, *values). StreamDriver makes them; a vendor's driver names them."""

    alloc: str  # (nbytes, stream) -> ptr: stream-ordered, from the device's pool
    free: str  # (ptr, stream)
    upload: str  # (device dst, host src address, nbytes, stream)
    download: str  # (host dst address, device src, nbytes, stream)
    copy: str  # (device dst, device src, nbytes, stream)
    memset: str  # (ptr, byte, nbytes, stream)
    stream_synchronize: str  # (stream)
    stream_wait_event: str  # (stream, event, flags 0)
    event_record: str  # (event, stream)
    event_destroy: str  # (event)
    stream_query: str  # (stream): success once everything queued on it has run, else not-ready
    event_query: str  # (event): likewise, for the work recorded before the event
    module_load: str  # (image) -> module
    module_function: str  # (module, name as bytes) -> function


class StreamDriver:
    """The part of a Driver written once for both vendors, over a few primitives of the vendor's
    (runtime/cuda.py's CudaDriver, runtime/rocm.py's HipDriver): one non-blocking stream per
    device, memory and copies on it, events, peer copies, module loading. A vendor's driver
    gives `name`, `calls` (its binding's names of DriverCalls), and the primitives below whose
    arguments or flags differ between bindings; it adds what is its own (activation, the
    compiler, launches, the BLAS)."""

    name: str
    calls: DriverCalls

    def __init__(self) -> None:
        self._streams: dict[int, Any] = {}

    # -- the vendor's primitives ------------------------------------------------------------
    def api(self) -> Any:
        """The binding module the names of `calls` are looked up in (loaded on first use)."""
        raise NotImplementedError

    def error_name(self, err: Any) -> str:
        """The name of an error code, for GpuError."""
        raise NotImplementedError

    def create_stream(self) -> Any:
        """A new non-blocking stream on the current device."""
        raise NotImplementedError

    def create_event(self) -> Any:
        """A new event without timing on the current device."""
        raise NotImplementedError

    def copy_peer(self, dst: int, dst_ordinal: int, src: int, src_ordinal: int, nbytes: int, stream: Any) -> bool:
        """Queue a copy between two devices' memory on `stream`; False where the two devices
        cannot copy peer to peer (any other failure raises GpuError)."""
        raise NotImplementedError

    def activate(self, ordinal: int) -> None:
        """Make the device current; BackendUnavailable, saying why, where it cannot run."""
        raise NotImplementedError

    # -- written once -----------------------------------------------------------------------
    def _call(self, what: str, result: Any) -> Any:
        """The values of a binding call's `(error, *values)` result; GpuError on an error."""
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise GpuError(self.name, what, self.error_name(err))
        return rest[0] if len(rest) == 1 else rest

    def stream_done(self, stream: Any) -> bool:
        """Whether `stream` has run everything queued on it (GpuError on a failure), without
        waiting: what the collectives poll while they keep buffers alive."""
        return self._done(self.calls.stream_query, stream)

    def event_done(self, event: Any) -> bool:
        """Whether the work recorded before `event` has run (GpuError on a failure)."""
        return self._done(self.calls.event_query, event)

    def _done(self, call: str, handle: Any) -> bool:
        result = self._fn(call)(handle)
        if int(result[0] if isinstance(result, tuple) else result) == NOT_READY:
            return False
        self._call(call, result)
        return True

    def _fn(self, call: str) -> Any:
        return getattr(self.api(), call)

    def stream(self, ordinal: int) -> Any:
        stream = self._streams.get(ordinal)
        if stream is None:
            stream = self._streams[ordinal] = self.create_stream()
        return stream

    def alloc(self, nbytes: int, stream: Any) -> int:
        err, ptr = getattr(self.api(), self.calls.alloc)(nbytes, stream)
        if int(err):  # the call's name is formatted only on failure: allocations are hot
            self._call(f"{self.calls.alloc}({nbytes})", (err,))
        return int(ptr)

    def free(self, ptr: int, stream: Any) -> None:
        try:  # noqa: SIM105  (contextlib.suppress costs more, on every large buffer dropped)
            getattr(self.api(), self.calls.free)(ptr, stream)
        except Exception:  # noqa: BLE001  (at interpreter exit the driver may be gone)
            pass

    def upload(self, ptr: int, host: np.ndarray, stream: Any) -> None:
        calls = self.calls
        self._call(calls.upload, self._fn(calls.upload)(ptr, host.ctypes.data, host.nbytes, stream))

    def download(self, host: np.ndarray, ptr: int, stream: Any) -> None:
        calls = self.calls
        self._call(calls.download, self._fn(calls.download)(host.ctypes.data, ptr, host.nbytes, stream))
        self._call(calls.stream_synchronize, self._fn(calls.stream_synchronize)(stream))

    def copy(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        self._call(self.calls.copy, self._fn(self.calls.copy)(dst, src, nbytes, stream))

    def memset(self, ptr: int, nbytes: int, stream: Any, byte: int = 0) -> None:
        self._call(self.calls.memset, self._fn(self.calls.memset)(ptr, byte, nbytes, stream))

    def synchronize(self, ordinal: int) -> None:
        calls = self.calls
        self._call(calls.stream_synchronize, self._fn(calls.stream_synchronize)(self.stream(ordinal)))

    def load(self, image: bytes) -> Any:
        return self._call(self.calls.module_load, self._fn(self.calls.module_load)(image))

    def function(self, module: Any, name: str) -> Any:
        call = self.calls.module_function
        return self._call(f"{call}({name})", self._fn(call)(module, name.encode()))

    def _event(self, stream: Any) -> Any:
        """A fresh event (on the current device) recorded on `stream`."""
        event = self.create_event()
        try:
            self._call(self.calls.event_record, self._fn(self.calls.event_record)(event, stream))
        except GpuError:
            self._fn(self.calls.event_destroy)(event)
            raise
        return event

    def _wait_event(self, waiter: Any, event: Any) -> None:
        self._call(self.calls.stream_wait_event, self._fn(self.calls.stream_wait_event)(waiter, event, 0))

    def wait(self, waiter: Any, producer: Any) -> None:
        """`waiter` (a stream, or a foreign stream's int handle) waits for the work queued
        so far on `producer`; both on the current device (runtime/gpu/interop.py)."""
        event = self._event(producer)
        try:
            self._wait_event(waiter, event)
        finally:
            self._fn(self.calls.event_destroy)(event)  # released once the wait is done

    def peer_copy(self, dst: int, dst_ordinal: int, src: int, src_ordinal: int, nbytes: int, stream: Any) -> bool:
        """Copy between two devices' memory on `stream` (the destination's), after the work
        queued on the source's stream; the source's stream waits for the copy in turn, so
        that a free or a write queued there later cannot overtake it. False where the two
        devices cannot copy peer to peer (the runtime then goes through host memory)."""
        destroy = self._fn(self.calls.event_destroy)
        self.activate(src_ordinal)  # events are recorded on their own device's streams
        src_stream = self.stream(src_ordinal)
        ready = self._event(src_stream)
        self.activate(dst_ordinal)
        try:
            self._wait_event(stream, ready)
            if not self.copy_peer(dst, dst_ordinal, src, src_ordinal, nbytes, stream):
                return False
            done = self._event(stream)
            try:
                self._wait_event(src_stream, done)  # across devices
            finally:
                destroy(done)  # released once the waits on it are done
        finally:
            destroy(ready)
        return True

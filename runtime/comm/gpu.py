"""GPU collectives, written once for NCCL (cuda, runtime/comm/nccl.py) and RCCL (rocm,
runtime/comm/rccl.py): a GpuComm over one library adapter and the backend's GpuRuntime.

- Bootstrap: the process group from MPI (runtime/comm/host.py); rank 0's unique id broadcast
  over MPI; the device is the local rank's, modulo the devices this process sees.
- Stream-ordered: every call is enqueued on the runtime's compute stream of the device, the
  stream its storage ops run on, with no host synchronization. The runtime frees buffers in
  stream order on that stream, and the communicator also holds every buffer it was given until
  an event recorded after the call has completed (in batches, so an event costs a call once
  every KEEP_BATCH calls).
- Grouped: all_to_all and send_recv are one group of sends and receives.
- Faults: synchronize() waits within the timeout, asking the library for an asynchronous error
  meanwhile; on timeout or error the communicator is aborted (ncclCommAbort) and the error is
  typed. A call stuck on the host (a peer that never connects) is aborted by a watchdog thread
  after the timeout, which makes the call return with an error."""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from typing import Any

from runtime.comm.host import MAX_SLEEP, HostGroup
from runtime.errors import CollectiveAborted, CollectiveTimeout

KEEP_BATCH = 64  # calls whose buffers one event retires


class GpuComm:
    def __init__(self, rt: Any, lib: Any, group: HostGroup, ordinal: int, handle: Any, query: Any) -> None:
        self.rt, self.lib, self.group = rt, lib, group
        self.rank, self.size, self.local_rank = group.rank, group.size, group.local_rank
        self.ordinal = ordinal
        self.handle = handle
        self.backend = group.backend
        self.query = query  # .stream_done(stream), .event_done(event): the driver's (StreamDriver)
        rt.driver.activate(ordinal)
        self.stream = rt.driver.stream(ordinal)
        self.stream_arg = lib.stream(self.stream)
        self.broken: str | None = None
        self.busy_since = 0.0  # monotonic time a library call began; 0 between calls
        self.busy_op = ""
        self._held: list = []
        self._batches: deque = deque()
        _Watchdog.watch(self)

    @classmethod
    def world(cls, rt: Any, lib: Any, timeout: float, device_count: int, query: Any) -> GpuComm:
        group = HostGroup.world(timeout, lib.backend)
        return cls.over(rt, lib, group, group.local_rank % max(device_count, 1), query)

    @classmethod
    def over(cls, rt: Any, lib: Any, group: HostGroup, ordinal: int, query: Any) -> GpuComm:
        """A communicator of the library over the MPI group's ranks: rank 0's unique id to all."""
        uid = lib.unique_id() if group.rank == 0 else None
        uid = group.bcast_bytes("init", uid, lib.id_bytes)
        group.barrier("init")  # every rank alive, just before the library's own wait for them
        rt.driver.activate(ordinal)
        return cls(rt, lib, group, ordinal, lib.init_rank(group.size, uid, group.rank), query)

    # -- one library call ---------------------------------------------------------------------
    def _call(self, op: str, fn: Any, *args: Any) -> None:
        if self.broken is not None:
            raise CollectiveAborted(op, self.backend, self.rank, f"the communicator was aborted: {self.broken}")
        self.busy_op, self.busy_since = op, time.monotonic()
        result = fn(*args)
        self.busy_since = 0.0
        if result not in (0, self.lib.in_progress):
            self._failed(op, result)

    def _failed(self, op: str, result: int) -> None:
        timed_out = self.broken is not None and self.broken.startswith("timed out")
        text = self.lib.describe(result, self.handle)
        if timed_out:
            raise CollectiveTimeout(op, self.backend, self.rank, self.group.timeout)
        self._abort(f"{op}: {text}")
        raise CollectiveAborted(op, self.backend, self.rank, f"{self.lib.name}: {text}")

    def _abort(self, why: str) -> None:
        if self.broken is None:
            self.broken = why
            self.lib.abort(self.handle)

    def _keep(self, *buffers: Any) -> None:
        held = self._held
        held += buffers
        if len(held) >= KEEP_BATCH * 2:
            self._batches.append((self.rt.driver._event(self.stream), held))
            self._held = []
            destroy = self.rt.driver._fn(self.rt.driver.calls.event_destroy)
            while self._batches and self.query.event_done(self._batches[0][0]):
                destroy(self._batches.popleft()[0])

    def _empty(self, op: str) -> None:
        if self.broken is not None:
            raise CollectiveAborted(op, self.backend, self.rank, f"the communicator was aborted: {self.broken}")

    # -- the collectives ----------------------------------------------------------------------
    def all_reduce(self, send: Any, recv: Any, op: str) -> None:
        if not recv.size:  # nothing to move, on any rank (counts agree): no library call
            return self._empty("all_reduce")
        lib = self.lib
        self._call(
            "all_reduce",
            lib.all_reduce,
            send.ptr,
            recv.ptr,
            recv.size,
            lib.dtype(recv.dtype),
            lib.reduction(op),
            self.handle,
            self.stream_arg,
        )
        self._keep(send, recv)

    def all_gather(self, send: Any, recv: Any) -> None:
        if not send.size:  # nothing to move, on any rank (counts agree): no library call
            return self._empty("all_gather")
        lib = self.lib
        args = (send.ptr, recv.ptr, send.size, lib.dtype(send.dtype), self.handle, self.stream_arg)
        self._call("all_gather", lib.all_gather, *args)
        self._keep(send, recv)

    def reduce_scatter(self, send: Any, recv: Any, op: str) -> None:
        if not recv.size:  # nothing to move, on any rank (counts agree): no library call
            return self._empty("reduce_scatter")
        lib = self.lib
        dt, red = lib.dtype(recv.dtype), lib.reduction(op)
        self._call(
            "reduce_scatter", lib.reduce_scatter, send.ptr, recv.ptr, recv.size, dt, red, self.handle, self.stream_arg
        )
        self._keep(send, recv)

    def broadcast(self, buf: Any, root: int) -> None:
        if not buf.size:  # nothing to move, on any rank (counts agree): no library call
            return self._empty("broadcast")
        lib = self.lib
        args = (buf.ptr, buf.ptr, buf.size, lib.dtype(buf.dtype), root, self.handle, self.stream_arg)
        self._call("broadcast", lib.broadcast, *args)
        self._keep(buf)

    def reduce(self, send: Any, recv: Any, op: str, root: int) -> None:
        if not recv.size:  # nothing to move, on any rank (counts agree): no library call
            return self._empty("reduce")
        lib = self.lib
        dt, red = lib.dtype(recv.dtype), lib.reduction(op)
        self._call("reduce", lib.reduce, send.ptr, recv.ptr, recv.size, dt, red, root, self.handle, self.stream_arg)
        self._keep(send, recv)

    def all_to_all(self, send: Any, recv: Any) -> None:
        """One group: part j of send to rank j, part j of recv from rank j."""
        if not send.size:  # nothing to move, on any rank (counts agree): no library call
            return self._empty("all_to_all")
        lib, part = self.lib, send.size // self.size
        dt, step = lib.dtype(send.dtype), part * send.dtype.itemsize
        self._call("all_to_all", lib.group_start)
        for peer in range(self.size):
            self._call("all_to_all", lib.send, send.ptr + peer * step, part, dt, peer, self.handle, self.stream_arg)
            self._call("all_to_all", lib.recv, recv.ptr + peer * step, part, dt, peer, self.handle, self.stream_arg)
        self._call("all_to_all", lib.group_end)
        self._keep(send, recv)

    def send(self, buf: Any, peer: int) -> None:
        if not buf.size:  # nothing to move, on any rank (counts agree): no library call
            return self._empty("send")
        lib = self.lib
        self._call("send", lib.send, buf.ptr, buf.size, lib.dtype(buf.dtype), peer, self.handle, self.stream_arg)
        self._keep(buf)

    def recv(self, buf: Any, peer: int) -> None:
        if not buf.size:  # nothing to move, on any rank (counts agree): no library call
            return self._empty("recv")
        lib = self.lib
        self._call("recv", lib.recv, buf.ptr, buf.size, lib.dtype(buf.dtype), peer, self.handle, self.stream_arg)
        self._keep(buf)

    def send_recv(self, send: Any, dst: int, recv: Any, src: int) -> None:
        lib = self.lib
        if not send.size and not recv.size:
            return self._empty("send_recv")
        self._call("send_recv", lib.group_start)
        self._call("send_recv", lib.send, send.ptr, send.size, lib.dtype(send.dtype), dst, self.handle, self.stream_arg)
        self._call("send_recv", lib.recv, recv.ptr, recv.size, lib.dtype(recv.dtype), src, self.handle, self.stream_arg)
        self._call("send_recv", lib.group_end)
        self._keep(send, recv)

    # -- the communicator ---------------------------------------------------------------------
    def agree(self, op: str, facts: tuple) -> None:
        self.group.agree(op, facts)

    def barrier(self) -> None:
        """Every rank's earlier collectives done on its device, then the host barrier."""
        self.synchronize()
        self.group.barrier()

    def synchronize(self, op: str = "synchronize") -> None:
        """Until the stream has run every call, within the timeout; an asynchronous error or the
        timeout aborts the communicator and raises."""
        if self.broken is not None:
            raise CollectiveAborted(op, self.backend, self.rank, f"the communicator was aborted: {self.broken}")
        deadline = time.monotonic() + self.group.timeout
        sleep = 1e-6
        while not self.query.stream_done(self.stream):
            error = self.lib.async_error(self.handle)
            if error not in (0, self.lib.in_progress):
                self._failed(op, error)
            if time.monotonic() > deadline:
                self._abort(f"timed out in {op} after {self.group.timeout:g} s")
                raise CollectiveTimeout(op, self.backend, self.rank, self.group.timeout)
            time.sleep(sleep)
            sleep = min(sleep * 2, MAX_SLEEP)
        self._held = []
        destroy = self.rt.driver._fn(self.rt.driver.calls.event_destroy)
        while self._batches:
            destroy(self._batches.popleft()[0])

    def split(self, color: int, key: int) -> GpuComm:
        """The library's communicator of the MPI split's ranks (built from a fresh unique id, which
        works with every NCCL and RCCL that has MPI beside it)."""
        self.synchronize("split")
        return GpuComm.over(self.rt, self.lib, self.group.split(color, key), self.ordinal, self.query)


class _Watchdog:
    """One thread a process: aborts a communicator whose library call has been running on the host
    for longer than its timeout, so that the call returns (with an error) instead of hanging."""

    comms: weakref.WeakSet = weakref.WeakSet()
    thread: threading.Thread | None = None
    lock = threading.Lock()

    @classmethod
    def watch(cls, comm: GpuComm) -> None:
        with cls.lock:
            cls.comms.add(comm)
            if cls.thread is None:
                cls.thread = threading.Thread(target=cls.run, name="opgen-comm-watchdog", daemon=True)
                cls.thread.start()

    @classmethod
    def run(cls) -> None:
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            for comm in list(cls.comms):
                since = comm.busy_since
                if since and comm.broken is None and now - since > comm.group.timeout:
                    comm._abort(f"timed out in {comm.busy_op} after {comm.group.timeout:g} s")

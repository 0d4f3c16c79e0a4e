"""A recording fake of hip-python's `hip.rccl`, over the fake HIP of tests/gpu/fake_hip.py, so
that the rocm collectives (runtime/comm/rccl.py through runtime/comm/gpu.py) run with no AMD GPU.

It checks what hip-python and RCCL would refuse or misread: datatypes and reductions of
hip-python's enum types, counts as unsigned ints, device pointers inside live allocations of the
communicator's device (as many bytes as the count and datatype say), streams of that device,
ranks within the communicator, group calls balanced. Several ranks live in one process: each
collective runs, with numpy on the fake device memory, once every rank of the communicator has
called it; a send is delivered when its receive is posted (either order)."""

from __future__ import annotations

import ctypes
from collections import deque
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from tests.gpu.fake_hip import FakeHip, FakeHipError, Handle

rccl_enums = __import__("hip.rccl", fromlist=["rccl"])  # hip-python's enums (its library is never loaded)
_OK = rccl_enums.ncclResult_t.ncclSuccess
_NUMPY = {
    "ncclInt8": np.int8,
    "ncclUint8": np.uint8,
    "ncclInt32": np.int32,
    "ncclUint32": np.uint32,
    "ncclInt64": np.int64,
    "ncclUint64": np.uint64,
    "ncclFloat16": np.float16,
    "ncclFloat32": np.float32,
    "ncclFloat64": np.float64,
    "ncclBfloat16": ml_dtypes.bfloat16,
}


class UniqueId:
    """hip-python's ncclUniqueId: 128 bytes behind as_c_void_p()."""

    def __init__(self) -> None:
        self.buffer = ctypes.create_string_buffer(128)

    def as_c_void_p(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(ctypes.addressof(self.buffer))


@dataclass(eq=False)
class Clique:
    size: int
    members: dict = field(default_factory=dict)  # rank -> CommHandle
    pending: dict = field(default_factory=dict)  # rank -> deque of (name, args)
    mail: dict = field(default_factory=dict)  # (src, dst) -> deque of bytes
    posted: dict = field(default_factory=dict)  # (src, dst) -> deque of receive views


@dataclass(eq=False)
class CommHandle:
    clique: Clique
    rank: int
    device: int
    alive: bool = True


class FakeRccl:
    ncclDataType_t = rccl_enums.ncclDataType_t
    ncclRedOp_t = rccl_enums.ncclRedOp_t
    ncclResult_t = rccl_enums.ncclResult_t
    ncclUniqueId = UniqueId

    def __init__(self, hip: FakeHip) -> None:
        self.hip = hip
        self.calls: list = []
        self.cliques: dict[bytes, Clique] = {}
        self.group_depth = 0
        self.async_error = 0  # what ncclCommGetAsyncError answers

    # -- checks -----------------------------------------------------------------------------
    def _comm(self, what: str, comm) -> CommHandle:
        if not isinstance(comm, CommHandle) or not comm.alive:
            raise FakeHipError(f"{what}: {comm!r} is not a live communicator")
        return comm

    def _args(self, what: str, comm, ptr, count, datatype, stream) -> np.ndarray:
        c = self._comm(what, comm)
        if not isinstance(datatype, rccl_enums.ncclDataType_t):
            raise FakeHipError(f"{what}: {datatype!r} is not an ncclDataType_t")
        self.hip._uint(f"{what} count", count)
        self.hip._stream(what, stream, c.device)
        dtype = np.dtype(_NUMPY[datatype.name])
        raw = self.hip.memory(what, ptr, count * dtype.itemsize, c.device) if count else np.zeros(0, np.uint8)
        return raw.view(dtype)

    def _rank(self, what: str, comm: CommHandle, peer) -> None:
        if not isinstance(peer, int) or not 0 <= peer < comm.clique.size:
            raise FakeHipError(f"{what}: rank {peer!r} is not in a communicator of {comm.clique.size}")

    # -- the communicator -------------------------------------------------------------------
    def ncclGetVersion(self):
        return _OK, 22105

    def ncclGetUniqueId(self, uid):
        ctypes.memmove(uid.as_c_void_p(), f"clique-{len(self.cliques)}".encode().ljust(128, b"\0"), 128)
        self.calls.append(("ncclGetUniqueId",))
        return (_OK,)

    def ncclCommInitRank(self, nranks, commid, rank):
        if not isinstance(commid, UniqueId):
            raise FakeHipError("ncclCommInitRank: the id is not an ncclUniqueId")
        key = ctypes.string_at(commid.as_c_void_p(), 128)
        clique = self.cliques.setdefault(key, Clique(nranks))
        if clique.size != nranks or rank in clique.members or not 0 <= rank < nranks:
            raise FakeHipError(f"ncclCommInitRank: rank {rank} of {nranks} does not fit its clique")
        handle = clique.members[rank] = CommHandle(clique, rank, self.hip.current)
        clique.pending[rank] = deque()
        self.calls.append(("ncclCommInitRank", nranks, rank, self.hip.current))
        return _OK, handle

    def ncclCommGetAsyncError(self, comm):
        self._comm("ncclCommGetAsyncError", comm)
        return _OK, self.ncclResult_t(self.async_error)

    def ncclCommAbort(self, comm):
        self._comm("ncclCommAbort", comm).alive = False
        self.calls.append(("ncclCommAbort", comm.rank))
        return (_OK,)

    def ncclCommDestroy(self, comm):
        return self.ncclCommAbort(comm)

    def ncclGetErrorString(self, result):
        return f"fake {result.name}".encode()

    def ncclGroupStart(self):
        self.group_depth += 1
        self.calls.append(("ncclGroupStart",))
        return (_OK,)

    def ncclGroupEnd(self):
        if self.group_depth == 0:
            raise FakeHipError("ncclGroupEnd without ncclGroupStart")
        self.group_depth -= 1
        self.calls.append(("ncclGroupEnd",))
        return (_OK,)

    # -- collectives: each runs once every rank has called it ------------------------------------
    def _collective(self, name, comm, **args):
        if self.group_depth:
            raise FakeHipError(f"{name}: a collective inside a group of sends and receives")
        self.calls.append((name, comm.rank, {k: v for k, v in args.items() if not isinstance(v, np.ndarray)}))
        clique = comm.clique
        clique.pending[comm.rank].append((name, args))
        if all(clique.pending[r] for r in range(clique.size)):
            calls = [clique.pending[r].popleft() for r in range(clique.size)]
            if len({(c[0], c[1].get("op"), c[1].get("root")) for c in calls}) != 1:
                raise FakeHipError(f"ranks called different collectives: {[c[0] for c in calls]}")
            getattr(self, f"_run_{name}")([c[1] for c in calls])

    @staticmethod
    def _reduce(arrays, op):
        wide = [a.astype(np.float32) if a.dtype.itemsize == 2 and a.dtype.kind == "f" else a for a in arrays]
        wide = [a.astype(np.float32) if a.dtype == ml_dtypes.bfloat16 else a for a in wide]
        match op.name:
            case "ncclSum":
                out = np.sum(wide, axis=0, dtype=wide[0].dtype)
            case "ncclProd":
                out = np.prod(wide, axis=0, dtype=wide[0].dtype)
            case "ncclMax":
                out = np.max(wide, axis=0)
            case "ncclMin":
                out = np.min(wide, axis=0)
            case "ncclAvg":
                out = np.sum(wide, axis=0, dtype=wide[0].dtype) / len(wide)
            case _:
                raise FakeHipError(f"unknown reduction {op!r}")
        return np.asarray(out).astype(arrays[0].dtype)

    def _op(self, what, op):
        if not isinstance(op, rccl_enums.ncclRedOp_t):
            raise FakeHipError(f"{what}: {op!r} is not an ncclRedOp_t")
        return op

    def ncclAllReduce(self, sendbuff, recvbuff, count, datatype, op, comm, stream):
        c = self._comm("ncclAllReduce", comm)
        send = self._args("ncclAllReduce", c, sendbuff, count, datatype, stream).copy()
        recv = self._args("ncclAllReduce", c, recvbuff, count, datatype, stream)
        self._collective("all_reduce", c, send=send, recv=recv, op=self._op("ncclAllReduce", op))
        return (_OK,)

    def _run_all_reduce(self, calls):
        out = self._reduce([c["send"] for c in calls], calls[0]["op"])
        for c in calls:
            c["recv"][...] = out

    def ncclAllGather(self, sendbuff, recvbuff, sendcount, datatype, comm, stream):
        c = self._comm("ncclAllGather", comm)
        send = self._args("ncclAllGather", c, sendbuff, sendcount, datatype, stream).copy()
        recv = self._args("ncclAllGather", c, recvbuff, sendcount * c.clique.size, datatype, stream)
        self._collective("all_gather", c, send=send, recv=recv)
        return (_OK,)

    def _run_all_gather(self, calls):
        out = np.concatenate([c["send"] for c in calls])
        for c in calls:
            c["recv"][...] = out

    def ncclReduceScatter(self, sendbuff, recvbuff, recvcount, datatype, op, comm, stream):
        c = self._comm("ncclReduceScatter", comm)
        send = self._args("ncclReduceScatter", c, sendbuff, recvcount * c.clique.size, datatype, stream).copy()
        recv = self._args("ncclReduceScatter", c, recvbuff, recvcount, datatype, stream)
        self._collective(
            "reduce_scatter", c, send=send, recv=recv, op=self._op("ncclReduceScatter", op), count=recvcount
        )
        return (_OK,)

    def _run_reduce_scatter(self, calls):
        out = self._reduce([c["send"] for c in calls], calls[0]["op"])
        n = calls[0]["count"]
        for rank, c in enumerate(calls):
            c["recv"][...] = out[rank * n : (rank + 1) * n]

    def ncclBroadcast(self, sendbuff, recvbuff, count, datatype, root, comm, stream):
        c = self._comm("ncclBroadcast", comm)
        self._rank("ncclBroadcast", c, root)
        send = self._args("ncclBroadcast", c, sendbuff, count, datatype, stream).copy()
        recv = self._args("ncclBroadcast", c, recvbuff, count, datatype, stream)
        self._collective("broadcast", c, send=send, recv=recv, root=root)
        return (_OK,)

    def _run_broadcast(self, calls):
        out = calls[calls[0]["root"]]["send"]
        for c in calls:
            c["recv"][...] = out

    def ncclReduce(self, sendbuff, recvbuff, count, datatype, op, root, comm, stream):
        c = self._comm("ncclReduce", comm)
        self._rank("ncclReduce", c, root)
        send = self._args("ncclReduce", c, sendbuff, count, datatype, stream).copy()
        recv = self._args("ncclReduce", c, recvbuff, count, datatype, stream)
        self._collective("reduce", c, send=send, recv=recv, op=self._op("ncclReduce", op), root=root)
        return (_OK,)

    def _run_reduce(self, calls):
        root = calls[0]["root"]
        calls[root]["recv"][...] = self._reduce([c["send"] for c in calls], calls[0]["op"])

    # -- point to point -------------------------------------------------------------------------
    def ncclSend(self, sendbuff, count, datatype, peer, comm, stream):
        c = self._comm("ncclSend", comm)
        self._rank("ncclSend", c, peer)
        data = self._args("ncclSend", c, sendbuff, count, datatype, stream).copy()
        self.calls.append(("ncclSend", c.rank, peer, count))
        c.clique.mail.setdefault((c.rank, peer), deque()).append(data)
        self._deliver(c.clique, c.rank, peer)
        return (_OK,)

    def ncclRecv(self, recvbuff, count, datatype, peer, comm, stream):
        c = self._comm("ncclRecv", comm)
        self._rank("ncclRecv", c, peer)
        view = self._args("ncclRecv", c, recvbuff, count, datatype, stream)
        self.calls.append(("ncclRecv", c.rank, peer, count))
        c.clique.posted.setdefault((peer, c.rank), deque()).append(view)
        self._deliver(c.clique, peer, c.rank)
        return (_OK,)

    @staticmethod
    def _deliver(clique, src, dst):
        mail, posted = clique.mail.get((src, dst)), clique.posted.get((src, dst))
        while mail and posted:
            data, view = mail.popleft(), posted.popleft()
            if data.size != view.size or data.dtype != view.dtype:
                raise FakeHipError(f"rank {src} sent {data.size} {data.dtype} to a receive of {view.size} {view.dtype}")
            view[...] = data

    def undelivered(self) -> int:
        return sum(len(q) for cl in self.cliques.values() for q in (*cl.mail.values(), *cl.posted.values()))


def hip_queries(hip: FakeHip) -> None:
    """hipStreamQuery / hipEventQuery on the fake: done at once, unless `hip.stalled` is set."""

    def query(what):
        def call(handle):
            if not isinstance(handle, Handle) or not handle.alive:
                raise FakeHipError(f"{what}: {handle!r} is not a live handle")
            if getattr(hip, "stalled", False):
                return (hip.hipError_t.hipErrorNotReady,)
            return (hip.hipError_t.hipSuccess,)

        return call

    hip.hipStreamQuery = query("hipStreamQuery")  # type: ignore[attr-defined]
    hip.hipEventQuery = query("hipEventQuery")  # type: ignore[attr-defined]

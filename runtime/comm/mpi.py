"""cpu collectives: MPI through mpi4py, on the cpu backend's numpy buffers.

Every call is MPI's nonblocking form, waited on within the communicator's timeout
(runtime/comm/host.py). Buffers travel as bytes where nothing is reduced; reductions use MPI's
own types. MPI has no 16-bit float types: f16 and bf16 are reduced in f32 and rounded back once,
as the numpy reference computes them."""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.comm.host import HostGroup, mpi

BACKEND = "cpu"
_WIDE = {"float16": np.float32, "bfloat16": np.float32}  # reduced in f32


def _mpi_type(dtype: np.dtype) -> Any:
    MPI = mpi()
    return {
        "uint8": MPI.UINT8_T,
        "uint32": MPI.UINT32_T,
        "int64": MPI.INT64_T,
        "float32": MPI.FLOAT,
        "float64": MPI.DOUBLE,
    }[dtype.name]


def _mpi_op(op: str) -> Any:
    MPI = mpi()
    return {"sum": MPI.SUM, "avg": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}[op]


def _bytes(buf: np.ndarray) -> list:
    return [buf.view(np.uint8), mpi().BYTE]


class MpiComm:
    """An MPI communicator over numpy buffers (the cpu backend's storage)."""

    ordinal = 0

    def __init__(self, group: HostGroup) -> None:
        self.group = group
        self.rank, self.size, self.local_rank = group.rank, group.size, group.local_rank

    # -- reductions -------------------------------------------------------------------------
    def _reduced(self, op_name: str, send: np.ndarray, recv: np.ndarray, op: str, start, write: bool = True) -> None:
        """Run `start(send, recv, mpi_type, mpi_op)` (a nonblocking reduction) on buffers MPI can
        reduce (16-bit floats widened to f32), then write recv back (and divide, for avg)."""
        self.group.usable(op_name)
        wide = _WIDE.get(send.dtype.name)
        s = send.astype(wide) if wide else send
        r = np.empty(recv.shape, wide) if wide else recv
        if send is recv and not wide:
            s = mpi().IN_PLACE
        self.group.wait(op_name, start(s, r, _mpi_type(r.dtype), _mpi_op(op)))
        if not write:
            return
        if op == "avg":
            np.divide(r, self.size, out=r, casting="unsafe")
        if wide:
            recv[...] = r.astype(recv.dtype)

    def all_reduce(self, send: np.ndarray, recv: np.ndarray, op: str) -> None:
        def start(s, r, t, o):
            return self.group.comm.Iallreduce(s if s is mpi().IN_PLACE else [s, t], [r, t], o)

        self._reduced("all_reduce", send, recv, op, start)

    def reduce_scatter(self, send: np.ndarray, recv: np.ndarray, op: str) -> None:
        def start(s, r, t, o):
            return self.group.comm.Ireduce_scatter_block([s, t], [r, t], o)

        self._reduced("reduce_scatter", send, recv, op, start)

    def reduce(self, send: np.ndarray, recv: np.ndarray, op: str, root: int) -> None:
        at_root = self.rank == root  # MPI writes root's recv alone; the others' is left as it was

        def start(s, r, t, o):
            if s is mpi().IN_PLACE and not at_root:  # IN_PLACE is root's alone
                s = send
            sent = s if s is mpi().IN_PLACE else [s, t]
            return self.group.comm.Ireduce(sent, [r, t] if at_root else None, o, root=root)

        self._reduced("reduce", send, recv, op, start, write=at_root)

    # -- data movement ----------------------------------------------------------------------
    def all_gather(self, send: np.ndarray, recv: np.ndarray) -> None:
        self.group.usable("all_gather")
        self.group.wait("all_gather", self.group.comm.Iallgather(_bytes(send), _bytes(recv)))

    def broadcast(self, buf: np.ndarray, root: int) -> None:
        self.group.usable("broadcast")
        self.group.wait("broadcast", self.group.comm.Ibcast(_bytes(buf), root=root))

    def all_to_all(self, send: np.ndarray, recv: np.ndarray) -> None:
        self.group.usable("all_to_all")
        self.group.wait("all_to_all", self.group.comm.Ialltoall(_bytes(send), _bytes(recv)))

    def send(self, buf: np.ndarray, peer: int) -> None:
        self.group.usable("send")
        self.group.wait("send", self.group.comm.Isend(_bytes(buf), dest=peer))

    def recv(self, buf: np.ndarray, peer: int) -> None:
        self.group.usable("recv")
        self.group.wait("recv", self.group.comm.Irecv(_bytes(buf), source=peer))

    def send_recv(self, send: np.ndarray, dst: int, recv: np.ndarray, src: int) -> None:
        self.group.usable("send_recv")
        requests = [self.group.comm.Irecv(_bytes(recv), source=src), self.group.comm.Isend(_bytes(send), dest=dst)]
        self.group.wait_all("send_recv", requests)

    # -- the communicator -------------------------------------------------------------------
    def agree(self, op: str, facts: tuple) -> None:
        self.group.agree(op, facts)

    def barrier(self) -> None:
        self.group.barrier()

    def synchronize(self) -> None:
        """Every call has completed when it returns: nothing is left to wait for."""
        self.group.usable("synchronize")

    def split(self, color: int, key: int) -> MpiComm:
        self.group.usable("split")
        return MpiComm(self.group.split(color, key))


def comm_world(timeout: float) -> MpiComm:
    return MpiComm(HostGroup.world(timeout, BACKEND))

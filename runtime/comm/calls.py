"""The runtime functions generated/comm.py's arms call, written once for every engine: `comm` is
the engine's communicator (MpiComm, NcclComm, RcclComm), the storages the backend's buffers,
already checked (device, dtype, counts, ranks) by the generated method."""

from __future__ import annotations

from typing import Any


def comm_count(buf: Any) -> int:
    """Elements of a backend buffer (a numpy array, a GpuBuffer): the checks' counts."""
    return int(buf.size)


def comm_agree(comm: Any, op: str, facts: tuple) -> None:
    comm.agree(op, facts)


def comm_all_reduce(comm: Any, send: Any, recv: Any, op: str) -> None:
    comm.all_reduce(send, recv, op)


def comm_all_gather(comm: Any, send: Any, recv: Any) -> None:
    comm.all_gather(send, recv)


def comm_reduce_scatter(comm: Any, send: Any, recv: Any, op: str) -> None:
    comm.reduce_scatter(send, recv, op)


def comm_broadcast(comm: Any, buf: Any, root: int) -> None:
    comm.broadcast(buf, root)


def comm_reduce(comm: Any, send: Any, recv: Any, op: str, root: int) -> None:
    comm.reduce(send, recv, op, root)


def comm_all_to_all(comm: Any, send: Any, recv: Any) -> None:
    comm.all_to_all(send, recv)


def comm_send(comm: Any, buf: Any, peer: int) -> None:
    comm.send(buf, peer)


def comm_recv(comm: Any, buf: Any, peer: int) -> None:
    comm.recv(buf, peer)


def comm_send_recv(comm: Any, send: Any, dst: int, recv: Any, src: int) -> None:
    comm.send_recv(send, dst, recv, src)


def comm_barrier(comm: Any) -> None:
    comm.barrier()


def comm_synchronize(comm: Any) -> None:
    comm.synchronize()


def comm_split(comm: Any, color: int, key: int) -> Any:
    return comm.split(color, key)


# What a runtime module star-imports to run the generated Comm, besides its own comm_world
# (`gen` follows the import to these names, as it follows runtime/gpu/exports.py's).
__all__ = [
    "comm_count",
    "comm_agree",
    "comm_all_reduce",
    "comm_all_gather",
    "comm_reduce_scatter",
    "comm_broadcast",
    "comm_reduce",
    "comm_all_to_all",
    "comm_send",
    "comm_recv",
    "comm_send_recv",
    "comm_barrier",
    "comm_synchronize",
    "comm_split",
]

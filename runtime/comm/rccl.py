"""RCCL through hip-python's `hip.rccl`: the library adapter of the rocm collectives
(runtime/comm/gpu.py), NCCL's API under AMD's implementation. hip-python answers each call as a
tuple (result, *outputs) and takes its own enum types; this adapter gives the engine NCCL's
plain result codes, as runtime/comm/nccl.py does."""

from __future__ import annotations

import ctypes
import importlib
from typing import Any

from runtime.comm.nccl import DTYPES, IN_PROGRESS, REDUCTIONS, UNIQUE_ID_BYTES, NcclError


def rccl_module() -> Any:
    """hip-python's RCCL module (the `gpu` extra's hip-python; only its builds for a ROCm with
    RCCL carry it, so it is looked up by name when the first rocm Comm is made)."""
    return importlib.import_module("hip.rccl")


def _code(fn: Any) -> Any:
    """`fn`, answering its result code alone (hip-python answers (result, *outputs))."""

    def call(*args: Any) -> int:
        return int(fn(*args)[0])

    return call


class RcclLibrary:
    name = "RCCL"
    backend = "rocm"
    id_bytes = UNIQUE_ID_BYTES
    in_progress = IN_PROGRESS

    def __init__(self, rccl: Any) -> None:
        self.rccl = rccl
        self.all_reduce = _code(rccl.ncclAllReduce)
        self.all_gather = _code(rccl.ncclAllGather)
        self.reduce_scatter = _code(rccl.ncclReduceScatter)
        self.broadcast = _code(rccl.ncclBroadcast)
        self.reduce = _code(rccl.ncclReduce)
        self.send = _code(rccl.ncclSend)
        self.recv = _code(rccl.ncclRecv)
        self.group_start = _code(rccl.ncclGroupStart)
        self.group_end = _code(rccl.ncclGroupEnd)

    def dtype(self, dtype: Any) -> Any:
        return self.rccl.ncclDataType_t(DTYPES[dtype.name])

    def reduction(self, op: str) -> Any:
        return self.rccl.ncclRedOp_t(REDUCTIONS[op])

    @staticmethod
    def stream(stream: Any) -> Any:
        return stream  # hip-python's stream handle, as the HIP driver made it

    def version(self) -> str:
        result, code = self.rccl.ncclGetVersion()
        major, rest = divmod(int(code), 10000)
        return f"{major}.{rest // 100}.{rest % 100}"

    def unique_id(self) -> bytes:
        uid = self.rccl.ncclUniqueId()
        self.check("ncclGetUniqueId", int(self.rccl.ncclGetUniqueId(uid)[0]), None)
        return ctypes.string_at(uid.as_c_void_p(), UNIQUE_ID_BYTES)

    def init_rank(self, nranks: int, uid: bytes, rank: int) -> Any:
        commid = self.rccl.ncclUniqueId()
        ctypes.memmove(commid.as_c_void_p(), uid, UNIQUE_ID_BYTES)
        result, comm = self.rccl.ncclCommInitRank(nranks, commid, rank)
        self.check("ncclCommInitRank", int(result), None)
        return comm

    def async_error(self, comm: Any) -> int:
        result, error = self.rccl.ncclCommGetAsyncError(comm)
        return int(error) if int(result) == 0 else int(result)

    def abort(self, comm: Any) -> None:
        self.rccl.ncclCommAbort(comm)

    def describe(self, result: int, comm: Any) -> str:
        text = self.rccl.ncclGetErrorString(self.rccl.ncclResult_t(result))
        return text.decode(errors="replace") if isinstance(text, bytes) else str(text)

    def check(self, call: str, result: int, comm: Any) -> None:
        if result not in (0, IN_PROGRESS):
            raise NcclError(call, result, self.describe(result, comm))

"""NCCL's C API through ctypes: the library adapter of the cuda collectives (runtime/comm/gpu.py).

Why ctypes over libnccl.so.2 rather than nccl4py: the calls needed are a score of plain C
functions taking pointers, counts and enums, and nccl4py 0.6's cu12 build requires cuda-core 1.x
and nvidia-cutlass-dsl (hundreds of MB) besides the same library; ctypes adds nothing to install
and loads whichever NCCL the machine has (the `nccl` extra's nvidia-nccl-cu12, torch's
nvidia-nccl-cu13, a system NCCL), so opgen and torch can run the very same NCCL."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from pathlib import Path
from typing import Any

from runtime.errors import BackendUnavailable

UNIQUE_ID_BYTES = 128
DTYPES = {
    "int8": 0,
    "uint8": 1,
    "int32": 2,
    "uint32": 3,
    "int64": 4,
    "uint64": 5,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}
REDUCTIONS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
IN_PROGRESS = 7  # ncclInProgress


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


def _candidates() -> list[str]:
    """libnccl.so.2 of a wheel (nvidia/nccl/lib, cu12 or cu13) on sys.path, then the system's."""
    found = []
    if os.environ.get("OPGEN_NCCL_LIBRARY"):
        found.append(os.environ["OPGEN_NCCL_LIBRARY"])
    for entry in sys.path:
        found += sorted(str(p) for p in Path(entry or ".").glob("nvidia/*/lib/libnccl.so.2"))
    return [*found, "libnccl.so.2"]


@functools.cache
def library() -> NcclLibrary:
    errors = []
    for name in _candidates():
        try:
            return NcclLibrary(ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL))
        except OSError as exc:
            errors.append(str(exc))
    raise BackendUnavailable("cuda", f"NCCL not found ({'; '.join(errors[-1:])}); pip install 'opgen[nccl]'")


_P = ctypes.c_void_p
_SIZE = ctypes.c_size_t
_INT = ctypes.c_int


class NcclLibrary:
    """The NCCL calls the engine makes, each answering NCCL's result code (0: success)."""

    name = "NCCL"
    backend = "cuda"
    id_bytes = UNIQUE_ID_BYTES
    in_progress = IN_PROGRESS

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        signatures: dict[str, tuple] = {
            "ncclGetVersion": (ctypes.POINTER(_INT),),
            "ncclGetUniqueId": (ctypes.POINTER(_UniqueId),),
            "ncclCommInitRank": (ctypes.POINTER(_P), _INT, _UniqueId, _INT),
            "ncclCommAbort": (_P,),
            "ncclCommGetAsyncError": (_P, ctypes.POINTER(_INT)),
            "ncclAllReduce": (_P, _P, _SIZE, _INT, _INT, _P, _P),
            "ncclAllGather": (_P, _P, _SIZE, _INT, _P, _P),
            "ncclReduceScatter": (_P, _P, _SIZE, _INT, _INT, _P, _P),
            "ncclBroadcast": (_P, _P, _SIZE, _INT, _INT, _P, _P),
            "ncclReduce": (_P, _P, _SIZE, _INT, _INT, _INT, _P, _P),
            "ncclSend": (_P, _SIZE, _INT, _INT, _P, _P),
            "ncclRecv": (_P, _SIZE, _INT, _INT, _P, _P),
            "ncclGroupStart": (),
            "ncclGroupEnd": (),
        }
        for fn, args in signatures.items():
            f = getattr(lib, fn)
            f.argtypes, f.restype = list(args), _INT
        lib.ncclGetErrorString.argtypes, lib.ncclGetErrorString.restype = [_INT], ctypes.c_char_p
        lib.ncclGetLastError.argtypes, lib.ncclGetLastError.restype = [_P], ctypes.c_char_p
        # The hot calls, bound once: attribute look-ups on a CDLL cost as much as the call's checks.
        self.all_reduce = lib.ncclAllReduce
        self.all_gather = lib.ncclAllGather
        self.reduce_scatter = lib.ncclReduceScatter
        self.broadcast = lib.ncclBroadcast
        self.reduce = lib.ncclReduce
        self.send = lib.ncclSend
        self.recv = lib.ncclRecv
        self.group_start = lib.ncclGroupStart
        self.group_end = lib.ncclGroupEnd

    # -- conversions the engine asks for -----------------------------------------------------
    @staticmethod
    def dtype(dtype: Any) -> int:
        return DTYPES[dtype.name]

    @staticmethod
    def reduction(op: str) -> int:
        return REDUCTIONS[op]

    @staticmethod
    def stream(stream: Any) -> int:
        return int(stream)  # a cuda-python CUstream: its address

    # -- the communicator ---------------------------------------------------------------------
    def version(self) -> str:
        code = _INT()
        self.lib.ncclGetVersion(ctypes.byref(code))
        major, rest = divmod(code.value, 10000)
        return f"{major}.{rest // 100}.{rest % 100}"

    def unique_id(self) -> bytes:
        uid = _UniqueId()
        self.check("ncclGetUniqueId", self.lib.ncclGetUniqueId(ctypes.byref(uid)), None)
        return bytes(uid)

    def init_rank(self, nranks: int, uid: bytes, rank: int) -> int:
        comm = _P()
        result = self.lib.ncclCommInitRank(ctypes.byref(comm), nranks, _UniqueId.from_buffer_copy(uid), rank)
        self.check("ncclCommInitRank", result, None)
        return int(comm.value or 0)

    def async_error(self, comm: int) -> int:
        result = _INT()
        self.lib.ncclCommGetAsyncError(comm, ctypes.byref(result))
        return result.value

    def abort(self, comm: int) -> None:
        self.lib.ncclCommAbort(comm)

    def describe(self, result: int, comm: int | None) -> str:
        text = self.lib.ncclGetErrorString(result).decode(errors="replace")
        last = self.lib.ncclGetLastError(comm).decode(errors="replace") if comm else ""
        return f"{text}{': ' + last if last else ''}"

    def check(self, call: str, result: int, comm: int | None) -> None:
        if result not in (0, IN_PROGRESS):
            raise NcclError(call, result, self.describe(result, comm))


class NcclError(RuntimeError):
    """An NCCL call's error result; the engine turns it into CollectiveAborted."""

    def __init__(self, call: str, result: int, text: str) -> None:
        self.call, self.result = call, result
        super().__init__(f"{call} failed ({result}): {text}")

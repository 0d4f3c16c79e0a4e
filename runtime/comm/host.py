"""The host side every engine shares: MPI through mpi4py for the process group (rank, size,
local rank from mpiexec or srun), waits bounded by the communicator's timeout, and the check
that every rank passed the same arguments.

MPI's blocking calls cannot be bounded, so every call here is MPI's nonblocking form, tested
until it completes or the deadline passes. MPI cannot cancel a started collective: after a
CollectiveTimeout the communicator is unusable, and the process should exit (or call
`abort`, MPI_Abort, which ends every rank)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from runtime.errors import BackendUnavailable, CollectiveAborted, CollectiveMismatch, CollectiveTimeout

# Bytes of one rank's facts in the agreement check: op, counts, dtypes, reductions, roots.
AGREE_BYTES = 256
# Polls of a request before the wait starts to sleep, then the longest sleep (seconds): short
# waits stay fast, long ones leave the core to other ranks (oversubscribed hosts, CI).
SPIN_POLLS = 200
MAX_SLEEP = 1e-3


def mpi() -> Any:
    """mpi4py's MPI module, or BackendUnavailable saying how to get it."""
    try:
        from mpi4py import MPI
    except ImportError as exc:  # mpi4py missing, or no MPI library for it to load
        raise BackendUnavailable(
            "mpi", f"collectives need mpi4py and an MPI library ({exc}); pip install 'opgen[mpi]'"
        ) from None
    return MPI


class HostGroup:
    """An MPI communicator with the rank's place in it, and its bounded waits."""

    def __init__(self, comm: Any, timeout: float, backend: str) -> None:
        self.comm = comm
        self.timeout = timeout
        self.backend = backend
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        shared = comm.Split_type(mpi().COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = shared.Get_rank()
        self.local_size = shared.Get_size()
        shared.Free()
        self.broken: str | None = None  # why the group cannot be used again

    @classmethod
    def world(cls, timeout: float, backend: str) -> HostGroup:
        """Every process of the launch: a duplicate of COMM_WORLD, so that no user's MPI
        traffic on COMM_WORLD meets ours."""
        return cls(mpi().COMM_WORLD.Dup(), timeout, backend)

    def split(self, color: int, key: int) -> HostGroup:
        return HostGroup(self.comm.Split(color, key), self.timeout, self.backend)

    def usable(self, op: str) -> None:
        if self.broken is not None:
            raise CollectiveAborted(op, self.backend, self.rank, f"the communicator was aborted: {self.broken}")

    def wait(self, op: str, request: Any) -> None:
        """Until `request` completes, or CollectiveTimeout after the timeout."""
        deadline = time.monotonic() + self.timeout
        polls, sleep = 0, 1e-5
        while not self._test(op, request):
            polls += 1
            if polls > SPIN_POLLS:
                if time.monotonic() > deadline:
                    self.broken = f"{op} timed out after {self.timeout:g} s"
                    raise CollectiveTimeout(op, self.backend, self.rank, self.timeout)
                time.sleep(sleep)
                sleep = min(sleep * 2, MAX_SLEEP)

    def _test(self, op: str, request: Any) -> bool:
        try:
            return request.Test()
        except mpi().Exception as exc:  # a peer gone, a failed connection: MPI's own error
            self.broken = f"{op} failed in MPI: {exc.Get_error_string()}"
            raise CollectiveAborted(op, self.backend, self.rank, self.broken) from None

    def wait_all(self, op: str, requests: list) -> None:
        for request in requests:
            self.wait(op, request)

    def agree(self, op: str, facts: tuple) -> None:
        """Raise CollectiveMismatch on every rank whose facts differ from rank 0's (each rank
        learns every rank's: one all-gather of AGREE_BYTES a rank)."""
        self.usable(op)
        mine = np.zeros(AGREE_BYTES, np.uint8)
        text = " ".join(str(f) for f in facts).encode()[:AGREE_BYTES]
        mine[: len(text)] = np.frombuffer(text, np.uint8)
        every = np.empty((self.size, AGREE_BYTES), np.uint8)
        self.wait(op, self.comm.Iallgather(mine, every))
        differs = [r for r in range(self.size) if not np.array_equal(every[r], every[0])]
        if differs:
            theirs = every[differs[0]].tobytes().rstrip(b"\0").decode(errors="replace")
            first = every[0].tobytes().rstrip(b"\0").decode(errors="replace")
            raise CollectiveMismatch(
                op,
                self.backend,
                self.rank,
                "every rank's arguments as rank 0's:",
                first,
                f"{theirs} on rank {differs[0]}",
            )

    def barrier(self, op: str = "barrier") -> None:
        self.usable(op)
        self.wait(op, self.comm.Ibarrier())

    def bcast_bytes(self, op: str, data: bytes | None, nbytes: int, root: int = 0) -> bytes:
        buf = np.zeros(nbytes, np.uint8)
        if data is not None:
            buf[:] = np.frombuffer(data, np.uint8)
        self.wait(op, self.comm.Ibcast(buf, root=root))
        return buf.tobytes()

    def abort(self, code: int = 1) -> None:
        """MPI_Abort: ends every process of the launch."""
        self.comm.Abort(code)

"""Typed errors raised by the generated package and the backend runtimes.

Every error names the op, the backend and what was expected, so that a failure in a
hundred-arm dispatch says which arm and why.
"""

from __future__ import annotations


class OpgenError(Exception):
    """Base of every error raised at run time by a generated package."""


class BackendUnavailable(OpgenError, RuntimeError):
    """The backend's runtime cannot run here (library not found, no device, ...)."""

    def __init__(self, backend: str, reason: str) -> None:
        self.backend, self.reason = backend, reason
        super().__init__(f"{backend}: unavailable: {reason}")


class NotImplementedForBackend(OpgenError, NotImplementedError):
    """The backend is available but has no implementation of the op."""

    def __init__(self, backend: str, op: str) -> None:
        self.backend, self.op = backend, op
        super().__init__(f"no {backend} implementation for {op}")


class _Mismatch(OpgenError):
    what = "value"

    def __init__(self, op: str, backend: str, expected: object, got: object) -> None:
        self.op, self.backend, self.expected, self.got = op, backend, expected, got
        super().__init__(f"{op} on {backend}: expected {self.what} {expected}, got {got}")


class DeviceMismatch(_Mismatch, ValueError):
    """Storages of one op live on different devices."""

    what = "device"


class DTypeMismatch(_Mismatch, TypeError):
    """An argument's dtype is not the one the op needs, or the op lacks that dtype."""

    what = "dtype"


class ShapeMismatch(_Mismatch, ValueError):
    """Layouts or arguments have shapes the op cannot combine."""

    what = "shape"


class CollectiveError(OpgenError):
    """A collective failed on one rank of a communicator: names the op, the backend and the rank."""

    def __init__(self, op: str, backend: str, rank: int, message: str) -> None:
        self.op, self.backend, self.rank = op, backend, rank
        super().__init__(f"{op} on {backend} rank {rank}: {message}")


class CollectiveMismatch(CollectiveError, ValueError):
    """An argument does not fit the collective: its device, dtype, element count, a rank out of
    the group, a reduction the dtype lacks, or (checking agreement) what another rank passed."""

    def __init__(self, op: str, backend: str, rank: int, what: str, expected: object, got: object) -> None:
        self.what, self.expected, self.got = what, expected, got
        super().__init__(op, backend, rank, f"expected {what} {expected}, got {got}")


class CollectiveTimeout(CollectiveError, TimeoutError):
    """The collective did not finish within the communicator's timeout (a rank late or gone);
    the communicator is aborted and cannot be used again."""

    def __init__(self, op: str, backend: str, rank: int, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(op, backend, rank, f"not finished after {timeout:g} s; the communicator is aborted")


class CollectiveAborted(CollectiveError, RuntimeError):
    """The engine reported an error (a peer gone, a failed connection), or the communicator was
    aborted by an earlier error: it cannot be used again."""

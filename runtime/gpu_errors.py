"""Typed errors of the GPU kernel compile harness (runtime.gpu_compile)."""

from __future__ import annotations

from runtime.errors import BackendUnavailable, OpgenError


class CompileError(OpgenError, RuntimeError):
    """A kernel source did not compile: names the file, the backend, the target and
    carries the compiler's log."""

    def __init__(self, file: str, backend: str, target: str, log: str) -> None:
        self.file, self.backend, self.target, self.log = file, backend, target, log
        super().__init__(f"{backend}: {file} does not compile for {target}:\n{log.rstrip()}")


class CompilerUnavailable(BackendUnavailable):
    """The backend's runtime compiler (NVRTC, hiprtc) or its headers cannot be found."""

"""Typed errors of the GPU kernel compile harness (runtime.gpu.compile)."""

from __future__ import annotations

from runtime.errors import BackendUnavailable, OpgenError


class CompileError(OpgenError, RuntimeError):
    """A kernel source did not compile: names the file, the backend, the target and
    carries the compiler's log, the options it was given and the numbered source lines
    around the first error (`excerpt`, "" when the log names no line)."""

    def __init__(
        self, file: str, backend: str, target: str, log: str, *, options: tuple[str, ...] = (), excerpt: str = ""
    ) -> None:
        self.file, self.backend, self.target, self.log = file, backend, target, log
        self.options, self.excerpt = options, excerpt
        parts = [f"{backend}: {file} does not compile for {target}:", log.rstrip()]
        if options:
            parts.append(f"options: {' '.join(options)}")
        if excerpt:
            parts.append(excerpt)
        super().__init__("\n".join(parts))

    def __reduce__(self):  # whole across processes (a pool's compile reports it as raised)
        return _compile_error, (self.file, self.backend, self.target, self.log, self.options, self.excerpt)


def _compile_error(file: str, backend: str, target: str, log: str, options: tuple, excerpt: str) -> CompileError:
    return CompileError(file, backend, target, log, options=options, excerpt=excerpt)


class KernelCacheWarning(UserWarning):
    """The on-disk kernel cache is damaged or cannot be used; the kernel was compiled anyway."""


class CompilerUnavailable(BackendUnavailable):
    """The backend's runtime compiler (NVRTC, hiprtc) or its headers cannot be found."""

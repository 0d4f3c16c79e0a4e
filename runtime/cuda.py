"""cuda backend runtime.

The GPU driver layer (cuda-python: memory pool, NVRTC, module cache, launches) is the work
of a later change; until then this backend reports itself unavailable, and every generated
cuda arm raises BackendUnavailable("cuda: unavailable: ...") with the reason below.
"""

from __future__ import annotations

import ctypes.util


def availability() -> str | None:
    """None when cuda can run here, else why not."""
    if ctypes.util.find_library("cuda") is None:
        return "library not found (libcuda)"
    return "opgen's cuda runtime implements no operations yet"

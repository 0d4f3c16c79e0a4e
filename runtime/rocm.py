"""rocm backend runtime.

The HIP driver layer (hip-python: memory pool, hiprtc, module cache, launches) is the work
of a later change; until then this backend reports itself unavailable, and every generated
rocm arm raises BackendUnavailable("rocm: unavailable: ...") with the reason below.
"""

from __future__ import annotations

import ctypes.util


def availability() -> str | None:
    """None when rocm can run here, else why not."""
    if ctypes.util.find_library("amdhip64") is None:
        return "library not found (libamdhip64)"
    return "opgen's rocm runtime implements no operations yet"

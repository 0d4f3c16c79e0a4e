"""What the GPU backends say about themselves where they cannot run."""

from __future__ import annotations

import ctypes
import os

import pytest

import generated as g


def _loadable(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def test_rocm_without_an_amd_gpu_reports_no_device():
    if os.path.exists("/dev/kfd"):
        pytest.skip("this machine has an AMD GPU driver (/dev/kfd): rocm may be available")
    if not any(_loadable(n) for n in ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5")):
        pytest.skip("no ROCm runtime here (libamdhip64): `make test` installs Debian's on Debian")
    pytest.importorskip("hip.chip", reason="hip-python is not installed: `make test` installs it")
    assert g.Device.available()[g.Backend.ROCM] == "no device"
    with pytest.raises(g.BackendUnavailable, match="^rocm: unavailable: no device$"):
        g.Device.parse("rocm:0").zeros((2,), g.DType.F32)


def test_import_never_loads_a_vendor_library():
    """Importing the package must work where no vendor runtime exists: nothing is loaded
    until an op asks for a device."""
    import subprocess
    import sys

    # (cuda-python installs a .pth that imports a bare `cuda` package at start-up: not ours.)
    bindings = (
        "cuda.bindings.driver",
        "cuda.bindings.nvrtc",
        "hip.hip",
        "hip.hiprtc",
        "hip.chip",
        "nvmath",
        "nvmath.bindings.cublas",
    )
    code = f"import sys, generated; print(sorted(m for m in sys.modules if m in {bindings!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("backend", [g.Backend.CUDA, g.Backend.ROCM], ids=str)
def test_every_gpu_op_of_an_unavailable_backend_says_why(backend):
    reason = backend.unavailable_reason()
    if reason is None:
        pytest.skip(f"{backend.value} is available here; this covers the unavailable case")
    device = g.Device(backend)
    import numpy as np

    for call in (
        lambda: device.zeros((2,), g.DType.F32),
        lambda: device.storage_from_slice(np.ones(2)),
        lambda: device.synchronize(),
    ):
        with pytest.raises(g.BackendUnavailable, match=f"^{backend.value}: unavailable: "):
            call()

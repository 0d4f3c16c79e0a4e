"""GpuRuntime: the GPU runtime shared by the cuda and rocm backends, over one Driver.

What differs between vendors is a `Driver` (runtime/gpu/driver.py; runtime/cuda.py and
runtime/rocm.py are one each). Everything else is written once, one class per concern, and
GpuRuntime combines them: buffers and pools (memory.py), the compiled-kernel cache and the
launches (launch.py, compile.py), and the storage ops by family (elementwise.py, reduce.py,
conv.py, indexing.py, matmul.py), written against the generated launch wrappers, which reach
the runtime as arguments. Its state, shared by all of them, is set up here."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from runtime.gpu.compile import KernelCache
from runtime.gpu.conv import Convolutions
from runtime.gpu.driver import Driver
from runtime.gpu.elementwise import Elementwise
from runtime.gpu.indexing import IdChecks, Indexing
from runtime.gpu.launch import DeviceStream, Launch
from runtime.gpu.matmul import Matmul
from runtime.gpu.memory import GpuBuffer, Memory, _Bin, _Kept
from runtime.gpu.reduce import Reductions
from runtime.gpu.switches import Switched, Switches


class GpuRuntime(Memory, Launch, Elementwise, Reductions, Convolutions, Indexing, Matmul, Switched):
    """Backend-neutral GPU storage ops over one Driver."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.name = driver.name
        self.cache = KernelCache(driver.name)
        self.switches = Switches.from_environment()  # reduced precision, autotuning (switches.py)
        self._functions: dict[tuple[int, str, str], Any] = {}
        # (ordinal, source, name) -> the driver's prepared launch of that function
        self._launches: dict[tuple[int, str, str], Callable[..., None]] = {}
        # (launch wrapper, ordinal) -> (that prepared launch, the wrapper's argument types):
        # the elementwise hot path calls it directly (Elementwise._direct_first)
        self._direct: dict[tuple[Callable, int], tuple[Callable[..., None], tuple]] = {}
        self._sources: dict[str, str] = {}
        self._modules: dict[tuple[int, str], Any] = {}
        self._streams: dict[int, DeviceStream] = {}
        self._rngs: dict[int, np.random.Generator] = {}
        self._bins: dict[tuple[int, int], _Bin] = {}  # (ordinal, block size) -> its bin
        self._bin_of: dict[tuple[int, int], _Bin] = {}  # (ordinal, nbytes asked for) -> its bin
        self._kept: dict[int, _Kept] = {}  # ordinal -> bytes its bins hold
        self._scratch: dict[int, GpuBuffer] = {}
        # the column tiles' scratch (runtime/gpu/reduce.py): (buffer, counters, states' bytes, states' address)
        self._tile_scratch: dict[int, tuple[GpuBuffer, int, int, int]] = {}
        self._reduce_plans: dict[tuple, Any] = {}  # reduce_op's key -> its plan (runtime/gpu/reduce.py)
        self._multiprocessors: dict[int, int] = {}
        self._id_checks: dict[int, IdChecks] = {}
        self._blas: bool | None = None  # whether the driver's BLAS can run (convolutions ask)
        # The vendor's NN library, tried first by the convolutions and attention: cuDNN on cuda
        # (runtime/gpu/cudnn.py's Cudnn, set by runtime/cuda.py); None elsewhere. It answers
        # None where it does not take a call, and the runtime's own path runs.
        self.vendor_nn: Any = None
        self._launch_method = self.launch  # `launch` as defined here (a test may replace it)

    # -- availability and devices ---------------------------------------------------------
    def availability(self) -> str | None:
        return self.driver.availability()

    def synchronize(self, ordinal: int) -> None:
        self.driver.activate(ordinal)
        self.driver.synchronize(ordinal)
        self.raise_bad_ids(ordinal)

    def location(self, ordinal: int) -> str:
        return f"{self.name}:{ordinal}"

    def supports_bf16(self, ordinal: int) -> bool:
        return True


# -- a vendor module's runtime functions (runtime/gpu/exports.py) -----------------------------
_EXPORTS = "runtime.gpu.exports"
_exporting: list[GpuRuntime] = []


def export(rt: GpuRuntime) -> None:
    """Make the next `from runtime.gpu.exports import *` bind the runtime functions to `rt`:
    a vendor module calls this just before that import. The module is dropped from
    sys.modules so that the import runs its body again, once per vendor."""
    sys.modules.pop(_EXPORTS, None)
    _exporting.append(rt)


def exported() -> GpuRuntime:
    """The runtime runtime/gpu/exports.py binds its names to (the one `export` was given)."""
    if not _exporting:
        raise ImportError(f"{_EXPORTS} is imported by a GPU vendor module after export(runtime): see runtime/cuda.py")
    return _exporting.pop()

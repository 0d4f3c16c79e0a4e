"""The GPU runtime shared by the cuda and rocm backends.

What differs between vendors is a `Driver`: memory, copies, module loading, launches and
the runtime compiler (runtime/cuda.py, runtime/rocm.py, one short class each). Everything
else lives here once: buffers from the driver's stream-ordered pool, the compiled-kernel
cache (on disk and per device), launch geometry, and the storage ops written against the
generated launch wrappers, which reach the runtime as arguments."""

from __future__ import annotations

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


class GpuRuntime(Memory, Launch, Elementwise, Reductions, Convolutions, Indexing, Matmul):
    """Backend-neutral GPU storage ops over one Driver."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.name = driver.name
        self.cache = KernelCache(driver.name)
        self._functions: dict[tuple[int, str, str], Any] = {}
        # (ordinal, source, name) -> the driver's prepared launch of that function
        self._launches: dict[tuple[int, str, str], Callable[..., None]] = {}
        self._sources: dict[str, str] = {}
        self._modules: dict[tuple[int, str], Any] = {}
        self._streams: dict[int, DeviceStream] = {}
        self._rngs: dict[int, np.random.Generator] = {}
        self._bins: dict[tuple[int, int], _Bin] = {}  # (ordinal, block size) -> its bin
        self._bin_of: dict[tuple[int, int], _Bin] = {}  # (ordinal, nbytes asked for) -> its bin
        self._kept: dict[int, _Kept] = {}  # ordinal -> bytes its bins hold
        self._scratch: dict[int, GpuBuffer] = {}
        self._multiprocessors: dict[int, int] = {}
        self._id_checks: dict[int, IdChecks] = {}
        self._blas: bool | None = None  # whether the driver's BLAS can run (convolutions ask)

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

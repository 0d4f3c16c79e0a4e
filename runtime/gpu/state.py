"""RuntimeState: what GpuRuntime's parts (memory.py, launch.py, elementwise.py, reduce.py,
conv.py, indexing.py, matmul.py) share, declared once so that each part is typed alone.

GpuRuntime (runtime/gpu/runtime.py) combines the parts and sets the state up in its
`__init__`; each part uses some of it and some methods of the others. Both are declared here
for the type checker only: the attributes by annotation (no value, so nothing at run time), the
other parts' methods under TYPE_CHECKING, so that at run time every method comes from the part
that defines it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from runtime.gpu.compile import KernelCache
    from runtime.gpu.driver import Driver
    from runtime.gpu.indexing import IdChecks
    from runtime.gpu.launch import DeviceStream
    from runtime.gpu.memory import GpuBuffer, _Bin, _Kept
    from runtime.gpu.switches import Switches
    from runtime.layout import Layout


class RuntimeState:
    """The state and the shared methods of GpuRuntime, as its parts see them."""

    driver: Driver
    name: str
    cache: KernelCache
    _functions: dict[tuple[int, str, str], Any]
    # (ordinal, source, name) -> the driver's prepared launch of that function
    _launches: dict[tuple[int, str, str], Callable[..., None]]
    # (launch wrapper, ordinal) -> (that prepared launch, the wrapper's argument types)
    _direct: dict[tuple[Callable, int], tuple[Callable[..., None], tuple]]
    _sources: dict[str, str]
    _modules: dict[tuple[int, str], Any]
    _streams: dict[int, DeviceStream]
    _rngs: dict[int, np.random.Generator]
    _bins: dict[tuple[int, int], _Bin]
    _bin_of: dict[tuple[int, int], _Bin]
    _kept: dict[int, _Kept]
    _scratch: dict[int, GpuBuffer]
    _tile_scratch: dict[int, tuple[GpuBuffer, int, int, int]]
    _reduce_plans: dict[tuple, Any]
    _multiprocessors: dict[int, int]
    _id_checks: dict[int, IdChecks]
    _blas: bool | None
    vendor_nn: Any
    switches: Switches
    _launch_method: Callable[..., None]

    if TYPE_CHECKING:
        # Memory (memory.py)
        def alloc(self, ordinal: int, size: int, dtype: np.dtype) -> GpuBuffer: ...
        def _alloc(self, ordinal: int, size: int, dtype: np.dtype, stream: Any) -> GpuBuffer: ...
        def from_host(self, ordinal: int, array: np.ndarray) -> GpuBuffer: ...

        # Launch (launch.py)
        def launch(
            self, source: str, name: str, grid: int, block: int, stream: DeviceStream, args: tuple, types: tuple
        ) -> None: ...
        def stream(self, ordinal: int) -> DeviceStream: ...
        def geometry(self, numel: int, ordinal: int) -> int: ...
        def _sms(self, ordinal: int) -> int: ...
        def _info(self, ordinal: int, *arrays: tuple[int, ...]) -> tuple[int, GpuBuffer | None]: ...
        def _entry(self, table: dict, key: tuple, op: str) -> Any: ...

        # Elementwise (elementwise.py)
        def _direct_first(
            self, fn: Any, ordinal: int, grid: int, stream: DeviceStream, args: tuple, block: int = ...
        ) -> None: ...
        def _dense(self, buf: GpuBuffer, layout: Layout, copy: Any) -> tuple[GpuBuffer, Layout]: ...
        def _dense_copy(self, buf: GpuBuffer, layout: Layout, copy: Any) -> GpuBuffer: ...

        # Indexing (indexing.py)
        def raise_bad_ids(self, ordinal: int) -> None: ...

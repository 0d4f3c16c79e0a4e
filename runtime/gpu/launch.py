"""Kernel launches: entry points of the hip/ sources compiled once per device (the compile
cache: runtime/gpu/compile.py), the driver's prepared launch per function, argument packing
(kernel_params), launch geometry, and the launch tables' lookup (`_entry`)."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import DTypeMismatch
from runtime.gpu.compile import cache_key
from runtime.gpu.memory import GpuBuffer
from runtime.gpu.state import RuntimeState

BLOCK = 256


@dataclass(frozen=True)
class DeviceStream:
    """The stream ops of one device run on; the launch wrappers hand it back to `launch`."""

    ordinal: int
    handle: Any


# struct codes of the ctypes types launch wrappers pack arguments as (kernel_sigs.CTYPES).
STRUCT_CODES = {
    ctypes.c_size_t: "N",
    ctypes.c_void_p: "P",
    ctypes.c_int: "i",
    ctypes.c_uint: "I",
    ctypes.c_uint8: "B",
    ctypes.c_uint16: "H",
    ctypes.c_uint32: "I",
    ctypes.c_int32: "i",
    ctypes.c_int64: "q",
    ctypes.c_float: "f",
    ctypes.c_double: "d",
}


class _Arguments:
    """One signature's kernel arguments, laid out as a C struct of them (native alignment:
    each at an address its type allows), and the array of pointers to them."""

    __slots__ = ("types", "pack", "values", "pointers", "address")

    def __init__(self, types: tuple) -> None:
        self.types = types
        self.pack = struct.Struct("@" + "".join(STRUCT_CODES[t] for t in types)).pack_into
        fields = type("Fields", (ctypes.Structure,), {"_fields_": [(f"a{i}", t) for i, t in enumerate(types)]})
        self.values = fields()
        base = ctypes.addressof(self.values)
        self.pointers = (ctypes.c_void_p * max(len(types), 1))(
            *(base + getattr(fields, f"a{i}").offset for i in range(len(types)))
        )
        self.address = ctypes.addressof(self.pointers)

    def fill(self, args: tuple) -> int:
        """Pack `args` into the buffer; the address of the array of pointers to them."""
        try:
            self.pack(self.values, 0, *args)
        except struct.error:  # what ctypes also takes: None pointers, ints wrapped to the type's width
            self.pack(self.values, 0, *(t(a).value or 0 for t, a in zip(self.types, args)))
        return self.address


def kernel_params(local: Any, types: tuple, args: tuple) -> int:
    """The address of the array of pointers to `args` packed as `types` (the C form of
    kernelParams). One buffer per signature and thread serves every launch (the driver
    copies the values when the launch is made), filled by one struct.pack_into."""
    try:
        cache = local.params
    except AttributeError:
        cache = local.params = {}
    entry = cache.get(types)
    if entry is None:
        entry = cache[types] = _Arguments(types)
    return entry.fill(args)


class Launch(RuntimeState):
    """GpuRuntime's launches: the modules, functions and prepared launches per device, and
    what every family uses to launch (`stream`, `geometry`, `_info`, `_entry`). Its state is
    set up by GpuRuntime; `_info` uploads through Memory's `from_host`."""

    # -- kernels ----------------------------------------------------------------------------
    def launch(
        self, source: str, name: str, grid: int, block: int, stream: DeviceStream, args: tuple, types: tuple
    ) -> None:
        """Run entry point `name` of `source` (a .hip path); the generated wrappers call this."""
        call = self._launches.get((stream.ordinal, source, name))
        if call is None:
            call = self._prepare(stream.ordinal, source, name, types)
        call(grid, block, stream.handle, args, types)

    def _prepare(self, ordinal: int, source: str, name: str, types: tuple) -> Callable[..., None]:
        """The function's launch, prepared once: the driver's `launcher` where it has one."""
        key = (ordinal, source, name)
        fn = self._functions.get(key)
        if fn is None:
            fn = self._functions[key] = self.driver.function(self._module(ordinal, source), name)
        launcher = getattr(self.driver, "launcher", None)
        if launcher is not None:
            call = launcher(fn, types)
        else:
            launch = self.driver.launch

            def call(grid, block, stream, args, types, fn=fn):
                launch(fn, grid, block, stream, args, types)

        self._launches[key] = call
        return call

    def _module(self, ordinal: int, source: str) -> Any:
        module = self._modules.get((ordinal, source))
        if module is None:
            self.driver.activate(ordinal)
            text = self._sources.get(source)
            if text is None:
                text = self._sources[source] = Path(source).read_text(encoding="utf-8")
            arch = self.driver.arch(ordinal)
            key = cache_key(self.name, text, arch, self.driver.compiler_version())
            image = self.cache.get_or_compile(key, lambda: self.driver.compile(text, Path(source).name, arch))
            module = self._modules[(ordinal, source)] = self.driver.load(image)
        return module

    def stream(self, ordinal: int) -> DeviceStream:
        self.driver.activate(ordinal)
        stream = self._streams.get(ordinal)
        if stream is None:
            stream = self._streams[ordinal] = DeviceStream(ordinal, self.driver.stream(ordinal))
        return stream

    def geometry(self, numel: int, ordinal: int) -> int:
        """Blocks for a grid-stride kernel over `numel` elements: enough to fill the device
        several times over (64 blocks per multiprocessor beat 32 and 8: bench/gpu.py --explore
        grid; figures: bench/results/NOTES.md, "Tuning figures")."""
        blocks = -(-numel // BLOCK)
        if blocks <= 64:  # below any device's cap (a multiprocessor takes 64)
            return blocks or 1
        return max(1, min(blocks, self._sms(ordinal) * 64))

    def _sms(self, ordinal: int) -> int:
        sms = self._multiprocessors.get(ordinal)
        if sms is None:
            sms = self._multiprocessors[ordinal] = self.driver.multiprocessors(ordinal)
        return sms

    def _info(self, ordinal: int, *arrays: tuple[int, ...]) -> tuple[int, GpuBuffer | None]:
        """Dims and strides as the kernels read them (size_t[]), on the device."""
        host = np.array([v for a in arrays for v in a], dtype=np.uint64)
        buf = self.from_host(ordinal, host)
        return buf.ptr, buf

    def _entry(self, table: dict, key: tuple, op: str):
        fn = table.get(key)
        if fn is None:
            got = ", ".join(str(k) for k in key[1:])  # key: (KernelPattern, *values)
            raise DTypeMismatch(op, self.name, "a dtype its kernels cover", got)
        return fn

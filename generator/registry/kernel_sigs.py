"""Kernel signatures: the `extern "C" __global__` entry points of HIP sources.

The launch wrappers are generated from these, so the count, order and C types of every
kernel's arguments are fixed at generation time. A tiny parser suffices: entry points are
declared in one fixed form, `extern "C" __global__ void NAME(TYPE NAME, ...)`."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ENTRY = re.compile(r'extern\s+"C"\s+__global__\s+void\s+([A-Za-z_]\w*)\s*\(([^)]*)\)')
_PARAM = re.compile(r"^(?P<type>.*?[\s*&])(?P<name>[A-Za-z_]\w*)$")

# C scalar types of kernel arguments -> the ctypes type the launch packs them as.
CTYPES = {
    "size_t": "ctypes.c_size_t",
    "int": "ctypes.c_int",
    "unsigned": "ctypes.c_uint",
    "unsigned int": "ctypes.c_uint",
    "uint8_t": "ctypes.c_uint8",
    "uint32_t": "ctypes.c_uint32",
    "int32_t": "ctypes.c_int32",
    "int64_t": "ctypes.c_int64",
    "float": "ctypes.c_float",
    "double": "ctypes.c_double",
    "f16_t": "ctypes.c_uint16",  # bit pattern
    "bf16_t": "ctypes.c_uint16",
}


@dataclass(frozen=True)
class KernelParam:
    name: str
    c_type: str  # normalised: "const float*", "size_t", ...

    @property
    def is_pointer(self) -> bool:
        return self.c_type.endswith("*")

    @property
    def ctype(self) -> str:
        """The ctypes type the argument is packed as; pointers travel as device addresses."""
        if self.is_pointer:
            return "ctypes.c_void_p"
        base = self.c_type.removeprefix("const ").strip()
        return CTYPES[base]


@dataclass(frozen=True)
class KernelSignature:
    name: str
    source: str  # file name the entry point is compiled from
    line: int
    params: tuple[KernelParam, ...]


class SignatureError(ValueError):
    pass


def _param(text: str, where: str) -> KernelParam:
    try:
        return _read_param(text)
    except SignatureError as exc:
        raise SignatureError(f"{where}: {exc}") from None


@functools.lru_cache(maxsize=4096)
def _read_param(text: str) -> KernelParam:
    """One parameter's text -> KernelParam; a few dozen texts repeat across thousands of kernels."""
    text = " ".join(text.split())
    match = _PARAM.match(text)
    if not match:
        raise SignatureError(f"cannot read kernel parameter {text!r}")
    c_type = re.sub(r"\s*\*\s*", "*", match["type"].strip()).replace("*", "*")
    base = c_type.removeprefix("const ").strip()
    if not c_type.endswith("*") and base not in CTYPES:
        raise SignatureError(
            f"kernel parameter type {c_type!r} has no launch packing; known: {', '.join(sorted(CTYPES))} and pointers"
        )
    return KernelParam(match["name"], c_type)


def parse(source: str, file_name: str, unit: str | None = None) -> list[KernelSignature]:
    """Every entry point of one source, in order. `unit`: the file they are compiled from,
    where that is not `file_name` itself (a generated header, included by a hip/ source)."""
    text = _COMMENTS.sub(lambda m: "\n" * m.group().count("\n"), source)
    out = []
    unit = unit or file_name
    line, last = 1, 0
    read: dict[str, tuple[KernelParam, ...]] = {}  # parameter lists repeat across dtypes and ops
    for match in _ENTRY.finditer(text):
        line += text.count("\n", last, match.start())  # counted on from the last match: linear
        last = match.start()
        params = read.get(match[2])
        if params is None:
            where = f"{file_name}:{line}"
            params = read[match[2]] = tuple(_param(p, where) for p in match[2].split(",") if p.strip())
        out.append(KernelSignature(match[1], unit, line, params))
    return out


def scan(directory: Path) -> dict[str, KernelSignature]:
    """Entry points of every *.hip file in `directory`, by name; duplicates are an error."""
    found: dict[str, KernelSignature] = {}
    for path in sorted(directory.glob("*.hip")):
        for sig in parse(path.read_text(encoding="utf-8"), path.name):
            if sig.name in found:
                first = found[sig.name]
                raise SignatureError(
                    f"{path.name}:{sig.line}: kernel {sig.name} already defined at {first.source}:{first.line}"
                )
            found[sig.name] = sig
    return found

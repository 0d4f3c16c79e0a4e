"""The `extern "C"` entry points of the hand-written HIP kernels, generated from the registry.

A kernel source hip/<stem>.hip holds the kernels' code (templates over the dtype); its entry
points, one per (pattern, values) of ops.yaml's `kernel:` patterns, are rendered by
templates/hip/<stem>.h.j2 into generated/<stem>_entries.h, which the source includes at its
end (`#include "<stem>_entries.h"`; the GPU runtime hands generated/*.h to the compilers as
in-memory headers beside hip/*.h). A template names the patterns it instantiates with
`entries("affine_{self}")` (or several patterns naming one kernel, as copy_strided_{self} and
copy_strided_{ids}: their entry points once each), which yields model.KernelInstance's: the entry point's name and
each placeholder's value, HIP type and compute type. The signature of each pattern is written
once there, not once per dtype; the launch wrappers are derived from the rendered text, as
those of generated/elementwise.hip.

Checked at generation time (validate.kernel_refs): every pattern of the registry is
instantiated by a template (or its entry points are hand-written in hip/), every pattern a
template instantiates is declared by an op, and each hip/<stem>.hip with a template includes
its entries header."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2

ENTRY_DIR = "hip"  # the entry-point templates' folder, inside templates/
SUFFIX = ".h.j2"


def output_name(stem: str) -> str:
    """The generated header holding hip/<stem>.hip's entry points."""
    return f"{stem}_entries.h"


def include_line(stem: str) -> str:
    return f'#include "{output_name(stem)}"'


def templates(templates_dir: Path) -> dict[str, str]:
    """Kernel source stem -> its entry-point template's name (relative to templates/)."""
    return {
        p.name.removesuffix(SUFFIX): f"{ENTRY_DIR}/{p.name}"
        for p in sorted((templates_dir / ENTRY_DIR).glob(f"*{SUFFIX}"))
    }


_CALL = re.compile(r"\bentries\(")
_LITERAL_CALL = re.compile(r'\bentries\(\s*("[^"\\]*"(?:\s*,\s*"[^"\\]*")*)\s*\)')


def instantiated_patterns(env: jinja2.Environment, templates_dir: Path) -> dict[str, str]:
    """Pattern -> the template that instantiates it: every `entries("...", ...)` call, read from
    the templates' text without rendering them (a Jinja parse of them took 0.1 s a run); the
    patterns must be string literals."""
    found: dict[str, str] = {}
    for name in templates(templates_dir).values():
        source = env.loader.get_source(env, name)[0]  # type: ignore[union-attr]
        for call in _CALL.finditer(source):
            literal = _LITERAL_CALL.match(source, call.start())
            if literal is None:
                line = source.count("\n", 0, call.start()) + 1
                raise ValueError(f"templates/{name}:{line}: entries() takes literal patterns")
            for pattern in re.findall(r'"([^"]*)"', literal[1]):
                found.setdefault(pattern, name)
    return found

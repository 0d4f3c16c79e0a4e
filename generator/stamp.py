"""The up-to-date stamp: lets a run where nothing changed finish without rendering.

A full run records the sha256 of every file it read (registry, templates, generator source,
runtime modules) and wrote. A later run whose inputs and outputs all still hash the same
would render the same bytes (generation is deterministic), so it stops there. The stamp
lives in <out>/__pycache__/ (never committed) and is only ever a shortcut: any mismatch,
a missing or unreadable stamp, or an extra or missing output falls back to a full run."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

GENERATOR = Path(__file__).resolve().parent
VERSION = 1


def stamp_path(out: Path) -> Path:
    return out / "__pycache__" / "opgen-stamp.json"


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _snapshot(registry: Path, inputs: list[Path], out: Path) -> dict:
    files = sorted({registry.resolve(), *(p.resolve() for p in inputs), *GENERATOR.glob("*.py")})
    return {
        "version": VERSION,
        "registry": str(registry.resolve()),
        "inputs": {str(p): _digest(p) for p in files},
        "outputs": {p.name: _digest(p) for p in sorted([*out.glob("*.py"), *out.glob("*.hip")])},
        "kernel_sources": [str(p) for p in _kernel_sources(registry)],
    }


def _kernel_sources(registry: Path) -> list[Path]:
    """hip/*.hip beside the registry: a new kernel file changes the output without changing
    any file the last run read, so the set itself is part of the stamp."""
    return sorted((registry.resolve().parent / "hip").glob("*.hip"))


def up_to_date(registry: Path, out: Path) -> int | None:
    """The number of generated files when the stamp proves them current, else None."""
    try:
        recorded = json.loads(stamp_path(out).read_text(encoding="utf-8"))
        if recorded.get("version") != VERSION or recorded["registry"] != str(registry.resolve()):
            return None
        inputs = [Path(p) for p in recorded["inputs"]]
        if recorded.get("kernel_sources") != [str(p) for p in _kernel_sources(registry)]:
            return None
        now = _snapshot(registry, inputs, out)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return len(now["outputs"]) if now == recorded else None


def record(registry: Path, inputs: list[Path], out: Path) -> None:
    """Write the stamp after a run that left `out` exactly as the inputs generate it."""
    path = stamp_path(out)
    if path.parent.is_symlink():
        return  # never written through a link that may lead out of the package
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(_snapshot(registry, inputs, out), indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only tree only loses the shortcut

"""The up-to-date stamp: lets a run where nothing changed finish without rendering.

A full run records the sha256 of every file it read (registry, templates, generator source,
runtime modules) and wrote. A later run whose inputs and outputs all still hash the same
would render the same bytes (generation is deterministic), so it stops there. The stamp
lives in <out>/__pycache__/ (never committed) and is only ever a shortcut: any mismatch,
a missing or unreadable stamp, or an extra or missing output falls back to a full run."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from .atomic import JOURNAL

GENERATOR = Path(__file__).resolve().parents[1]
VERSION = 2
PYTHON_OWNED = ("*.py", "*.hip", "*.h")


def stamp_path(out: Path) -> Path:
    return out / "__pycache__" / "opgen-stamp.json"


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _snapshot(registry: Path, inputs: list[Path], targets: list[tuple[Path, tuple[str, ...]]]) -> dict:
    """`targets`: each output folder of the run (the stamp's own first) with the patterns of
    the files it owns there."""
    files = sorted({registry.resolve(), *(p.resolve() for p in inputs), *GENERATOR.rglob("*.py")})
    outputs = {}
    for out, owned in targets:
        for p in sorted(p for pattern in owned for p in out.glob(pattern)):
            outputs[str(p.resolve())] = _digest(p)
    return {
        "version": VERSION,
        "registry": str(registry.resolve()),
        "inputs": {str(p): _digest(p) for p in files},
        "targets": [[str(out.resolve()), list(owned)] for out, owned in targets],
        "outputs": outputs,
        "kernel_sources": [str(p) for p in _kernel_sources(registry)],
    }


def _kernel_sources(registry: Path) -> list[Path]:
    """hip/*.hip beside the registry: a new kernel file changes the output without changing
    any file the last run read, so the set itself is part of the stamp."""
    return sorted((registry.resolve().parent / "hip").glob("*.hip"))


def _resolved(path: Path | None) -> str | None:
    return str(path.resolve()) if path is not None else None


def up_to_date(registry: Path, out: Path, given: Path | None = None) -> int | None:
    """The number of generated files when the stamp in `out` proves them current, else None.
    `given`: --out as given on the command line. A run's folders follow from the registry and
    the python target's folder; without --out, that is the registry's own choice, which the
    stamp records (`default_out`), so a stamp left by `--out` elsewhere never stands in for it."""
    if stamp_path(out).parent.is_symlink():
        return None  # never read through a link either: record() does not write there
    try:
        recorded = json.loads(stamp_path(out).read_text(encoding="utf-8"))
        if recorded.get("version") != VERSION or recorded["registry"] != str(registry.resolve()):
            return None
        if given is None and recorded["default_out"] != _resolved(out):
            return None
        inputs = [Path(p) for p in recorded["inputs"]]
        if recorded.get("kernel_sources") != [str(p) for p in _kernel_sources(registry)]:
            return None
        if not recorded["targets"] or Path(recorded["targets"][0][0]) != out.resolve():
            return None
        # A run killed after its renames but before removing its journal leaves the files
        # current and the journal behind: a full run clears it, which the stamp must not skip.
        if any(os.path.lexists(Path(d) / JOURNAL) for d, _ in recorded["targets"]):
            return None
        if any(Path(d).is_symlink() for d, _ in recorded["targets"]):
            return None  # a full run refuses a linked folder, saying so
        now = _snapshot(registry, inputs, [(Path(d), tuple(owned)) for d, owned in recorded["targets"]])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return len(now["outputs"]) if {**now, "default_out": recorded["default_out"]} == recorded else None


def record(
    registry: Path,
    inputs: list[Path],
    out: Path,
    targets: list[tuple[Path, tuple[str, ...]]] | None = None,
    default_out: Path | None = None,
) -> None:
    """Write the stamp after a run that left `out` (and every other folder of `targets`)
    exactly as the inputs generate it. The stamp lives in `out`, the first target's folder;
    `default_out` is the python target's folder when --out is not given (None: none)."""
    targets = targets or [(out, PYTHON_OWNED)]
    path = stamp_path(out)
    if path.parent.is_symlink():
        return  # never written through a link that may lead out of the package
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        if not path.parent.is_dir():
            path.parent.mkdir(parents=True)
        snapshot = {**_snapshot(registry, inputs, targets), "default_out": _resolved(default_out)}
        tmp.write_text(json.dumps(snapshot, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only or full disk only loses the shortcut, and leaves no temp file
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)

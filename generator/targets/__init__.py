"""The render stage: each emission target's files from the frozen model, and which generated
trees one `gen` run brings up to date, and where (this module).

Owns: python (the package in generated/: templates -> text; python_layout lays it out as
`ruff format` does, pycheck compiles it), rust (Candle-shaped Rust; rust_layout lays it out as
rustfmt does), hip (the `extern "C"` entry points of the HIP kernels) and location (where
the templates are).

The registry's `targets:` section names the targets (python, rust), each with a folder
relative to the registry's. Without it, a registry gets the Python package alone, in --out.
`--out` means the Python package's folder; a target whose folder lies inside the python
target's (generated/rust in generated) moves along with it, so that `gen --out DIR` keeps a
run's output together."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .. import model

# The files a target owns in its folder: what orphan removal and the up-to-date stamp look
# at. Only files that also carry the generated marker are ever removed.
OWNED = {"python": ("*.py", "*.hip", "*.h"), "rust": ("*.rs",)}
DEFAULT_PYTHON_OUT = Path("generated")


@dataclass(frozen=True)
class Output:
    name: str  # python | rust
    out: Path  # the folder written
    owned: tuple[str, ...]
    label: str  # how printed diffs name the folder's files: "" (python: relative to --out), "rust/"


class TargetsRefused(Exception):
    """--out names the python target's folder, but the registry asks for no python target."""


def _display(path: Path) -> Path:
    """The path relative to the current directory where it lies inside it, as people typed it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def outputs(registry: model.Registry, cli_out: Path | None) -> tuple[Output, ...]:
    """The folders of this run, python first. `cli_out` is --out as given, or None."""
    if not registry.targets:
        return (Output("python", cli_out or DEFAULT_PYTHON_OUT, OWNED["python"], ""),)
    base = Path(registry.path).resolve().parent
    declared = {t.name: t for t in registry.targets}
    python = declared.get("python")
    if cli_out is not None and python is None:
        raise TargetsRefused(
            f"--out names the Python package's folder, but {registry.path} asks for no "
            f"python target (targets: {', '.join(declared)})"
        )
    python_out = cli_out if cli_out is not None else (_display(base / python.out) if python else None)
    result = []
    for name in model.TARGET_NAMES:
        if name not in declared:
            continue
        rel = PurePosixPath(declared[name].out)
        out: Path
        if name == "python":
            assert python_out is not None  # declared[name] is `python`
            out = python_out
        elif python is not None and python_out is not None and PurePosixPath(python.out) in rel.parents:
            out = python_out / rel.relative_to(python.out)
        else:
            out = _display(base / rel)
        result.append(Output(name, out, OWNED[name], _label(out, python_out)))
    return tuple(result)


def _label(out: Path, python_out: Path | None) -> str:
    """Printed diffs name files relative to --out (a/storage.py); another target's files get
    the folder's path from there (a/rust/storage.rs), or from the current directory."""
    if python_out is None or out == python_out:
        return "" if python_out is not None else f"{Path(os.path.relpath(out)).as_posix()}/"
    rel = Path(os.path.relpath(out.resolve(), python_out.resolve())).as_posix()
    if rel.startswith(".."):
        rel = Path(os.path.relpath(out)).as_posix()
    return f"{rel}/"


def render(registry: model.Registry, output: Output) -> dict[str, str]:
    """Every generated file of one target, by name relative to its folder."""
    if output.name == "python":
        from .python import render as render_python

        return render_python(registry, out=output.out)
    from .rust import render as render_rust

    return render_rust(registry)


def template_files() -> list[Path]:
    """Every template a run may read, for the up-to-date stamp."""
    from . import rust
    from .python import TEMPLATES

    return [
        *sorted(TEMPLATES.glob("*.j2")),
        *sorted((TEMPLATES / "hip").glob("*.j2")),
        *sorted(rust.TEMPLATES.glob("*.j2")),
    ]

"""Read a backend's runtime module with libcst: which functions it defines.

The parity table and the dispatch arms come from the runtime's source itself, not from a
hand-kept list, and nothing is imported (a GPU runtime may not import here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import libcst as cst


@dataclass(frozen=True)
class RuntimeModule:
    name: str
    path: Path | None  # None: not found
    functions: frozenset[str]
    error: str | None = None


def module_path(root: Path, dotted: str) -> Path | None:
    base = root.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_future(node: cst.ImportFrom) -> bool:
    return isinstance(node.module, cst.Name) and node.module.value == "__future__"


def _top_level_names(module: cst.Module) -> set[str]:
    names: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            names.add(stmt.name.value)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom) and _is_future(small):
                    continue
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        target = alias.asname.name if alias.asname else alias.name
                        if isinstance(target, cst.Name):
                            names.add(target.value)
                elif isinstance(small, cst.Assign):
                    names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
    return names


def scan(root: Path, dotted: str) -> RuntimeModule:
    path = module_path(root, dotted)
    if path is None:
        return RuntimeModule(dotted, None, frozenset(), f"runtime module {dotted!r} not found under {root}")
    try:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
    except (cst.ParserSyntaxError, OSError, UnicodeDecodeError) as exc:
        return RuntimeModule(dotted, path, frozenset(), f"cannot read runtime module {path}: {exc}")
    names = {n for n in _top_level_names(module) if not n.startswith("_")}
    return RuntimeModule(dotted, path, frozenset(names))

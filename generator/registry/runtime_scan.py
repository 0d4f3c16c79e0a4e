"""Read a backend's runtime module with CPython's own parser (`ast`): which functions it defines.

The parity table and the dispatch arms come from the runtime's source itself, not from a
hand-kept list, and nothing is imported (a GPU runtime may not import here). A function whose
body only raises NotImplementedForBackend (the stubs `gen new-backend` writes) is not
counted: its op is still missing, and its arm raises the generated missing error.

A module may take its functions from another runtime module with `from <module> import *` (the
GPU vendor modules take theirs from runtime/gpu/exports.py): the scan follows it, as Python and
mypy do, to the names of that module's `__all__` (a literal list), or else its public names.
`paths` lists every file read, for the up-to-date stamp.

`ast`, not libcst: only names and statement kinds are read, and importing libcst alone took
0.1 s of every `gen`."""

from __future__ import annotations

import ast
import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

STUB_ERROR = "NotImplementedForBackend"

# Files about to be written (resolved path -> text): `gen new-backend` validates the registry
# against the runtime module it scaffolds before writing either.
_PENDING: contextvars.ContextVar[dict[Path, str] | None] = contextvars.ContextVar("pending", default=None)


@contextlib.contextmanager
def pending(files: dict[Path, str]) -> Iterator[None]:
    """Scan as if `files` were written."""
    token = _PENDING.set({p.resolve(): text for p, text in files.items()})
    try:
        yield
    finally:
        _PENDING.reset(token)


@dataclass(frozen=True)
class RuntimeModule:
    name: str
    path: Path | None  # None: not found
    functions: frozenset[str]
    error: str | None = None
    stubs: frozenset[str] = frozenset()  # functions whose body only raises NotImplementedForBackend
    paths: tuple[Path, ...] = ()  # the module's file, then those its star imports read


def module_path(root: Path, dotted: str) -> Path | None:
    base = root.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file() or candidate.resolve() in (_PENDING.get() or {}):
            return candidate
    return None


# Statements that hold other statements: a body with one of these is real code.
_COMPOUND = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.TryStar,
    ast.Match,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
)


def _raises_stub_error(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Raise) or stmt.exc is None:
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    if isinstance(exc, ast.Attribute):
        return exc.attr == STUB_ERROR
    return isinstance(exc, ast.Name) and exc.id == STUB_ERROR


def is_stub(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the body is only (a docstring and) `raise NotImplementedForBackend(...)`."""
    body = fn.body
    if any(isinstance(stmt, _COMPOUND) for stmt in body):
        return False  # a compound statement: real code
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    return len(body) == 1 and _raises_stub_error(body[0])


def _stubs(module: ast.Module) -> set[str]:
    return {s.name for s in module.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_stub(s)}


def _top_level_names(module: ast.Module) -> set[str]:
    names: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not is_stub(stmt):
                names.add(stmt.name)
        elif isinstance(stmt, ast.ImportFrom) and (stmt.module != "__future__" or stmt.level):
            names.update(alias.asname or alias.name for alias in stmt.names if alias.name != "*")
        elif isinstance(stmt, ast.Assign):
            names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return names


def _star_imports(module: ast.Module) -> list[str]:
    """The modules of the top-level `from <module> import *` statements (absolute ones)."""
    return [
        stmt.module
        for stmt in module.body
        if isinstance(stmt, ast.ImportFrom)
        and not stmt.level
        and stmt.module
        and any(alias.name == "*" for alias in stmt.names)
    ]


def _all(module: ast.Module) -> set[str] | None:
    """The names of a literal `__all__ = [...]` (or tuple), or None where there is none."""
    for stmt in module.body:
        if (
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets)
            and isinstance(stmt.value, (ast.List, ast.Tuple))
        ):
            return {e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return None


def _parse(path: Path) -> ast.Module:
    text = (_PENDING.get() or {}).get(path.resolve())
    return ast.parse(path.read_text(encoding="utf-8") if text is None else text, str(path))


def _read(root: Path, path: Path, seen: list[Path]) -> tuple[set[str], set[str]]:
    """(public names, stubs) of the module at `path`, star imports of modules under `root`
    followed (each file once: `seen` collects the files read)."""
    seen.append(path)
    module = _parse(path)
    names = {n for n in _top_level_names(module) if not n.startswith("_")}
    stubs = _stubs(module)
    for dotted in _star_imports(module):
        target = module_path(root, dotted)
        if target is None or target in seen:
            continue  # not a runtime module here (a library's): nothing to read
        inner, inner_stubs = _read(root, target, seen)
        exported = _all(_parse(target))
        names |= inner if exported is None else inner & exported
        stubs |= inner_stubs if exported is None else inner_stubs & exported
    return names, stubs


def scan(root: Path, dotted: str) -> RuntimeModule:
    path = module_path(root, dotted)
    if path is None:
        return RuntimeModule(dotted, None, frozenset(), f"runtime module {dotted!r} not found under {root}")
    seen: list[Path] = []
    try:
        names, stubs = _read(root, path, seen)
    except (SyntaxError, ValueError, OSError, UnicodeDecodeError) as exc:
        return RuntimeModule(dotted, path, frozenset(), f"cannot read runtime module {seen[-1]}: {exc}")
    return RuntimeModule(dotted, path, frozenset(names), stubs=frozenset(stubs), paths=tuple(seen))

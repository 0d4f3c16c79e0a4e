"""Read a backend's runtime module with libcst: which functions it defines.

The parity table and the dispatch arms come from the runtime's source itself, not from a
hand-kept list, and nothing is imported (a GPU runtime may not import here). A function whose
body only raises NotImplementedForBackend (the stubs `gen new-backend` writes) is not
counted: its op is still missing, and its arm raises the generated missing error."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

STUB_ERROR = "NotImplementedForBackend"

# Files about to be written (resolved path -> text): `gen new-backend` validates the registry
# against the runtime module it scaffolds before writing either.
_PENDING: contextvars.ContextVar[dict[Path, str]] = contextvars.ContextVar("pending", default={})


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


def module_path(root: Path, dotted: str) -> Path | None:
    base = root.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file() or candidate.resolve() in _PENDING.get():
            return candidate
    return None


def _is_future(node: cst.ImportFrom) -> bool:
    return isinstance(node.module, cst.Name) and node.module.value == "__future__"


def _raises_stub_error(stmt: cst.BaseSmallStatement) -> bool:
    if not isinstance(stmt, cst.Raise) or stmt.exc is None:
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, cst.Call) else stmt.exc
    name = exc.attr if isinstance(exc, cst.Attribute) else exc
    return isinstance(name, cst.Name) and name.value == STUB_ERROR


def is_stub(fn: cst.FunctionDef) -> bool:
    """Whether the body is only (a docstring and) `raise NotImplementedForBackend(...)`."""
    lines = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else [fn.body]
    if not all(isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) for line in lines):
        return False  # a compound statement: real code
    small = [s for line in lines for s in line.body]
    if isinstance(small[0], cst.Expr) and isinstance(small[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        small = small[1:]
    return len(small) == 1 and _raises_stub_error(small[0])


def _stubs(module: cst.Module) -> set[str]:
    return {s.name.value for s in module.body if isinstance(s, cst.FunctionDef) and is_stub(s)}


def _top_level_names(module: cst.Module) -> set[str]:
    names: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            if not is_stub(stmt):
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
        text = _PENDING.get().get(path.resolve())
        module = cst.parse_module(path.read_text(encoding="utf-8") if text is None else text)
    except (cst.ParserSyntaxError, OSError, UnicodeDecodeError) as exc:
        return RuntimeModule(dotted, path, frozenset(), f"cannot read runtime module {path}: {exc}")
    names = {n for n in _top_level_names(module) if not n.startswith("_")}
    return RuntimeModule(dotted, path, frozenset(names), stubs=frozenset(_stubs(module)))

"""No private name crosses a module boundary inside bench/: a bench module takes from another
only what that module offers (names without a leading underscore), through `from bench.x
import name`, a relative import, or an attribute of an imported bench module (`timing._x`).
What two benches share lives, public, in the module both import (timing, compare)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "bench"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _bench_module(module: str, level: int) -> bool:
    return level > 0 or module == PACKAGE or module.startswith(PACKAGE + ".")


def private_uses(source: str) -> list[tuple[int, str]]:
    """(line, `module.name`) of every private name `source` takes from a bench module."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    aliases: dict[str, str] = {}  # local name -> the bench module it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _bench_module(node.module or "", node.level):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                if _private(alias.name):
                    found.append((node.lineno, f"{base}.{alias.name}"))
                if base in (PACKAGE, "."):  # `from bench import timing`: a module
                    aliases[alias.asname or alias.name] = f"{PACKAGE}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _bench_module(alias.name, 0):
                    aliases[alias.asname or alias.name] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = _dotted(node.value)
            if owner in aliases or owner in aliases.values():
                found.append((node.lineno, f"{aliases.get(owner, owner)}.{node.attr}"))
    return sorted(found)


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` as text, for a chain of names and attributes; else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def test_the_finder_sees_each_way_in():
    source = (
        "import bench.timing\n"
        "import bench.timing as t\n"
        "from bench import compare\n"
        "from bench.nn import _table, public\n"
        "from .spread import _rows\n"
        "def f():\n"
        "    return bench.timing._clock, t._clock, compare._tolerance, compare.check, public._own\n"
    )
    assert private_uses(source) == [
        (4, "bench.nn._table"),
        (5, ".spread._rows"),
        (7, "bench.compare._tolerance"),
        (7, "bench.timing._clock"),
        (7, "bench.timing._clock"),
    ]
    assert private_uses("from numpy import _core\nimport os\nos._exit\n") == []


def test_no_private_name_crosses_a_bench_module():
    files = sorted((REPO / PACKAGE).rglob("*.py"))
    assert len(files) > 10
    found = {
        str(path.relative_to(REPO)): uses for path in files if (uses := private_uses(path.read_text(encoding="utf-8")))
    }
    assert found == {}

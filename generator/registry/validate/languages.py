"""What the registry's expression languages accept: the names numpy and scipy.special define
(each with its operand count where it is a ufunc), and C++ expression syntax (tree-sitter's C++
grammar: HIP's kernel language is C++).

Importing numpy and scipy.special costs a run about 0.3 s, so their names are kept in a file in
the generator's __pycache__, keyed by the installed libraries' files; where that folder cannot
be written, they are read from the libraries each run."""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import json
import os
from pathlib import Path

from ...output import atomic

MODULES = {"np": "numpy", "special": "scipy.special"}
CACHE = Path(__file__).resolve().parents[2] / "__pycache__"


@functools.cache
def numpy_names(namespace: str) -> dict[str, int] | None:
    """Public name -> the operands a ufunc takes (0: not a ufunc), or None where the library
    is not installed."""
    return _all_names().get(namespace)


def _all_names() -> dict[str, dict[str, int]]:
    key = _installed_key()
    path = CACHE / f"opgen-numpy-names-{key}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    names = {namespace: _names_of(module) for namespace, module in MODULES.items()}
    found = {namespace: table for namespace, table in names.items() if table is not None}
    try:
        os.makedirs(CACHE, exist_ok=True)
        atomic.write_text(path, json.dumps(found, sort_keys=True))
    except OSError:
        pass
    return found


def _installed_key() -> str:
    """Which numpy and scipy are installed, without importing them: their top files' paths,
    sizes and modification times."""
    parts = []
    for top in ("numpy", "scipy"):
        spec = importlib.util.find_spec(top)
        origin = spec.origin if spec is not None else None
        if origin is None:
            parts.append(f"{top}:absent")
            continue
        special = Path(origin).parent / "special" / "__init__.py"
        for path in (Path(origin), special) if top == "scipy" else (Path(origin),):
            try:
                st = path.stat()
                parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
            except OSError:
                parts.append(f"{path}:absent")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _names_of(module: str) -> dict[str, int] | None:
    try:
        namespace = importlib.import_module(module)
    except ImportError:
        return None
    table = {}
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        value = getattr(namespace, name, None)
        nin = getattr(value, "nin", 0)
        table[name] = nin if type(value).__name__ == "ufunc" and isinstance(nin, int) else 0
    return table


_PREFIX = b"auto opgen_value = ("
_SUFFIX = b");"


@functools.cache
def _cxx_parser():
    import tree_sitter
    import tree_sitter_cpp

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language()))


@functools.lru_cache(maxsize=4096)
def cxx_expression(expr: str) -> tuple[str | None, frozenset[str]]:
    """(why `expr` is not exactly one C++ expression, or None; the identifiers it uses). The
    expression is parsed as the initializer `auto v = (EXPR);`, and must be all of it: text
    that closes the parenthesis and goes on (`x); y = (z`) is refused."""
    text = expr.encode()
    tree = _cxx_parser().parse(_PREFIX + text + _SUFFIX)
    root = tree.root_node
    identifiers = frozenset(_identifiers(root))
    if root.has_error:
        return f"HIP expression does not parse as C++: {_first_error(root)} in {expr!r}", identifiers
    value = None
    if root.named_child_count == 1:
        declarator = root.named_children[0].child_by_field_name("declarator")
        value = declarator.child_by_field_name("value") if declarator is not None else None
    whole = (
        value is not None
        and value.type == "parenthesized_expression"
        and value.start_byte == len(_PREFIX) - 1
        and value.end_byte == len(_PREFIX) + len(text) + 1
        and value.named_child_count == 1
    )
    if not whole:
        return f"HIP expression is not one C++ expression: {expr!r}", identifiers
    return None, identifiers


def _identifiers(node) -> list[str]:
    out, stack = [], [node]
    while stack:
        node = stack.pop()
        if node.type == "identifier" and node.text is not None:
            out.append(node.text.decode())
        stack.extend(node.children)
    return out


def _first_error(root) -> str:
    """Where the parse first went wrong, as a column of the expression (1-based)."""
    stack = [root]
    while stack:
        node = stack.pop(0)
        if node.is_missing:
            return f"missing {node.type!r} at column {_column(node.start_byte)}"
        if node.type == "ERROR":
            found = node.text.decode(errors="replace") if node.text else ""
            return f"unexpected {found!r} at column {_column(node.start_byte)}"
        stack[:0] = node.children
    return "a syntax error"


def _column(byte: int) -> int:
    return max(byte - len(_PREFIX), 0) + 1

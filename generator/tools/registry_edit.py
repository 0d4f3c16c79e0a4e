"""Add a backend to the registry's text: the entry goes in after the last one of `backends:`,
written in their style (one flow-mapping line with the same alignment, or a block), and
nothing else moves. A YAML dumper would drop every comment and re-flow every line."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # as generator.registry.loader: same marks, faster


class EditRefused(Exception):
    """The text cannot take the entry; the message says where and why."""


@dataclass(frozen=True)
class Insertion:
    text: str  # the whole registry with the entry
    line: int  # 1-based line of the entry's first line
    entry: str  # the inserted line(s), without the final newline


def _end_line(node: yaml.Node) -> int:
    """0-based line on which a node's text ends (block collections end where their last item does)."""
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and node.value:
        last = node.value[-1]
        return _end_line(last[1] if isinstance(node, yaml.MappingNode) else last)
    mark = node.end_mark
    return mark.line if mark.column > 0 else mark.line - 1


def _flow_entry(indent: int, name: str, fields: list[tuple[str, str]], key: yaml.Node, value: yaml.MappingNode) -> str:
    """`  name: {k: v, ...}` with `{` and each key in the columns of the entry above, where it has them."""
    head = " " * indent + f"{name}:"
    same_line = value.start_mark.line == key.start_mark.line
    out = head + " " * (max(1, value.start_mark.column - len(head)) if same_line else 1) + "{"
    columns = {k.value: k.start_mark.column for k, _ in value.value if k.start_mark.line == value.start_mark.line}
    for i, (k, v) in enumerate(fields):
        if i:
            out += ","
            out += " " * max(1, columns.get(k, 0) - len(out))
        out += f"{k}: {v}"
    return out + "}"


def _block_entry(indent: int, name: str, fields: list[tuple[str, str]], value: yaml.Node) -> str:
    child = indent + 2
    if isinstance(value, yaml.MappingNode) and value.value:
        child = value.value[0][0].start_mark.column
    return "\n".join([" " * indent + f"{name}:", *(" " * child + f"{k}: {v}" for k, v in fields)])


def add_backend(text: str, path: str, name: str, fields: list[tuple[str, str]]) -> Insertion:
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else f"{path}:1:1"
        raise EditRefused(f"{where}: YAML syntax error: {exc.problem}") from None
    section = None
    if isinstance(root, yaml.MappingNode):
        section = next(((k, v) for k, v in root.value if k.value == "backends"), None)
    if section is None:
        raise EditRefused(f"{path}:1:1: no `backends:` section to add {name!r} to")
    key, backends = section
    where = f"{path}:{key.start_mark.line + 1}:{key.start_mark.column + 1}"
    if not isinstance(backends, yaml.MappingNode) or not backends.value:
        raise EditRefused(f"{where}: `backends:` is not a mapping with entries; add {name!r} by hand")
    if backends.flow_style:
        raise EditRefused(f"{where}: `backends:` is one flow mapping ({{...}}); add {name!r} to it by hand")
    for k, _ in backends.value:
        if k.value == name:
            raise EditRefused(
                f"{path}:{k.start_mark.line + 1}:{k.start_mark.column + 1}: backend {name!r} is already declared"
            )
    last_key, last_value = backends.value[-1]
    indent = last_key.start_mark.column
    if isinstance(last_value, yaml.MappingNode) and last_value.flow_style:
        entry = _flow_entry(indent, name, fields, last_key, last_value)
    else:
        entry = _block_entry(indent, name, fields, last_value)
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    after = _end_line(last_value)
    if not lines[after].endswith(("\n", "\r")):
        lines[after] += newline
    lines.insert(after + 1, entry.replace("\n", newline) + newline)
    return Insertion("".join(lines), after + 2, entry)

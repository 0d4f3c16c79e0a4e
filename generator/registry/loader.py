"""Load: YAML text -> a tree of positioned values. Safe loading only; no tags, no anchors
resolved into objects. Duplicate keys and syntax errors become diagnostics.

Hostile input ends quickly with a diagnostic, in bounded memory: aliases may repeat at most
MAX_ALIAS_VALUES values in all (a "billion laughs" registry of a few hundred bytes would
otherwise expand to 10^9 values), values nest at most MAX_DEPTH deep, a scalar holds at
most MAX_SCALAR characters and an integer MAX_NUMBER. A real registry is far inside each: ops.yaml uses no aliases,
nests 5 deep and its longest value is a few hundred characters."""

from __future__ import annotations

import os
from bisect import bisect_right
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from .diagnostics import Diagnostic, Position, RegistryError

Scalar = str | int | float | bool | None


class Node(NamedTuple):
    """A YAML value with where it was written. `value` is a scalar, a list of Nodes, or a
    dict of key -> (key Node, value Node) in file order."""

    value: Any  # by tag: a scalar, list[Node] ("seq") or dict[str, tuple[Node, Node]] ("map")
    position: Position
    tag: str  # "map", "seq", "str", "int", "float", "bool", "null"

    def get(self, key: str) -> Node | None:
        entry = self.value.get(key) if self.tag == "map" else None
        return entry[1] if entry else None

    def find(self, *keys: str) -> Node | None:
        """The node at a path of mapping keys, or None where any step is missing."""
        node: Node | None = self
        for key in keys:
            node = node.get(key) if node is not None else None
        return node


_SCALAR_TAGS = {
    "tag:yaml.org,2002:str": "str",
    "tag:yaml.org,2002:int": "int",
    "tag:yaml.org,2002:float": "float",
    "tag:yaml.org,2002:bool": "bool",
    "tag:yaml.org,2002:null": "null",
}


# libyaml's composer gives the same nodes and marks as the pure-Python one, ten times faster.
if TYPE_CHECKING:
    from yaml import SafeLoader as _BASE_LOADER
else:
    _BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE_LOADER):
    """The safe loader, remembering each scalar's tag: a registry repeats its words
    ("float", "Layout", ...) thousands of times, and the composer asks the (Python) resolver
    about every one. Safe loading has no path resolvers, so the tag depends on these alone."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._tags: dict[tuple, str] = {}  # one document's: nothing outlives the load

    def resolve(self, kind, value, implicit):
        if kind is not yaml.ScalarNode:  # without path resolvers, a collection's tag is the default
            return self.DEFAULT_MAPPING_TAG if kind is yaml.MappingNode else self.DEFAULT_SEQUENCE_TAG
        key = (value, implicit)
        tag = self._tags.get(key)
        if tag is None:
            tag = self._tags[key] = super().resolve(kind, value, implicit)
        return tag

    # The composer calls these around every node, for path resolvers, which safe loading has
    # none of: BaseResolver's bodies (which return at once) cost 8 ms of a 2,584-op registry.
    def descend_resolver(self, current_node, current_index) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


_LOADER = _Loader


def _position(path: str, mark: yaml.Mark, lines: _Lines | None = None) -> Position:
    if lines is not None:
        return lines.position(path, mark)
    return Position(path, mark.line + 1, mark.column + 1)


# YAML 1.1 (PyYAML, libyaml) also breaks lines at a lone \r, NEL, LINE SEPARATOR and PARAGRAPH
# SEPARATOR; an editor's and grep's lines are those of "\n". Where the text holds one of them,
# positions come from the marks' character index instead of their line and column.
_OTHER_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


class _Lines:
    """The "\n" lines of a text: a mark's position by its character index."""

    def __init__(self, text: str) -> None:
        self.starts = [0]
        at = text.find("\n")
        while at >= 0:
            self.starts.append(at + 1)
            at = text.find("\n", at + 1)

    def position(self, path: str, mark: yaml.Mark) -> Position:
        line = bisect_right(self.starts, mark.index)
        return Position(path, line, mark.index - self.starts[line - 1] + 1)

    @staticmethod
    def of(text: str) -> _Lines | None:
        return _Lines(text) if any(c in text for c in _OTHER_BREAKS) else None


_COLLECTION_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")

MAX_ALIAS_VALUES = 100_000  # values repeated through aliases, counted as they expand
MAX_DEPTH = 64
MAX_SCALAR = 1 << 20  # characters
# Digits (and signs, underscores, 0x, ':') of an integer: Python refuses to make a decimal
# int of more than 4,300 digits, and no registry number comes near 20.
MAX_NUMBER = 40


def _check_aliases(text: str, path: str, lines: _Lines | None) -> None:
    """Raise a diagnostic at the alias where aliases expand to more than MAX_ALIAS_VALUES
    values. Reads the event stream once, keeping one count per anchor: linear in the text,
    however far the aliases would expand. There is no alias without an anchor ('&')."""
    if "&" not in text:
        return
    sizes: dict[str, int] = {}  # anchor -> values its node expands to
    open_: list[list] = []  # [values so far, anchor] of each collection being read
    repeated = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor, 1)
            repeated += size
            if repeated > MAX_ALIAS_VALUES:
                raise RegistryError(
                    [
                        Diagnostic(
                            _position(path, event.start_mark, lines),
                            "",
                            (
                                f"alias *{event.anchor} expands to {size:,} values, and the registry's aliases "
                                f"to more than {MAX_ALIAS_VALUES:,} in all (an alias bomb?); write the values out "
                                "or use fewer aliases"
                            ),
                        )
                    ]
                )
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            open_.append([1, event.anchor])
            continue
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            size, anchor = open_.pop()
            if anchor:
                sizes[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor:
                sizes[event.anchor] = 1
        else:
            continue
        if open_:
            open_[-1][0] += size


def _convert(
    path: str, node: yaml.Node, errors: list[Diagnostic], key: str, depth: int = 0, lines: _Lines | None = None
) -> Node:
    mark = node.start_mark
    if lines is None:
        pos = Position(path, mark.line + 1, mark.column + 1)  # _position, inline: once per node
    else:
        pos = lines.position(path, mark)
    if depth > MAX_DEPTH:
        raise RegistryError(
            [
                Diagnostic(
                    pos,
                    "",
                    f"values nest more than {MAX_DEPTH} deep here (or an alias "
                    "contains itself); a registry needs a handful of levels",
                )
            ]
        )
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _COLLECTION_TAGS:
        errors.append(Diagnostic(pos, key, f"unsupported YAML tag {node.tag!r}"))
    if isinstance(node, yaml.MappingNode):
        entries: dict[str, tuple[Node, Node]] = {}
        for knode, vnode in node.value:
            k = _convert(path, knode, errors, key, depth + 1, lines)
            name = str(k.value)
            child_key = f"{key}.{name}" if key else name
            if k.tag not in ("str", "int"):
                errors.append(Diagnostic(k.position, child_key, "keys must be plain strings"))
                continue
            if name in entries:
                first = entries[name][0].position
                errors.append(
                    Diagnostic(k.position, child_key, f"duplicate key {name!r} (first defined at line {first.line})")
                )
                continue
            entries[name] = (k, _convert(path, vnode, errors, child_key, depth + 1, lines))
        return Node(entries, pos, "map")
    if isinstance(node, yaml.SequenceNode):
        items = [_convert(path, n, errors, f"{key}[{i}]", depth + 1, lines) for i, n in enumerate(node.value)]
        return Node(items, pos, "seq")
    if len(node.value) > MAX_SCALAR:
        errors.append(
            Diagnostic(
                pos,
                key,
                f"a value of {len(node.value):,} characters; the registry allows at most {MAX_SCALAR:,} per value",
            )
        )
        return Node("", pos, "str")
    tag = _SCALAR_TAGS.get(node.tag)
    if tag is None:
        errors.append(Diagnostic(pos, key, f"unsupported YAML tag {node.tag!r}"))
        return Node(node.value, pos, "str")
    if tag == "int" and len(node.value) > MAX_NUMBER:
        errors.append(
            Diagnostic(
                pos,
                key,
                f"a number of {len(node.value):,} characters; the registry's numbers have at most "
                f"{MAX_NUMBER} (the schema bounds each)",
            )
        )
        return Node(0, pos, "int")
    return Node(_scalar(tag, node), pos, tag)


_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_CONSTRUCT = {
    "int": _CONSTRUCTOR.construct_yaml_int,
    "float": _CONSTRUCTOR.construct_yaml_float,
    "bool": _CONSTRUCTOR.construct_yaml_bool,
}


def _scalar(tag: str, node: yaml.ScalarNode) -> Scalar:
    if tag == "str":
        return node.value
    if tag == "null":
        return None
    return _CONSTRUCT[tag](node)


def load_text(text: str, path: str) -> Node:
    """Parse `text`; raise RegistryError with every problem the parser can report."""
    errors: list[Diagnostic] = []
    lines = _Lines.of(text)
    try:
        _check_aliases(text, path, lines)
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        position = _offset_position(path, text, exc.position)
        raise RegistryError([Diagnostic(position, "", f"YAML syntax error: {exc.reason}")]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = _position(path, mark, lines) if mark else Position(path, 1, 1)
        raise RegistryError([Diagnostic(pos, "", _syntax_message(text, exc, pos))]) from None
    if root is None:
        raise RegistryError([Diagnostic(Position(path, 1, 1), "", "the registry is empty")])
    tree = _convert(path, root, errors, "", 0, lines)  # MAX_DEPTH keeps the recursion short
    if errors:
        raise RegistryError(errors)
    return tree


# libyaml's words for a block whose indentation does not line up.
_BLOCK_PROBLEMS = (
    "did not find expected key",
    "did not find expected '-' indicator",
    "mapping values are not allowed here",
    "could not find expected ':'",
    "expected <block end>",
)


def _syntax_message(text: str, exc: yaml.MarkedYAMLError, pos: Position) -> str:
    """libyaml's words, with what they mean where it is not plain: a tab (YAML indents with
    spaces only), or a line indented unlike the block it belongs to (the line above shown)."""
    problem = exc.problem or "invalid YAML"
    context = f" {exc.context}" if exc.context else ""
    lines = [ln.rstrip("\r") for ln in text.split("\n")]  # as positions count lines: at "\n"
    line = lines[pos.line - 1] if 0 < pos.line <= len(lines) else ""
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    if line[pos.col - 1 : pos.col] == "\t" or "\t" in indent:
        col = pos.col if line[pos.col - 1 : pos.col] == "\t" else indent.index("\t") + 1
        return f"YAML syntax error: a tab character at column {col}; YAML indents with spaces only, never tabs"
    message = f"YAML syntax error: {problem}{context}"
    if any(words in problem for words in _BLOCK_PROBLEMS):
        above = next(
            (
                n
                for n in range(pos.line - 1, 0, -1)
                if lines[n - 1].strip() and not lines[n - 1].lstrip().startswith("#")
            ),
            None,
        )
        if above is not None:
            before = lines[above - 1]
            shown = before.strip() if len(before.strip()) <= 60 else before.strip()[:57] + "..."
            message += (
                f"; this line is indented {_spaces(len(indent))}, line {above} above it {_spaces(_indent(before))} "
                f"({shown!r}): entries of one block line up"
            )
    return message


def _spaces(n: int) -> str:
    return f"{n} space{'s' if n != 1 else ''}"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _offset_position(path: str, text: str, offset: int) -> Position:
    line = text.count("\n", 0, offset) + 1
    return Position(path, line, offset - (text.rfind("\n", 0, offset) + 1) + 1)


def load_file(path: str) -> Node:
    try:
        with open(path, "rb") as f:
            data = f.read()
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode("utf-8")
        pos = _offset_position(path, good, len(good))
        raise RegistryError([Diagnostic(pos, "", "the registry is not valid UTF-8 text")]) from None
    except OSError as exc:
        where = os.path.abspath(path)
        raise RegistryError(
            [
                Diagnostic(
                    Position(path, 1, 1),
                    "",
                    f"cannot read registry: {exc.strerror} ({where}); name the registry with --registry PATH",
                )
            ]
        ) from None
    return load_text(text, path)

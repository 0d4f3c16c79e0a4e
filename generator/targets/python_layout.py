"""Lay rendered Python out as `ruff format` (the project's pinned 0.17.6, line length 120) does,
so that generated files pass a host project's formatter and linter as they are.

Templates write each statement on one line; this pass breaks the lines that run past the
width, the way the formatter breaks them (black's "right hand split"):

- the first bracket of the statement (a call's or a `def`'s parameters) opens the split;
- a call's arguments (a def's parameters) go on one line of their own, one indent deeper,
  where they fit;
- else, and always in a tuple, list, set or dict display, one item a line, each followed
  by a comma, each item split again where still too long;
- the condition of an `if` made of `and`s (or `or`s) goes in parentheses, an operand a line;
- `from m import a, b` breaks one name a line, as isort's formatting does;
- `NAME = {` and `}` at the start of the next line become `NAME = {}`;
- a comment line too long is wrapped at word boundaries, as a person would.

It only moves text between lines, adds trailing commas in lists of two or more items and
parentheses around a broken condition, so the module's meaning stays the same. Running the formatter itself
costs 0.12-0.15 s on the 2,584-op registry's 4.5 MB of Python (a tenth of a whole run), and
would tie `gen --check` to the formatter's version on each machine."""

from __future__ import annotations

import functools
import re
import textwrap
from collections.abc import Callable

WIDTH = 120
INDENT = "    "
_LONG_LINE = re.compile(rf"\n([^\n]{{{WIDTH + 1},}})")
_BLOCK_CONDITION = re.compile(r"(?P<keyword>if|elif|while) (?P<test>.*):")
# What the layout looks at in a line: brackets, separators, a comment's start; and string
# literals, matched whole so that what they hold is skipped (a generated line holds no
# string that goes on to the next).
_TOKEN = re.compile(r"""[()\[\]{},#]| and | or |"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'""")
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset(_OPENERS.values())


def fit(text: str, width: int = WIDTH) -> str:
    """`text` with every line longer than `width` broken as the formatter breaks it, and every
    empty display a template opened and closed on two lines (a family without ops) on one."""
    text = text.replace(" = {\n}\n", " = {}\n")  # the displays templates open: dicts
    long_line = _LONG_LINE if width == WIDTH else re.compile(rf"\n([^\n]{{{width + 1},}})")
    first, newline, rest = text.partition("\n")  # the pattern starts at a newline, which makes it fast
    return "\n".join(fit_line(first, width)) + newline + long_line.sub(_fitted(width), rest)


@functools.cache
def _fitted(width: int) -> Callable[[re.Match[str]], str]:
    return lambda m: "\n" + "\n".join(fit_line(m[1], width))


@functools.lru_cache(maxsize=4096)  # the same long line in several modules (each backend's Protocol)
def fit_line(line: str, width: int = WIDTH) -> tuple[str, ...]:
    """One line as the lines that the formatter makes of it (itself where it cannot be split)."""
    if len(line) <= width:
        return (line,)
    indent = line[: len(line) - len(line.lstrip(" "))]
    code = line[len(indent) :]
    if code.startswith("#"):
        return tuple(_wrap_comment(indent, code, width))
    if code.startswith("from ") and " import " in code and "(" not in code and "#" not in code:
        module, names = code.split(" import ", 1)
        return (f"{indent}{module} import (", *(f"{indent}{INDENT}{n}," for n in names.split(", ")), f"{indent})")
    condition = _BLOCK_CONDITION.fullmatch(code)
    if condition is not None:
        for operator in (" or ", " and "):
            operands = _split_items(condition["test"], operator)
            if len(operands) > 1:
                inner = indent + INDENT
                lines = [f"{indent}{condition['keyword']} (", *fit_line(inner + operands[0], width)]
                for operand in operands[1:]:
                    lines += fit_line(f"{inner}{operator.lstrip()}{operand}", width)
                return (*lines, f"{indent}):")
    brackets = _first_bracket(code)
    if brackets is None:
        return (line,)
    start, end = brackets
    head, body, tail = code[: start + 1], code[start + 1 : end], code[end:]
    inner = indent + INDENT
    trailing = body.rstrip().endswith(",")  # a trailing comma already there: one item a line
    if not trailing and _is_call(code, start) and len(inner) + len(body) <= width:
        return (indent + head, *fit_line(inner + body, width), indent + tail)
    items = _split_items(body)
    if trailing:
        items = [i for i in items if i]
    elif len(items) == 1:
        return (indent + head, *fit_line(inner + body, width), indent + tail)
    lines = [indent + head]
    for item in items:
        lines += fit_line(f"{inner}{item},", width)
    return (*lines, indent + tail)


def _is_call(code: str, start: int) -> bool:
    """Whether the bracket at `start` holds a call's arguments or a def's parameters, whose
    contents the formatter first tries on one line of their own; a tuple, list, set or dict
    display it breaks one item a line at once."""
    return code[start] == "(" and start > 0 and (code[start - 1].isalnum() or code[start - 1] in "_)]")


def _wrap_comment(indent: str, code: str, width: int) -> list[str]:
    marker = "#: " if code.startswith("#: ") else "# "  # a documented name's comment keeps its `#:`
    parts = textwrap.wrap(
        code, width - len(indent), subsequent_indent=marker, break_long_words=False, break_on_hyphens=False
    )
    return [indent + part for part in parts]


def _first_bracket(code: str) -> tuple[int, int] | None:
    """(opening, closing) index of the statement's first bracket pair, skipping strings; None
    where there is none, or a comment follows the code."""
    depth, start = 0, -1
    for token in _TOKEN.finditer(code):
        c = token.group()[0]
        if c == "#":
            return None
        if c in _OPENERS:
            start = token.start() if depth == 0 and start < 0 else start
            depth += 1
        elif c in _CLOSERS:
            depth -= 1
            if depth == 0:
                return (start, token.start()) if "#" not in code[token.start() :] else None
    return None


def _split_items(body: str, separator: str = ",") -> list[str]:
    """The parts of a bracket's contents (a condition) between `separator`s (",", " and ",
    " or ") at depth 0, stripped."""
    items, depth, start = [], 0, 0
    for token in _TOKEN.finditer(body):
        text = token.group()
        if text[0] in _OPENERS:
            depth += 1
        elif text[0] in _CLOSERS:
            depth -= 1
        elif depth == 0 and text == separator:
            items.append(body[start : token.start()].strip())
            start = token.end()
    items.append(body[start:].strip())
    return items


def docstring(text: str, indent: int) -> str:
    """`text` as a docstring at `indent` columns, wrapped at the width (ruff format leaves a
    docstring's lines as they are; ruff check's line length does not)."""
    lines = textwrap.wrap(f'"""{text}"""', WIDTH - indent, break_long_words=False, break_on_hyphens=False)
    return ("\n" + " " * indent).join(lines)


def literal(value: object) -> str:
    """repr(value), a string quoted as the formatter quotes it: in double quotes, unless the
    text holds more double quotes than single ones."""
    if not isinstance(value, str):
        return repr(value)
    text = repr(value)
    body = text[1:-1].replace("\\'", "'") if text[0] == "'" else text[1:-1]  # neither quote escaped
    if value.count('"') > value.count("'"):
        return "'" + body.replace("'", "\\'") + "'"
    return '"' + body.replace('"', '\\"') + '"'


def import_names(names: list[str]) -> str:
    """The names of one `from m import ...`, in isort's order (ruff's `I` rules): CONSTANTS,
    then Classes, then other names, each case-insensitively with numbers by value; `x as y`
    sorts by `x`."""
    return ", ".join(sorted(names, key=_member_key))


def _member_key(name: str) -> tuple:
    member = name.split(" as ")[0]
    kind = 0 if len(member) > 1 and member.isupper() else 1 if member[:1].isupper() else 2
    natural = [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", member.lower())]
    return (kind, natural, member, name)

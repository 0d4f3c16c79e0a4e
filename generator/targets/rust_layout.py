"""Lay generated Rust out as rustfmt (stable, edition 2021, default configuration) does, for
the shapes the templates write, so that the output passes `cargo fmt --check` as it is.

rustfmt's defaults that matter here: lines of at most 100 columns (`max_width`); an array
literal on one line while its items take at most 60 (`array_width`), else one item a line
with a trailing comma; a call's arguments likewise within 60 (`fn_call_width`); a struct
literal on one line only within 18 (`struct_lit_width`), so the templates write theirs one
field a line. Running rustfmt itself took 1.5-2.0 s over the 2,584-op registry's 4.6 MB of
launch wrappers (generation takes 1.5 s in all), and would need a Rust toolchain to run
`gen` at all."""

from __future__ import annotations

import re

MAX_WIDTH = 100
ARRAY_WIDTH = 60
INDENT = "    "


def array_statement(head: str, items: list[str], tail: str, indent: str = INDENT) -> str:
    """`head[items]tail` (`let args = [a, b];`) at `indent`: on one line where rustfmt keeps
    it there, else one item a line."""
    joined = ", ".join(items)
    one = f"{indent}{head}[{joined}]{tail}"
    if len(joined) <= ARRAY_WIDTH and len(one) <= MAX_WIDTH:
        return one
    inner = indent + INDENT
    return "\n".join([f"{indent}{head}[", *(f"{inner}{item}," for item in items), f"{indent}]{tail}"])


def use_order(use: str) -> tuple[tuple[int, str], ...]:
    """The key rustfmt sorts `use` items by: path segment by segment, a `{...}` list after
    every name at its level."""
    path = use.removeprefix("pub ").removeprefix("use ").removesuffix(";")
    return tuple((1, "") if segment.startswith("{") else (0, segment) for segment in path.split("::"))


# -- match arms -----------------------------------------------------------------------------
#
# An arm whose body is one expression stays on the pattern's line where rustfmt keeps it
# there: the line within 100 columns, and every call's arguments (every array's items)
# within 60. Else rustfmt breaks the expression in ways that depend on its nesting; the
# arms are written in the forms it leaves as they are instead, those of candle-core's own
# storage.rs: `Ok(Variant(value))` as a block binding the value first, `Err(f(a, b))`
# with f's arguments one a line; another call on a line of its own in a block where it fits
# there, else with its arguments one a line.

FN_CALL_WIDTH = 60
SHORT_ITEM_WIDTH = 10  # short_array_element_width_threshold
_SIMPLE = re.compile(r"-?&?(?:[A-Za-z_]\w*(?:\.\w+)*|\d[\w.]*|\"[^\"\\]*\")\??")
# Only arms and statements that may need breaking: a line of more than 100 columns, or more
# than 60 after its ` => ` (an arm's body) or after a `(` (a call's arguments). Each pattern
# starts at the newline before its line (fit adds one before the text's first), which the
# regex engine finds at C speed, instead of trying `^` at every character. A block arm's
# pattern is matched greedily: its ` => {` can only end the line, where backtracking finds it.
_INLINE_ARM = re.compile(
    r"\n(?=[^\n]{101}|[^\n]* => [^\n]{62})(?P<indent> ++)(?P<pattern>[^\n]+?) => (?P<body>[^\n{][^\n]*),(?=\n|\Z)"
)
_BLOCK_ARM = re.compile(
    r"\n(?P<indent> ++)(?P<pattern>[^\n]+) => \{\n ++(?P<body>[^\n]*[^;\n])\n(?P=indent)\}(?=\n|\Z)"
)
_BRACE_COMMENT = re.compile(r"\n(?P<head>(?P<indent> *+)[^\n]*\{) (?P<comment>//[^\n]*)(?=\n|\Z)")
_CALL_STATEMENT = re.compile(
    r"\n(?=[^\n]{101}|[^\n]*\([^\n]{61})(?P<indent> ++)(?P<call>[\w.:]+\([^\n]*\)\??);(?=\n|\Z)"
)
_OK_VARIANT = re.compile(r"Ok\((?P<variant>[\w:]+)\((?P<value>.+)\)\)")
_ERR_CALL = re.compile(r"Err\((?P<callee>[\w:]+)\((?P<args>.+)\)\)")
_PAIRS = {"(": ")", "[": "]"}
_BRACKET = re.compile(r"[()\[\]]")


def fit(text: str) -> str:
    """`text` with its match arms, and the call statements before them, in the forms rustfmt
    leaves as they are."""
    if " => " not in text:  # launch.rs: laid out by its template
        return text
    text = "\n" + text  # the patterns' newline before the first line
    if "{ //" in text:  # a comment after an opening brace: on a line of its own, as rustfmt puts it
        text = _BRACE_COMMENT.sub(r"\n\g<head>\n\g<indent>    \g<comment>", text)
    text = _CALL_STATEMENT.sub(lambda m: "\n" + call_statement("", m["call"], ";", m["indent"]), text)
    text = _BLOCK_ARM.sub(_line_arm, text)
    return _INLINE_ARM.sub(_line_arm, text)[1:]


def _line_arm(match: re.Match[str]) -> str:
    return "\n" + _arm(match)


def _arm(match: re.Match[str]) -> str:
    indent, pattern, body = match["indent"], match["pattern"], match["body"]
    head = _pattern_lines(indent, pattern)  # the last one ends where ` => ` follows
    *before, last = head
    inner = indent + INDENT
    one = f"{last} => {body},"
    if len(one) <= MAX_WIDTH and fits_in_calls(body):
        return "\n".join([*before, one])
    ok = _OK_VARIANT.fullmatch(body)
    if ok is not None:
        value = call_statement("let s = ", ok["value"], ";", inner)
        return "\n".join([*before, f"{last} => {{", value, f"{inner}Ok({ok['variant']}(s))", f"{indent}}}"])
    err = _ERR_CALL.fullmatch(body)
    if err is not None:
        args = _item_lines(_items(err["args"]), inner)
        return "\n".join([*before, f"{last} => Err({err['callee']}(", *args, f"{indent})),"])
    if fits_in_calls(body) and len(inner) + len(body) <= MAX_WIDTH:  # on a line of its own, in a block
        return "\n".join([*before, f"{last} => {{", f"{inner}{body}", f"{indent}}}"])
    return "\n".join([*before, call_statement(f"{last.lstrip()} => ", body, ",", indent)])  # arguments one a line


def _pattern_lines(indent: str, pattern: str) -> list[str]:
    """A tuple pattern one element a line where `pattern => {` would pass 100 columns."""
    if len(indent) + len(pattern) + 5 <= MAX_WIDTH or not pattern.startswith("("):
        return [indent + pattern]
    inner = indent + INDENT
    return [f"{indent}(", *(f"{inner}{item}," for item in _items(pattern[1:-1])), f"{indent})"]


def _item_lines(items: list[str], indent: str) -> list[str]:
    """Arguments one a line, each with its comma; but short simple ones (names, literals, `&x`,
    `x.y`, `x?` of at most 10 columns) as many a line as fit, as rustfmt packs them."""
    if not all(len(item) <= SHORT_ITEM_WIDTH and _SIMPLE.fullmatch(item) for item in items):
        return [_item(item, indent) for item in items]
    lines = [indent]
    for item in items:
        if lines[-1] != indent and len(lines[-1]) + len(item) + 2 > MAX_WIDTH:
            lines.append(indent)
        lines[-1] += f"{item}," if lines[-1] == indent else f" {item},"
    return lines


def _item(item: str, indent: str) -> str:
    """One argument on its own line, with its comma: an array of more than 60 columns of
    items one item a line."""
    array = item.removeprefix("&")
    if array.startswith("[") and array.endswith("]") and not fits_in_calls(array):
        lead = item[: len(item) - len(array)]
        return array_statement(lead, _items(array[1:-1]), ",", indent)
    return f"{indent}{item},"


def call_statement(head: str, call: str, tail: str, indent: str = INDENT) -> str:
    """`head call tail` (`let s = x.f(a, b)?;`) at `indent`: on one line where rustfmt keeps it,
    else the last call's arguments one a line."""
    one = f"{indent}{head}{call}{tail}"
    if len(one) <= MAX_WIDTH and fits_in_calls(call):
        return one
    close = call.rfind(")")
    open_ = _opening(call, close)
    items = _items(call[open_ + 1 : close])
    inner = indent + INDENT
    lines = [f"{indent}{head}{call[: open_ + 1]}", *_item_lines(items, inner)]
    return "\n".join([*lines, f"{indent}{call[close:]}{tail}"])


def fits_in_calls(expression: str) -> bool:
    """Whether every call's arguments and every array's items in `expression`, written on one
    line, take at most 60 columns (rustfmt's fn_call_width and array_width)."""
    if len(expression) <= FN_CALL_WIDTH:
        return True
    opened: list[int] = []
    for bracket in _BRACKET.finditer(expression):
        if bracket[0] in _PAIRS:
            opened.append(bracket.start())
        elif opened:
            start = opened.pop()
            if bracket.start() - start - 1 > FN_CALL_WIDTH:
                return False
    return True


def _opening(text: str, close: int) -> int:
    depth = 0
    for i in range(close, -1, -1):
        depth += text[i] in ")]"
        depth -= text[i] in "(["
        if depth == 0:
            return i
    raise ValueError(f"unbalanced brackets in {text!r}")


def _items(arguments: str) -> list[str]:
    """Comma-separated arguments at depth 0 (generated Rust holds no commas in strings)."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(arguments):
        depth += c in "([{"
        depth -= c in ")]}"
        if c == "," and depth == 0:
            items.append(arguments[start:i].strip())
            start = i + 1
    return [*items, arguments[start:].strip()]

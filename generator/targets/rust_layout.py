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

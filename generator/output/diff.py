"""Unified diffs of generated files, fast where a big file changes in a few places.

difflib matches whole files line by line in Python: on a registry of 6,000 ops with one
change, `gen --check` spent 72 of 75 s there, comparing the hundreds of thousands of lines
that are the same on both sides. Lines before the first difference and after the last one
cannot be part of any change, so only the span between them (with its context lines) goes
to difflib; the hunks' line numbers are shifted back to the whole file's."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

CONTEXT = 3  # lines of context around a change, as `diff -u` and git give
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@$")


def _common_ends(old: list[str], new: list[str]) -> tuple[int, int]:
    """(lines the two share at the start, lines they share at the end, not overlapping)."""
    shortest = min(len(old), len(new))
    head = 0
    while head < shortest and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < shortest - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return head, tail


def unified(old: list[str], new: list[str], old_name: str, new_name: str) -> Iterator[str]:
    """The lines of difflib.unified_diff(old, new, ...) (a valid unified diff of the two,
    hunk for hunk the same where the changes lie more than the context apart)."""
    head, tail = _common_ends(old, new)
    start = max(0, head - CONTEXT)
    keep = max(0, tail - CONTEXT)
    lines = difflib.unified_diff(old[start : len(old) - keep], new[start : len(new) - keep], old_name, new_name)
    for line in lines:
        m = _HUNK.match(line) if start and line.startswith("@@") else None
        if m:
            a, b = int(m[1]) + start, int(m[3]) + start
            line = f"@@ -{a}{m[2] or ''} +{b}{m[4] or ''} @@\n"
        yield line

"""Unified diffs of generated files, fast where a big file changes in a few places.

difflib matches whole files line by line in Python: on a registry of 6,000 ops with one
change, `gen --check` spent 72 of 75 s there, comparing the hundreds of thousands of lines
that are the same on both sides. Text before the first difference and after the last one
cannot be part of any change: it is found by comparing the two texts in blocks (string
comparison, in C), and only the lines between (with their context lines) are split and go
to difflib; the hunks' line numbers are shifted back to the whole file's.

Lines end at "\\n" only, as git and patch count them (str.splitlines would also break at
\\x0c, \\u2028, ... inside a line and number the hunks differently)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

CONTEXT = 3  # lines of context around a change, as `diff -u` and git give
BLOCK = 1 << 14  # characters compared at a time while looking for the first difference
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@$")


def lines(text: str) -> list[str]:
    """The lines of `text`, each with its "\\n" (the last one without, where the text lacks it)."""
    parts = text.split("\n")
    last = parts.pop()
    return [f"{p}\n" for p in parts] + ([last] if last else [])


def _longest(same, limit: int) -> int:
    """The largest n <= limit with same(0, n), where same(i, j) says whether the texts agree
    from i to j (given they agree up to i): block by block, then by halves in the block."""
    at = 0
    while at < limit and same(at, min(at + BLOCK, limit)):
        at = min(at + BLOCK, limit)
    lo, hi = at, min(at + BLOCK, limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same(at, mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _span(a: str, b: str) -> tuple[int, int, int]:
    """(start, end in a, end in b): whole lines holding every difference, with CONTEXT lines
    around them; the texts are the same before start, and after the ends."""
    head = _longest(lambda i, j: a[i:j] == b[i:j], min(len(a), len(b)))
    tail = _longest(lambda i, j: a[len(a) - j : len(a) - i] == b[len(b) - j : len(b) - i], min(len(a), len(b)) - head)
    start = a.rfind("\n", 0, head) + 1  # the line holding the first difference (the same in b)
    for _ in range(CONTEXT):
        if start:
            start = a.rfind("\n", 0, start - 1) + 1
    # a[end_a:] == b[end_b:]: moved on through that common text to where a line starts in
    # both, then CONTEXT lines more (the same lines in both).
    end_a, end_b = len(a) - tail, len(b) - tail
    at_line_start = all(end == 0 or text[end - 1] == "\n" for text, end in ((a, end_a), (b, end_b)))
    for _ in range(CONTEXT + (0 if at_line_start else 1)):
        newline = a.find("\n", end_a)
        step = len(a) - end_a if newline < 0 else newline + 1 - end_a
        end_a, end_b = end_a + step, end_b + step
    return start, end_a, end_b


def unified(old: str, new: str, old_name: str, new_name: str) -> Iterator[str]:
    """The lines of a unified diff turning `old` into `new` (difflib's, hunk for hunk, where
    the changes lie more than the context apart)."""
    if old == new:
        return
    start, end_old, end_new = _span(old, new)
    offset = old.count("\n", 0, start)
    diff = difflib.unified_diff(lines(old[start:end_old]), lines(new[start:end_new]), old_name, new_name)
    for line in diff:
        m = _HUNK.match(line) if offset and line.startswith("@@") else None
        if m:
            line = f"@@ -{int(m[1]) + offset}{m[2] or ''} +{int(m[3]) + offset}{m[4] or ''} @@\n"
        yield line

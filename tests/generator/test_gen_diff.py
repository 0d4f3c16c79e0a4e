"""The diffs `gen --check` prints and `--patch` writes (generator/output/diff.py): valid
unified diffs that turn the old file into the new one, hunk for hunk what difflib gives
where the changes lie apart, however big the file; and the cut that bounds what --check prints."""

from __future__ import annotations

import difflib
import re
import shutil

import pytest
from gen_harness import MINI, run_cli
from hypothesis import given, settings, strategies as st

from generator.output import writer
from generator.output.diff import lines, unified

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_diff(old: list[str], diff: list[str]) -> list[str]:
    """`old` with the unified diff applied, checking every context and removed line."""
    out: list[str] = []
    at = 0  # lines of old consumed
    for line in diff[2:]:
        m = HUNK.match(line)
        if m:
            start = int(m[1]) - (0 if m[2] == "0" else 1)
            assert start >= at, line
            out += old[at:start]
            at = start
        elif line[0] in " -":
            assert old[at] == line[1:], (at, line)
            at += 1
            if line[0] == " ":
                out.append(line[1:])
        else:
            assert line[0] == "+", line
            out.append(line[1:])
    return out + old[at:]


LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "def f():\n", "    return x\n", "\n"]), max_size=60)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(common=LINES, old=st.lists(LINES, min_size=1, max_size=4), new=st.lists(LINES, min_size=1, max_size=4))
def test_a_diff_turns_the_old_file_into_the_new(common, old, new):
    """Files made of shared runs and changed runs, at the ends too: the diff applies."""
    a = [line for i, part in enumerate(old) for line in (part + common if i % 2 else common + part)]
    b = [line for i, part in enumerate(new) for line in (part + common if i % 2 else common + part)]
    diff = list(unified("".join(a), "".join(b), "a/f", "b/f"))
    if a == b:
        assert diff == []
        return
    assert diff[:2] == ["--- a/f\n", "+++ b/f\n"]
    assert apply_diff(a, diff) == b


def test_a_big_file_with_one_change_diffs_as_difflib_does():
    a = [f"line {i}\n" for i in range(200_000)]
    b = list(a)
    b[123_456] = "changed\n"
    b.insert(150_000, "inserted\n")
    assert list(unified("".join(a), "".join(b), "a/x", "b/x")) == list(difflib.unified_diff(a, b, "a/x", "b/x"))


@pytest.mark.parametrize("limit, cut", [(10, True), (100_000, False)])
def test_check_cuts_a_long_diff_and_says_so(tmp_path, monkeypatch, limit, cut):
    registry = tmp_path / "ops.yaml"
    shutil.copytree(MINI.parent / "mini_rt", tmp_path / "mini_rt")
    registry.write_text(MINI.read_text())
    out = tmp_path / "pkg"
    assert run_cli("--registry", registry, "--out", out).exit_code == 0
    text = MINI.read_text()
    registry.write_text(
        text.replace(
            "  Bump2:  {inputs: 2, inplace: true}\n",
            "  Bump2:  {inputs: 2, inplace: true}\n  Bump3:  {inputs: 2, inplace: true}\n",
        )
    )
    full = run_cli("--registry", registry, "--out", out, "--check")
    assert full.exit_code == 1 and "stops after" not in full.stderr
    monkeypatch.setattr(writer, "DIFF_LINES", limit)
    result = run_cli("--registry", registry, "--out", out, "--check")
    assert result.exit_code == 1
    if cut:
        assert result.stdout.splitlines() == full.stdout.splitlines()[:limit]
        assert f"the diff above stops after {limit:,} lines" in result.stderr
    else:
        assert result.stdout == full.stdout


TEXT = st.text(alphabet="ab\n", max_size=80)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(a=TEXT, b=TEXT, shared=TEXT)
def test_any_two_texts_diff_into_each_other(a, b, shared):
    """Changes inside lines, lines without their newline at the end, one side empty: the
    diff applies."""
    old, new = shared + a + shared, shared + b + shared
    diff = list(unified(old, new, "a/f", "b/f"))
    assert (diff == []) == (old == new)
    if diff:
        assert "".join(apply_diff(lines(old), diff)) == new

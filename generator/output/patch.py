"""`gen --check --patch FILE`: the stale generated files as a patch that `git apply` accepts.

The diff --check prints names files relative to --out (a/storage.py). `git apply` reads
patch paths relative to the top of the work tree (from a subdirectory it skips the files
outside it), and relative to the current directory outside a repository; the patch names
files that way (a/generated/storage.py), with git's headers for files created and removed."""

from __future__ import annotations

import os
from pathlib import Path

from .diff import unified
from .writer import Plan

MODE = "100644"  # the writer writes every generated file 0644


class PatchRefused(Exception):
    """--out cannot be named from the current directory without `..`, which `git apply` rejects."""


def work_tree(cwd: Path) -> Path:
    """The top of the git work tree holding `cwd` (a `.git` directory, or file in a linked
    worktree), else `cwd`: what `git apply` resolves patch paths against."""
    here = cwd.resolve()
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d
    return here


def git_patch(out: Path, plan: Plan, cwd: Path) -> str:
    base = work_tree(cwd)
    prefix = Path(os.path.relpath(out.resolve(), base)).as_posix()
    if prefix == ".." or prefix.startswith("../"):
        raise PatchRefused(f"{out} is outside {base}; `git apply` cannot reach it from there")
    chunks = []
    for rel in plan.stale:
        path = rel if prefix == "." else f"{prefix}/{rel}"
        old, new = plan.current.get(rel), plan.write.get(rel)
        chunks.append(f"diff --git a/{path} b/{path}\n")
        if old is None:
            chunks.append(f"new file mode {MODE}\n")
        elif new is None:
            chunks.append(f"deleted file mode {MODE}\n")
        lines = unified(
            old or "",
            new or "",
            f"a/{path}" if old is not None else "/dev/null",
            f"b/{path}" if new is not None else "/dev/null",
        )
        # As git writes a last line without a newline, so that `git apply` keeps it that way.
        chunks.extend(ln if ln.endswith("\n") else f"{ln}\n\\ No newline at end of file\n" for ln in lines)
    return "".join(chunks)

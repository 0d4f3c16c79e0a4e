"""The repository speaks of the product, not of how it was built: no tracked file's text or
path counts work in stops, issues or rounds (history belongs in `git log`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROCESS_WORDS = r"[Ss]top [0-9]+|[Ii]ssue ?[0-9]+|round [0-9]+"
PROCESS_PATH = re.compile(r"(issue|stop|round)[-_ ]?[0-9]", re.IGNORECASE)


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)


@pytest.fixture(scope="module")
def tracked() -> list[str]:
    if shutil.which("git") is None or _git("rev-parse", "--is-inside-work-tree").returncode != 0:
        pytest.skip("not a git checkout: the tracked files are unknown")
    return _git("ls-files").stdout.splitlines()


def test_no_tracked_text_counts_stops_issues_or_rounds(tracked):
    found = _git("grep", "-nE", PROCESS_WORDS)
    assert found.returncode in (0, 1), found.stderr  # 1: nothing found
    assert found.stdout == ""


def test_no_tracked_path_carries_an_issue_number(tracked):
    assert len(tracked) > 100
    assert [path for path in tracked if PROCESS_PATH.search(path)] == []


def test_the_patterns_see_what_they_forbid():
    number = "11"  # apart from the words, so that this file's own text stays clean
    assert re.search(PROCESS_WORDS, f"as stop {number} measured") and re.search(PROCESS_WORDS, f"see issue{number}")
    assert PROCESS_PATH.search(f"bench/gpu_issue{number}.py") and PROCESS_PATH.search(f"results/round-{number}.log")
    assert not re.search(PROCESS_WORDS, "a round trip, the stop token") and not PROCESS_PATH.search("bench/gpu.py")

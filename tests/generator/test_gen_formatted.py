"""Generated Python passes its host's formatter and linter as it is: `ruff format --check` and
`ruff check` (the pinned ruff of the `test` extra, this project's configuration) report
nothing on the shipped package, the golden outputs and a synthetic registry's package, which
has every shape a big registry makes (long launch wrappers and Protocol stubs, empty families).
`make lint` checks generated/ as well; the goldens and the synthetic output are checked here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from gen_helpers import REPO, run_cli

from bench import synthetic

CONFIG = REPO / "pyproject.toml"


def ruff(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *map(str, args)], capture_output=True, text=True, cwd=REPO, check=False
    )


def assert_ruff_clean(folder: Path) -> None:
    files = sorted(folder.glob("*.py"))
    assert files, f"no Python files in {folder}"
    formatted = ruff("format", "--check", "--diff", "--config", CONFIG, *files)
    assert formatted.returncode == 0, f"ruff format would change {folder}:\n{formatted.stdout[-6000:]}"
    linted = ruff("check", "--config", CONFIG, "--output-format", "concise", *files)
    assert linted.returncode == 0, f"ruff check finds in {folder}:\n{linted.stdout[-6000:]}"


@pytest.fixture(scope="module")
def synthetic_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 300-op synthetic registry (bench/synthetic.py) with HIP kernels and the rust target."""
    root = tmp_path_factory.mktemp("synthetic")
    registry = synthetic.write(root, n_ops=300, rust=True)
    result = run_cli("--registry", registry, "--out", root / "generated")
    assert result.exit_code == 0, result.output
    return root / "generated"


@pytest.mark.parametrize("folder", ["generated", "tests/golden/mini", "tests/golden/mini_hip"])
def test_shipped_and_golden_python_pass_ruff(folder):
    assert_ruff_clean(REPO / folder)


def test_a_synthetic_registrys_python_passes_ruff(synthetic_package):
    assert_ruff_clean(synthetic_package)

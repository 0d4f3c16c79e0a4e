"""Generated files pass their host's formatter and linter as they are.

Python: `ruff format --check` and `ruff check` (the pinned ruff of the `test` extra, this
project's configuration) report nothing on the shipped package, the golden outputs and a
synthetic registry's package, which has every shape a big registry makes (long launch
wrappers and Protocol stubs, empty families). `make lint` checks generated/ as well.
Rust: `rustfmt --check` (edition 2021, default configuration) reports nothing on the same
outputs' Rust, where rustfmt is installed; clippy runs in tests/rust/test_cargo.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gen_harness import REPO, run_cli

from bench import synthetic
from generator.targets import rust_layout

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


def _rustfmt() -> str:
    rustfmt = shutil.which("rustfmt")
    if rustfmt is None:
        pytest.skip("rustfmt is not on PATH: the generated Rust's layout is not checked here")
    return rustfmt


def assert_rustfmt_clean(folder: Path) -> None:
    files = sorted(folder.glob("*.rs"))
    assert files, f"no Rust files in {folder}"
    proc = subprocess.run(
        [_rustfmt(), "--edition", "2021", "--check", *map(str, files)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, f"rustfmt would change {folder}:\n{proc.stdout[-6000:]}{proc.stderr[-2000:]}"


@pytest.mark.parametrize("folder", ["generated/rust", "tests/golden/mini_rust"])
def test_shipped_and_golden_rust_pass_rustfmt(folder):
    assert_rustfmt_clean(REPO / folder)


def test_a_synthetic_registrys_rust_passes_rustfmt(synthetic_package):
    assert_rustfmt_clean(synthetic_package / "rust")


def _snippet(n: int) -> str:
    """Rust of the shapes rust_layout lays out, with names of n characters: a kernel's entry
    point, its argument array, match arms of every form, a call statement."""
    name, arg = "k" * n, "a" * max(1, n // 4)
    args = [f"KernelArg::Usize({arg}{i})" for i in range(n // 8 + 1)]
    call = f"s.op_{name}({', '.join(f'{arg}{i}' for i in range(n // 10 + 1))})"
    arms = [
        f"        (Self::Cpu(s), Self::Cpu({arg})) => Ok(Self::Cpu({call}?)),",
        f"        Self::Cuda(s) => {call},",
        f'        ({arg}, lhs) => Err(Device::mismatch("{name}", &[lhs.device(), {arg}.device()])),',
    ]
    lines = [
        "fn f() -> Result<()> {",
        rust_layout.call_statement("let entry_point = ", f'Kernel::new("{name}", "{name}.hip")', ";"),
        rust_layout.array_statement("let kernel_args = ", args, ";"),
        f'    dtype_in(self.dtype(), &[{", ".join(["DType::F32"] * (n // 12 + 1))}], "{name}")?;',
        "    match (self, rhs) {",
        *arms,
        "    }",
        "}",
        "",
    ]
    return rust_layout.fit("\n".join(lines))


def test_rust_layout_matches_rustfmt_at_every_length(tmp_path):
    """rust_layout against rustfmt itself, over names from short to long enough to break
    every shape (lines past 100 columns, arguments past 60)."""
    rustfmt = _rustfmt()
    files = []
    for n in range(4, 60, 3):  # a name of 60 and more: rustfmt breaks `s.name(..)` as a chain
        path = tmp_path / f"n{n}.rs"
        path.write_text(_snippet(n))
        files.append(str(path))
    proc = subprocess.run([rustfmt, "--edition", "2021", "--check", *files], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]

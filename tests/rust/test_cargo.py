"""Compile and test the generated Rust (generated/rust) with cargo: the std-only crate
beside this file, with mock backends, once per feature set that matters (cpu alone, each
GPU backend alone, all), and clippy with warnings as errors. No crate from any registry:
cargo runs --offline.

Cargo's target directory is tests/rust/target (git-ignored); a second run only relinks."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

CRATE = Path(__file__).resolve().parent
REPO = CRATE.parents[1]
# The feature sets follow the registry: cpu alone, each other backend alone, all. A backend the
# crate has no mock of yet (`gen new-backend`: no src/<backend>_backend.rs, no feature in
# Cargo.toml) is skipped, saying so; build.rs lets its cfgs be, so the rest still compiles.
# The crate's features are the backends it has mocks of (metal: a Rust-only backend of the
# Candle profile); every backend of the registry is one feature set, mocked or not.
MOCKED = set(tomllib.loads((CRATE / "Cargo.toml").read_text()).get("features", {}))
BACKENDS = sorted(MOCKED | {b for b in yaml.safe_load((REPO / "ops.yaml").read_text())["backends"] if b != "cpu"})
FEATURES = {"cpu": [], **{b: ["--features", b] for b in BACKENDS}, "all": ["--all-features"]}


def _feature_sets() -> list:
    return [
        pytest.param(
            name,
            id=name,
            marks=()
            if name in MOCKED or name in ("cpu", "all")
            else pytest.mark.skip(
                reason=f"tests/rust has no mock {name} backend (src/{name}_backend.rs and a `{name}` feature "
                f"in Cargo.toml): the generated {name} arms are not compiled"
            ),
        )
        for name in FEATURES
    ]


# The crate's tests, in every feature set. Those over pairs of devices find one pair
# within a backend (cuda:0, cuda:1) where one GPU backend is compiled, none with cpu alone.
MIN_TESTS = 22


def _cargo() -> str:
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not on PATH: the generated Rust (generated/rust) is not compiled here")
    return cargo


@pytest.mark.parametrize("features", _feature_sets())
def test_generated_rust_builds_and_passes(features):
    cargo = _cargo()
    env = {
        **os.environ,
        "CARGO_TERM_COLOR": "never",
        "CARGO_NET_OFFLINE": "true",
        "CARGO_TARGET_DIR": str(CRATE / "target"),
    }
    proc = subprocess.run(
        [cargo, "test", "--offline", "--quiet", *FEATURES[features]],
        cwd=CRATE,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"cargo test ({features}) failed:\n{output[-6000:]}"
    passed = [int(n) for n in re.findall(r"test result: ok\. (\d+) passed", output)]
    assert passed and sum(passed) >= MIN_TESTS, output[-3000:]
    assert "warning" not in output.lower(), f"the generated Rust warns ({features}):\n{output[-3000:]}"


@pytest.mark.parametrize("features", _feature_sets())
def test_generated_rust_passes_clippy(features):
    """Candle's CI runs clippy with warnings as errors; the generated files must pass it too."""
    cargo = _cargo()
    env = {**os.environ, "CARGO_TERM_COLOR": "never", "CARGO_TARGET_DIR": str(CRATE / "target")}
    if subprocess.run([cargo, "clippy", "--version"], capture_output=True, env=env).returncode != 0:
        pytest.skip("cargo clippy is not installed (rustup component add clippy): clippy is not run here")
    proc = subprocess.run(
        [cargo, "clippy", "--offline", "--quiet", "--lib", "--tests", *FEATURES[features], "--", "-D", "warnings"],
        cwd=CRATE,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, f"clippy ({features}):\n{(proc.stdout + proc.stderr)[-6000:]}"


def test_crate_compiles_the_shipped_output():
    """The crate includes generated/rust, which `gen` writes from ops.yaml (no copy of it); the
    dummy of a backend with no mock here (src/<name>_backend.rs) comes in through build.rs."""
    # lib.rs and the modules whose generated children read their types' fields (QTensor, UgIOp1)
    lib = "".join((CRATE / "src" / name).read_text() for name in ("lib.rs", "quantized.rs", "ug.rs"))
    for rs in sorted((REPO / "generated" / "rust").glob("*.rs")):
        backend = re.fullmatch(r"dummy_(\w+)_backend\.rs", rs.name)
        if backend and not (CRATE / "src" / f"{backend[1]}_backend.rs").exists():
            assert 'include!(concat!(env!("OUT_DIR"), "/unmocked_backends.rs"));' in lib
            continue
        assert f'generated/rust/{rs.name}"' in lib, f"{rs.name} is generated but not compiled by tests/rust"

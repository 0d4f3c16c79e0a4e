"""The README's walkthrough for a new backend, on a clean copy of this repository: after each
step, `gen --check`, lint of what the step wrote, and the suites that take the registry's
backends pass, with no edit to any test.

1. `gen new-backend vulkan`, `gen`: vulkan is unavailable ("the vulkan runtime is a scaffold").
2. availability() implemented (returns None), `gen`: vulkan is available and every op of it
   raises NotImplementedForBackend, so the suites that run every available backend skip
   those ops with the error's words ("no vulkan implementation for zeros") instead of failing.
3. The six functions of a backend keeping its buffers in host memory, `gen`: every op
   declaring `fallback: cpu` now runs on vulkan, and the GPU suites run those."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tools_harness import HOST_MEMORY_BACKEND, checkout_copy, implement

# The suites whose cases follow the registry's backends: devices, arms, availability, errors.
BACKEND_SUITES = ["tests/package", "tests/conformance/test_backend_errors.py", "tests/gpu/test_availability.py"]
# The Rust crate's feature sets and its calls of every Device method: they follow the registry,
# not the runtime modules, so they run once, after the backend is added.
REGISTRY_SUITES = [
    "tests/generator/test_gen_rust.py::test_every_registry_op_is_exercised_by_the_cargo_tests",
    "tests/rust/test_cargo.py",
    "tests/tools/test_ci_files.py",
]
# The suites that run every available backend other than cpu.
GPU_SUITES = ["tests/gpu/test_gpu_conformance.py", "tests/gpu/test_gpu_paths.py", "tests/gpu/test_nn_gpu.py"]


def _run(repo: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(repo)  # the copy's generator, runtime and generated package
    env["CARGO_TARGET_DIR"] = str(repo / "tests" / "rust" / "target")
    return subprocess.run([sys.executable, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)


def _ok(result: subprocess.CompletedProcess) -> str:
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{' '.join(result.args[1:])}: exit {result.returncode}\n{output[-6000:]}"
    return output


def _gen_and_check(repo: Path) -> None:
    _ok(_run(repo, "-m", "generator.cli"))
    _ok(_run(repo, "-m", "generator.cli", "--check"))
    ruff = Path(sys.executable).with_name("ruff")
    for command in (["check", "."], ["format", "--check", "."]):  # as `make lint` runs it
        result = subprocess.run([ruff, *command], cwd=repo, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, f"ruff {' '.join(command)}:\n{result.stdout}{result.stderr}"


def _pytest(repo: Path, *paths: str) -> str:
    return _ok(_run(repo, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *paths))


def test_new_backend_walkthrough(tmp_path):
    repo = checkout_copy(tmp_path / "repo")
    skipped = re.compile(r"SKIPPED \[\d+\] .*no vulkan implementation for \w+")

    added = _ok(_run(repo, "-m", "generator.cli", "new-backend", "vulkan"))
    assert "runtime/vulkan.py: availability() and" in added
    _gen_and_check(repo)
    output = _pytest(repo, *BACKEND_SUITES, *REGISTRY_SUITES)
    assert "tests/rust has no mock vulkan backend" in output  # its feature set: skipped, saying why

    implement(repo / "runtime" / "vulkan.py", {"availability": HOST_MEMORY_BACKEND["availability"]})
    _gen_and_check(repo)
    output = _pytest(repo, *BACKEND_SUITES, *GPU_SUITES)
    assert skipped.search(output), output[-3000:]

    implement(repo / "runtime" / "vulkan.py", {k: v for k, v in HOST_MEMORY_BACKEND.items() if k != "availability"})
    _gen_and_check(repo)
    output = _pytest(repo, *BACKEND_SUITES, *GPU_SUITES)
    assert skipped.search(output), output[-3000:]

"""The tools tests' harness (gen audit, new-backend, docs, --check --patch):
paths, the CLI in-process, and the CLI as a subprocess where a test needs a clean
interpreter or a working directory of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from generator.cli import main as cli_main

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
AUDIT = FIXTURES / "audit"
AUDIT_REGISTRY = AUDIT / "ops.yaml"
MINI_DIR = FIXTURES / "mini"


def run_cli(*args: object) -> Result:
    """`gen` in-process; an unexpected exception ends up in result.exception."""
    return CliRunner().invoke(cli_main, [str(a) for a in args], catch_exceptions=True)


def gen(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    """`gen` as a subprocess in `cwd`, with this checkout's generator first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "generator.cli", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter whose path starts at `cwd`, then this checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(REPO)])}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def mini_copy(root: Path) -> Path:
    """A copy of the generator's fixture registry and its runtimes (mini_rt/) in `root`."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(MINI_DIR / "ops.yaml", root / "ops.yaml")
    shutil.copytree(MINI_DIR / "mini_rt", root / "mini_rt", ignore=shutil.ignore_patterns("__pycache__"))
    return root / "ops.yaml"


def checkout_copy(dest: Path) -> Path:
    """The files git tracks in this checkout, as they are in the work tree, copied to `dest`:
    what a fresh clone with these changes holds (no venv, caches, build output or stamps)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        import pytest

        pytest.skip("needs a git checkout, to know which files a clone holds")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = REPO / rel
        if source.is_file():  # a tracked file deleted in the work tree is not in the clone
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


def implement(module: Path, functions: dict[str, str]) -> None:
    """Replace functions of a runtime module (a `gen new-backend` scaffold) by the given
    sources, as someone filling in the scaffold does; `import` lines may come first."""
    import ast

    text = module.read_text()
    lines = text.splitlines(keepends=True)
    found = {n.name: n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
    for name in sorted(functions, key=lambda n: -found[n].lineno):  # bottom up: line numbers hold
        node = found[name]
        lines[node.lineno - 1 : node.end_lineno] = [functions[name].rstrip("\n") + "\n"]
    module.write_text("".join(lines))


# The runtime functions of a backend that keeps its buffers in host memory (numpy arrays): with
# them every op declaring `fallback: cpu` runs on it. Each a source, by function name.
HOST_MEMORY_BACKEND = {
    "availability": "def availability() -> str | None:\n    return None\n",
    "to_host": "def to_host(inner):\n    return inner\n",
    "from_host": "def from_host(ordinal, array):\n    import numpy as np\n\n"
    "    return np.array(array, copy=True).reshape(-1)\n",
    "device": "def device(inner):\n    return 0\n",
    "to_numpy": "def to_numpy(inner, layout):\n    import runtime.cpu\n\n"
    "    return runtime.cpu.to_numpy(inner, layout)\n",
    "storage_from_slice": "def storage_from_slice(ordinal, array):\n    import numpy as np\n\n"
    "    return np.array(array, copy=True).reshape(-1)\n",
    "dtype": "def dtype(inner):\n    return inner.dtype\n",
}

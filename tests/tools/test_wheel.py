"""The wheel as people install it: built from a clean copy of this repository, installed (not
editable) into a fresh venv, it holds one package, `opgen`, and everything `gen` reads; its
`gen --check` passes on the clean copy, and so does the pre-commit hook run the way pre-commit
runs it (the hook's `entry` and `args`, from a venv holding the package).

The fresh venv gets the package from the wheel alone; its dependencies (jinja2, numpy, ...)
come from this interpreter's site-packages through a .pth file, so that the test needs no
index and installs nothing else."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from tools_harness import checkout_copy

GENERIC = {"generator", "generated", "runtime", "templates"}


class Installed(NamedTuple):
    clean: Path  # the copy of the repository
    wheel: Path
    venv: Path


def _run(*args: object, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, (
        f"{' '.join(result.args)}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    )
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    clean = checkout_copy(root / "repo")
    dist = root / "dist"
    _ok(
        _run(
            sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", dist, clean, cwd=root
        )
    )
    (wheel,) = dist.glob("opgen-*.whl")
    venv = root / "venv"
    _ok(_run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=root))
    site = Path(
        _ok(
            _run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=root)
        ).stdout.strip()
    )
    here = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "opgen-test-dependencies.pth").write_text("".join(f"{p}\n" for p in here))
    _ok(_run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=root))
    return Installed(clean, wheel, venv)


def test_the_wheel_holds_one_package_and_everything_gen_reads(installed):
    names = zipfile.ZipFile(installed.wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"opgen", next(t for t in tops if t.endswith(".dist-info"))}, sorted(tops)
    assert not tops & GENERIC
    clean = installed.clean
    templates = [p for p in (clean / "templates").rglob("*") if p.is_file()]
    assert templates and {f"opgen/templates/{p.relative_to(clean / 'templates').as_posix()}" for p in templates} <= set(
        names
    )
    modules = {f"opgen/{p.relative_to(clean / 'generator').as_posix()}" for p in (clean / "generator").rglob("*.py")}
    assert modules <= set(names), sorted(modules - set(names))
    assert "opgen/ops.schema.json" in names


def test_installed_package_is_opgen_and_nothing_generic(installed, tmp_path):
    code = (
        "import importlib.util, opgen; print(opgen.__file__); print(*(importlib.util.find_spec(n) is None for n in %r))"
    )
    out = _ok(_run(installed.venv / "bin" / "python", "-c", code % sorted(GENERIC), cwd=tmp_path)).stdout.split()
    assert Path(out[0]).is_relative_to(installed.venv), out[0]
    assert out[1:] == ["True"] * len(GENERIC), f"importable outside a checkout: {sorted(GENERIC)} -> {out[1:]}"


def test_installed_gen_checks_a_clean_copy(installed):
    result = _ok(_run(installed.venv / "bin" / "gen", "--check", cwd=installed.clean))
    assert "generated files up to date" in result.stdout


def test_pre_commit_hook_as_pre_commit_runs_it(installed):
    (hook,) = yaml.safe_load((installed.clean / ".pre-commit-hooks.yaml").read_text())
    assert hook["language"] == "python"  # pre-commit: a venv with this repository pip-installed
    command = [*shlex.split(hook["entry"]), *hook.get("args", [])]
    env = {**os.environ, "PATH": f"{installed.venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    result = _ok(_run(*command, cwd=installed.clean, env=env))
    assert "generated files up to date" in result.stdout

    registry = installed.clean / "ops.yaml"
    text = registry.read_text()
    changed = text.replace('doc: "numpy and ml_dtypes; always available"', 'doc: "numpy; always here"')
    assert changed != text
    registry.write_text(changed)
    try:
        stale = _run(*command, cwd=installed.clean, env=env)
    finally:
        registry.write_text(text)
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "+" in stale.stdout and "numpy; always here" in stale.stdout

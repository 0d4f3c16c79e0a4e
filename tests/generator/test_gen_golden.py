"""Golden output: the fixture registry's generated package, committed under tests/golden/mini
and compared byte for byte. `pytest --update-golden` rewrites it after an intended change."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys

import pytest
from gen_harness import GOLDEN, MINI, REPO, run_cli, undefined_globals, unused_imports

import generator.targets.python
from generator.targets.python import MARKER_PREFIX

# Every comment style a generated file's marker may use (Python's first).
MARKERS = tuple(getattr(generator.targets.python, "MARKER_PREFIXES", (MARKER_PREFIX,)))


def _files(directory) -> dict[str, bytes]:
    """The generated files of a directory (not __pycache__ and its stamp)."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, bytes]:
    """The fixture package as the CLI writes it: file name -> bytes."""
    out = tmp_path_factory.mktemp("golden") / "minipkg"
    result = run_cli("--registry", MINI, "--out", out)
    assert result.exit_code == 0, result.output
    return _files(out)


def test_golden_files(generated, update_golden):
    if update_golden:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for stale in GOLDEN.iterdir():
            if stale.name not in generated:
                stale.unlink()
        for name, data in generated.items():
            (GOLDEN / name).write_bytes(data)
    golden = _files(GOLDEN)
    assert sorted(generated) == sorted(golden), "the set of generated files changed (run pytest --update-golden)"
    for name, data in generated.items():
        if data != golden[name]:
            diff = "".join(
                difflib.unified_diff(
                    golden[name].decode().splitlines(keepends=True),
                    data.decode().splitlines(keepends=True),
                    f"golden/{name}",
                    f"generated/{name}",
                )
            )
            pytest.fail(f"{name} differs from tests/golden/mini (run pytest --update-golden if intended):\n{diff}")


def test_golden_covers_the_package():
    """The golden set is the whole package, kernels included (the fixture's cpu has numpy kernels)."""
    names = set(_files(GOLDEN))
    assert {
        "__init__.py",
        "backends.py",
        "conversions.py",
        "custom_ops.py",
        "device.py",
        "dtypes.py",
        "kernels_numpy.py",
        "storage.py",
    } <= names


def test_every_file_starts_with_the_marker(generated):
    for name, data in generated.items():
        first = data.decode("utf-8").splitlines()[0]
        prefixes = (MARKER_PREFIX,) if name.endswith(".py") else MARKERS
        assert first.startswith(prefixes), name
        assert any(first.startswith(f"{p}ops.yaml;") for p in prefixes), f"{name}: marker does not name the registry"
    for name, data in _files(GOLDEN).items():
        assert data.decode("utf-8").startswith(MARKERS), name


def test_generated_text_is_plain(generated):
    """LF line endings, one trailing newline, no trailing whitespace, no tabs: stable diffs."""
    for name, data in generated.items():
        text = data.decode("utf-8")
        assert "\r" not in text, name
        assert text.endswith("\n") and not text.endswith("\n\n"), name
        for i, line in enumerate(text.splitlines(), 1):
            assert line == line.rstrip(), f"{name}:{i}: trailing whitespace"
            assert "\t" not in line, f"{name}:{i}: tab"


def test_no_undefined_names(generated):
    for name, data in generated.items():
        if name.endswith(".py"):
            assert not undefined_globals(data.decode("utf-8"), name), name


def test_no_unused_imports(generated):
    """A generated module imports what it uses: the kernel tables, `_missing`, a runtime module
    or numpy only where an arm or a signature names them."""
    for name, data in generated.items():
        if name.endswith(".py"):
            assert not unused_imports(data.decode("utf-8")), name


def test_generating_twice_is_identical(tmp_path, generated):
    out = tmp_path / "again"
    assert run_cli("--registry", MINI, "--out", out).exit_code == 0
    assert _files(out) == generated


def _generate_in_subprocess(out, seed: str, cwd) -> dict[str, bytes]:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "generator.cli", "--registry", str(MINI), "--out", str(out)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return _files(out)


def test_output_does_not_depend_on_hash_seed_or_cwd(tmp_path, generated):
    """Set iteration order changes with PYTHONHASHSEED; the output must not."""
    a = _generate_in_subprocess(tmp_path / "a", "1", REPO)
    b = _generate_in_subprocess(tmp_path / "b", "2", tmp_path)
    assert a == b == generated


def test_shipped_registry_renders_a_clean_package():
    """ops.yaml itself: valid, and no generated module reads a name it never binds or imports
    one it never uses."""
    from gen_harness import render_file

    rendered = render_file(REPO / "ops.yaml")
    assert len(rendered) >= 8
    for name, source in rendered.items():
        assert source.startswith(tuple(f"{m}ops.yaml;" for m in MARKERS)), name
        if name.endswith(".py"):
            assert not undefined_globals(source, name), name
            assert not unused_imports(source), (name, unused_imports(source))

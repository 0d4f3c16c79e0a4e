"""Faults around writing: `gen` killed at any point of a write, two `gen` runs on one tree at
once, symbolic links in the output directory, and output paths that cannot be written.

A package is *consistent* when its generated files are exactly those one registry generates.
After a kill, the package is consistent, or the next `gen --check` and `gen` say that it
was interrupted; the next full `gen` always leaves it consistent."""

from __future__ import annotations

import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gen_helpers import MINI, REPO, crashed, run_cli, workspace

from generator.output.writer import JOURNAL, TMP_PREFIX

A_TO_B = [  # edits turning the fixture registry into another one that changes nine of its ten modules
    (
        '  gpu: {runtime: mini_rt.gpu, ordinal: true, doc: "fixture device backend; only some ops"}\n',
        '  gpu: {runtime: mini_rt.gpu, ordinal: true, doc: "fixture device backend; only some ops"}\n'
        "  rocm2: {runtime: mini_rt.rocm2, ordinal: true}\n",
    ),
    (
        "  f32:  {numpy: float32, hip: float, kind: float}\n",
        "  f32:  {numpy: float32, hip: float, kind: float}\n  u32:  {numpy: uint32, hip: uint32_t, kind: uint}\n",
    ),
    (
        '  exp: {numpy: "np.exp(x)", dtypes: [f32, bf16]}\n',
        '  exp: {numpy: "np.exp(x)", dtypes: [f32, bf16]}\n  sqr: {numpy: "x * x", dtypes: all}\n',
    ),
]
INTERRUPTED = "a gen was interrupted while writing here"


def registry_text(variant: str) -> str:
    text = MINI.read_text(encoding="utf-8")
    if variant == "b":
        for old, new in A_TO_B:
            assert old in text
            text = text.replace(old, new)
    return text


def package(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file() and not p.name.startswith(".")}


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    """(workspace, {"a": files, "b": files}): what each registry generates, written afresh.
    The registry is one file, edited between runs, as a person would."""
    root = workspace(tmp_path_factory.mktemp("faults"))
    expected = {}
    for v in ("a", "b"):
        (root / "ops.yaml").write_text(registry_text(v), encoding="utf-8")
        out = root / f"clean_{v}"
        assert run_cli("--registry", root / "ops.yaml", "--out", out).exit_code == 0
        expected[v] = package(out)
    differing = [n for n in expected["a"] if expected["a"][n] != expected["b"].get(n)]
    assert len(differing) >= 8, differing
    return root, expected


def gen(root: Path, out: Path, *args: str, env: dict | None = None, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "generator.cli", "--registry", str(root / "ops.yaml"), "--out", str(out), *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    stdout, stderr = proc.communicate(timeout=120)  # a guard against a hang, not a speed check
    return proc.returncode, stdout, stderr


# ----------------------------------------------------------------------------- interrupted runs


def test_gen_killed_at_random_points_is_consistent_or_reported(variants, tmp_path):
    root, expected = variants
    registry = root / "ops.yaml"
    out = tmp_path / "pkg"
    rng = random.Random(15)
    # Between two renames (where a package can mix), and at the edges: the first and a
    # later temp file, the journal written but nothing renamed yet, all renamed but the
    # journal still there. Then kills at random times, which mostly land before writing.
    faults = [f"rename:{k}" for k in range(1, 9)] + ["temp:0", "temp:4", "rename:0", "done:0"]
    plan = [("fault", f) for f in faults] + [("signal", rng.uniform(0.0, 1.0)) for _ in range(12)]
    rng.shuffle(plan)
    seen_mixed = seen_reported = 0
    for step, (how, what) in enumerate(plan):
        variant = "ab"[step % 2]
        registry.write_text(registry_text(variant), encoding="utf-8")
        if how == "fault":
            rc, _, stderr = finish(gen(root, out, env={"OPGEN_FAULT": what}))
            if rc == 0:  # the point was never reached: the package already was this registry's
                assert package(out) == expected[variant], f"{what}: exit 0 and not written"
            else:
                assert rc == -signal.SIGKILL, f"{what}: not killed (exit {rc}):\n{stderr}"
        else:
            proc = gen(root, out)
            time.sleep(what)
            proc.send_signal(signal.SIGKILL)
            finish(proc)
        files = package(out) if out.exists() else {}
        consistent = files in (expected["a"], expected["b"], {})
        check = run_cli("--registry", registry, "--out", out, "--check")
        assert not crashed(check), check.exception
        if not consistent:
            seen_mixed += 1
            assert (out / JOURNAL).exists(), f"step {step} ({how} {what}): a mixed package and no journal"
            assert check.exit_code == 1 and INTERRUPTED in check.stderr, check.stderr
            seen_reported += 1
        elif files == expected[variant]:
            assert check.exit_code == 0, check.stderr
        else:
            assert check.exit_code == 1
    assert seen_mixed >= 5, "the faults should have left mixed packages to detect"
    assert seen_reported == seen_mixed

    rc, stdout, stderr = finish(gen(root, out))
    assert rc == 0, stderr
    final = "ab"[(len(plan) - 1) % 2]
    assert package(out) == expected[final]
    assert not (out / JOURNAL).exists()
    assert not list(out.glob(f"{TMP_PREFIX}*")), "temp files of killed runs are cleared"
    assert run_cli("--registry", registry, "--out", out, "--check").exit_code == 0


def test_next_run_says_it_completes_an_interrupted_one(variants, tmp_path):
    root, expected = variants
    out = tmp_path / "pkg"
    (root / "ops.yaml").write_text(registry_text("a"), encoding="utf-8")
    assert finish(gen(root, out))[0] == 0
    (root / "ops.yaml").write_text(registry_text("b"), encoding="utf-8")
    assert finish(gen(root, out, env={"OPGEN_FAULT": "rename:3"}))[0] == -signal.SIGKILL
    assert package(out) not in (expected["a"], expected["b"])
    rc, _, stderr = finish(gen(root, out))
    assert rc == 0 and INTERRUPTED in stderr and "rewriting them" in stderr
    assert package(out) == expected["b"] and not (out / JOURNAL).exists()


# ----------------------------------------------------------------------------- concurrent runs


def test_concurrent_runs_take_turns(variants, tmp_path):
    """The first run stops between its renames (a test hook) holding the lock; the second
    must wait for it, not interleave its own renames, and write last."""
    root, expected = variants
    out = tmp_path / "pkg"
    (root / "ops.yaml").write_text(registry_text("a"), encoding="utf-8")
    assert finish(gen(root, out))[0] == 0
    gate = tmp_path / "go"
    (root / "ops.yaml").write_text(registry_text("b"), encoding="utf-8")
    first = gen(root, out, env={"OPGEN_PAUSE": str(gate)})
    _wait_for(Path(f"{gate}.paused"), first)

    registry_a = root / "ops_a.yaml"  # the second run generates from registry a again
    registry_a.write_text(registry_text("a"), encoding="utf-8")
    second = subprocess.Popen(
        [sys.executable, "-m", "generator.cli", "--registry", str(registry_a), "--out", str(out)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    waiting = second.stderr.readline()  # blocks until the second run reports the lock is busy
    assert waiting.strip() == f"{out}: another gen is writing here; waiting for it"
    assert second.poll() is None
    gate.touch()
    rc1, _, err1 = finish(first)
    rc2, _, err2 = finish(second)
    assert rc1 == 0 and rc2 == 0, err1 + err2
    assert INTERRUPTED not in err2
    written = package(out)
    assert {n: b.replace(b"ops_a.yaml", b"ops.yaml") for n, b in written.items()} == expected["a"]


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120  # a guard against a hang
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_check_waits_for_a_run_in_progress(variants, tmp_path):
    root, expected = variants
    out = tmp_path / "pkg"
    (root / "ops.yaml").write_text(registry_text("a"), encoding="utf-8")
    assert finish(gen(root, out))[0] == 0
    (root / "ops.yaml").write_text(registry_text("b"), encoding="utf-8")
    gate = tmp_path / "go"
    writer = gen(root, out, env={"OPGEN_PAUSE": str(gate)})
    _wait_for(Path(f"{gate}.paused"), writer)
    check = gen(root, out, "--check")
    assert check.stderr.readline().strip() == f"{out}: another gen is writing here; waiting for it"
    gate.touch()
    assert finish(writer)[0] == 0
    rc, stdout, stderr = finish(check)
    assert rc == 0, stderr  # it read the package whole, after the writer, not half-way


# ----------------------------------------------------------------------------- symbolic links


@pytest.fixture
def generated(tmp_path):
    root = workspace(tmp_path / "ws")
    registry = root / "ops.yaml"
    shutil.copyfile(MINI, registry)
    out = tmp_path / "pkg"
    assert run_cli("--registry", registry, "--out", out).exit_code == 0
    return registry, out


def _outside(tmp_path: Path, text: str) -> Path:
    target = tmp_path / "elsewhere" / "victim.py"
    target.parent.mkdir(exist_ok=True)
    target.write_text(text)
    return target


def test_a_link_where_a_generated_file_goes_is_refused(generated, tmp_path):
    registry, out = generated
    victim = _outside(tmp_path, (out / "storage.py").read_text())  # looks generated: it has the marker
    (out / "storage.py").unlink()
    (out / "storage.py").symlink_to(victim)
    registry.write_text(registry.read_text().replace('doc: "x * mul + add"', 'doc: "changed"'))
    before = victim.read_bytes()
    for args in ((), ("--check",)):
        result = run_cli("--registry", registry, "--out", out, *args)
        assert result.exit_code == 2 and not crashed(result)
        assert result.stderr.strip().splitlines() == [
            f"error: {out / 'storage.py'}: is a symbolic link (to {victim}); refusing to write through or replace "
            "it; nothing written"
        ]
    assert victim.read_bytes() == before and (out / "storage.py").is_symlink()


def test_a_link_that_looks_like_an_orphan_is_left_alone(generated, tmp_path):
    registry, out = generated
    victim = _outside(tmp_path, (out / "storage.py").read_text())
    (out / "old_module.py").symlink_to(victim)
    (out / f"{TMP_PREFIX}storage.py.abcd1234").symlink_to(victim)  # named like a killed run's temp file
    assert run_cli("--registry", registry, "--out", out, "--check").exit_code == 0
    registry.write_text(registry.read_text().replace('doc: "x * mul + add"', 'doc: "changed"'))
    result = run_cli("--registry", registry, "--out", out)
    assert result.exit_code == 0, result.output
    assert "old_module" not in result.stdout
    assert (out / "old_module.py").is_symlink() and (out / f"{TMP_PREFIX}storage.py.abcd1234").is_symlink()
    assert victim.exists() and victim.read_text().startswith("#")


def test_the_stamp_is_not_written_through_a_linked_cache_directory(generated, tmp_path):
    registry, out = generated
    elsewhere = tmp_path / "elsewhere_cache"
    elsewhere.mkdir()
    shutil.rmtree(out / "__pycache__")
    (out / "__pycache__").symlink_to(elsewhere, target_is_directory=True)
    registry.write_text(registry.read_text().replace('doc: "x * mul + add"', 'doc: "changed"'))
    assert run_cli("--registry", registry, "--out", out).exit_code == 0
    assert list(elsewhere.iterdir()) == []


def test_a_foreign_temp_like_file_is_not_removed(generated):
    registry, out = generated
    mine = out / f"{TMP_PREFIX}notes.txt"
    mine.write_text("my notes, no marker\n")
    registry.write_text(registry.read_text().replace('doc: "x * mul + add"', 'doc: "changed"'))
    assert run_cli("--registry", registry, "--out", out).exit_code == 0
    assert mine.read_text() == "my notes, no marker\n"


# ----------------------------------------------------------------------------- paths that cannot be written


def test_out_is_a_file_registry_is_a_directory(tmp_path):
    """Each gives one line on stderr, naming the path and what it should be, and exit 2."""
    afile = tmp_path / "afile"
    afile.write_text("x\n")
    for args, line in (
        (
            ("--registry", MINI, "--out", afile),
            f"error: {afile}: is a file; --out names the directory of the generated package; nothing written",
        ),
        (
            ("--registry", tmp_path, "--out", tmp_path / "o"),
            f"error: {tmp_path}: is a directory; --registry names the registry file (ops.yaml); nothing written",
        ),
        (
            ("--registry", MINI, "--out", afile / "sub"),
            f"error: {afile / 'sub'}: cannot write (Not a directory); nothing written",
        ),
    ):
        result = run_cli(*args)
        assert result.exit_code == 2 and not crashed(result), result.output
        assert result.stderr.splitlines() == [line], result.stderr
    assert afile.read_text() == "x\n" and not (tmp_path / "o").exists()


@pytest.mark.parametrize("failing", [1, 3, 11], ids=["first-file", "third-file", "journal"])
def test_unwritable_output_directory_writes_nothing(tmp_path, monkeypatch, failing):
    """Simulated (the tests may run as root, whom permissions do not stop): the first or
    third temp file, or the journal (after the ten files), cannot be created; the temp files
    before it are removed and the package is as it was."""
    import generator.output.writer as writer

    out = tmp_path / "pkg"
    assert run_cli("--registry", MINI, "--out", out).exit_code == 0
    before = package(out)
    shutil.rmtree(out / "__pycache__")  # the stamp: so that the run below renders
    for p in out.iterdir():
        p.write_text(p.read_text() + "# edited\n")
    edited = package(out)
    real, calls = writer.tempfile.mkstemp, []

    def mkstemp(*args, **kwargs):
        calls.append(1)
        if len(calls) == failing:
            raise PermissionError(errno.EACCES, "Permission denied", str(out / ".gen-tmp.x"))
        return real(*args, **kwargs)

    monkeypatch.setattr(writer.tempfile, "mkstemp", mkstemp)
    result = run_cli("--registry", MINI, "--out", out)
    assert result.exit_code == 2 and not crashed(result), result.output
    assert result.stderr.splitlines() == [
        f"error: {out / '.gen-tmp.x'}: cannot write (Permission denied); nothing written"
    ]
    assert package(out) == edited != before
    assert sorted(p.name for p in out.iterdir()) == sorted(edited)


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="runs as root, whom directory permissions do not stop "
    "(test_unwritable_output_directory_writes_nothing simulates it)",
)
def test_read_only_output_directory(tmp_path):
    out = tmp_path / "pkg"
    assert run_cli("--registry", MINI, "--out", out).exit_code == 0
    shutil.rmtree(out / "__pycache__")
    for p in out.iterdir():
        p.write_text(p.read_text() + "# edited\n")
    edited = package(out)
    out.chmod(0o555)
    try:
        result = run_cli("--registry", MINI, "--out", out)
    finally:
        out.chmod(0o755)
    assert result.exit_code == 2 and not crashed(result)
    assert len(result.stderr.splitlines()) == 1 and "cannot write (Permission denied); nothing written" in result.stderr
    assert package(out) == edited


def test_each_target_folder_is_its_own_transaction(tmp_path):
    """A registry with a python and a rust target: gen killed among the rust folder's renames
    leaves the python package whole and the rust folder reported, by folder."""
    from test_gen_rust import fixture_copy

    def add_backend(registry: Path) -> None:  # changes files of both targets
        old = "  gpu: {runtime: mini_rt.gpu, ordinal: true}\n"
        registry.write_text(
            registry.read_text().replace(old, old + "  rocm2: {runtime: mini_rt.rocm2, ordinal: true}\n")
        )

    scratch = fixture_copy(tmp_path / "scratch")  # how many files of each folder the edit rewrites
    assert run_cli("--registry", scratch).exit_code == 0
    add_backend(scratch)
    wrote = [line.split()[1] for line in run_cli("--registry", scratch).stdout.splitlines() if line.startswith("wrote")]
    python_writes = sum("/rust/" not in w for w in wrote)
    rust_writes = len(wrote) - python_writes
    assert python_writes >= 3 and rust_writes >= 3, wrote

    registry = fixture_copy(tmp_path / "ws")
    assert run_cli("--registry", registry).exit_code == 0
    add_backend(registry)
    proc = subprocess.Popen(
        [sys.executable, "-m", "generator.cli", "--registry", str(registry)],
        cwd=registry.parent,
        env={**os.environ, "OPGEN_FAULT": f"rename:{python_writes + rust_writes // 2}", "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert finish(proc)[0] == -signal.SIGKILL
    python_out, rust_out = registry.parent / "generated", registry.parent / "generated" / "rust"
    assert not (python_out / JOURNAL).exists() and (rust_out / JOURNAL).exists()
    check = run_cli("--registry", registry, "--check")
    assert check.exit_code == 1
    reports = [line for line in check.stderr.splitlines() if INTERRUPTED in line]
    assert len(reports) == 1 and reports[0].startswith(f"{rust_out}: "), check.stderr
    assert f"stale generated files in {python_out} " not in check.stderr
    assert run_cli("--registry", registry).exit_code == 0
    assert run_cli("--registry", registry, "--check").exit_code == 0
    assert not (rust_out / JOURNAL).exists()


def test_a_journal_left_over_current_files_is_cleared_not_stamped_away(variants):
    """A run killed after its renames, before it removed its journal, leaves current files,
    a current stamp and the journal: `gen --check` passes (every file is what the registry
    generates), and the next `gen` clears the journal (the stamp's fast path must not answer
    "up to date" over a journal and leave it)."""
    root, expected = variants
    (root / "ops.yaml").write_text(registry_text("a"), encoding="utf-8")
    out = root / "journal_left"
    assert run_cli("--registry", root / "ops.yaml", "--out", out).exit_code == 0
    (out / JOURNAL).write_text("# gen was changing these files\nwrite storage.py\n", encoding="utf-8")
    assert run_cli("--registry", root / "ops.yaml", "--out", out, "--check").exit_code == 0
    again = run_cli("--registry", root / "ops.yaml", "--out", out)
    assert again.exit_code == 0, again.output
    assert not (out / JOURNAL).exists()
    assert package(out) == expected["a"]
    assert run_cli("--registry", root / "ops.yaml", "--out", out, "--check").exit_code == 0

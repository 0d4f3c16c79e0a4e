"""Faults around writing: `gen` killed at any point of a write, two `gen` runs on one tree at
once, symbolic links in the output (files, target folders, the stamp's folder), output paths
that cannot be written, a read-only or full file system, and a run writing two target folders
(python and rust) failing or killed between them.

A package is *consistent* when its generated files are exactly those one registry generates.
After a kill or a failure, the output (every target folder together) is consistent, or the
next `gen --check` and `gen` say that it was interrupted; the next full `gen` always leaves it
consistent. Cases that need root's powers (a read-only mount, a small tmpfs) run for real
where this process may mount, and are simulated in every run."""

from __future__ import annotations

import contextlib
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
from gen_harness import MINI, REPO, crashed, run_cli, snapshot, workspace

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


# ----------------------------------------------------------------------------- two target folders, one transaction


def _add_backend(registry: Path) -> None:
    """An edit that changes files of both targets (python and rust)."""
    old = "  gpu: {runtime: mini_rt.gpu, ordinal: true}\n"
    registry.write_text(registry.read_text().replace(old, old + "  rocm2: {runtime: mini_rt.rocm2, ordinal: true}\n"))


def _both(root: Path) -> dict[str, bytes]:
    """The files of both folders of the rust fixture: generated/ and generated/rust/."""
    out = root / "generated"
    rust = {f"rust/{n}": b for n, b in package(out / "rust").items()} if (out / "rust").is_dir() else {}
    return {**(package(out) if out.is_dir() else {}), **rust}


def _leftovers(root: Path) -> list[str]:
    """Temp files and journals anywhere under the output."""
    return sorted(
        str(p.relative_to(root)) for p in (root / "generated").rglob(".*") if p.name.startswith((TMP_PREFIX, JOURNAL))
    )


@pytest.fixture(scope="module")
def two_folders(tmp_path_factory):
    """(a workspace holding the rust fixture generated, what it generates before and after
    _add_backend, the renames the edit makes in each folder)."""
    from test_gen_rust import fixture_copy

    scratch = fixture_copy(tmp_path_factory.mktemp("two_folders"))
    assert run_cli("--registry", scratch).exit_code == 0
    before = _both(scratch.parent)
    _add_backend(scratch)
    result = run_cli("--registry", scratch)
    wrote = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("wrote")]
    after = _both(scratch.parent)
    renames = (sum("/rust/" not in w for w in wrote), sum("/rust/" in w for w in wrote))
    assert renames[0] >= 3 and renames[1] >= 3, wrote
    base = fixture_copy(tmp_path_factory.mktemp("two_folders_base"))
    assert run_cli("--registry", base).exit_code == 0
    return base.parent, before, after, renames


def _edited_copy(two_folders, where: Path) -> Path:
    """A copy of the generated workspace with its registry edited: the next gen changes both folders."""
    base = two_folders[0]
    shutil.copytree(base, where, symlinks=True)
    registry = where / "rust.yaml"
    _add_backend(registry)
    return registry


def _points(renames: tuple[int, int]) -> list[str]:
    python, rust = renames
    return [
        "temp:0",
        f"temp:{python + 1}",  # among the rust folder's temp files, the python ones all written
        "journal:0",  # the python folder's journal in place, the rust folder's not yet
        "rename:0",
        "rename:1",
        f"rename:{python - 1}",
        f"rename:{python}",  # every python file renamed, no rust file yet
        f"rename:{python + rust // 2}",
        f"rename:{python + rust - 1}",
        "done:0",
    ]


@pytest.mark.parametrize("at", range(10))
def test_two_target_folders_are_one_transaction(two_folders, tmp_path, at):
    """gen killed at any point of a run writing the python and the rust folder leaves both
    as they were, both new, or a state the next `gen --check` reports as interrupted; the
    next gen completes it."""
    _, before, after, renames = two_folders
    point = _points(renames)[at]
    registry = _edited_copy(two_folders, tmp_path / "ws")
    proc = subprocess.Popen(
        [sys.executable, "-m", "generator.cli", "--registry", str(registry)],
        cwd=registry.parent,
        env={**os.environ, "OPGEN_FAULT": point, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert finish(proc)[0] == -signal.SIGKILL, point
    files = _both(registry.parent)
    check = run_cli("--registry", registry, "--check")
    assert not crashed(check), check.exception
    if files == after:
        assert check.exit_code == 0, check.stderr
    elif files == before:
        assert check.exit_code == 1
    else:
        assert check.exit_code == 1 and INTERRUPTED in check.stderr, f"{point}: mixed and not reported\n{check.stderr}"
    if point.startswith("rename:") and point != "rename:0":
        assert files not in (before, after), f"{point}: the kill should land between renames"
    again = run_cli("--registry", registry)
    assert again.exit_code == 0, again.output
    assert _both(registry.parent) == after and _leftovers(registry.parent) == []
    assert run_cli("--registry", registry, "--check").exit_code == 0


def test_disk_full_in_the_second_folder_writes_nothing_anywhere(two_folders, tmp_path, monkeypatch):
    """Simulated (disk full needs a small file system to fill; test_disk_full_for_real does
    it where this process may mount one): writing a temp file in the rust folder fails
    after the python folder's are written. Nothing is renamed anywhere, the temp files are
    removed, and the message says so truthfully."""
    registry = _edited_copy(two_folders, tmp_path / "ws")
    rust = registry.parent / "generated" / "rust"
    before = _both(registry.parent)
    real = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, text):
            self.f.write(text[: len(text) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd, *args, **kwargs):
        f = real(fd, *args, **kwargs)
        return Full(f) if Path(os.readlink(f"/proc/self/fd/{fd}")).parent == rust else f

    monkeypatch.setattr(os, "fdopen", fdopen)
    result = run_cli("--registry", registry)
    monkeypatch.undo()
    assert result.exit_code == 2 and not crashed(result), result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {rust}/")
    assert line.endswith(": cannot write (No space left on device); nothing written")
    assert _both(registry.parent) == before and _leftovers(registry.parent) == []
    assert run_cli("--registry", registry).exit_code == 0
    assert _both(registry.parent) == two_folders[2]


def test_a_rename_failing_in_the_second_folder_is_reported_half_written(two_folders, tmp_path, monkeypatch):
    """Simulated (`chattr +i` on the rust folder after the temp files are in place, which
    root's chattr could do but not every file system takes): the python folder is renamed,
    the first rust rename fails. The message says half-written, never "nothing written";
    both journals stay, no temp file does; `--check` reports it, `gen` repairs it."""
    registry = _edited_copy(two_folders, tmp_path / "ws")
    out = registry.parent / "generated"
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst).parent == out / "rust" and Path(dst).name != JOURNAL:
            raise PermissionError(errno.EPERM, "Operation not permitted", str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    result = run_cli("--registry", registry)
    monkeypatch.undo()
    assert result.exit_code == 2 and not crashed(result), result.output
    [line] = result.stderr.splitlines()
    assert "cannot write (Operation not permitted); the output is half-written" in line, line
    assert "nothing written" not in line and str(out / JOURNAL) in line and str(out / "rust" / JOURNAL) in line
    assert _leftovers(registry.parent) == [f"generated/{JOURNAL}", f"generated/rust/{JOURNAL}"]
    check = run_cli("--registry", registry, "--check")
    assert check.exit_code == 1 and f"{out / 'rust'}: {INTERRUPTED}" in check.stderr, check.stderr
    again = run_cli("--registry", registry)
    assert again.exit_code == 0 and INTERRUPTED in again.stderr
    assert _both(registry.parent) == two_folders[2] and _leftovers(registry.parent) == []


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


# ----------------------------------------------------------------------------- read-only and full file systems


@contextlib.contextmanager
def _mounted(at: Path, *how: list[str]):
    """Run each `mount` command line of `how` on `at`, unmounting at the end; skip, saying
    why, where this process may not mount (it needs CAP_SYS_ADMIN: root outside a container,
    or a privileged one)."""
    done = 0
    try:
        for args in how:
            try:
                proc = subprocess.run(["mount", *args, str(at)], capture_output=True, text=True)
            except OSError as exc:  # no mount command
                proc = subprocess.CompletedProcess([], 1, "", str(exc))
            if proc.returncode != 0:
                why = proc.stderr.strip() or f"exit {proc.returncode}"
                pytest.skip(f"cannot mount here ({why}); the simulated test covers it")
            done += 1
        yield
    finally:
        if done:  # a remount adds no mount: one umount undoes both
            subprocess.run(["umount", str(at)], capture_output=True)


def _read_only(monkeypatch, tree: Path) -> None:
    """Make every change under `tree` fail as on a read-only mount (EROFS): creating,
    opening to write, renaming, removing, chmod, mkdir."""

    def under(path) -> bool:
        return isinstance(path, (str, Path)) and Path(os.path.abspath(path)).is_relative_to(tree)

    def refuse(path) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    real = {name: getattr(os, name) for name in ("open", "mkdir", "unlink", "replace", "rename", "chmod", "rmdir")}

    def open_(path, flags, *args, **kwargs):
        if under(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC):
            refuse(path)
        return real["open"](path, flags, *args, **kwargs)

    def guarded(name):
        def call(path, *args, **kwargs):
            if under(path) or (name in ("replace", "rename") and args and under(args[0])):
                refuse(path)
            return real[name](path, *args, **kwargs)

        return call

    monkeypatch.setattr(os, "open", open_)
    for name in ("mkdir", "unlink", "replace", "rename", "chmod", "rmdir"):
        monkeypatch.setattr(os, name, guarded(name))


def _read_only_cases(registry: Path, out: Path, run) -> None:
    """Nothing to change (and no stamp, so gen plans): exit 0, nothing on stderr. A change:
    the clear read-only error, nothing written."""
    quiet = run()
    assert quiet.exit_code == 0 and not crashed(quiet), quiet.output
    assert quiet.stderr == "", quiet.stderr
    before = package(out)
    registry.write_text(registry.read_text().replace('doc: "x * mul + add"', 'doc: "changed"'))
    loud = run()
    assert loud.exit_code == 2 and not crashed(loud), loud.output
    [line] = loud.stderr.splitlines()
    assert line.startswith(f"error: {out}/")
    assert line.endswith(": cannot write (Read-only file system); nothing written")
    assert package(out) == before


def test_read_only_output_simulated(generated, monkeypatch):
    """A read-only mount, simulated: every change under the package fails with EROFS."""
    registry, out = generated
    shutil.rmtree(out / "__pycache__")

    def run():
        _read_only(monkeypatch, out)
        try:
            return run_cli("--registry", registry, "--out", out)
        finally:
            monkeypatch.undo()

    _read_only_cases(registry, out, run)
    assert not (out / "__pycache__").exists()


def test_read_only_output_for_real(generated):
    registry, out = generated
    shutil.rmtree(out / "__pycache__")
    with _mounted(out, ["--bind", str(out)], ["-o", "remount,bind,ro"]):
        _read_only_cases(registry, out, lambda: run_cli("--registry", registry, "--out", out))


def test_disk_full_for_real(two_folders, tmp_path):
    """Both target folders on a small tmpfs, filled to leave less and less room: each run
    ends written (exit 0), or with "nothing written" and both folders as they were, or
    half-written with the interrupted state reported; no temp file, of the package or the
    stamp, is ever left behind."""
    registry = _edited_copy(two_folders, tmp_path / "ws")
    out = registry.parent / "generated"
    saved = tmp_path / "saved"
    shutil.copytree(out, saved)
    shutil.rmtree(out)
    out.mkdir()
    seen = set()
    with _mounted(out, ["-t", "tmpfs", "-o", "size=2m", "tmpfs"]):
        for free_kb in [*range(0, 136, 8), 1024]:
            for p in out.iterdir():
                shutil.rmtree(p) if p.is_dir() else p.unlink()
            shutil.copytree(saved, out, dirs_exist_ok=True)
            before = _both(registry.parent)
            st = os.statvfs(out)
            filler = out / ".filler"  # not a generated file: gen never touches it
            filler.write_bytes(b"\0" * max(0, st.f_bavail * st.f_frsize - free_kb * 1024))
            result = run_cli("--registry", registry)
            assert not crashed(result), result.exception
            leftovers = _leftovers(registry.parent) + [str(p) for p in out.rglob("__pycache__/*") if p.suffix == ".tmp"]
            if result.exit_code == 0:
                seen.add("written")
                assert _both(registry.parent) == two_folders[2]
                assert leftovers == []
            elif "nothing written" in result.stderr:
                seen.add("nothing")
                assert _both(registry.parent) == before and leftovers == [], (free_kb, leftovers)
            else:
                seen.add("half")
                assert "half-written" in result.stderr, result.stderr
                assert all(Path(p).name == JOURNAL for p in leftovers)
                filler.unlink()
                check = run_cli("--registry", registry, "--check")
                assert check.exit_code == 1 and INTERRUPTED in check.stderr
    assert "nothing" in seen and "written" in seen, seen


def test_a_full_disk_leaves_no_stamp_temp_file(generated, monkeypatch):
    """Simulated: the package is written, then the stamp's temp file fills the disk. The
    run succeeds (the stamp is only a shortcut) and leaves no opgen-stamp.*.tmp behind."""
    registry, out = generated
    registry.write_text(registry.read_text().replace('doc: "x * mul + add"', 'doc: "changed"'))
    real = Path.write_text

    def write_text(self, text, *args, **kwargs):
        if self.name.startswith("opgen-stamp."):
            real(self, text[:100], *args, **kwargs)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    result = run_cli("--registry", registry, "--out", out)
    monkeypatch.undo()
    assert result.exit_code == 0 and result.stderr == "", result.output
    assert sorted(p.name for p in (out / "__pycache__").iterdir()) == ["opgen-stamp.json"]


def test_check_writes_nothing_not_even_the_stamp(generated):
    """--check over a current package with no stamp: exit 0, and the folder is as it was,
    file for file (no __pycache__, no stamp, no lock or temp file)."""
    registry, out = generated
    shutil.rmtree(out / "__pycache__")
    before = snapshot(out)
    result = run_cli("--registry", registry, "--out", out, "--check")
    assert result.exit_code == 0, result.output
    assert snapshot(out) == before and sorted(os.listdir(out)) == sorted(before)
    registry.write_text(registry.read_text().replace('doc: "x * mul + add"', 'doc: "changed"'))
    assert run_cli("--registry", registry, "--out", out, "--check").exit_code == 1
    assert snapshot(out) == before and sorted(os.listdir(out)) == sorted(before)


@pytest.mark.parametrize("linked", ["generated/rust", "generated"])
def test_a_linked_target_folder_is_refused(two_folders, tmp_path, linked):
    """A target folder that is a symbolic link (the rust folder, or the python folder that
    holds it) is refused like a linked file, by gen and by --check, and nothing is written
    where it leads, a missing folder inside it neither."""
    registry = _edited_copy(two_folders, tmp_path / "ws")
    folder = registry.parent / linked
    elsewhere = tmp_path / "elsewhere"
    shutil.move(folder, elsewhere)
    if linked == "generated":
        shutil.rmtree(elsewhere / "rust")  # gen would create it, through the link
    folder.symlink_to(elsewhere, target_is_directory=True)
    before = snapshot(elsewhere)
    for args in ((), ("--check",)):
        result = run_cli("--registry", registry, *args)
        assert result.exit_code == 2 and not crashed(result), result.output
        assert result.stderr.splitlines() == [
            f"error: {folder}: is a symbolic link (to {elsewhere}); refusing to write through it "
            "(name the folder it leads to instead); nothing written"
        ]
        assert snapshot(elsewhere) == before

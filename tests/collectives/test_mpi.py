"""cpu collectives under mpiexec: 2 and 4 processes (oversubscribed on a small machine), each
running tests/collectives/rank_suite.py (every op x dtype x count against numpy, the typed errors
before dispatch, split), and the fault cases of rank_faults.py, which must end in bounded time.

mpiexec is the one beside this Python (the `mpi` extra's MPICH wheel), else the system's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _mpiexec() -> tuple[list[str] | None, bool]:
    """The mpiexec command, and whether it is MPICH's (Hydra: -disable-auto-cleanup)."""
    found = BIN / "mpiexec" if (BIN / "mpiexec").exists() else shutil.which("mpiexec")
    if found is None:
        return None, False
    version = subprocess.run([str(found), "--version"], capture_output=True, text=True, timeout=30).stdout
    if "Open MPI" in version or "OpenRTE" in version:  # Open MPI refuses root, and more ranks than cores
        return [str(found), "--oversubscribe", "--allow-run-as-root"], False
    return [str(found)], "HYDRA" in version.upper()


MPIEXEC, HYDRA = _mpiexec()
# Hydra's flag that keeps the other ranks alive when one exits: a rank that reports its typed
# error and leaves must not end those still about to report theirs.
NEEDS_HYDRA = pytest.mark.skipif(not HYDRA, reason="needs MPICH's mpiexec (-disable-auto-cleanup); the `mpi` extra")
try:
    import mpi4py  # noqa: F401
except ImportError:
    MPI4PY = False
else:
    MPI4PY = True
pytestmark = pytest.mark.skipif(
    MPIEXEC is None or not MPI4PY, reason="no mpiexec or mpi4py: install the `mpi` extra (make test does)"
)


def launch(ranks: int, module: str, *args: str, extra: tuple[str, ...] = (), timeout: float = 240):
    """mpiexec's result, every rank's report (each writes its own file), and the seconds it took."""
    assert MPIEXEC is not None
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as folder:
        command = [*MPIEXEC, *extra, "-n", str(ranks), sys.executable, "-m", module, *args, "--reports", folder]
        start = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        seconds = time.monotonic() - start
        reports = [json.loads(p.read_text()) for p in Path(folder).glob("rank*.json")]
    return done, sorted(reports, key=lambda r: r["rank"]), seconds


@pytest.mark.parametrize("ranks", [2, 4])
def test_every_collective_against_numpy(ranks: int) -> None:
    done, reports, _ = launch(ranks, "tests.collectives.rank_suite", "--backend", "cpu")
    assert [r["rank"] for r in reports] == list(range(ranks)), done.stdout + done.stderr
    for report in reports:
        assert report["failures"] == [], report
        assert report["checks"] > 600  # every op x dtype x count ran
    assert done.returncode == 0, done.stderr


@NEEDS_HYDRA
@pytest.mark.parametrize("ranks", [2, 4])
def test_a_late_rank_ends_in_a_timeout(ranks: int) -> None:
    done, reports, seconds = launch(
        ranks, "tests.collectives.rank_faults", "--case", "late", "--timeout", "2", extra=("-disable-auto-cleanup",)
    )
    waiting = [r for r in reports if r["rank"] != ranks - 1]
    assert [r["rank"] for r in waiting] == list(range(ranks - 1)), done.stdout + done.stderr
    for report in waiting:
        assert report["error"] == "CollectiveTimeout", report
        assert f"all_reduce on cpu rank {report['rank']}" in report["message"]
        assert 1.9 < report["seconds"] < 10, report
    assert seconds < 60


@NEEDS_HYDRA
def test_a_rank_that_exits_ends_the_others_in_a_timeout() -> None:
    """With MPICH's -disable-auto-cleanup the others live on: the timeout's typed error."""
    done, reports, _ = launch(
        2, "tests.collectives.rank_faults", "--case", "exit", "--timeout", "2", extra=("-disable-auto-cleanup",)
    )
    assert [r["rank"] for r in reports] == [0], done.stdout + done.stderr
    assert reports[0]["error"] == "CollectiveTimeout"
    assert 1.9 < reports[0]["seconds"] < 10


def test_a_rank_that_exits_ends_the_launch_by_default() -> None:
    """mpiexec's own cleanup ends the others at once: no rank is left waiting."""
    done, reports, seconds = launch(2, "tests.collectives.rank_faults", "--case", "exit", "--timeout", "30")
    assert all(r["error"] in ("CollectiveTimeout", "CollectiveAborted") for r in reports), reports
    assert seconds < 25  # well inside the 30 s timeout: nobody waited for it


def test_arguments_that_differ_across_ranks_are_a_typed_error() -> None:
    done, reports, _ = launch(2, "tests.collectives.rank_faults", "--case", "disagree")
    assert [r["rank"] for r in reports] == [0, 1], done.stdout + done.stderr
    for report in reports:
        assert report["error"] == "CollectiveMismatch"
        assert "1000 f32 sum" in report["message"] and "1001 f32 sum on rank 1" in report["message"]


@pytest.mark.parametrize("ranks", [2, 4])
def test_the_tensor_parallel_example_equals_one_device(ranks: int) -> None:
    """examples/tensor_parallel_mlp.py on cpu: the sharded block equals the whole one in f32."""
    assert MPIEXEC is not None
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    script = ["examples/tensor_parallel_mlp.py", "--backend", "cpu", "--tokens", "64", "--width", "64", "--iters", "2"]
    command = [*MPIEXEC, "-n", str(ranks), sys.executable, *script]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    result = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))
    assert result["ranks"] == ranks and result["hidden"] == 256
    assert result["agrees"] and result["max_error_relative"] < 1e-5, result

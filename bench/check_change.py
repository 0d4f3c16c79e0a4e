"""`gen --check` against `gen` on one change (`make bench`): the command every CI run and
pre-commit hook calls, on a registry where one op was renamed since the last `gen`.

The synthetic registry the size of PyTorch's (bench/synthetic.py), with every output (HIP
kernels, the rust target). Each round renames one op back and forth; `gen --check` runs on
the stale output (exit 1, the diff printed), then `gen` writes the change: both render the
whole registry and meet the same one change. Medians of ROUNDS fresh CLI processes each,
wall and CPU time, the two commands taking turns. The goal: --check within 1.2x of gen."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

from bench import synthetic

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
GOAL_RATIO = 1.2
RENAME = ("unary_op_5:", "unary_op_5_renamed:")  # one op of the synthetic registry


def _run(cmd: list[str], cwd: Path, expect: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one command, which must exit `expect`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = timeit.default_timer()
    proc = subprocess.run(cmd, capture_output=True, env=env, cwd=cwd)
    wall = timeit.default_timer() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != expect:
        raise RuntimeError(
            f"{' '.join(cmd)}: exit {proc.returncode}, expected {expect}:\n{proc.stderr.decode()[-2000:]}"
        )
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _toggle(registry: Path, step: int) -> None:
    old, new = RENAME if step % 2 == 0 else RENAME[::-1]
    text = registry.read_text()
    assert text.count(f"  {old}\n") == 1, old
    registry.write_text(text.replace(f"  {old}\n", f"  {new}\n"))


def rows(n_ops: int = synthetic.N_OPS) -> dict:
    """{"gen": ..., "check": ..., "ratio", "diff_lines"}: medians of each command."""
    with tempfile.TemporaryDirectory() as tmp:
        registry = synthetic.write(Path(tmp) / "synthetic", n_ops=n_ops, rust=True)
        gen = [sys.executable, "-m", "generator.cli", "--registry", str(registry)]
        _run(gen, registry.parent, 0)
        runs: dict[str, list[tuple[float, float]]] = {"gen": [], "check": []}
        for step in range(ROUNDS):
            _toggle(registry, step)
            runs["check"].append(_run([*gen, "--check"], registry.parent, 1))
            runs["gen"].append(_run(gen, registry.parent, 0))
        _toggle(registry, ROUNDS)
        diff = subprocess.run(
            [*gen, "--check"],
            capture_output=True,
            text=True,
            cwd=registry.parent,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    result = {
        name: {
            "wall_s": statistics.median(w for w, _ in r),
            "cpu_s": statistics.median(c for _, c in r),
            "runs_s": [round(w, 3) for w, _ in r],
        }
        for name, r in runs.items()
    }
    return {
        **result,
        "ops": n_ops,
        "ratio": result["check"]["wall_s"] / result["gen"]["wall_s"],
        "cpu_ratio": result["check"]["cpu_s"] / result["gen"]["cpu_s"],
        "diff_lines": len(diff.stdout.splitlines()),
    }


def lines(result: dict) -> list[str]:
    """The Markdown section of run.py's result["check_change"]."""
    r = result["check_change"]
    return [
        "",
        f"## `gen --check` on one change: synthetic, {r['ops']:,} ops, every output (one op renamed; "
        f"the diff {r['diff_lines']:,} lines)\n",
        "| command | wall | CPU time | --check / gen, wall | the same, CPU time | goal |",
        "|---|---|---|---|---|---|",
        f"| gen, one change | {r['gen']['wall_s']:.2f} s | {r['gen']['cpu_s']:.2f} s | | | |",
        f"| gen --check, one change | {r['check']['wall_s']:.2f} s | {r['check']['cpu_s']:.2f} s | "
        f"{r['ratio']:.2f}x | {r['cpu_ratio']:.2f}x | ≤ {GOAL_RATIO}x |",
    ]

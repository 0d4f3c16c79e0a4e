"""Generation time beside an earlier tree's, in one run (`make bench`, `bench/run.py --before REV`).

The earlier revision is exported (`git archive`) into a temporary folder and its `gen` runs
on the very registry this tree's `gen` runs on (bench/synthetic.py's, with copies of this
tree's runtime/ and hip/): the two commands take turns (before, now, before, now, ...), each
a fresh process writing into an empty folder, ROUNDS times each; the rows are medians, CPU
time first (it moves less than wall time on a machine shared with other jobs). Where the
earlier tree cannot generate the registry (an older schema), its row says so and why; the
other rows and benches go on."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import synthetic
from bench.generation import ENV, HIP_CASE, ROOT, bytecode
from bench.timing import command_seconds

# The pinned earlier tree: the last before the formatting passes (python_layout, rust_layout)
# and the split of generator/ by stage (a481e74's parent), so both comparisons are this one.
BASELINE = "3035d97"
GOAL = 1.10  # now / before, CPU time: generation within 10% of the earlier tree's
ROUNDS = max(9, int(os.environ.get("BENCH_ROUNDS", "9")))  # runs of each; the medians move less with more
CASES = {  # row name -> (folder, synthetic.write's options)
    f"{HIP_CASE}, and the rust target": ("synthetic_rust", {"rust": True}),
    HIP_CASE: ("synthetic", {"rust": False}),
}


class ExportFailed(Exception):
    """git could not name or export the revision."""


def export(revision: str, into: Path) -> str:
    """Write the tree of `revision` into `into`; return its short commit id."""
    git = ["git", "-C", str(ROOT)]
    named = subprocess.run([*git, "rev-parse", "--short", f"{revision}^{{commit}}"], capture_output=True, text=True)
    if named.returncode != 0:
        raise ExportFailed(f"git does not know the revision {revision!r}: {named.stderr.strip()}")
    commit = named.stdout.strip()
    archive = subprocess.run([*git, "archive", "--format=tar", commit], capture_output=True)
    if archive.returncode != 0:
        raise ExportFailed(f"git archive {commit} failed: {archive.stderr.decode(errors='replace').strip()}")
    into.mkdir(parents=True)
    unpacked = subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, capture_output=True)
    if unpacked.returncode != 0:
        raise ExportFailed(f"tar could not unpack {commit}: {unpacked.stderr.decode(errors='replace').strip()}")
    return commit


def _command(registry: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "generator.cli", "--registry", str(registry), "--out", str(out)]


def _first_error(proc: subprocess.CompletedProcess, folder: Path) -> str:
    """A failed gen's first and last lines (its first diagnostic, its count), file names
    relative to the registry's folder: what a reader needs to see why."""
    text = (proc.stderr or proc.stdout).decode(errors="replace").replace(f"{folder}/", "").strip().splitlines()
    said = text[:1] + text[-1:] if len(text) > 1 else text
    return " ... ".join(line.strip()[:200] for line in said) or f"exit status {proc.returncode}"


def _bytes(out: Path) -> int:
    return sum(p.stat().st_size for p in out.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def side_by_side(tree: Path, registry: Path) -> dict:
    """The earlier tree's gen (PYTHONPATH `tree`) and this tree's on `registry`, in turns:
    medians (CPU and wall), their ratios, what each wrote; or {"error": ...} where the earlier
    tree's gen fails on it."""
    envs = {"before": {**ENV, "PYTHONPATH": str(tree)}, "now": ENV}
    outs = {name: registry.parent / f"out_{name}" for name in envs}
    written = {}
    for name, env in envs.items():  # a first run of each, untimed: fails early, and warms the caches
        proc = subprocess.run(_command(registry, outs[name]), capture_output=True, env=env, cwd=registry.parent)
        if proc.returncode != 0:
            who = "this tree" if name == "now" else "the earlier tree"
            return {"error": f"{who} cannot generate this registry: {_first_error(proc, registry.parent)}"}
        written[name] = _bytes(outs[name])
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in envs}
    for _ in range(ROUNDS):
        for name, env in envs.items():
            shutil.rmtree(outs[name])
            runs[name].append(command_seconds(_command(registry, outs[name]), registry.parent, env))
    row: dict = {}
    for name in envs:
        row[f"{name}_cpu_s"] = statistics.median(c for _, c in runs[name])
        row[f"{name}_wall_s"] = statistics.median(w for w, _ in runs[name])
        row[f"{name}_cpu_runs_s"] = [round(c, 3) for _, c in runs[name]]
        row[f"{name}_bytes"] = written[name]
    row["cpu_ratio"] = row["now_cpu_s"] / row["before_cpu_s"]
    row["wall_ratio"] = row["now_wall_s"] / row["before_wall_s"]
    row["cpu_ratio_paired"] = paired_ratio(runs["before"], runs["now"])
    return row


def paired_ratio(before: list[tuple[float, float]], now: list[tuple[float, float]]) -> float:
    """The median of now / before over the runs taken one after the other: a burst of load
    that slows one round slows both of its runs alike."""
    return statistics.median(n / b for (_, b), (_, n) in zip(before, now))


def rows(revisions: list[str]) -> dict:
    """{"<case>, before <revision>": row} for every revision and case (bench/run.py's
    result["before"]); a revision git cannot export gets one row saying so."""
    result: dict[str, dict] = {}
    for revision in revisions:
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "tree"
            try:
                commit = export(revision, tree)
            except ExportFailed as exc:
                result[f"before {revision}"] = {"revision": revision, "error": str(exc)}
                continue
            bytecode(tree / "generator")
            bytecode()
            for case, (folder, options) in CASES.items():
                registry = synthetic.write(Path(tmp) / folder, **options)
                row = {"revision": revision, "commit": commit, **side_by_side(tree, registry)}
                result[f"{case}, before {revision}"] = row
    return result


def lines(result: dict) -> list[str]:
    """The Markdown section of run.py's result["before"]."""
    if not result.get("before"):
        return []
    out = [
        "",
        f"## `gen` beside an earlier tree, in turns ({ROUNDS} runs each, fresh processes, empty output folders)\n",
        "| registry | before: commit | before, CPU | now, CPU | now / before, CPU | the same, paired runs | "
        "the same, wall | bytes written, before / now | goal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in result["before"].items():
        case = name.rsplit(", before ", 1)[0]
        if "error" in r:
            out.append(f"| {case} | {r['revision']} | not timed: {r['error'].replace('|', '/')} | | | | | | |")
            continue
        out.append(
            f"| {case} | {r['commit']} | {r['before_cpu_s']:.3f} s | {r['now_cpu_s']:.3f} s | "
            f"{r['cpu_ratio']:.3f}x | {r['cpu_ratio_paired']:.3f}x | {r['wall_ratio']:.3f}x | "
            f"{r['before_bytes']:,} / {r['now_bytes']:,} | "
            f"≤ {GOAL:.2f}x |"
        )
    return out

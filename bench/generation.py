"""Generation time (`make bench`): `gen` on the shipped ops.yaml and on synthetic registries the
size of PyTorch's native_functions.yaml (bench/synthetic.py), beside torchgen on its own
registry in the same run (where torch is installed: the `bench` extra).

Each command runs as a fresh CLI process (interpreter start included), first into an empty
output directory (full), then again over its own output (unchanged); the commands take turns,
so that the machine's load hits them alike. Medians of ROUNDS runs, wall and CPU time.

`gen --check` on one change (change_rows): the command every CI run and pre-commit hook calls,
on the synthetic registry with every output after one op was renamed since the last `gen`.
Each round renames it back and forth; `gen --check` runs on the stale output (exit 1, the diff
printed), then `gen` writes the change: both render the whole registry and meet the same one
change. The goal: --check within CHECK_GOAL of gen's own time."""

from __future__ import annotations

import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import synthetic
from bench.timing import command_seconds

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))  # runs of each command, full and unchanged
GOALS = {"full_s": 1.5, "unchanged_s": 0.3, "torchgen_ratio": 15}
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # gen of this tree, whatever the working directory
HIP_CASE = f"synthetic, {synthetic.N_OPS} ops, HIP kernels for cuda and rocm (every output)"
CHECK_GOAL = 1.2  # gen --check / gen, one change
RENAME = ("unary_op_5:", "unary_op_5_renamed:")  # the one change: an op of the synthetic registry renamed


def torchgen_command(out: Path) -> list[str] | None:
    """torchgen on the torch wheel's own native_functions.yaml (2,584 ops in torch 2.13),
    writing every file it writes by default (CPU and CUDA registrations, headers, sources),
    or None where torch is not installed."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or spec.origin is None:
        return None
    aten = Path(spec.origin).parent / "packaged" / "ATen"
    return [
        sys.executable,
        "-m",
        "torchgen.gen",
        "--source-path",
        str(aten),
        "--install-dir",
        str(out / "ATen"),
        "--aoti-install-dir",
        str(out / "aoti"),
    ]


def torchgen_ops() -> int:
    spec = importlib.util.find_spec("torchgen")
    yaml_path = Path(spec.origin).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    return sum(line.startswith("- func:") for line in yaml_path.read_text().splitlines())


def walls(commands: dict[str, tuple[list[str], Path, Path]]) -> dict:
    """Median wall and CPU time of each command (interpreter start included): first into
    an empty output directory (full), then again over its own output (unchanged)."""
    full = {name: [] for name in commands}
    unchanged = {name: [] for name in commands}
    for _ in range(ROUNDS):
        for name, (cmd, cwd, out) in commands.items():
            shutil.rmtree(out, ignore_errors=True)
            full[name].append(command_seconds(cmd, cwd, ENV))
    for _ in range(ROUNDS):
        for name, (cmd, cwd, _) in commands.items():
            unchanged[name].append(command_seconds(cmd, cwd, ENV))

    def row(runs: list[tuple[float, float]], what: str) -> dict:
        return {
            f"{what}_s": statistics.median(w for w, _ in runs),
            f"{what}_cpu_s": statistics.median(c for _, c in runs),
            f"{what}_runs_s": [round(w, 3) for w, _ in runs],
        }

    return {name: {**row(full[name], "full"), **row(unchanged[name], "unchanged")} for name in commands}


def gen_command(registry: Path, out: Path) -> tuple[list[str], Path, Path]:
    return [sys.executable, "-m", "generator.cli", "--registry", str(registry), "--out", str(out)], registry.parent, out


def bytecode(package: Path = ROOT / "generator") -> None:
    """Byte-compile generator/ (or an earlier tree's) before timing it, as an installed package is and torchgen in
    site-packages is: where PYTHONDONTWRITEBYTECODE is set (this project's shell sets it), no
    run writes the cache, and each timed run compiled gen's own modules again (~0.1 s)."""
    import compileall

    compileall.compile_dir(package, quiet=1)


def rows() -> tuple[dict, dict | None]:
    """(our rows, torchgen's row or None where torch is not installed)."""
    bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        commands = {
            "shipped ops.yaml": gen_command(ROOT / "ops.yaml", tmp / "shipped_out" / "generated"),
            HIP_CASE: gen_command(synthetic.write(tmp / "synthetic"), tmp / "synthetic" / "generated"),
            f"{HIP_CASE}, and the rust target": gen_command(
                synthetic.write(tmp / "synthetic_rust", rust=True), tmp / "synthetic_rust" / "generated"
            ),
            f"synthetic, {synthetic.N_OPS} ops, cpu backend only (no HIP outputs)": gen_command(
                synthetic.write(tmp / "synthetic_numpy", hip=False), tmp / "synthetic_numpy" / "generated"
            ),
        }
        tg = torchgen_command(tmp / "torchgen")
        if tg is not None:
            commands["torchgen"] = (tg, tmp, tmp / "torchgen")
        rows = walls(commands)
    if tg is None:
        return rows, None
    import torch

    return rows, {**rows.pop("torchgen"), "torch": torch.__version__, "ops": torchgen_ops()}


def lines(result: dict) -> list[str]:
    """The Markdown section of `result` (run.py's: the rows under "generation", torchgen's under "torchgen")."""
    tg = result["torchgen"]
    if tg is None:
        head = (
            "## Generation (`gen`)\n\ntorchgen was not timed: torch is not installed in this environment "
            "(`make bench` installs it through the `bench` extra; `pip install -e '.[bench]'`).\n"
        )
    else:
        head = (
            f"## Generation (`gen`), beside torchgen in the same run\n\ntorchgen (torch {tg['torch']}) on its "
            f"{tg['ops']:,}-op native_functions.yaml, default outputs: full {tg['full_s']:.2f} s "
            f"(CPU {tg['full_cpu_s']:.2f} s), run again over its output {tg['unchanged_s']:.2f} s.\n"
        )
    lines = [
        head,
        "| registry | full | unchanged | full: torchgen / gen, wall | the same, CPU time | goal |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in result["generation"].items():
        ratio = f"{tg['full_s'] / r['full_s']:.1f}x" if tg else "not timed"
        cpu = f"{tg['full_cpu_s'] / r['full_cpu_s']:.1f}x" if tg else "not timed"
        lines.append(
            f"| {name} | {r['full_s']:.2f} s | {r['unchanged_s']:.2f} s | {ratio} | {cpu} | "
            f"≤ {GOALS['full_s']} s / ≤ {GOALS['unchanged_s']} s; ≥ {GOALS['torchgen_ratio']}x torchgen |"
        )
    return lines


def _rename(registry: Path, step: int) -> None:
    old, new = RENAME if step % 2 == 0 else RENAME[::-1]
    text = registry.read_text()
    assert text.count(f"  {old}\n") == 1, old
    registry.write_text(text.replace(f"  {old}\n", f"  {new}\n"))


def change_rows(n_ops: int = synthetic.N_OPS) -> dict:
    """{"gen, one change": ..., "gen --check, one change": ...}: medians, wall and CPU; the
    check's row also its ratios to gen's, the diff's lines and the registry's ops."""
    bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        registry = synthetic.write(Path(tmp) / "synthetic", n_ops=n_ops, rust=True)
        gen = [sys.executable, "-m", "generator.cli", "--registry", str(registry)]
        command_seconds(gen, registry.parent, ENV)
        runs: dict[str, list[tuple[float, float]]] = {"gen": [], "check": []}
        for step in range(ROUNDS):
            _rename(registry, step)
            runs["check"].append(command_seconds([*gen, "--check"], registry.parent, ENV, expect=1))
            runs["gen"].append(command_seconds(gen, registry.parent, ENV))
        _rename(registry, ROUNDS)
        diff = subprocess.run([*gen, "--check"], capture_output=True, text=True, cwd=registry.parent, env=ENV)
    gen_row, check_row = (
        {
            "wall_s": statistics.median(w for w, _ in runs[name]),
            "cpu_s": statistics.median(c for _, c in runs[name]),
            "runs_s": [round(w, 3) for w, _ in runs[name]],
        }
        for name in ("gen", "check")
    )
    check_row["ratio"] = check_row["wall_s"] / gen_row["wall_s"]
    check_row["cpu_ratio"] = check_row["cpu_s"] / gen_row["cpu_s"]
    check_row["diff_lines"] = len(diff.stdout.splitlines())
    check_row["ops"] = n_ops
    return {"gen, one change": gen_row, "gen --check, one change": check_row}


def change_lines(result: dict) -> list[str]:
    """The Markdown section of run.py's result["check_change"]."""
    gen, check = result["check_change"]["gen, one change"], result["check_change"]["gen --check, one change"]
    return [
        "",
        f"## `gen --check` beside `gen` on one change: synthetic, {check['ops']:,} ops, every output "
        f"(one op renamed; a diff of {check['diff_lines']:,} lines)\n",
        "| command | wall | CPU time | --check / gen, wall | the same, CPU time | goal |",
        "|---|---|---|---|---|---|",
        f"| gen, one change | {gen['wall_s']:.2f} s | {gen['cpu_s']:.2f} s | | | |",
        f"| gen --check, one change | {check['wall_s']:.2f} s | {check['cpu_s']:.2f} s | {check['ratio']:.2f}x | "
        f"{check['cpu_ratio']:.2f}x | ≤ {CHECK_GOAL}x |",
    ]

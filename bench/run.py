"""`make bench`: generation time and dispatch cost, side by side with their references.

Writes bench/results/cpu.json and bench/results/cpu.md. Times are medians of repeated runs
on this machine; the table says which machine. Nothing here is asserted: see the numbers."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import check_change, synthetic  # noqa: E402

RESULTS = ROOT / "bench" / "results"
ROUNDS = int(
    os.environ.get("BENCH_ROUNDS", "5")
)  # each command, full and unchanged; the commands take turns so load hits them alike
GOALS = {"full_s": 1.5, "unchanged_s": 0.3, "torchgen_ratio": 15, "dispatch_added_ns": {"unary": 300, "binary": 600}}
HIP_CASE = f"synthetic, {synthetic.N_OPS} ops, HIP kernels for cuda and rocm (every output)"


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


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one run. CPU time (user + system of the child) counts only
    while the command runs, so it moves less than wall time on a machine shared with other jobs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = timeit.default_timer()
    subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=cwd)
    wall = timeit.default_timer() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def walls(commands: dict[str, tuple[list[str], Path, Path]]) -> dict:
    """Median wall and CPU time of each command (interpreter start included): first into
    an empty output directory (full), then again over its own output (unchanged)."""
    full = {name: [] for name in commands}
    unchanged = {name: [] for name in commands}
    for _ in range(ROUNDS):
        for name, (cmd, cwd, out) in commands.items():
            shutil.rmtree(out, ignore_errors=True)
            full[name].append(timed(cmd, cwd))
    for _ in range(ROUNDS):
        for name, (cmd, cwd, _) in commands.items():
            unchanged[name].append(timed(cmd, cwd))

    def row(runs: list[tuple[float, float]], what: str) -> dict:
        return {
            f"{what}_s": statistics.median(w for w, _ in runs),
            f"{what}_cpu_s": statistics.median(c for _, c in runs),
            f"{what}_runs_s": [round(w, 3) for w, _ in runs],
        }

    return {name: {**row(full[name], "full"), **row(unchanged[name], "unchanged")} for name in commands}


def gen_command(registry: Path, out: Path) -> tuple[list[str], Path, Path]:
    return [sys.executable, "-m", "generator.cli", "--registry", str(registry), "--out", str(out)], registry.parent, out


def bytecode() -> None:
    """Byte-compile generator/ before timing it, as an installed package is and torchgen in
    site-packages is: where PYTHONDONTWRITEBYTECODE is set (this project's shell sets it), no
    run writes the cache, and each timed run compiled gen's own modules again (~0.1 s)."""
    import compileall

    compileall.compile_dir(ROOT / "generator", quiet=1)


def generation() -> tuple[dict, dict | None]:
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


def per_call_ns(fn, number: int = 200_000, repeat: int = 7) -> tuple[float, float]:
    """Best of `repeat` timings of `number` calls, per call: by the wall clock, and by this
    process's CPU time (which does not count time other jobs hold the core)."""
    wall = min(timeit.repeat(fn, number=number, repeat=repeat))
    cpu = min(timeit.Timer(fn, timer=time.process_time).repeat(number=number, repeat=repeat))
    return wall / number * 1e9, cpu / number * 1e9


def dispatch() -> dict:
    import numpy as np

    import generated as g

    x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    layout = g.Layout.contiguous((16,))
    cpu = g.Device.parse("cpu")
    s = cpu.storage_from_slice(x)
    exp, add = g.UnaryOp.EXP, g.BinaryOp.ADD
    rows = {}
    for kind, name, ours, ref in (
        ("unary", "unary exp, 16 f32", lambda: s.unary(exp, layout), lambda: np.exp(x)),
        ("binary", "binary add, 16 f32", lambda: s.binary(add, s, layout, layout), lambda: np.add(x, x)),
    ):
        (t_ours, cpu_ours), (t_ref, cpu_ref) = per_call_ns(ours), per_call_ns(ref)
        rows[name] = {
            "kind": kind,
            "opgen_ns": t_ours,
            "numpy_ns": t_ref,
            "added_ns": t_ours - t_ref,
            "ratio": t_ours / t_ref,
            "cpu_added_ns": cpu_ours - cpu_ref,
        }
    return rows


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def generation_lines(result: dict) -> list[str]:
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


def markdown(result: dict) -> str:
    lines = [
        f"# opgen CPU benchmarks\n\nMachine: {result['machine']}; load average (1/5/15 min) "
        f"{result['load_before']} before, {result['load_after']} after. Generation: medians of {ROUNDS} CLI runs "
        "each (interpreter start included), the commands taking turns; dispatch: best of 7 x 200,000 calls "
        "(the last column: the same by CPU time).\n"
    ]
    lines += generation_lines(result)
    lines += check_change.lines(result)
    lines += [
        "",
        "## Dispatch: generated `Storage` op against calling numpy directly\n",
        "| op | opgen | numpy | added per call | ratio | goal added | added, CPU time |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in result["dispatch"].items():
        lines.append(
            f"| {name} | {r['opgen_ns']:.0f} ns | {r['numpy_ns']:.0f} ns | {r['added_ns']:.0f} ns | "
            f"{r['ratio']:.2f}x | ≤ {GOALS['dispatch_added_ns'][r['kind']]} ns | "
            f"{r['cpu_added_ns']:.0f} ns |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    result = {"machine": machine(), "load_before": load()}
    result["generation"], result["torchgen"] = generation()
    result["check_change"] = check_change.rows()
    result["dispatch"] = dispatch()
    result["load_after"] = load()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cpu.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    (RESULTS / "cpu.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

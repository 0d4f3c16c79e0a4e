"""`make bench`: generation time and dispatch cost, side by side with their references.

Writes bench/results/cpu.json and bench/results/cpu.md. Times are medians of repeated runs
on this machine; the table says which machine. Nothing here is asserted: see the numbers."""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import synthetic  # noqa: E402

RESULTS = ROOT / "bench" / "results"
TORCHGEN = {"full_s": 23.4, "unchanged_s": 19.4}  # torchgen, 2,584 ops, 2-core machine (issue #2)
GOALS = {"full_s": 1.5, "unchanged_s": 0.3, "dispatch_added_ns": 300}


def gen_wall(registry: Path, out: Path, runs: int = 5) -> dict:
    """Median wall time of the `gen` CLI (interpreter start included): full, then unchanged."""
    cmd = [sys.executable, "-m", "generator.cli", "--registry", str(registry), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def once() -> float:
        started = timeit.default_timer()
        subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=registry.parent)
        return timeit.default_timer() - started

    full = []
    for _ in range(runs):
        shutil.rmtree(out, ignore_errors=True)
        full.append(once())
    unchanged = [once() for _ in range(runs)]
    return {"full_s": statistics.median(full), "unchanged_s": statistics.median(unchanged)}


def generation() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with_hip = synthetic.write(tmp / "synthetic")
        numpy_only = synthetic.write(tmp / "synthetic_numpy", hip=False)
        return {
            "shipped ops.yaml": gen_wall(ROOT / "ops.yaml", tmp / "shipped_out" / "generated"),
            f"synthetic, {synthetic.N_OPS} ops, HIP kernels for cuda and rocm": gen_wall(
                with_hip, tmp / "synthetic" / "generated"),
            f"synthetic, {synthetic.N_OPS} ops, cpu backend only (no HIP outputs)": gen_wall(
                numpy_only, tmp / "synthetic_numpy" / "generated"),
        }


def per_call_ns(fn, number: int = 200_000, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e9


def dispatch() -> dict:
    import numpy as np

    import generated as g

    x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    layout = g.Layout.contiguous((16,))
    cpu = g.Device.parse("cpu")
    s = cpu.storage_from_slice(x)
    exp, add = g.UnaryOp.EXP, g.BinaryOp.ADD
    rows = {}
    for name, ours, ref in (
        ("unary exp, 16 f32", lambda: s.unary(exp, layout), lambda: np.exp(x)),
        ("binary add, 16 f32", lambda: s.binary(add, s, layout, layout), lambda: np.add(x, x)),
    ):
        t_ours, t_ref = per_call_ns(ours), per_call_ns(ref)
        rows[name] = {"opgen_ns": t_ours, "numpy_ns": t_ref, "added_ns": t_ours - t_ref, "ratio": t_ours / t_ref}
    return rows


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def markdown(result: dict) -> str:
    lines = [f"# opgen CPU benchmarks\n\nMachine: {result['machine']}. Medians of 5 CLI runs (interpreter "
             "start included); dispatch: best of 7 x 200,000 calls.\n",
             "## Generation (`gen`), against torchgen's 23.4 s / 19.4 s for 2,584 ops\n",
             "| registry | full | unchanged | full vs torchgen | goal full / unchanged |",
             "|---|---|---|---|---|"]
    for name, r in result["generation"].items():
        lines.append(f"| {name} | {r['full_s']:.2f} s | {r['unchanged_s']:.2f} s | "
                     f"{TORCHGEN['full_s'] / r['full_s']:.0f}x faster | "
                     f"{GOALS['full_s']} s / {GOALS['unchanged_s']} s |")
    lines += ["", "## Dispatch: generated `Storage` op against calling numpy directly\n",
              "| op | opgen | numpy | added per call | ratio | goal added |", "|---|---|---|---|---|---|"]
    for name, r in result["dispatch"].items():
        lines.append(f"| {name} | {r['opgen_ns']:.0f} ns | {r['numpy_ns']:.0f} ns | {r['added_ns']:.0f} ns | "
                     f"{r['ratio']:.2f}x | {GOALS['dispatch_added_ns']} ns |")
    return "\n".join(lines) + "\n"


def main() -> None:
    result = {"machine": machine(), "generation": generation(), "dispatch": dispatch()}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cpu.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    (RESULTS / "cpu.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""`python bench/audit.py`: how long `gen audit` takes on a tree of 1,000 files.

The tree is made from the audit fixtures (tests/fixtures/audit/): each copy gets its own
function and class names, and about a third lose their ROCm arms (so findings vary), plus
files of the generator itself that name no backend, as real trees have. Times are the wall
clock of the CLI (interpreter start and registry load included), median of RUNS runs, with
one process and with one per core (the best run too: other work on the machine only slows
runs down). Prints a Markdown table and writes bench/results/audit.md."""

from __future__ import annotations

import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AUDIT = ROOT / "tests" / "fixtures" / "audit"
REGISTRY = AUDIT / "ops.yaml"
RESULTS = ROOT / "bench" / "results"
FILES = 1000
RUNS = 5
TEMPLATES = {  # fixture -> share of the tree
    "candle/storage.rs": 0.25, "candle/quantized.rs": 0.15, "candle/custom_ops.rs": 0.10,
    "pytensor/tensor.py": 0.30, "complete/ops.py": 0.05, "complete/ops.rs": 0.05,
}
UNRELATED = [ROOT / "generator" / "loader.py", ROOT / "generator" / "writer.py"]  # the rest: no backend named


def mutate(text: str, i: int, rust: bool, rng: random.Random) -> str:
    """Own names per copy; about a third forget ROCm (its arms become another backend's)."""
    if rust:
        text = re.sub(r"\bfn (\w+)", rf"fn \g<1>_{i}", text)
        text = re.sub(r"\b(pub struct|for) (\w+)", rf"\g<1> \g<2>{i}", text)
        if rng.random() < 0.35:
            text = text.replace("Rocm", "Npu")
    else:
        text = re.sub(r"\bdef (\w+)", rf"def \g<1>_{i}", text)
        text = re.sub(r"\bclass (\w+)", rf"class \g<1>{i}", text)
        if rng.random() < 0.35:
            text = text.replace("ROCM", "NPU").replace('"rocm"', '"npu"').replace("rocm_fwd", "npu_fwd")
    return text


def make_tree(root: Path) -> dict[str, int]:
    rng = random.Random(5)
    names = list(TEMPLATES)
    counts = {name: round(share * FILES) for name, share in TEMPLATES.items()}
    counts["unrelated"] = FILES - sum(counts.values())
    made = 0
    for name, n in counts.items():
        for k in range(n):
            d = root / f"pkg{made // 50:02}"
            d.mkdir(exist_ok=True)
            if name == "unrelated":
                src = UNRELATED[k % len(UNRELATED)]
                (d / f"mod_{made}.py").write_text(src.read_text())
            else:
                rust = name.endswith(".rs")
                text = mutate((AUDIT / name).read_text(), made, rust, rng)
                (d / f"{Path(name).stem}_{made}{'.rs' if rust else '.py'}").write_text(text)
            made += 1
    assert made == FILES and names
    return counts


def wall(args: list[str]) -> tuple[float, float, str]:
    cmd = [sys.executable, "-m", "generator.cli", "--registry", str(REGISTRY), "audit", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times, out = [], ""
    for _ in range(RUNS):
        started = timeit.default_timer()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
        times.append(timeit.default_timer() - started)
        assert proc.returncode in (0, 1), proc.stderr
        out = proc.stdout
    return statistics.median(times), min(times), out.splitlines()[-1]


def main() -> None:
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]  # other work on the machine slows the parallel run first
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        counts = make_tree(tree)
        rs = sum(1 for _ in tree.rglob("*.rs"))
        py = sum(1 for _ in tree.rglob("*.py"))
        lines = sum(p.read_text().count("\n") for p in tree.rglob("*.*"))
        fixture_s, fixture_best, fixture_total = wall([str(AUDIT)])
        serial_s, serial_best, total = wall(["-j", "1", str(tree)])
        parallel_s, parallel_best, total_p = wall([str(tree)])
        assert total == total_p
    table = [
        f"| tree | files | lines | processes | wall, median of {RUNS} | best |",
        "|---|---:|---:|---:|---:|---:|",
        f"| fixtures (tests/fixtures/audit) | 10 | {sum(p.read_text().count(chr(10)) for p in AUDIT.rglob('*.*'))} "
        f"| {min(cores, 10)} | {fixture_s:.2f} s | {fixture_best:.2f} s |",
        f"| generated tree ({rs} .rs, {py} .py) | {FILES} | {lines:,} | 1 | {serial_s:.2f} s | {serial_best:.2f} s |",
        f"| generated tree ({rs} .rs, {py} .py) | {FILES} | {lines:,} | {cores} | {parallel_s:.2f} s "
        f"| {parallel_best:.2f} s |",
    ]
    text = "\n".join([
        "# `gen audit` timing", "",
        f"Machine: {platform.machine()}, {cores} cores (load average {load:.1f} at the start), "
        f"Python {platform.python_version()}. "
        "Wall clock of the CLI as a subprocess (interpreter start and registry load included).", "",
        *table, "",
        f"Fixtures: `{fixture_total}`", "",
        f"Generated tree: `{total}`", "",
        "Tree: " + ", ".join(f"{n} × {name}" for name, n in counts.items()) +
        " (copies renamed per file; about a third lose their ROCm arms).", "",
        "Reproduce: `python bench/audit.py`.", "",
    ])
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "audit.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

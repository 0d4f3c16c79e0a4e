"""`python bench/audit.py [--candle PATH [--candle-commit SHA]]`: how long `gen audit` takes,
and its peak memory.

Trees:
- the fixtures (tests/fixtures/audit/);
- a generated tree of 1,000 files made from the fixtures: each copy gets its own function
  and class names, about a third lose their ROCm arms (so findings vary), plus files of the
  generator itself that name no backend, as real trees have;
- real Python: 1,009 files of the running interpreter's standard library (a fixed shuffle),
  each with a comment naming the backends appended, so that the prefilter lets every file
  through and every one is parsed (the worst case; code bases that name `cuda` everywhere);
- with --candle, a checkout of huggingface/candle: candle-core/src and the whole repository,
  audited as a user would, `--backends cpu,cuda,metal,rocm` and no registry;
- with --python-repo, a Python code base that dispatches on many devices (e.g.
  huggingface/accelerate), `--backends cpu,cuda,xpu,mps,npu,mlu,musa,hpu`.

Times are the wall clock of the CLI as a subprocess (interpreter start included), RUNS runs:
median and range (other work on the machine only slows runs down). Peak RSS is that of the
largest process (the CLI, or one of its workers with -j 2), from getrusage(RUSAGE_CHILDREN)
in a fresh wrapper process per run. Prints Markdown and writes bench/results/audit.md."""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AUDIT = ROOT / "tests" / "fixtures" / "audit"
REGISTRY = AUDIT / "ops.yaml"
RESULTS = ROOT / "bench" / "results"
FILES = 1000
PYTHON_FILES = 1009
RUNS = 5
TEMPLATES = {  # fixture -> share of the tree
    "candle/storage.rs": 0.15,
    "candle/quantized.rs": 0.10,
    "candle/custom_ops.rs": 0.10,
    "candle/error_arms.rs": 0.10,
    "candle/dispatch_idioms.rs": 0.10,
    "pytensor/tensor.py": 0.20,
    "pytensor/idioms.py": 0.10,
    "complete/ops.py": 0.025,
    "complete/ops.rs": 0.025,
}
UNRELATED = [ROOT / "generator" / "loader.py", ROOT / "generator" / "writer.py"]  # the rest: no backend named
# One wrapper per run, so that RUSAGE_CHILDREN holds this run's processes only.
MEASURE = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "w = time.perf_counter() - t\n"
    "print(json.dumps([w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode,"
    " p.stdout.splitlines()[-1] if p.stdout else p.stderr]))\n"
)


def mutate(text: str, i: int, rust: bool, rng: random.Random) -> str:
    """Own names per copy; about a third forget ROCm (its arms become another backend's)."""
    if rust:
        text = re.sub(r"\bfn (\w+)", rf"fn \g<1>_{i}", text)
        text = re.sub(r"\b(pub struct|for) (\w+)", rf"\g<1> \g<2>{i}", text)
        if rng.random() < 0.35:
            text = text.replace("Rocm", "Npu").replace("rocm_fwd", "npu_fwd")
    else:
        text = re.sub(r"\bdef (\w+)", rf"def \g<1>_{i}", text)
        text = re.sub(r"\bclass (\w+)", rf"class \g<1>{i}", text)
        if rng.random() < 0.35:
            text = text.replace("ROCM", "NPU").replace('"rocm"', '"npu"').replace("rocm_fwd", "npu_fwd")
    return text


def make_tree(root: Path) -> dict[str, int]:
    rng = random.Random(5)
    counts = {name: round(share * FILES) for name, share in TEMPLATES.items()}
    counts["unrelated"] = FILES - sum(counts.values())
    made = 0
    for name, n in counts.items():
        for k in range(n):
            d = root / f"pkg{made // 50:02}"
            d.mkdir(exist_ok=True)
            if name == "unrelated":
                (d / f"mod_{made}.py").write_text(UNRELATED[k % len(UNRELATED)].read_text())
            else:
                rust = name.endswith(".rs")
                text = mutate((AUDIT / name).read_text(), made, rust, rng)
                (d / f"{Path(name).stem}_{made}{'.rs' if rust else '.py'}").write_text(text)
            made += 1
    return counts


def make_python_tree(root: Path) -> int:
    """PYTHON_FILES standard-library modules that parse here, every one naming the backends."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    random.Random(0).shuffle(files)
    made = lines = 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
            ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        d = root / f"pkg{made // 50:02}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"m{made}.py").write_text(text + "\n# backends: cpu cuda rocm\n")
        made += 1
        lines += text.count("\n") + 2
        if made == PYTHON_FILES:
            break
    return lines


def measure(args: list[str], code: Path = ROOT, runs_wanted: int = RUNS) -> dict:
    cmd = [sys.executable, "-m", "generator.cli", *args]
    env = {**os.environ, "PYTHONPATH": str(code)}
    runs = []
    for _ in range(runs_wanted):
        out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, env=env, cwd=code)
        wall, rss_kb, rc, last = json.loads(out.stdout)
        assert rc in (0, 1) or code != ROOT, last
        runs.append((wall, rss_kb, last))
    walls = [w for w, _, _ in runs]
    return {
        "median": statistics.median(walls),
        "min": min(walls),
        "max": max(walls),
        "rss_mb": max(r for _, r, _ in runs) / 1024,
        "summary": runs[-1][2],
    }


def row(name: str, files: int, lines: int, jobs: int, m: dict) -> str:
    return (
        f"| {name} | {files:,} | {lines:,} | {jobs} | {m['median']:.2f} s | {m['min']:.2f}–{m['max']:.2f} s "
        f"| {m['rss_mb']:.0f} MB |"
    )


def count(root: Path, suffixes: tuple[str, ...]) -> tuple[int, int]:
    paths = [
        p
        for p in root.rglob("*")
        if p.suffix in suffixes
        and p.is_file()
        and not any(
            part.startswith(".") or part in ("target", "node_modules", "__pycache__")
            for part in p.relative_to(root).parts
        )
    ]
    return len(paths), sum(p.read_bytes().count(b"\n") for p in paths)


def breakdown(root: Path, require: str) -> str:
    """What the findings are, by kind (from --format json)."""
    cmd = [
        sys.executable,
        "-m",
        "generator.cli",
        "audit",
        "--format",
        "json",
        "--backends",
        "cpu,cuda,metal,rocm",
        "--require-fwd",
        require,
        str(root),
    ]
    doc = json.loads(
        subprocess.run(
            cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
        ).stdout
    )
    kinds = {
        "trait definitions": 0,
        "custom-op impls": 0,
        "no case at all": 0,
        "only a failing wildcard": 0,
        "notes (a working wildcard)": 0,
    }
    storage = [0, 0]
    for f in doc["findings"]:
        msg = f["message"]
        kind = (
            "notes (a working wildcard)"
            if f["kind"] == "wildcard"
            else "trait definitions"
            if " declares " in msg
            else "custom-op impls"
            if msg.startswith(("impl ", "class "))
            else "only a failing wildcard"
            if "only fails" in msg
            else "no case at all"
        )
        kinds[kind] += 1
        if f["path"].endswith("candle-core/src/storage.rs"):
            storage[f["kind"] == "wildcard"] += 1
    return ", ".join(f"{n} {k}" for k, n in kinds.items()) + (
        f" (candle-core/src/storage.rs: {storage[0]} missing, {storage[1]} notes)" if sum(storage) else ""
    )


def _commit(checkout: Path) -> str:
    return (
        subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        or "unknown"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candle", type=Path, help="a checkout of huggingface/candle")
    parser.add_argument("--candle-commit", default=None, help="its commit, when the checkout has no .git")
    parser.add_argument("--before", type=Path, help="a checkout of an earlier generator/ to time on the Python tree")
    parser.add_argument("--python-repo", type=Path, help="a Python code base, e.g. huggingface/accelerate")
    parser.add_argument("--python-repo-commit", default=None, help="its name@commit, when the checkout has no .git")
    opts = parser.parse_args()
    cores = os.cpu_count() or 1
    load = os.getloadavg()
    table = [
        "| tree | files | lines | processes | wall, median | range | peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    reg = ["--registry", str(REGISTRY), "audit"]
    fixture_files, fixture_lines = count(AUDIT, (".py", ".rs"))
    m = measure([*reg, str(AUDIT)])
    table.append(row("fixtures (tests/fixtures/audit)", fixture_files, fixture_lines, min(cores, 2), m))
    notes.append(f"Fixtures: `{m['summary']}`")
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "generated"
        tree.mkdir()
        counts = make_tree(tree)
        files, lines = count(tree, (".py", ".rs"))
        for jobs in (1, cores):
            m = measure([*reg, "-j", str(jobs), str(tree)])
            table.append(row("generated from the fixtures", files, lines, jobs, m))
        notes.append(
            f"Generated tree: `{m['summary']}`; "
            + ", ".join(f"{n} × {name}" for name, n in counts.items())
            + " (copies renamed per file; about a third lose their ROCm arms)."
        )
        pytree = Path(tmp) / "python"
        lines = make_python_tree(pytree)
        for jobs in (1, cores):
            m = python_m = measure(["audit", "--backends", "cpu,cuda,rocm", "-j", str(jobs), str(pytree)])
            table.append(
                row(
                    f"Python {platform.python_version()} standard library, every file parsed",
                    PYTHON_FILES,
                    lines,
                    jobs,
                    m,
                )
            )
        notes.append(
            f"Python tree: `{m['summary']}` (the standard library dispatches on no backend: "
            "this measures reading and parsing)"
        )
        goals = [
            f"Goals of the audit on this machine: 1,009 Python files in ≤ 5 s and ≤ 200 MB: "
            f"{python_m['max']:.2f} s at worst, {python_m['rss_mb']:.0f} MB"
        ]
        if opts.before:
            for jobs in (1, cores):
                m = measure(["--registry", str(REGISTRY), "audit", "-j", str(jobs), str(pytree)], opts.before, 2)
                if jobs == 1:
                    notes.append(
                        f"Before: `{m['summary']}` (libcst cannot parse one of the files: "
                        "exit 2, the others are still audited)"
                    )
                table.append(
                    row(
                        f"the same, before (generator/ of {opts.before.name}, libcst), 2 runs",
                        PYTHON_FILES,
                        lines,
                        jobs,
                        m,
                    )
                )
    if opts.candle:
        commit = opts.candle_commit or _commit(opts.candle)
        for sub in ("candle-core/src", "."):
            root = (opts.candle / sub).resolve()
            files, lines = count(root, (".rs", ".py"))
            for require in ("all", "none"):
                m = measure(["audit", "--backends", "cpu,cuda,metal,rocm", "--require-fwd", require, str(root)])
                label = f"Candle {commit[:10]} {sub if sub != '.' else '(whole repository)'}, --require-fwd {require}"
                table.append(row(label, files, lines, cores, m))
                notes.append(f"{label}: `{m['summary']}`; {breakdown(root, require)}")
                if sub == "." and require == "all":
                    goals.append(f"Rust ≤ 1.5 s for Candle's ~650 files: {m['max']:.2f} s at worst")
    if opts.python_repo:
        name = opts.python_repo_commit or f"{opts.python_repo.name}@{_commit(opts.python_repo)}"
        files, lines = count(opts.python_repo, (".py",))
        m = measure(["audit", "--backends", "cpu,cuda,xpu,mps,npu,mlu,musa,hpu", str(opts.python_repo.resolve())])
        table.append(row(name, files, lines, cores, m))
        notes.append(f"{name}: `{m['summary']}`")
    text = "\n".join(
        [
            "# `gen audit` timing and memory",
            "",
            f"Machine: {platform.machine()}, {cores} cores, shared with other jobs (load average "
            f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the start), Python {platform.python_version()}. "
            "Wall clock of the CLI as a subprocess (interpreter start included); peak RSS of the largest process.",
            "",
            *table,
            "",
            *(f"- {n}" for n in notes),
            "",
            "; ".join(goals) + ".",
            "",
            "Reproduce: `python bench/audit.py --candle PATH-TO-CANDLE --python-repo PATH-TO-ACCELERATE "
            "[--before DIR-HOLDING-AN-OLDER-generator/]`.",
            "",
        ]
    )
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "audit.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

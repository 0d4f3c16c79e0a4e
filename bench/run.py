"""`make bench`: generation time and dispatch cost, side by side with their references.

Writes bench/results/cpu.json and bench/results/cpu.md. Times are medians of repeated runs
on this machine; the table says which machine. Nothing here is asserted: see the numbers.
What each part measures: bench/generation.py, bench/generation_before.py, bench/dispatch.py.

    python bench/run.py [--before REV ...]   # default: generation_before.BASELINE; --before none: no comparison"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import dispatch, generation, generation_before  # noqa: E402

RESULTS = ROOT / "bench" / "results"
DISPATCH_GOALS_NS = {"unary": 300, "binary": 600}  # added over numpy per call


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def dispatch_lines(result: dict) -> list[str]:
    lines = [
        "",
        "## Dispatch: generated `Storage` op against calling numpy directly\n",
        "| op | opgen | numpy | added per call | ratio | goal added | added, CPU time |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in result["dispatch"].items():
        lines.append(
            f"| {name} | {r['opgen_ns']:.0f} ns | {r['numpy_ns']:.0f} ns | {r['added_ns']:.0f} ns | "
            f"{r['ratio']:.2f}x | ≤ {DISPATCH_GOALS_NS[r['kind']]} ns | "
            f"{r['cpu_added_ns']:.0f} ns |"
        )
    return lines


def markdown(result: dict) -> str:
    lines = [
        f"# opgen CPU benchmarks\n\nMachine: {result['machine']}; load average (1/5/15 min) "
        f"{result['load_before']} before, {result['load_after']} after. Generation: medians of "
        f"{generation.ROUNDS} CLI runs each (interpreter start included), the commands taking turns; "
        "dispatch: best of 7 x 200,000 calls (the last column: the same by CPU time).\n"
    ]
    lines += generation.lines(result)
    lines += generation_before.lines(result)
    lines += generation.change_lines(result)
    lines += dispatch_lines(result)
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--before",
        action="append",
        metavar="REV",
        help=f"time gen beside this earlier revision's gen on the same registry, in turns "
        f"(repeatable; default {generation_before.BASELINE}; 'none' for no comparison)",
    )
    args = parser.parse_args()
    revisions = [r for r in (args.before or [generation_before.BASELINE]) if r != "none"]
    result = {"machine": machine(), "load_before": load()}
    result["generation"], result["torchgen"] = generation.rows()
    result["before"] = generation_before.rows(revisions)
    result["check_change"] = generation.change_rows()
    result["dispatch"] = dispatch.rows()
    result["load_after"] = load()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cpu.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    (RESULTS / "cpu.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""Several runs of bench/gpu.py side by side: each numeric row's value in every run, and its
range, as the issues ask for ("three runs with the spread"). Rows missing from a run, or not
numbers, are listed with what each run said.

    python3 bench/spread.py bench/results/gpu-h100-run1.json run2.json run3.json > spread.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def spread_table(runs: list[dict]) -> str:
    """Markdown: one line per row of the first run (then rows only later runs have)."""
    devices = sorted({run["device"] for run in runs})
    keys = list(dict.fromkeys(key for run in runs for key in run["rows"]))
    header = " | ".join(f"run {i + 1}" for i in range(len(runs)))
    lines = [
        f"Device: {'; '.join(devices)}. {len(runs)} runs, each a fresh process.\n",
        f"| measurement | {header} | min-max |",
        "|---|" + "---|" * (len(runs) + 1),
    ]
    for key in keys:
        values = [run["rows"].get(key) for run in runs]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        cells = " | ".join(_cell(v) for v in values)
        span = f"{min(numbers):.3f}-{max(numbers):.3f}" if len(numbers) == len(values) else ""
        lines.append(f"| {key} | {cells} | {span} |")
    return "\n".join(lines) + "\n"


def _cell(value) -> str:
    if value is None:
        return "(absent)"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value).replace("|", "/")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="gpu.json files written by bench/gpu.py")
    args = parser.parse_args()
    print(spread_table([json.loads(path.read_text()) for path in args.runs]), end="")


if __name__ == "__main__":
    main()

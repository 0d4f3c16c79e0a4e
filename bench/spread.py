"""Several runs of a bench side by side: each numeric row's value in every run, and its range
(bench/results/ keeps the spread of the last three runs of each bench). Rows missing from a
run, or not numbers, are listed with what each run said. Reads bench/gpu.py's gpu.json
({"device", "rows"}) and `make bench`'s cpu.json (its sections' rows, one row a figure).

    python3 bench/spread.py bench/results/gpu-h100-run1.json run2.json run3.json > spread.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def rows_of(run: dict) -> dict:
    """A run's rows: gpu.json's as they are; cpu.json's sections flattened, "section: row: figure"."""
    if "rows" in run:
        return run["rows"]
    rows = {}
    for section in ("generation", "before", "check_change", "torchgen", "dispatch"):
        table = run.get(section) or {}
        figures = {"": table} if section == "torchgen" else table
        for name, values in figures.items():
            for key, value in values.items():
                if not isinstance(value, list):
                    rows[": ".join(part for part in (section, name, key) if part)] = value
    return rows


def spread_table(runs: list[dict]) -> str:
    """Markdown: one line per row of the first run (then rows only later runs have)."""
    devices = sorted({run.get("device") or run["machine"] for run in runs})
    tables = [rows_of(run) for run in runs]
    keys = list(dict.fromkeys(key for rows in tables for key in rows))
    header = " | ".join(f"run {i + 1}" for i in range(len(runs)))
    lines = [
        f"Device: {'; '.join(devices)}. {len(runs)} runs, each a fresh process.\n",
        f"| measurement | {header} | min-max |",
        "|---|" + "---|" * (len(runs) + 1),
    ]
    for key in keys:
        values = [rows.get(key) for rows in tables]
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
    parser.add_argument("runs", nargs="+", type=Path, help="gpu.json (bench/gpu.py) or cpu.json (make bench) files")
    args = parser.parse_args()
    print(spread_table([json.loads(path.read_text()) for path in args.runs]), end="")


if __name__ == "__main__":
    main()

"""Generation time with the rust target: full `gen` of the synthetic 2,584-op registry
(bench/synthetic.py, with its HIP kernels for cuda and rocm) with the Python package alone
and with the Rust dispatch too, as medians of CLI runs (interpreter start included); and how
much of a run rendering each target takes. Writes bench/results/rust-gen.md.

    python bench/rust_gen.py [RUNS]
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import synthetic  # noqa: E402

TARGETS = {"python": {"out": "generated"}, "rust": {"out": "generated/rust"}}


def full_gen(registry: Path, runs: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(runs):
        shutil.rmtree(registry.parent / "generated", ignore_errors=True)
        started = timeit.default_timer()
        subprocess.run([sys.executable, "-m", "generator.cli", "--registry", str(registry)], check=True,
                       capture_output=True, env=env, cwd=registry.parent)
        times.append(timeit.default_timer() - started)
    return statistics.median(times)


def render_split(registry: Path) -> dict[str, float]:
    """Seconds to render each target in-process (model built once, outside the timing)."""
    from generator.loader import load_file
    from generator.targets import outputs, render
    from generator.validate import validate

    model = validate(load_file(str(registry)), registry.parent)
    out = {}
    for output in outputs(model, None):
        started = timeit.default_timer()
        render(model, output)
        out[output.name] = timeit.default_timer() - started
    return out


def registry(directory: Path, targets: bool) -> Path:
    """synthetic.write's registry, with the shipped registry's quantized formats and QStorage
    methods (its device methods make QStorage; at this commit synthetic.py leaves them out
    and the registry does not validate), and with both targets where `targets`."""
    path = synthetic.write(directory)
    spec = yaml.safe_load(path.read_text())
    shipped = yaml.safe_load((ROOT / "ops.yaml").read_text())
    for section in ("quantized", "qstorage"):
        spec.setdefault(section, shipped[section])
    if targets:
        spec["targets"] = TARGETS
    path.write_text(yaml.safe_dump(spec, sort_keys=False, width=120))
    return path


def main(runs: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        python_only = registry(Path(tmp) / "python", targets=False)
        both = registry(Path(tmp) / "both", targets=True)
        a, b = full_gen(python_only, runs), full_gen(both, runs)
        split = render_split(both)
        files = sorted((both.parent / "generated" / "rust").glob("*.rs"))
        size = sum(p.stat().st_size for p in files)
    lines = [
        "# Generation time with the rust target\n",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared with other jobs), Python "
        f"{platform.python_version()}. `python bench/rust_gen.py {runs}`: medians of {runs} full CLI runs of "
        f"bench/synthetic.py's registry ({synthetic.N_OPS} ops, HIP kernels for cuda and rocm; with the "
        "shipped quantized formats and QStorage methods added, without which it does not validate at this "
        "commit).\n",
        "| registry | full `gen` |", "|---|---|",
        f"| synthetic, python target only | {a:.2f} s |",
        f"| synthetic, python and rust targets | {b:.2f} s |",
        f"| added by the rust target | {b - a:+.2f} s ({(b - a) / a:+.0%}) |\n",
        f"Rendering alone, in-process: python {split['python']:.2f} s, rust {split['rust']:.2f} s "
        f"({len(files)} files, {size / 1e6:.1f} MB of Rust).\n",
    ]
    text = "\n".join(lines)
    (ROOT / "bench" / "results" / "rust-gen.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))

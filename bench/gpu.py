"""GPU benchmarks, beside torch in one run, on an H100 through the device tool. Writes gpu.json,
gpu.md and gpu.png under --out (bench/results/ by default; the figures kept there are named
after the device: gpu-h100.*).

    python3 bench/gpu.py [--parts compile,elementwise,...] [--explore NAME,...] [--out DIR]

Each part is a family's bench (one module each); every figure is a median of timed batches after
warm-up (bench/timing.py), every result checked against torch's or the cpu backend's first.
A part that fails is a row saying why; the others still run. `--explore` runs explorations that
re-check a choice in the code (a constant, a launch shape, a kernel's variant), and no part
unless --parts names some. bench/spread.py puts several runs' gpu.json side by side."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.timing import REPEATS, cuda_runtime  # noqa: E402

# part -> (module of bench/, function): in this order by default; the profiler's part last, as
# CUPTI slows every CUDA graph timed after it in the process
PARTS = {
    "compile": ("gpu", "cold_and_warm_compile"),
    "elementwise": ("elementwise", "bandwidth"),
    "reductions": ("reductions", "bandwidth"),
    "matmul": ("matmul", "matmul"),
    "latency": ("host_latency", "small_ops"),
    "checks": ("gpu", "fast_path_checks"),
    "nn": ("nn", "nn"),
    "quant": ("quantized", "graphs"),
    "qmatmul": ("quantized", "qmatmul"),
    "indexing": ("indexing", "indexing"),
    "convolution": ("convolution", "convolution"),
    "arg-sort": ("nn", "arg_sort"),
    "sum-dim0": ("reductions", "sum_dim0"),
    "quant-durations": ("quantized", "durations"),
}
# exploration -> (module, function, what it re-checks)
EXPLORATIONS = {
    "grid": ("elementwise", "explore_grid", "the elementwise grid's cap per multiprocessor (GpuRuntime.geometry)"),
    "reduce": ("reductions", "explore_reduce", "threads / warps per multiprocessor, rows interleaved or banded"),
    "strided-loads": ("reductions", "explore_strided_loads", "strided loads in flight (OPGEN_STRIDED_LOADS)"),
    "columns": ("reductions", "explore_columns", "the column tiles' launch and source variants"),
    "nn-rows": ("nn", "explore_row_bytes", "bytes of a row per thread of the row kernels (ROW_BYTES)"),
    "conv-chunks": ("convolution", "explore_chunks", "im2col columns in chunks (CONV_COLUMN_BYTES)"),
    "cudnn": ("convolution", "explore_cudnn", "cuDNN against opgen's own kernels by dtype (CONV_DTYPES)"),
    "cudnn-attention": ("nn", "explore_cudnn_attention", "attention through cuDNN against opgen's own kernel"),
    "cudnn-plans": (
        "convolution",
        "explore_cudnn_plans",
        "cuDNN's heuristics against autotuning (the autotune switch)",
    ),
    "qmatvec": ("quantized", "explore_qmatvec", "qmatvec's shapes and stages per format (hip/quantized.hip)"),
}


def _function(module: str, name: str) -> Callable[[dict], None]:
    return getattr(sys.modules[__name__] if module == "gpu" else importlib.import_module(f"bench.{module}"), name)


def cold_and_warm_compile(rows: dict) -> None:
    """Compile every kernel source with an empty disk cache, then load from the cache."""
    import generated as g
    from runtime.gpu import compile as gpu_compile

    cache = Path(tempfile.mkdtemp(prefix="opgen-cache-"))
    device = g.Device.parse("cuda:0")
    rt = cuda_runtime()
    sources = sorted(
        {*(str(p) for p in gpu_compile.HIP_DIR.glob("*.hip")), str(Path(g.__file__).parent / "elementwise.hip")}
    )
    rt.cache = gpu_compile.KernelCache("cuda", cache)
    rt._modules.clear()
    start = time.perf_counter()
    for source in sources:
        rt._module(0, source)
    rows["compile all kernels, cold (s)"] = time.perf_counter() - start
    rt._modules.clear()
    start = time.perf_counter()
    for source in sources:
        rt._module(0, source)
    rows["load all kernels, warm disk cache (s)"] = time.perf_counter() - start
    rows["kernel sources"] = len(sources)
    shutil.rmtree(cache, ignore_errors=True)
    del device


def fast_path_checks(rows: dict) -> None:
    """The fast paths the benchmarks time, and those the conformance suite's small shapes do
    not reach (chunked reductions, a thread per group, tiles with ragged edges and batches),
    against the cpu backend on larger shapes: one summary row."""
    from bench.compare import FastPathChecks
    from bench.elementwise import check_tiles
    from bench.reductions import check_reductions

    checks = FastPathChecks()
    check_reductions(checks)
    check_tiles(checks)
    checks.row(rows)


def markdown(rows: dict, device: str) -> str:
    lines = [
        f"# opgen GPU benchmarks\n\nDevice: {device}. Medians of {REPEATS} timed batches after warm-up.\n",
        "| measurement | value |",
        "|---|---|",
    ]
    for k, v in rows.items():
        lines.append(f"| {k} | {v:.3f} |" if isinstance(v, float) else f"| {k} | {v} |")
    return "\n".join(lines) + "\n"


def plot(rows: dict, path: Path) -> None:
    """Bandwidth of each op as a share of copy bandwidth, opgen beside torch (matplotlib,
    where installed: the H100 image has it)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    copy = rows.get("torch device-to-device copy (GB/s)")
    names = [k[: -len(": opgen (GB/s)")] for k in rows if k.endswith(": opgen (GB/s)")]
    if not copy or not names:
        return
    # the copy timed in turn with the op where the part took one (bandwidth), else the run's
    copies = [rows.get(f"{n}: copy timed in turn (GB/s)", copy) for n in names]
    ours = [rows[f"{n}: opgen (GB/s)"] / c for n, c in zip(names, copies)]
    theirs = [rows[f"{n}: torch (GB/s)"] / c for n, c in zip(names, copies)]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    x = range(len(names))
    ax.barh([i + 0.2 for i in x], ours, 0.4, label="opgen")
    ax.barh([i - 0.2 for i in x], theirs, 0.4, label="torch")
    ax.set_yticks(list(x), names)
    ax.axvline(1.0, color="gray", lw=0.8)
    ax.set_xlabel("bandwidth / device-to-device copy bandwidth (same run)")
    ax.set_title("opgen cuda backend on an H100: f32, 64M elements unless named")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument(
        "--parts",
        default=None,
        help="comma-separated, of: " + ", ".join(PARTS) + " (default: all of them, unless --explore is given)",
    )
    parser.add_argument(
        "--explore",
        default="",
        help="comma-separated, of: " + "; ".join(f"{name} ({what})" for name, (_, _, what) in EXPLORATIONS.items()),
    )
    args = parser.parse_args()
    import torch

    device = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    parts = args.parts if args.parts is not None else ("" if args.explore else ",".join(PARTS))
    chosen = [PARTS[p.strip()] for p in parts.split(",") if p.strip()]
    chosen += [EXPLORATIONS[e.strip()][:2] for e in args.explore.split(",") if e.strip()]
    rows: dict = {}
    for module, name in chosen:
        try:
            _function(module, name)(rows)
        except Exception as exc:  # noqa: BLE001  (a failed part is reported, the others still run)
            rows[f"{name} failed"] = f"{type(exc).__name__}: {exc}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu.json").write_text(json.dumps({"device": device, "rows": rows}, indent=2) + "\n")
    text = markdown(rows, device)
    (args.out / "gpu.md").write_text(text)
    plot(rows, args.out / "gpu.png")
    print(text)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()

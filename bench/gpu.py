"""GPU benchmarks (issue #3), run on the H100 through the device tool; side by side with
torch (and cupy) in one run. Writes bench/results/gpu.json and gpu.md under --out.

Bandwidth counts bytes read and written; every figure is the median of timed repeats after
warm-up, host wall clock around a synchronised batch (ops of milliseconds: launch cost is
noise). Rows for ops the GPU runtime does not implement yet say so instead of a number."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

N = 64 * 1024 * 1024  # elements
REPEATS = 10


def timed(fn, sync, repeats: int = REPEATS, inner: int = 5) -> float:
    """Median seconds per call."""
    fn()
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def cold_and_warm_compile(rows: dict) -> None:
    """Compile every kernel source with an empty disk cache, then load from the cache."""
    import runtime.gpu as gpu
    import generated as g

    cache = Path(tempfile.mkdtemp(prefix="opgen-cache-"))
    device = g.Device.parse("cuda:0")
    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
    sources = sorted({*(str(p) for p in gpu.HIP_DIR.glob("*.hip")), str(Path(g.__file__).parent / "elementwise.hip")})
    rt.cache = gpu.KernelCache("cuda", cache)
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


def bandwidth(rows: dict) -> None:
    import numpy as np
    import torch

    import generated as g

    dev = g.Device.parse("cuda:0")
    sync = dev.synchronize
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    a = dev.storage_from_slice(x)
    b = dev.storage_from_slice(x)
    flat = g.Layout.contiguous((N,))
    square = g.Layout.contiguous((8192, N // 8192)).transpose(0, 1)  # a transposed (strided) view
    tx = torch.from_numpy(x).cuda()
    tx2 = tx.clone()  # a second operand: x + x would read one array twice
    ty = torch.empty_like(tx)
    tsync = torch.cuda.synchronize
    gb = lambda nbytes, seconds: nbytes / seconds / 1e9  # noqa: E731

    t_copy = timed(lambda: ty.copy_(tx), tsync)
    copy_bw = gb(2 * 4 * N, t_copy)
    rows["torch device-to-device copy (GB/s)"] = copy_bw
    t_clone = timed(lambda: a.try_clone(flat), sync)
    rows["opgen try_clone, cuMemcpyDtoD (GB/s)"] = gb(2 * 4 * N, t_clone)

    cases = {
        "exp f32 64M contiguous": (lambda: a.unary(g.UnaryOp.EXP, flat), lambda: torch.exp(tx), 2),
        "add f32 64M contiguous": (lambda: a.binary(g.BinaryOp.ADD, b, flat, flat), lambda: tx + tx2, 3),
        # opgen (as Candle) writes the result contiguous in logical order: a transpose.
        # torch keeps the input's strides; .contiguous() gives the same result as opgen's.
        "exp f32 64M transposed": (lambda: a.unary(g.UnaryOp.EXP, square),
                                   lambda: torch.exp(tx.view(8192, -1).t().contiguous()), 2),
        "add f32 64M transposed": (lambda: a.binary(g.BinaryOp.ADD, b, square, square),
                                   lambda: torch.add(tx.view(8192, -1).t(), tx2.view(8192, -1).t()).contiguous(), 3),
    }
    for name, (ours, theirs, arrays) in cases.items():
        t_ours, t_torch = timed(ours, sync), timed(theirs, tsync)
        bw_ours, bw_torch = gb(arrays * 4 * N, t_ours), gb(arrays * 4 * N, t_torch)
        rows[f"{name}: opgen (GB/s)"] = bw_ours
        rows[f"{name}: torch (GB/s)"] = bw_torch
        rows[f"{name}: opgen / copy bandwidth"] = bw_ours / copy_bw
        rows[f"{name}: opgen / torch"] = bw_ours / bw_torch
    # Reductions read every element once (bytes = 4N; the output is negligible).
    grid = g.Layout.contiguous((8192, N // 8192))
    reductions = {
        "sum f32 64M over the last dim": (lambda: a.reduce_op(g.ReduceOp.SUM, grid, (1,)),
                                          lambda: tx.view(8192, -1).sum(dim=1, keepdim=True)),
        "sum f32 64M over all dims": (lambda: a.reduce_op(g.ReduceOp.SUM, grid, (0, 1)), lambda: tx.sum()),
    }
    for name, (ours, theirs) in reductions.items():
        t_ours, t_torch = timed(ours, sync), timed(theirs, tsync)
        rows[f"{name}: opgen (GB/s)"] = gb(4 * N, t_ours)
        rows[f"{name}: torch (GB/s)"] = gb(4 * N, t_torch)
        rows[f"{name}: opgen / copy bandwidth"] = gb(4 * N, t_ours) / copy_bw
        rows[f"{name}: opgen / torch"] = t_torch / t_ours
    # matmul bf16 8192^3 through cuBLAS (CuPy's binding), against torch.matmul.
    import ml_dtypes

    size = 8192
    rng = np.random.default_rng(1)
    host = rng.standard_normal((size, size), dtype=np.float32).astype(ml_dtypes.bfloat16)
    ma, mb = dev.storage_from_slice(host), dev.storage_from_slice(host)
    ml = g.Layout.contiguous((size, size))
    ta = torch.from_numpy(host.view(np.uint16)).cuda().view(torch.bfloat16)
    flops = 2 * size**3
    t_ours = timed(lambda: ma.matmul(mb, g.MatmulDims(1, size, size, size), ml, ml), sync, repeats=5, inner=3)
    t_torch = timed(lambda: torch.matmul(ta, ta), tsync, repeats=5, inner=3)
    rows["matmul bf16 8192^3: opgen (TFLOP/s)"] = flops / t_ours / 1e12
    rows["matmul bf16 8192^3: torch (TFLOP/s)"] = flops / t_torch / 1e12
    rows["matmul bf16 8192^3: opgen / torch"] = t_torch / t_ours


def latency(rows: dict) -> None:
    import numpy as np
    import torch

    import generated as g

    dev = g.Device.parse("cuda:0")
    x = np.ones(1024, np.float32)
    a = dev.storage_from_slice(x)
    layout = g.Layout.contiguous((1024,))
    tx = torch.from_numpy(x).cuda()
    n = 2000
    for name, fn in (("opgen Storage.unary exp", lambda: a.unary(g.UnaryOp.EXP, layout)),
                     ("torch.exp", lambda: torch.exp(tx))):
        fn()
        torch.cuda.synchronize()
        dev.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rows[f"small op 1,024 f32, host time per op: {name} (us)"] = (time.perf_counter() - start) / n * 1e6
        dev.synchronize()
        torch.cuda.synchronize()


def markdown(rows: dict, device: str) -> str:
    lines = [f"# opgen GPU benchmarks\n\nDevice: {device}. Medians of {REPEATS} timed batches after warm-up.\n",
             "| measurement | value |", "|---|---|"]
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
    ours = [rows[f"{n}: opgen (GB/s)"] / copy for n in names]
    theirs = [rows[f"{n}: torch (GB/s)"] / copy for n in names]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    x = range(len(names))
    ax.barh([i + 0.2 for i in x], ours, 0.4, label="opgen")
    ax.barh([i - 0.2 for i in x], theirs, 0.4, label="torch")
    ax.set_yticks(list(x), names)
    ax.axvline(1.0, color="gray", lw=0.8)
    ax.set_xlabel("bandwidth / device-to-device copy bandwidth (same run)")
    ax.set_title("opgen cuda backend on an H100: f32, 64M elements")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    import torch

    device = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    rows: dict = {}
    for part in (cold_and_warm_compile, bandwidth, latency):
        try:
            part(rows)
        except Exception as exc:  # noqa: BLE001  (a failed part is reported, the others still run)
            rows[f"{part.__name__} failed"] = f"{type(exc).__name__}: {exc}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu.json").write_text(json.dumps({"device": device, "rows": rows}, indent=2) + "\n")
    text = markdown(rows, device)
    (args.out / "gpu.md").write_text(text)
    plot(rows, args.out / "gpu.png")
    print(text)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()

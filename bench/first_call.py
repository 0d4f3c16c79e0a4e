"""First calls and warm calls of each op family, opgen beside torch on the same GPU, each first
call in a fresh process: the time of an op's first call and its warm time (median of batches of
synchronised calls), per family.

What a first call includes, for both: the library imported, the device initialised and the
inputs already on it (torch: `import torch` and its tensors made; opgen: `import generated`
and its storages made, which imports the cuda runtime and its launch tables); timed: the op's
one call and a synchronisation, with whatever that call loads on its own (the op's kernels
or plans, cuBLAS or cuDNN and their handles, modules imported on first use). Every tree is
byte-compiled first (`compileall`, as an installed package is): a tree without bytecode
compiles each module it imports from source.

- opgen, fully cold: an empty OPGEN_CACHE_DIR (kernels compiled by NVRTC, cuDNN plans chosen);
- opgen, warm disk caches: a second process on the cache the cold one filled;
- torch: a fresh process (torch keeps no disk cache of these);
- `--baseline TREE`: opgen of another tree (today's main), warm times only, all families in
  one process after a first call each.

Writes first-call.json and first-call.md under --out. Run on the device machine:
`python3 bench/first_call.py --runs 3 --baseline . --out $OUT` from a copy of this tree."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: family -> (what it runs, for the table). conv-tf32: TF32 on in both; conv-autotune: opgen's
#: autotune switch and torch's cudnn.benchmark.
FAMILIES = {
    "elementwise": "add f32, 2 x 16M elements",
    "reduce": "sum over the last dim, f32 (4096, 4096)",
    "nn": "softmax over the last dim, f32 (4096, 4096)",
    "matmul-f32": "matmul f32 2048^3 (TF32 off)",
    "matmul-bf16": "matmul bf16 2048^3",
    "conv": "conv2d f32 (16,64,56,56) by (64,64,3,3), padding 1, TF32 off",
    "conv-tf32": "the same conv2d, TF32 on (opgen's conv switch, torch's cudnn.allow_tf32)",
    "conv-autotune": "the same conv2d, TF32 off, autotuned (opgen's autotune, torch's cudnn.benchmark)",
    "conv-tf32-autotune": "the same conv2d, TF32 on, autotuned",
    "attention": "sdpa bf16 (4, 16, 1024, 64), not causal",
    "qmatvec": "q4_0 4096x4096 by one row (torch: f16 mv of the dequantized weight)",
}


#: Families whose first call is profiled too (run 1, another warm-cache process: the profiler's
#: own cost kept out of the first-call figures).
PROFILED = ("elementwise", "reduce", "nn", "matmul-f32", "conv-tf32", "attention", "qmatvec")


def warm_per_call(call, sync, batches: int = 20, spin: float = 0.3, batch_seconds: float = 2e-3) -> float:
    """Median seconds per call of batches of synchronised calls, after `spin` seconds of calls
    (the GPU's clocks up), each batch about `batch_seconds` long."""
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < spin:
        call()
        sync()
        calls += 1
    inner = max(10, int(batch_seconds / ((time.perf_counter() - start) / calls)))
    samples = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(inner):
            call()
        sync()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def _opgen_case(family: str):
    """(call, sync) of the family on opgen's cuda:0, its inputs already there."""
    import ml_dtypes
    import numpy as np

    import generated as g
    import runtime.cuda as cuda

    rng = np.random.default_rng(1)
    dev = g.Device.parse("cuda:0")

    def put(a):
        return dev.storage_from_slice(a), g.Layout.contiguous(a.shape)

    # Set either way: the baseline runs every family in one process, where a switch turned on
    # for one family would otherwise hold for the next.
    if hasattr(cuda, "set_conv_reduced_precision_f32"):
        cuda.set_conv_reduced_precision_f32("tf32" in family)
    if hasattr(cuda, "set_autotune"):
        cuda.set_autotune("autotune" in family)
    f32 = np.float32
    if family == "elementwise":
        (x, lx), (y, ly) = put(rng.standard_normal(1 << 24, f32)), put(rng.standard_normal(1 << 24, f32))
        call = lambda: x.binary(g.BinaryOp.ADD, y, lx, ly)  # noqa: E731
    elif family == "reduce":
        x, lx = put(rng.standard_normal((4096, 4096), f32))
        call = lambda: x.reduce_op(g.ReduceOp.SUM, lx, (1,))  # noqa: E731
    elif family == "nn":
        x, lx = put(rng.standard_normal((4096, 4096), f32))
        softmax = g.nn.SoftmaxLastDim()
        call = lambda: x.apply_op1(lx, softmax)  # noqa: E731
    elif family.startswith("matmul"):
        dt = f32 if family == "matmul-f32" else ml_dtypes.bfloat16
        (a, la), (b, lb) = (put(rng.standard_normal((2048, 2048), f32).astype(dt)) for _ in range(2))
        call = lambda: a.matmul(b, g.MatmulDims(1, 2048, 2048, 2048), la, lb)  # noqa: E731
    elif family.startswith("conv"):
        (x, lx) = put(rng.standard_normal((16, 64, 56, 56), f32))
        (w, lw) = put((rng.standard_normal((64, 64, 3, 3), f32) / 24).astype(f32))
        p = g.ConvParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
        call = lambda: x.conv2d(lx, w, lw, p)  # noqa: E731
    elif family == "attention":
        shape = (4, 16, 1024, 64)
        q, k, v = (dev.storage_from_slice(rng.standard_normal(shape, f32).astype(ml_dtypes.bfloat16)) for _ in "qkv")
        layout, op = g.Layout.contiguous(shape), g.nn.Sdpa(scale=0.125, causal=False)
        call = lambda: q.apply_op3(layout, k, layout, v, layout, op)  # noqa: E731
    elif family == "qmatvec":
        w = dev.quantize(rng.standard_normal((4096, 4096), f32), g.GgmlDType.Q4_0)
        x, lx = put(rng.standard_normal((1, 4096), f32))
        call = lambda: w.matmul(x, lx, (4096, 4096))  # noqa: E731
    else:
        raise ValueError(family)
    dev.synchronize()
    return call, dev.synchronize


def _torch_case(family: str):
    import torch
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = "tf32" in family
    torch.backends.cudnn.benchmark = "autotune" in family
    gen = torch.Generator(device="cuda").manual_seed(1)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, device="cuda", generator=gen).to(dtype)

    if family == "elementwise":
        x, y = randn(1 << 24), randn(1 << 24)
        call = lambda: x + y  # noqa: E731
    elif family == "reduce":
        x = randn(4096, 4096)
        call = lambda: x.sum(-1)  # noqa: E731
    elif family == "nn":
        x = randn(4096, 4096)
        call = lambda: torch.softmax(x, -1)  # noqa: E731
    elif family.startswith("matmul"):
        dt = torch.float32 if family == "matmul-f32" else torch.bfloat16
        a, b = randn(2048, 2048, dtype=dt), randn(2048, 2048, dtype=dt)
        call = lambda: a @ b  # noqa: E731
    elif family.startswith("conv"):
        x, w = randn(16, 64, 56, 56), randn(64, 64, 3, 3) / 24
        call = lambda: F.conv2d(x, w, padding=1)  # noqa: E731
    elif family == "attention":
        q, k, v = (randn(4, 16, 1024, 64, dtype=torch.bfloat16) for _ in "qkv")
        call = lambda: F.scaled_dot_product_attention(q, k, v, scale=0.125)  # noqa: E731
    elif family == "qmatvec":
        w, x = randn(4096, 4096, dtype=torch.float16), randn(4096, dtype=torch.float16)
        call = lambda: torch.mv(w, x)  # noqa: E731
    else:
        raise ValueError(family)
    torch.cuda.synchronize()
    return call, torch.cuda.synchronize


def child(lib: str, families: list[str], tree: str, profile: bool = False) -> None:
    """In a fresh process: each family's first call and warm time, one JSON line each;
    `profile`: the first call's costliest functions (cumulative) instead of the times."""
    sys.path.insert(0, tree)
    for family in families:
        call, sync = (_torch_case if lib == "torch" else _opgen_case)(family)
        if profile:
            print(json.dumps({"family": family, "profile": _profiled(call, sync)}), flush=True)
            continue
        start = time.perf_counter()
        call()
        sync()
        first = time.perf_counter() - start
        warm = warm_per_call(call, sync)
        row = {"family": family, "first_ms": first * 1e3, "warm_ms": warm * 1e3}
        if lib == "opgen":  # cuDNN plans taken from the disk cache (an older tree has no count)
            row["plans_loaded"] = getattr(sys.modules["runtime.cuda"]._rt.vendor_nn, "loaded", None)
        print(json.dumps(row), flush=True)


def _profiled(call, sync, top: int = 14) -> list[str]:
    """The first call's `top` functions by cumulative time, as 'ms  function' lines, and the
    modules it imported (by top-level package)."""
    import cProfile
    import pstats

    before = set(sys.modules)
    profiler = cProfile.Profile()
    profiler.enable()
    call()
    sync()
    profiler.disable()
    stats = pstats.Stats(profiler).sort_stats("cumulative")
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][3])[:top]  # type: ignore[attr-defined]
    lines = [f"{v[3] * 1e3:8.1f} ms  {Path(k[0]).name}:{k[1]} {k[2]}" for k, v in rows]
    packages: dict[str, int] = {}
    for name in set(sys.modules) - before:
        packages[name.partition(".")[0]] = packages.get(name.partition(".")[0], 0) + 1
    imported = ", ".join(f"{k} ({v})" for k, v in sorted(packages.items(), key=lambda kv: -kv[1]))
    return [*lines, f"imported by the call: {imported or 'nothing'}"]


def byte_compile(*trees: Path) -> None:
    """Bytecode for every module of the trees and of PYTHONPATH's folders (carried wheels), as
    an installed package has it: without it each fresh process compiles what it imports."""
    import compileall

    folders = [*trees, *(Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    for folder in folders:
        if folder.is_dir():
            compileall.compile_dir(folder, quiet=1, workers=0)


def _spawn(lib: str, families: list[str], tree: Path, cache: Path, profile: bool = False) -> dict[str, dict]:
    env = dict(
        os.environ,
        OPGEN_CACHE_DIR=str(cache),
        PYTHONPATH=os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]),
    )
    env.pop("OPGEN_TF32", None)
    env.pop("OPGEN_AUTOTUNE", None)
    args = [sys.executable, str(Path(__file__).resolve()), "--child", lib, "--tree", str(tree), *families]
    if profile:
        args.insert(2, "--profile")
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    rows = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            rows[row.pop("family")] = row
    if done.returncode:
        rows["error"] = {"stderr": done.stderr[-2000:]}
    return rows


def one_run(families: list[str], baseline: Path | None, profile: bool = False) -> dict:
    """Per family: opgen cold, then warm on the cache the cold process filled, then torch;
    the baseline's warm times in one process; `profile`: PROFILED's first calls too."""
    run: dict = {"families": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for family in families:
            cache = Path(scratch) / family
            cold = _spawn("opgen", [family], ROOT, cache)
            warm = _spawn("opgen", [family], ROOT, cache)
            theirs = _spawn("torch", [family], ROOT, cache)
            run["families"][family] = {"opgen cold": cold, "opgen warm": warm, "torch": theirs}
            if profile and family in PROFILED:
                run["families"][family]["opgen warm, profiled"] = _spawn("opgen", [family], ROOT, cache, True)
        if baseline is not None:
            run["baseline"] = _spawn("opgen", families, baseline, Path(scratch) / "baseline")
    return run


def _cell(rows: dict, family: str, key: str) -> float | None:
    return rows.get(family, {}).get(key)


def markdown(runs: list[dict], device: str) -> str:
    head = (
        "| family | torch first (ms) | opgen first, warm disk (ms) | x torch | opgen first, cold (ms) "
        "| torch warm (ms) | opgen warm (ms) | x torch | today's opgen warm (ms) | x today |\n" + "|---" * 10 + "|\n"
    )
    lines = [f"First and warm calls on {device}, one row per family and run (run 1 / 2 / 3).\n", head]
    for family in FAMILIES:
        for n, run in enumerate(runs, 1):
            f = run["families"].get(family)
            if f is None:
                continue
            tf, tw = _cell(f["torch"], family, "first_ms"), _cell(f["torch"], family, "warm_ms")
            of, ow = _cell(f["opgen warm"], family, "first_ms"), _cell(f["opgen warm"], family, "warm_ms")
            oc = _cell(f["opgen cold"], family, "first_ms")
            bw = _cell(run.get("baseline", {}), family, "warm_ms")

            def fmt(v):
                return "—" if v is None else f"{v:.3f}"

            def ratio(a, b):
                return "—" if a is None or b is None else f"{a / b:.2f}"

            cells = [fmt(tf), fmt(of), ratio(of, tf), fmt(oc), fmt(tw), fmt(ow), ratio(ow, tw), fmt(bw), ratio(ow, bw)]
            lines.append(f"| {family} (run {n}) | " + " | ".join(cells) + " |\n")
    lines.append("\nFamilies: " + "; ".join(f"**{k}**: {v}" for k, v in FAMILIES.items()) + ".\n")
    for family, rows in runs[0]["families"].items() if runs else ():
        profile = rows.get("opgen warm, profiled", {}).get(family, {}).get("profile")
        if profile:
            lines.append(f"\nopgen's first call of {family}, warm disk caches, profiled (run 1; cumulative):\n\n")
            lines.append("```\n" + "\n".join(profile) + "\n```\n")
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", choices=("opgen", "torch"))
    parser.add_argument("--profile", action="store_true", help="with --child: profile the first calls")
    parser.add_argument("--tree", default=str(ROOT))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another opgen tree: its warm times beside")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("families", nargs="*", default=list(FAMILIES))
    args = parser.parse_args()
    if args.child:
        child(args.child, args.families, args.tree, args.profile)
        return
    device = subprocess.run(
        ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True
    ).stdout.strip()
    args.out.mkdir(parents=True, exist_ok=True)
    byte_compile(ROOT, *([args.baseline] if args.baseline else []))
    meta = {"device": device, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "families": FAMILIES}
    runs: list[dict] = []
    for n in range(args.runs):  # the files are written after each run: a cut-off call keeps the runs done
        start = time.perf_counter()
        runs.append(one_run(args.families, args.baseline, profile=n == 0))
        print(f"run {n + 1}: {time.perf_counter() - start:.0f} s", flush=True)
        (args.out / "first-call.json").write_text(json.dumps({**meta, "runs": runs}, indent=1))
        (args.out / "first-call.md").write_text(markdown(runs, device))
    print(markdown(runs, device))


if __name__ == "__main__":
    main()

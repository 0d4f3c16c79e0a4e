"""Where a warm bf16 matmul's time goes, process by process: matmul bf16 2048^3, the call that
bench/first_call.py found at 0.026-0.049 ms warm in fresh processes against torch's 0.025.

Each of `--processes` fresh opgen processes per setting (the default: cuBLAS given opgen's
workspace and a GEMM run again on its addresses replayed as a CUDA graph,
runtime/gpu/blas_graphs.py; graphs off, OPGEN_BLAS_GRAPHS=0; and both off, cuBLAS on its own
workspace, OPGEN_CUBLAS_WORKSPACE_MB=0, as before) reports: the warm time as
first_call.py takes it (median of batches of synchronised calls), host time per call (calls
queued back to back, the drain not counted), time per call queued and drained, CUDA-event time
per call on opgen's stream; the CPU it ran on and that CPU's NUMA node; the cuBLAS libraries
it mapped; its warm calls' host functions by own time. The first of each setting then imports
torch (only its profiler is used) for the kernels opgen's calls ran, with their device time,
and the CUDA runtime and driver calls made per call. One torch process gives the same
figures for `a @ b`.

Run on the device machine: `python3 bench/matmul_host.py --out $OUT` (writes matmul-host.json)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.conv_host import event_per_call, host_per_call, host_profile, kernels_run, queued_per_call  # noqa: E402
from bench.first_call import warm_per_call  # noqa: E402

N = 2048


def _where() -> dict:
    """The CPU this process last ran on, its NUMA node, and the cuBLAS libraries mapped."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    cpu = int(fields[36])  # field 39 of proc(5), counted after the command's name
    nodes = [p.name for p in Path(f"/sys/devices/system/cpu/cpu{cpu}").glob("node*")]
    maps = Path("/proc/self/maps").read_text().splitlines()
    blas = sorted({line.split()[-1] for line in maps if "libcublas" in line})
    return {"cpu": cpu, "numa": nodes[0] if nodes else "?", "cublas": blas}


def _opgen_case():
    import ml_dtypes
    import numpy as np

    import generated as g
    import runtime.cuda as cuda

    rng = np.random.default_rng(1)
    dev = g.Device.parse("cuda:0")
    a, b = (dev.storage_from_slice(rng.standard_normal((N, N), np.float32).astype(ml_dtypes.bfloat16)) for _ in "ab")
    layout, dims = g.Layout.contiguous((N, N)), g.MatmulDims(1, N, N, N)
    stream = int(cuda._rt.stream(0).handle)
    return (lambda: a.matmul(b, dims, layout, layout)), dev.synchronize, stream


def _torch_case():
    import torch

    a, b = (torch.randn(N, N, device="cuda", dtype=torch.bfloat16) for _ in "ab")
    return (lambda: a @ b), torch.cuda.synchronize, torch.cuda.current_stream().cuda_stream


def child(lib: str, profile: bool) -> None:
    call, sync, stream = (_opgen_case if lib == "opgen" else _torch_case)()
    call()
    sync()
    row: dict = {"lib": lib, "setting": os.environ.get("SETTING", "")}
    row["warm_us"] = warm_per_call(call, sync) * 1e6
    row["host_us"] = host_per_call(call, sync) * 1e6
    row["queued_us"] = queued_per_call(call, sync) * 1e6
    row["event_us"] = event_per_call(call, stream, sync) * 1e6
    row.update(_where())
    row["host profile"] = host_profile(call, sync, calls=300, top=12)
    if lib == "opgen":
        row["replays"] = sys.modules["runtime.cuda"]._driver.gemm_graphs.replays()
    row["kernels"] = kernels_run(call, sync, api=True) if profile else []  # imports torch (opgen: only now)
    print(json.dumps(row), flush=True)


#: setting -> its environment
SETTINGS = {
    "default": {},
    "no graphs": {"OPGEN_BLAS_GRAPHS": "0"},
    "no graphs, cuBLAS's workspace": {"OPGEN_BLAS_GRAPHS": "0", "OPGEN_CUBLAS_WORKSPACE_MB": "0"},
}


def _spawn(lib: str, setting: str, profile: bool) -> dict:
    env = dict(os.environ, SETTING=setting, **SETTINGS.get(setting, {}))
    args = [sys.executable, str(Path(__file__).resolve()), "--child", lib] + (["--profile"] if profile else [])
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    return {"lib": lib, "setting": setting, "error": done.stderr[-2000:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", choices=("opgen", "torch"))
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--processes", type=int, default=2, help="per setting")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.profile)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    plan = [("opgen", setting, n == 0) for n in range(args.processes) for setting in SETTINGS]
    rows = []
    for lib, setting, profile in [*plan, ("torch", "torch", True)]:  # written after each: a cut-off run keeps its rows
        rows.append(_spawn(lib, setting, profile))
        (args.out / "matmul-host.json").write_text(json.dumps(rows, indent=1))
        _print(rows[-1])


def _print(row: dict) -> None:
    if "error" in row:
        print(f"{row['lib']} ({row['setting']}): failed\n{row['error']}")
        return
    print(
        f"{row['lib']} ({row['setting']}): warm {row['warm_us']:.1f} us, "
        f"host {row['host_us']:.1f}, queued {row['queued_us']:.1f}, events {row['event_us']:.1f}; "
        f"cpu {row['cpu']} {row['numa']}; replayed {row.get('replays', '-')}",
        flush=True,
    )
    print("\n".join("    " + k for k in row["kernels"] + row["host profile"] + row["cublas"]), flush=True)


if __name__ == "__main__":
    main()

"""Collectives' bus bandwidth, opgen's Comm beside torch.distributed (NCCL), on the same GPUs in
one call: all_reduce, all_gather and reduce_scatter from 8 B to 1 GiB, as /work/shared/ANCHORS.md
measures torch (one process a GPU; host wall clock over 50 calls, 10 from 64 MiB, after 5
warm-ups, synchronized once; bus bandwidth as nccl-tests defines it).

    mpiexec -n 2 python bench/collectives.py opgen --out DIR           # opgen's ranks
    python -m torch.distributed.run --nproc-per-node 2 bench/collectives.py torch --out DIR
    python bench/collectives.py table DIR/opgen-*.json DIR/torch-*.json  # the markdown table

`bytes` is the whole buffer, as nccl-tests counts it: all_reduce's, all_gather's output (each
rank sends bytes / n), reduce_scatter's input (each rank receives bytes / n); f32 elements, at
least one a rank. NCCL_NVLS_ENABLE=0 is set before either engine starts."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["NCCL_NVLS_ENABLE"] = "0"  # NVLink multicast stays off (the device's rule)

SIZES = [8 << (3 * i) for i in range(10)] + [64 << 10, 1 << 20, 64 << 20, 256 << 20]  # 8 B .. 1 GiB, and the anchors
SIZES = sorted(set(SIZES))
OPS = ("all_reduce", "all_gather", "reduce_scatter")
WARMUPS = 5
LARGE = 64 << 20


def iterations(nbytes: int) -> int:
    return 10 if nbytes >= LARGE else 50


def counts(nbytes: int, n: int) -> tuple[int, int]:
    """(elements of the whole buffer, of one rank's part): f32, a multiple of n."""
    total = max(n, (nbytes // 4) // n * n)
    return total, total // n


def bus_factor(op: str, n: int) -> float:
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def row(op: str, total: int, n: int, seconds: float, iters: int) -> dict:
    nbytes = total * 4
    per_call = seconds / iters
    return {
        "op": op,
        "bytes": nbytes,
        "us": round(per_call * 1e6, 2),
        "busbw_gbs": round(nbytes / per_call * bus_factor(op, n) / 1e9, 3),
    }


# -- opgen ------------------------------------------------------------------------------------
def run_opgen(out: Path) -> None:
    import numpy as np

    from generated import Comm, DType, Reduction

    comm = Comm.world("cuda")
    device, n = comm.device(), comm.size
    rows = []
    for op in OPS:
        for nbytes in SIZES:
            total, part = counts(nbytes, n)
            big, small = device.zeros((total,), DType.F32), device.zeros((part,), DType.F32)
            if op == "all_reduce":

                def call(big=big) -> None:
                    comm.all_reduce(big, big, Reduction.SUM)  # in place, as torch's
            elif op == "all_gather":

                def call(big=big, small=small) -> None:
                    comm.all_gather(small, big)
            else:

                def call(big=big, small=small) -> None:
                    comm.reduce_scatter(big, small, Reduction.SUM)

            rows.append(row(op, total, n, timed(call, device.synchronize, comm.barrier, nbytes), iterations(nbytes)))
            del big, small
    if comm.rank == 0:
        nccl = __import__("runtime.comm.nccl", fromlist=["library"]).library()
        write(out / f"opgen-{n}.json", "opgen", n, rows, {"nccl": nccl.version(), "numpy": np.__version__})


# -- torch ------------------------------------------------------------------------------------
def run_torch(out: Path) -> None:
    import torch
    import torch.distributed as dist

    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    n, rank = dist.get_world_size(), dist.get_rank()
    rows = []
    for op in OPS:
        for nbytes in SIZES:
            total, part = counts(nbytes, n)
            big = torch.zeros(total, dtype=torch.float32, device="cuda")
            small = torch.zeros(part, dtype=torch.float32, device="cuda")
            if op == "all_reduce":

                def call(big=big) -> None:
                    dist.all_reduce(big)
            elif op == "all_gather":

                def call(big=big, small=small) -> None:
                    dist.all_gather_into_tensor(big, small)
            else:

                def call(big=big, small=small) -> None:
                    dist.reduce_scatter_tensor(small, big)

            rows.append(
                row(op, total, n, timed(call, torch.cuda.synchronize, dist.barrier, nbytes), iterations(nbytes))
            )
            del big, small
    if rank == 0:
        write(
            out / f"torch-{n}.json",
            "torch.distributed",
            n,
            rows,
            {"torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version()))},
        )
    dist.destroy_process_group()


# -- the agreement check's cost ---------------------------------------------------------------
def run_agree_cost(backend: str, calls: int = 2000) -> None:
    """Microseconds an 8-byte all_reduce takes with and without check_agree (rank 0 prints)."""
    import numpy as np

    from generated import Comm, Reduction

    out = {}
    for check in (False, True, False, True):
        comm = Comm.world(backend, check_agree=check)
        x = comm.device().storage_from_slice(np.ones(2, np.float32))

        def call(comm=comm, x=x) -> None:
            comm.all_reduce(x, x, Reduction.SUM)

        seconds = timed(call, comm.synchronize, comm.barrier, 8, calls)
        out.setdefault(check, []).append(seconds / calls * 1e6)
    if comm.rank == 0:
        print(json.dumps({"backend": backend, "ranks": comm.size, "us_unchecked": out[False], "us_checked": out[True]}))


# -- both -------------------------------------------------------------------------------------
def timed(call, sync, barrier, nbytes: int, iters: int = 0) -> float:
    for _ in range(WARMUPS):
        call()
    sync()
    barrier()
    iters = iters or iterations(nbytes)
    start = time.perf_counter()
    for _ in range(iters):
        call()
    sync()
    return time.perf_counter() - start


def write(path: Path, engine: str, n: int, rows: list, versions: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    gpu = os.popen("nvidia-smi --query-gpu=name --format=csv,noheader").read().split("\n")[0].strip()
    meta = {"engine": engine, "ranks": n, "gpu": gpu, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    path.write_text(json.dumps({**meta, **versions, "rows": rows}, indent=1))
    print(f"wrote {path}", flush=True)


def table(paths: list[Path]) -> str:
    """opgen beside torch per (ranks, op, bytes), the median of the runs given, with the goals:
    busbw >= 0.95x torch's from 64 MiB, latency <= 1.1x torch's up to 64 KiB."""
    runs: dict[tuple, list[dict]] = {}
    for path in paths:
        data = json.loads(path.read_text())
        key = "opgen" if data["engine"] == "opgen" else "torch"
        for r in data["rows"]:
            runs.setdefault((data["ranks"], r["op"], r["bytes"], key), []).append(r)
    lines = [
        "| GPUs | op | bytes | opgen µs | torch µs | opgen busbw GB/s | torch busbw GB/s | ratio | goal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({k[:3] for k in runs})
    for ranks, op, nbytes in keys:
        mine, theirs = runs.get((ranks, op, nbytes, "opgen")), runs.get((ranks, op, nbytes, "torch"))
        if not mine or not theirs:
            continue
        us = statistics.median(r["us"] for r in mine), statistics.median(r["us"] for r in theirs)
        bw = statistics.median(r["busbw_gbs"] for r in mine), statistics.median(r["busbw_gbs"] for r in theirs)
        if ranks == 1:  # one rank: nothing crosses a bus, latency alone compares
            shown, goal = f"{us[0] / us[1]:.3f}x latency", "-"
        elif nbytes >= LARGE:
            ratio, goal = bw[0] / bw[1], "met" if bw[0] >= 0.95 * bw[1] else "MISSED (busbw >= 0.95x)"
            shown = f"{ratio:.3f}x busbw"
        elif nbytes <= 64 << 10:
            ratio, goal = us[0] / us[1], "met" if us[0] <= 1.1 * us[1] else "MISSED (latency <= 1.1x)"
            shown = f"{ratio:.3f}x latency"
        else:
            shown, goal = f"{bw[0] / bw[1]:.3f}x busbw", "-"
        cells = [ranks, op, _size(nbytes), f"{us[0]:.1f}", f"{us[1]:.1f}", f"{bw[0]:.1f}", f"{bw[1]:.1f}", shown, goal]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=("opgen", "torch", "table", "agree-cost"))
    parser.add_argument("--backend", default="cuda", help="agree-cost: the backend")
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args()
    if args.what == "opgen":
        run_opgen(args.out)
    elif args.what == "agree-cost":
        run_agree_cost(args.backend)
    elif args.what == "torch":
        run_torch(args.out)
    else:
        sys.stdout.write(table(args.paths))


if __name__ == "__main__":
    main()

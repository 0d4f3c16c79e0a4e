"""Where a warm conv2d call's time goes, opgen beside torch in one process: conv2d f32
(16,64,56,56) by (64,64,3,3), padding 1, TF32 on (opgen's conv switch, torch's
cudnn.allow_tf32) and off.

Per library and mode: host time per call (calls queued back to back, the stream drained only
at the end, so that the host's cost shows where it exceeds the GPU's), device time per call
(CUDA events on the library's own stream around a batch), and the kernels the GPU ran
(torch.profiler over a few calls of each: name and device time). For opgen, the three ways of
running a built cuDNN plan: replayed as a CUDA graph of its launches (runtime/gpu/cudnn_graphs.py,
what a call on buffers seen before does by default), by its addresses alone
(runtime/gpu/cudnn_direct.py; graphs off) and the frontend's `execute`. `--profile`: the host
functions of opgen's warm TF32 calls, by own time.

Run on the device machine: `python3 bench/conv_host.py --out $OUT` (writes conv-host.json)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHAPE_X, SHAPE_W = (16, 64, 56, 56), (64, 64, 3, 3)
#: opgen's ways of running the built plan (runtime/gpu/cudnn.py's DIRECT and cudnn_graphs.ENABLED).
WAYS = ("graph", "direct", "execute")


def queued_per_call(call, sync, calls: int = 200, rounds: int = 7) -> float:
    """Median over rounds of (seconds for `calls` calls queued back to back, then drained) / calls."""
    samples = []
    for _ in range(rounds):
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        sync()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def host_per_call(call, sync, calls: int = 50) -> float:
    """Seconds of host time per call: `calls` calls queued without waiting (short enough not
    to fill the launch queue), the drain not counted."""
    samples = []
    for _ in range(7):
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        samples.append((time.perf_counter() - start) / calls)
        sync()
    return statistics.median(samples)


def event_per_call(call, stream: int, sync, calls: int = 100) -> float:
    """Device seconds per call between two CUDA events on `stream` around `calls` calls."""
    from cuda.bindings import driver as cu

    start, end = cu.cuEventCreate(0)[1], cu.cuEventCreate(0)[1]
    samples = []
    for _ in range(5):
        sync()
        cu.cuEventRecord(start, stream)
        for _ in range(calls):
            call()
        cu.cuEventRecord(end, stream)
        cu.cuEventSynchronize(end)
        samples.append(cu.cuEventElapsedTime(start, end)[1] / 1e3 / calls)
    return min(samples)


def kernels_run(call, sync, calls: int = 5, api: bool = False) -> list[str]:
    """The kernels `calls` calls ran: 'us  name' (device time per call), by torch.profiler;
    `api`: also the CUDA runtime and driver calls made on the host ('n x  name' per call)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    sync()
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                call()
            sync()
            torch.cuda.synchronize()
        events = [e for e in prof.key_averages() if e.count]
        rows = [f"{e.device_time_total / calls:8.1f} us  {e.key[:110]}" for e in events if e.device_type.name == "CUDA"]
        if api:
            calls_made = [e for e in events if e.device_type.name != "CUDA" and e.key.startswith("cu")]
            rows += [f"{e.count / calls:8.1f} x   {e.key}" for e in calls_made]
        return rows
    except Exception as exc:  # noqa: BLE001  (a torch without this profiler API: the times alone)
        return [f"profiler failed: {type(exc).__name__}: {exc}"]


def _opgen(tf32: bool):
    import numpy as np

    import generated as g
    import runtime.cuda as cuda

    rng = np.random.default_rng(1)
    dev = g.Device.parse("cuda:0")
    cuda.set_conv_reduced_precision_f32(tf32)
    x = dev.storage_from_slice(rng.standard_normal(SHAPE_X, np.float32))
    w = dev.storage_from_slice((rng.standard_normal(SHAPE_W, np.float32) / 24).astype(np.float32))
    lx, lw = g.Layout.contiguous(SHAPE_X), g.Layout.contiguous(SHAPE_W)
    p = g.ConvParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
    stream = int(cuda._rt.stream(0).handle)
    return (lambda: x.conv2d(lx, w, lw, p)), dev.synchronize, stream


def _torch(tf32: bool):
    import torch
    import torch.nn.functional as F

    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = False
    x = torch.randn(*SHAPE_X, device="cuda")
    w = torch.randn(*SHAPE_W, device="cuda") / 24
    stream = torch.cuda.current_stream().cuda_stream
    return (lambda: F.conv2d(x, w, padding=1)), torch.cuda.synchronize, stream


def measure(call, sync, stream) -> dict:
    for _ in range(50):
        call()
    sync()
    return {
        "host_us": host_per_call(call, sync) * 1e6,
        "queued_us": queued_per_call(call, sync) * 1e6,
        "device_us": event_per_call(call, stream, sync) * 1e6,
        "kernels": kernels_run(call, sync),
    }


def host_profile(call, sync, calls: int = 500, top: int = 25) -> list[str]:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    sync()
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])[:top]  # type: ignore[attr-defined]
    line = "{:7.2f} us/call own  {:3d}x  {}:{} {}"
    return [line.format(v[2] / calls * 1e6, v[0] // calls, Path(k[0]).name, k[1], k[2]) for k, v in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    import torch  # first: both libraries share the process and its context

    from runtime.gpu import cudnn as gpu_cudnn

    results: dict = {"torch": torch.__version__}
    for tf32 in (True, False):
        mode = "tf32" if tf32 else "f32"
        results[f"torch {mode}"] = measure(*_torch(tf32))
        for way in WAYS:
            gpu_cudnn.DIRECT = way != "execute"
            gpu_cudnn.cudnn_graphs.ENABLED = way == "graph"
            import runtime.cuda as cuda

            cuda._rt.vendor_nn._plans.clear()  # each way's plan made (or loaded) again
            call, sync, stream = _opgen(tf32)
            results[f"opgen {mode} {way}"] = measure(call, sync, stream)
            results[f"opgen {mode} {way}"]["replays"] = cuda._rt.vendor_nn.replays()
            if args.profile and tf32:
                results[f"opgen {mode} {way} host profile"] = host_profile(call, sync)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "conv-host.json").write_text(json.dumps(results, indent=1))
    for key, value in results.items():
        if isinstance(value, dict):
            times = f"host {value['host_us']:.1f} us, queued {value['queued_us']:.1f} us"
            replays = f", {value['replays']} calls replayed" if "replays" in value else ""
            print(f"{key}: {times}, device {value['device_us']:.1f} us{replays}")
            print("\n".join("    " + k for k in value["kernels"]))
        elif isinstance(value, list):
            print(key)
            print("\n".join("    " + line for line in value))


if __name__ == "__main__":
    main()

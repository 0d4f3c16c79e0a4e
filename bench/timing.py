"""How every bench times a call: the one place that owns the clocks.

- CPU: `per_call_ns`, the best of repeated batches, by the wall clock and by CPU time;
  `command_seconds`, one run of a command as a child process, wall and CPU time.
- GPU, host wall clock: `timed` (the median of batches of calls and a synchronize),
  `timed_in_turn` / `timed_pair` (several calls' samples taken in turn, so that the machine's
  drift moves them alike).
- GPU, device time: `device_seconds` (CUDA events on opgen's stream, a first call keeping the
  GPU busy while the timed ones are queued), `torch_device_seconds` (the same on torch's),
  `seconds_behind_fill` / `torch_seconds_behind_fill` (a batch queued behind a long fill, so
  that the host's cost per call never leaves the GPU idle), `graph_seconds` /
  `torch_graph_seconds` (back-to-back launches captured in a CUDA graph), `kernel_seconds`
  (each kernel's own duration, as CUPTI reports it through torch.profiler).

GPU modules (cuda-python, torch) are imported inside the functions: `make bench` imports this
module on machines without them."""

from __future__ import annotations

import importlib
import resource
import statistics
import subprocess
import time
import timeit
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPEATS = 10  # timed batches per figure
INNER = 5  # calls per batch
LAUNCHES = 160  # launches per timed CUDA graph
BUSY_BYTES = 4 << 30  # the fill queued before each batch: about 1.5 ms on an H100

Call = Callable[[], Any]


def per_call_ns(fn: Call, number: int = 200_000, repeat: int = 7) -> tuple[float, float]:
    """Best of `repeat` timings of `number` calls, per call: by the wall clock, and by this
    process's CPU time (which does not count time other jobs hold the core)."""
    wall = min(timeit.repeat(fn, number=number, repeat=repeat))
    cpu = min(timeit.Timer(fn, timer=time.process_time).repeat(number=number, repeat=repeat))
    return wall / number * 1e9, cpu / number * 1e9


def command_seconds(cmd: list[str], cwd: Path, env: dict[str, str], expect: int = 0) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of a command, which must exit `expect`. CPU time (user +
    system of the child) counts only while the command runs, so it moves less than wall time
    on a machine shared with other jobs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = timeit.default_timer()
    proc = subprocess.run(cmd, capture_output=True, env=env, cwd=cwd)
    if proc.returncode != expect:
        raise subprocess.CalledProcessError(proc.returncode, cmd, proc.stdout, proc.stderr)
    wall = timeit.default_timer() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cuda_runtime() -> Any:
    """The cuda backend's GpuRuntime (runtime/cuda.py): its streams, compiled modules and
    launches, which the device timers and the explorations reach into."""
    return importlib.import_module("runtime.cuda")._rt


def timed(fn: Call, sync: Call, repeats: int = REPEATS, inner: int = INNER) -> float:
    """Median seconds per call, host wall clock around `inner` calls and a sync."""
    return timed_in_turn(((fn, sync),), repeats, inner)[0]


def timed_pair(
    fn: Call, sync: Call, other: Call, other_sync: Call, repeats: int = REPEATS, inner: int = INNER
) -> tuple[float, float]:
    """timed() of fn and of other, their samples taken in turn (fn, other, fn, ...), so that a
    burst of the machine's noise slows both alike: the median seconds per call of each."""
    first, second = timed_in_turn(((fn, sync), (other, other_sync)), repeats, inner)
    return first, second


def timed_in_turn(calls: Sequence[tuple[Call, Call]], repeats: int = REPEATS, inner: int = INNER) -> list[float]:
    """For each (fn, sync) of `calls`: one call first, then `repeats` samples of `inner` calls
    and a sync, the calls' samples taken in turn; the median seconds per call of each."""
    for fn, sync in calls:
        fn()
        sync()
    samples: list[list[float]] = [[] for _ in calls]
    for _ in range(repeats):
        for (fn, sync), kept in zip(calls, samples):
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            sync()
            kept.append((time.perf_counter() - start) / inner)
    return [statistics.median(kept) for kept in samples]


def device_seconds(fn: Call, repeats: int = REPEATS, inner: int = INNER) -> float:
    """Median seconds per call on opgen's stream (CUDA events), the host's launch cost
    excluded: a first call keeps the GPU busy while the timed ones are queued."""
    from cuda.bindings import driver as cu

    stream = cuda_runtime().stream(0).handle
    start, end = cu.cuEventCreate(0)[1], cu.cuEventCreate(0)[1]
    samples = []
    fn()
    cu.cuStreamSynchronize(stream)
    for _ in range(repeats):
        fn()
        cu.cuEventRecord(start, stream)
        for _ in range(inner):
            fn()
        cu.cuEventRecord(end, stream)
        cu.cuEventSynchronize(end)
        samples.append(cu.cuEventElapsedTime(start, end)[1] / 1e3 / inner)
    cu.cuEventDestroy(start)
    cu.cuEventDestroy(end)
    return statistics.median(samples)


def torch_device_seconds(fn: Call, repeats: int = REPEATS, inner: int = INNER) -> float:
    """device_seconds for a torch op, on torch's current stream."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    fn()
    torch.cuda.synchronize()
    for _ in range(repeats):
        fn()
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / inner)
    return statistics.median(samples)


def seconds_behind_fill(fn: Call, calls: int) -> float:
    """Median device seconds per call of fn on opgen's cuda stream, each batch of `calls`
    queued behind a fill of BUSY_BYTES on the same stream."""
    import numpy as np
    from cuda.bindings import driver as cu

    rt = cuda_runtime()
    stream = rt.stream(0).handle
    busy = rt.alloc(0, BUSY_BYTES // 4, np.dtype(np.float32))
    start, end = cu.cuEventCreate(0)[1], cu.cuEventCreate(0)[1]
    fn()
    rt.synchronize(0)
    samples = []
    for _ in range(REPEATS):
        rt.driver.memset(busy.ptr, busy.nbytes, stream)
        cu.cuEventRecord(start, stream)
        for _ in range(calls):
            fn()
        cu.cuEventRecord(end, stream)
        cu.cuEventSynchronize(end)
        samples.append(cu.cuEventElapsedTime(start, end)[1] / 1e3 / calls)
    cu.cuEventDestroy(start)
    cu.cuEventDestroy(end)
    return statistics.median(samples)


def torch_seconds_behind_fill(fn: Call, calls: int) -> float:
    """seconds_behind_fill for a torch op, on torch's current stream."""
    import torch

    busy = torch.empty(BUSY_BYTES // 4, dtype=torch.float32, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(REPEATS):
        busy.zero_()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / calls)
    return statistics.median(samples)


def checked(result: Any) -> Any:
    """The value of a cuda-python call, raising on an error code."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err):
        raise RuntimeError(f"CUDA driver call failed: {err}")
    return rest[0] if len(rest) == 1 else None


def graph_seconds(enqueue: Callable[[int], Any], stream: Any) -> float:
    """Median device seconds per call of enqueue(i), i < LAUNCHES, all captured in one CUDA
    graph on `stream` (cuda-python handle) and launched REPEATS times."""
    from cuda.bindings import driver as cu

    enqueue(0)  # loads the module: nothing but launches may happen while capturing
    checked(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
    for i in range(LAUNCHES):
        enqueue(i)
    graph = checked(cu.cuStreamEndCapture(stream))
    exe = checked(cu.cuGraphInstantiate(graph, 0))
    start, end = checked(cu.cuEventCreate(0)), checked(cu.cuEventCreate(0))
    checked(cu.cuGraphLaunch(exe, stream))  # warm-up
    samples = []
    for _ in range(REPEATS):
        checked(cu.cuEventRecord(start, stream))
        checked(cu.cuGraphLaunch(exe, stream))
        checked(cu.cuEventRecord(end, stream))
        checked(cu.cuEventSynchronize(end))
        samples.append(checked(cu.cuEventElapsedTime(start, end)) / 1e3 / LAUNCHES)
    for event in (start, end):
        cu.cuEventDestroy(event)
    cu.cuGraphExecDestroy(exe)
    cu.cuGraphDestroy(graph)
    return statistics.median(samples)


def torch_graph_seconds(call: Callable[[int], Any]) -> float:
    """graph_seconds for torch: LAUNCHES calls of call(i) in a torch CUDA graph."""
    import torch

    for i in range(3):  # warm-up (cuBLAS handles, workspaces) before capture
        call(i)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(LAUNCHES):
            call(i)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    samples = []
    for _ in range(REPEATS):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / LAUNCHES)
    return statistics.median(samples)


def kernel_records(prof: Any) -> list[tuple[str, float]]:
    """(name, seconds) of each device kernel a torch.profiler run recorded."""
    import torch

    try:  # kineto's own records: nanoseconds
        records = [
            (e.name(), e.duration_ns() * 1e-9)
            for e in prof.profiler.kineto_results.events()
            if e.device_type() == torch.autograd.DeviceType.CUDA
        ]
    except AttributeError:  # another torch: the parsed events (microseconds)
        records = [
            (e.name, (e.time_range.end - e.time_range.start) * 1e-6)
            for e in prof.events()
            if e.device_type == torch.autograd.DeviceType.CUDA
        ]
    # kernels only: CUPTI reports copies and memsets on the device too
    return [(name, t) for name, t in records if not name.startswith(("Memcpy", "Memset"))]


def kernel_seconds(call: Callable[[int], Any], count: int, synchronize: Call) -> tuple[list[tuple[str, float]], int]:
    """The device kernels (name, seconds) that `count` calls of call(i) ran, as CUPTI reports
    them through torch.profiler; plain launches, synchronized once at the end. CUPTI, once on,
    slows what is timed after it in the same process: take these figures last."""
    from torch.profiler import ProfilerActivity, profile

    call(0)
    synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(count):
            call(i)
        synchronize()
    return kernel_records(prof), count

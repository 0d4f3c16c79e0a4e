"""Quantized matrix-vector products on the GPU (cuda): y = W x for a 4096 x 4096 weight in
q4_0 and q8_0 (q4_1, q4_k, q6_k with --formats) and one row of x, through qmatvec_<fmt> of
hip/quantized.hip, beside torch.mv on the same weight dequantized to bf16, and the copy
bandwidth of the same run.

Two figures, each labelled in its row:
- per product in a graph: LAUNCHES back-to-back products captured in a CUDA graph (as a
  model's layers would run) and the graph timed with CUDA events, launch gaps included. Our
  kernels are launched as the runtime launches them (programmatic dependent launch on
  sm_90: a product may start while the one before it ends) and, beside that, plainly
  ("no PDL": each waits for the one before to finish);
- kernel duration: the kernel's own start-to-end time as CUPTI reports it through
  torch.profiler (ProfilerActivity.CUDA; it sees the kernels launched through cuda-python in
  this process too, and each row says how many of the launches it saw), over plain
  launches, no graph, not overlapping: ours, and every kernel torch.mv runs. CUPTI, once on,
  slows the graphs timed after it in the same process (q4_0 from HBM 5.00-5.12 against
  4.70-4.76 us, bench/results/gpu-notes.md, stop 20), so every profiler figure is taken after
  every graph: bench/gpu.py's part quant-durations, its last.
Two weights: one read over and over (9.4 / 17.8 MB: it stays in the H100's 50 MB L2), and
DISTINCT weights in turn (several times the L2), which reads every weight from HBM: the
honest "read once" figure. Bandwidth counts the quantized weight's bytes (x and y are 16 KB).

    python3 bench/gpu_quant.py [--floor] [--explore]   # prints the rows
    python3 bench/gpu_quant.py --formats q4_k,q6_k,q4_1 [--no-torch]   # other formats, same figures
    python3 bench/gpu_quant.py --explore-only [--formats ...] [--variants 9,10]   # the variants alone, as measured
    python3 bench/gpu_quant.py --profile     # a few launches of each kernel, for ncu
    python3 bench/gpu_quant.py --profile-variants q4_0:0,1   # explore variants 0 and 1, for ncu
    bench_quant(rows)                         # a part of bench/gpu.py: fills `rows`
    explore_quant(rows)                       # shapes of the dp4a path, for tuning"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

N = K = 4096
DISTINCT = 16  # weights cycled through: 16 x 9.4 MB (q4_0) is 3x the L2
LAUNCHES = 160  # products per timed graph
REPEATS = 10
COPY_ELEMS = 64 * 1024 * 1024
PROFILED = 64  # plain launches per kernel duration figure (weights in turn, as in the graphs)


def _ok(result):
    """The value of a cuda-python call, raising on an error code."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err):
        raise RuntimeError(f"CUDA driver call failed: {err}")
    return rest[0] if len(rest) == 1 else None


def graph_seconds(enqueue, stream) -> float:
    """Median device seconds per call of enqueue(i), i < LAUNCHES, all captured in one CUDA
    graph on `stream` (cuda-python handle) and launched REPEATS times."""
    from cuda.bindings import driver as cu

    enqueue(0)  # loads the module: nothing but launches may happen while capturing
    _ok(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
    for i in range(LAUNCHES):
        enqueue(i)
    graph = _ok(cu.cuStreamEndCapture(stream))
    exe = _ok(cu.cuGraphInstantiate(graph, 0))
    start, end = _ok(cu.cuEventCreate(0)), _ok(cu.cuEventCreate(0))
    _ok(cu.cuGraphLaunch(exe, stream))  # warm-up
    samples = []
    for _ in range(REPEATS):
        _ok(cu.cuEventRecord(start, stream))
        _ok(cu.cuGraphLaunch(exe, stream))
        _ok(cu.cuEventRecord(end, stream))
        _ok(cu.cuEventSynchronize(end))
        samples.append(_ok(cu.cuEventElapsedTime(start, end)) / 1e3 / LAUNCHES)
    for event in (start, end):
        cu.cuEventDestroy(event)
    cu.cuGraphExecDestroy(exe)
    cu.cuGraphDestroy(graph)
    return statistics.median(samples)


def torch_graph_seconds(call) -> float:
    """The same for torch: LAUNCHES calls of call(i) in a torch CUDA graph."""
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


def copy_bandwidth() -> float:
    """torch device-to-device copy, bytes read and written (as bench/gpu.py measures it)."""
    import torch

    src = torch.empty(COPY_ELEMS, dtype=torch.float32, device="cuda").normal_()
    dst = torch.empty_like(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    dst.copy_(src)
    samples = []
    for _ in range(REPEATS):
        start.record()
        for _ in range(5):
            dst.copy_(src)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3 / 5)
    return 2 * src.nbytes / statistics.median(samples) / 1e9


def _kernel_records(prof) -> list[tuple[str, float]]:
    """(name, seconds) of each device kernel the profiler recorded."""
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


def kernel_seconds(call, count: int, synchronize) -> tuple[list[tuple[str, float]], int]:
    """The device kernels (name, seconds) that `count` calls of call(i) ran, as CUPTI reports
    them through torch.profiler; plain launches, synchronized once at the end."""
    from torch.profiler import ProfilerActivity, profile

    call(0)
    synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(count):
            call(i)
        synchronize()
    return _kernel_records(prof), count


def plain_launch(rt):
    """A `launch` for the generated wrappers that goes through the driver's cuLaunchKernel,
    without the runtime's prepared launch and its attributes (no programmatic dependent
    launch); the function must have been launched once through rt.launch."""

    def launch(source, name, grid, block, stream, args, types):
        rt.driver.launch(rt._functions[(stream.ordinal, source, name)], grid, block, stream.handle, args, types)

    return launch


def bench_quant(rows: dict, formats=("q4_0", "q8_0"), torch_mv: bool = True, figures=("graph", "profiler")) -> None:
    """Fill `rows` with the figures (name -> number or text), for qmatvec_<fmt> of `formats`;
    the copy bandwidth of an earlier call on the same `rows` is kept. `figures`: "graph" (per
    product in a graph), "profiler" (kernel durations), or both, graphs first."""
    for kind in ("graph", "profiler"):
        if kind not in figures:
            continue
        import numpy as np

        copy = rows.get("quant: torch device-to-device copy (GB/s)") or copy_bandwidth()
        rows["quant: torch device-to-device copy (GB/s)"] = copy
        rng = np.random.default_rng(0)  # the same weights and x for both kinds
        x = rng.standard_normal(K).astype(np.float32)
        for fmt in formats:
            w = qmatvec_rows(rows, fmt, rng.standard_normal(N * K).astype(np.float32), x, copy, kind)
            if torch_mv:
                torch_rows(rows, fmt, w, x, kind)


def qmatvec_rows(rows: dict, fmt: str, values, x, copy: float, kind: str):
    """qmatvec_<fmt> on `values` quantized, (N, K), and x: its error, its occupancy and its
    device time, in graphs (kind "graph") or by the profiler ("profiler"), from L2 and from
    HBM. Returns the dequantized weight (f32, host)."""
    import numpy as np
    from cuda.bindings import driver as cu

    from generated import kernels_hip
    from runtime.gpu import quant as gpu_quant
    from runtime.layout import Layout

    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
    launch = getattr(kernels_hip, f"launch_qmatvec_{fmt}")
    label = f"qmatvec {fmt} {N}x{K}, 1 row"
    q = gpu_quant.quantize(rt, 0, values, fmt)
    data = gpu_quant.q_data(rt, q)
    weights = [q] + [gpu_quant.qstorage_from_bytes(rt, 0, data, fmt) for _ in range(DISTINCT - 1)]
    x_buf, y = rt.from_host(0, x), rt.alloc(0, N, np.dtype(np.float32))

    # the kernel's result, against the dequantized weight in f64
    # the generated tables the arms pass, so the bench runs the keys the runtime looks up
    dequantize, table = kernels_hip.QSTORAGE["dequantize"], kernels_hip.QSTORAGE["matmul"]
    w = rt.to_host(gpu_quant.q_dequantize(rt, q, N * K, dequantize)).reshape(N, K)
    got = rt.to_host(gpu_quant.q_matmul(rt, q, x_buf, Layout.contiguous((K,)), (N, K), table))
    w64 = w.astype(np.float64)
    rows[f"{label}: max error / sum |W||x|"] = float((np.abs(got - w64 @ x) / (np.abs(w64) @ np.abs(x))).max())

    item_rows, threads = gpu_quant.qmatvec_launch(rt, fmt)
    grid = -(-N // item_rows)  # a thread block per item: all resident at once on an H100
    fn = next(f for (_, _, name), f in rt._functions.items() if name == f"qmatvec_{fmt}")
    regs = _ok(cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, fn))
    resident = _ok(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, 0))
    rows[f"qmatvec_{fmt}: registers, threads, resident blocks per SM, grid"] = f"{regs}, {threads}, {resident}, {grid}"

    stream = rt.stream(0)
    nbytes = gpu_quant.q_size_in_bytes(rt, q)
    programmatic = fn is not None and int(fn) in getattr(rt.driver, "_programmatic", ())
    rows[f"qmatvec_{fmt}: launched with programmatic dependent launch"] = "yes" if programmatic else "no"
    plain = plain_launch(rt)
    variants = (("one weight, L2-resident", 1), (f"{DISTINCT} weights in turn, from HBM", DISTINCT))
    for variant, distinct in variants if kind == "graph" else ():
        for how, via in (("", rt.launch), (" (no PDL)", plain)):

            def product(i, distinct=distinct, via=via):
                launch(via, grid, threads, stream, weights[i % distinct].buf.ptr, x_buf.ptr, y.ptr, N, K, 1)

            seconds = graph_seconds(product, stream.handle)
            rows[f"{label}, {variant}: per product in a graph{how} (us)"] = seconds * 1e6
            rows[f"{label}, {variant}: per product in a graph{how}: share of copy bandwidth"] = (
                nbytes / seconds / 1e9 / copy
            )
    for variant, distinct in variants if kind == "profiler" else ():
        records, count = kernel_seconds(
            lambda i, distinct=distinct: launch(
                plain, grid, threads, stream, weights[i % distinct].buf.ptr, x_buf.ptr, y.ptr, N, K, 1
            ),
            PROFILED,
            lambda: rt.synchronize(0),
        )
        ours = [t for name, t in records if name == f"qmatvec_{fmt}"]
        seconds = statistics.median(ours)
        rows[f"{label}, {variant}: kernel duration, profiler (us; {len(ours)} of {count} launches seen)"] = (
            seconds * 1e6
        )
        rows[f"{label}, {variant}: kernel duration, profiler: share of copy bandwidth"] = nbytes / seconds / 1e9 / copy
    return w


def torch_rows(rows: dict, fmt: str, w, x, kind: str) -> None:
    """Context: torch.mv on the same weight dequantized to bf16 (twice the bytes of q8_0), in
    graphs (kind "graph") or by the profiler ("profiler")."""
    import torch

    weights = [torch.from_numpy(w).cuda().to(torch.bfloat16)]
    weights += [weights[0].clone() for _ in range(DISTINCT - 1)]
    tx = torch.from_numpy(x).cuda().to(torch.bfloat16)
    ty = torch.empty(N, dtype=torch.bfloat16, device="cuda")
    for variant, distinct in (("one weight", 1), (f"{DISTINCT} weights in turn", DISTINCT)):

        def mv(i, distinct=distinct):
            torch.mv(weights[i % distinct], tx, out=ty)

        label = f"torch.mv bf16 {N}x{K} ({fmt} dequantized), {variant}"
        if kind == "graph":
            seconds = torch_graph_seconds(mv)
            rows[f"{label}: per product in a graph (us)"] = seconds * 1e6
            rows[f"{label}: per product in a graph: GB/s of weight"] = weights[0].nbytes / seconds / 1e9
            continue
        records, count = kernel_seconds(mv, PROFILED, torch.cuda.synchronize)
        seconds = sum(t for _, t in records) / count  # every kernel of the calls: torch.mv's
        names = sorted({name[:60] for name, _ in records})
        rows[
            f"{label}: kernel duration, profiler (us; {len(records) / count:g} kernels per product: {', '.join(names)})"
        ] = seconds * 1e6
        rows[f"{label}: kernel duration, profiler: GB/s of weight"] = weights[0].nbytes / seconds / 1e9


# explore_quant's variants: (label, threads per block, rows per item, {text: replacement} in
# hip/quantized.hip[, blocks per multiprocessor]). The last, where given, caps the grid at that
# many blocks per multiprocessor (the kernels stride over items; by default a block per item).
# The rows below change the shipped source's text. The variants that flipped hip/quantized.hip's
# compile switches (round 4's OPGEN_QMV_* of the dp4a path: cp.async on sm_90, 4 or 16 stages,
# the first chunk after the wait, other launch bounds; rounds 4-5's OPGEN_QMATVEC_K4_* / K6_* of
# the integer K path) were removed with the switches after commit 3eb441a, which has them, their
# rows and the code they compiled (figures: bench/results/qmatvec-round4-h100.md,
# qmatvec-kquant-round4-h100.md, qmatvec-kquant-round5-h200.md). Earlier rounds' variants
# (stages, splits, rows per item, conversions, registers, smaller grids with L2 prefetch, q4_K's
# shared scales) are in git history and in qmatvec-h100.md / qmatvec-round2-h100.md /
# qmatvec-round3-h100.md.


# The integer K path (q4_k, q6_k; bench/results/qmatvec-kquant-round4-h100.md,
# qmatvec-kquant-round5-h200.md, gpu-notes.md "Stop 19"): shipped q4_k_lean (2 stages) and
# q6_k_pair (4 stages), on sm_90 by bulk copies, the first step before the wait, launch bounds of
# 5 blocks/SM; on sm_80 by cp.async after the wait, 4 blocks/SM.
def _k_blocks(fmt: str, blocks: int) -> dict:  # the K path's launch bounds on sm_90 (blocks per SM)
    return {f"{fmt}_path, 5>": f"{fmt}_path, {blocks}>"}


_SM80 = {"#define OPGEN_QMV_SM90 1": "#define OPGEN_QMV_SM90 0"}  # sm_80's code: cp.async, after the wait
_K4L = "static constexpr int kStages = 2;  // (bulk + early, 5 blocks/SM: 5.10 against 4: 5.22, 8: 5.38 us; stop 19)"
_K6R = "static constexpr int kStages = 4;  // (2: 8.08 us, 1: 8.86, 4: 7.89 from HBM; round 4)"


_Q8_BULK = {"    static constexpr bool kFastBulk = false;": "    static constexpr bool kFastBulk = true;"}
_WHOLE = {  # q4_0's dp4a path with a thread per weight block (kFastSplit 1; its rows per item stay a switch)
    "kFastStages = 4, kFastSplit = OPGEN_QMATVEC_FAST_THREADS / kThreads;\n    // The first of an item's rows": (
        "kFastStages = 4, kFastSplit = 1;\n    // The first of an item's rows"
    )
}


def _rows(fmt: str, rows: int) -> dict:  # the dp4a path's rows per item (ops.yaml's kernel fact) for one variant
    name = f"kFastRows = OPGEN_QMATVEC_FAST_ROWS_{fmt.upper()}"
    return {name: f"kFastRows = {rows}"}


EXPLORE = {
    "q4_0": [
        ("shipped: bulk copies, 2 stages, first chunk before the wait", 256, 16, {}),
        # (stop 19's row had no kernel change: 16-row items on a grid of 512, half the blocks idle)
        ("8 rows per item", 256, 8, _rows("q4_0", 8)),
        # Round 6 (stop 20; qmatvec-round6-h100.log): x in 2 digits, 32 rows per item in dynamic shared
        # memory, stage sums and partial early copies were kernel switches, all removed after
        # commit 53c9f14 (which has them and their rows); the rows below need no switch.
        # A whole weight block per thread (blocks of 128 threads): every next product's block fits beside
        ("a weight block per thread", 128, 16, _WHOLE),
        ("a weight block per thread, 8 rows per item", 128, 8, {**_WHOLE, **_rows("q4_0", 8)}),
        # Round 7 (branch q4mma; qmatvec-round7-h100.log): x's digits against the weights on tensor
        # cores (mma.m16n8k32, switch OPGEN_QMV_MMA) at 2 / 3 / 4 blocks/SM, all slower; the switch
        # and its rows are in commit f62a32f.
        # Round 8 (stop 22; qmatvec-round8-h100.log): each chunk's quant words realigned in shared
        # memory and its scales converted once, before the wait or by stage after it, slower in
        # both forms; the kernel and its rows are in commit 6da0d29.
        # Round 9 (stop 22; qmatvec-round9-h100.log): x shared by the blocks of a cluster of 4 or 8
        # through distributed shared memory, correct but slower (7.17 / 7.69 us); commit 08096bd.
        # Round 10 (stop 22; qmatvec-round10-h100.log): a block's two threads interleaving their quant
        # words (x's loads in whole sectors), at 3 blocks/SM: 5.50-5.53 us; commit 1fe4a5e.
        # Round 11 (stop 22; qmatvec-round11-h100.log): x multicast to the blocks of a cluster of 2, 4
        # or 8 by bulk copies into dynamic shared memory: 5.38-5.44 us; commit 981c140.
    ],
    "q4_1": [
        ("shipped: bulk copies, 2 stages, first chunk before the wait", 256, 16, {}),
    ],
    "q8_0": [
        ("shipped: cp.async, 4 stages", 256, 8, {}),
        ("bulk copies, 2 stages, first chunk before the wait", 256, 8, _Q8_BULK),
    ],
    # Round 5 (bench/results/qmatvec-kquant-round5-h200.md): the dp4a path's round 4 on the K
    # path (sm_90): bulk copies with an mbarrier per stage, the first step copied before the
    # wait, the launch bounds' blocks per SM (5 since stop 19). Round 5's call measured 6 and 7
    # blocks/SM, 2 stages and 6 blocks/SM alone too (all slower; that file). Round 4's K variants
    # (row copy, rolled, caps, stages, 4 rows/item) are in qmatvec-kquant-round4-h100.md and its
    # .log / round4b .log; their switches in commit 3eb441a.
    "q4_k": [
        ("shipped (bulk + early, 5 blocks/SM, 2 stages; lean + tc digits)", 128, 8, {}),
        ("bulk + early, 4 blocks/SM, 2 stages", 128, 8, _k_blocks("q4_k", 4)),
        ("bulk + early, 6 blocks/SM", 128, 8, _k_blocks("q4_k", 6)),
        ("bulk + early, 5 blocks/SM, 4 stages", 128, 8, {_K4L: _K4L.replace("= 2;", "= 4;")}),
        ("bulk + early, 5 blocks/SM, 8 stages", 128, 8, {_K4L: _K4L.replace("= 2;", "= 8;")}),
        ("round 4's = sm_80's code (cp.async, after the wait, 4 blocks/SM)", 128, 8, _SM80),
    ],
    "q6_k": [
        ("shipped (bulk + early, 5 blocks/SM; pair + tc digits, 4 stages)", 128, 8, {}),
        ("bulk + early, 4 blocks/SM", 128, 8, _k_blocks("q6_k", 4)),
        ("bulk + early, 5 blocks/SM, 2 stages", 128, 8, {_K6R: _K6R.replace("= 4;", "= 2;")}),
        ("round 4's = sm_80's code (cp.async, after the wait, 4 blocks/SM)", 128, 8, _SM80),
    ],
}


def explore_quant(rows: dict, formats=None, profile: bool = True, echo: bool = False, numbers=None) -> None:
    """qmatvec_<fmt> compiled from copies of hip/quantized.hip changed as EXPLORE says:
    per product in a graph (one weight from L2; 16 from HBM with and without programmatic
    dependent launch) and the kernel duration from HBM (profiler). Each variant's result is
    checked against the first's, with y poisoned before. profile=False leaves out the
    profiler's figure; echo prints each row as it is measured; numbers: only the variants of
    those indices in each format's list (the first, the reference for the error, always)."""
    import ctypes
    import shutil
    import tempfile

    import numpy as np

    from runtime.gpu import quant as gpu_quant

    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
    text = (ROOT / "hip" / "quantized.hip").read_text()
    tmp = Path(tempfile.mkdtemp(prefix="opgen-quant-"))
    stream = rt.stream(0)
    copy = rows.get("quant: torch device-to-device copy (GB/s)") or copy_bandwidth()
    rng = np.random.default_rng(3)
    x_buf, y = rt.from_host(0, rng.standard_normal(K).astype(np.float32)), rt.alloc(0, N, np.dtype(np.float32))
    types = (ctypes.c_void_p,) * 3 + (ctypes.c_size_t,) * 3
    for fmt, variants in EXPLORE.items():
        if formats is not None and fmt not in formats:
            continue
        q = gpu_quant.quantize(rt, 0, rng.standard_normal(N * K).astype(np.float32), fmt)
        data = gpu_quant.q_data(rt, q)
        weights = [q] + [gpu_quant.qstorage_from_bytes(rt, 0, data, fmt) for _ in range(DISTINCT - 1)]
        nbytes = gpu_quant.q_size_in_bytes(rt, q)
        want = None
        for number, (name, threads, item_rows, changes, *per_sm) in enumerate(variants):
            if numbers is not None and number and number not in numbers:
                continue
            label = f"explore qmatvec {fmt}: {name}"
            source = text
            for old, new in changes.items():
                assert old in source, f"explore: {old!r} not in hip/quantized.hip"
                source = source.replace(old, new)
            path = tmp / f"quantized_{fmt}_{number}.hip"
            path.write_text(source)
            grid = -(-N // item_rows)
            if per_sm:
                grid = min(grid, per_sm[0] * rt.driver.multiprocessors(0))
            try:

                def run(i, path=path, grid=grid, threads=threads, distinct=1, plain=False):
                    args = (weights[i % distinct].buf.ptr, x_buf.ptr, y.ptr, N, K, 1)
                    if plain:
                        fn = rt._functions[(0, str(path), f"qmatvec_{fmt}")]
                        rt.driver.launch(fn, grid, threads, stream.handle, args, types)
                    else:
                        rt.launch(str(path), f"qmatvec_{fmt}", grid, threads, stream, args, types)

                rt.driver.memset(y.ptr, y.nbytes, stream.handle, 0xFF)  # NaN: an unwritten output shows
                run(0)
                got = rt.to_host(y)
                want = got if want is None else want
                error = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
                fn = rt._functions[(0, str(path), f"qmatvec_{fmt}")]
                from cuda.bindings import driver as cu

                regs = _ok(cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, fn))
                resident = _ok(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, 0))
                l2 = graph_seconds(run, stream.handle)
                hbm = graph_seconds(lambda i, run=run: run(i, distinct=DISTINCT), stream.handle)
                hbm_plain = graph_seconds(lambda i, run=run: run(i, distinct=DISTINCT, plain=True), stream.handle)
                share = lambda t: nbytes / t / 1e9 / copy  # noqa: E731
                duration = ""
                if profile:
                    records, count = kernel_seconds(
                        lambda i, run=run: run(i, distinct=DISTINCT, plain=True), PROFILED, lambda: rt.synchronize(0)
                    )
                    kernel = statistics.median([t for n, t in records if n == f"qmatvec_{fmt}"])
                    duration = f"; kernel duration HBM {kernel * 1e6:.2f} us = {share(kernel):.3f}"
                rows[label] = (
                    f"{regs} regs, {resident} blocks/SM, grid {grid}; per product in a graph: "
                    f"L2 {l2 * 1e6:.2f} us, HBM {hbm * 1e6:.2f} us = {share(hbm):.3f} of copy, "
                    f"HBM no PDL {hbm_plain * 1e6:.2f} us = {share(hbm_plain):.3f}{duration}; "
                    f"error vs first {error:.1e}"
                )
            except Exception as exc:  # noqa: BLE001  (a variant that fails is reported, the others run)
                rows[label] = f"failed: {type(exc).__name__}: {exc}"
            if echo:
                print(f"| {label} | {rows[label]} |", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


def profile_variants(fmt: str, numbers) -> None:
    """For ncu (-k regex:qmatvec): variants `numbers` of EXPLORE[fmt], in that order, each
    compiled from its copy of hip/quantized.hip and launched twice on two distinct weights
    (plain launches, synchronized after each): profile the second of each pair."""
    import ctypes
    import shutil
    import tempfile

    import numpy as np

    from runtime.gpu import quant as gpu_quant

    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
    text = (ROOT / "hip" / "quantized.hip").read_text()
    tmp = Path(tempfile.mkdtemp(prefix="opgen-quant-"))
    stream = rt.stream(0)
    rng = np.random.default_rng(3)
    x_buf, y = rt.from_host(0, rng.standard_normal(K).astype(np.float32)), rt.alloc(0, N, np.dtype(np.float32))
    q = gpu_quant.quantize(rt, 0, rng.standard_normal(N * K).astype(np.float32), fmt)
    weights = [q, gpu_quant.qstorage_from_bytes(rt, 0, gpu_quant.q_data(rt, q), fmt)]
    types = (ctypes.c_void_p,) * 3 + (ctypes.c_size_t,) * 3
    for number in numbers:
        name, threads, item_rows, changes, *_ = EXPLORE[fmt][number]
        source = text
        for old, new in changes.items():
            source = source.replace(old, new)
        path = tmp / f"quantized_{fmt}_{number}.hip"
        path.write_text(source)
        print(f"profile: {fmt} variant {number} ({name}): launches 2 and 3 of this process pair", flush=True)
        for wq in weights:
            args = (wq.buf.ptr, x_buf.ptr, y.ptr, N, K, 1)
            rt.launch(str(path), f"qmatvec_{fmt}", -(-N // item_rows), threads, stream, args, types)
            rt.synchronize(0)
    shutil.rmtree(tmp, ignore_errors=True)


def floor_quant(rows: dict) -> None:
    """The harness's floor: device time per launch, in the same CUDA graphs, of launches that
    do (almost) nothing: qmatvec_q4_0 over no rows (every block exits at once), with the
    bench's grid and with one block, qmatvec_q4_0 over one item of 16 x 256 weights, and a
    torch in-place add on 2 elements. What a product costs beyond these is its own work."""
    import numpy as np

    from generated import kernels_hip
    from runtime.gpu import quant as gpu_quant

    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
    stream = rt.stream(0)
    q = gpu_quant.quantize(rt, 0, np.ones(16 * 256, np.float32), "q4_0")
    x_buf, y = rt.from_host(0, np.ones(K, np.float32)), rt.alloc(0, N, np.dtype(np.float32))
    launch = kernels_hip.launch_qmatvec_q4_0
    item_rows, threads = gpu_quant.qmatvec_launch(rt, "q4_0")
    grid = -(-N // item_rows)
    for label, g, n, k in (
        (f"no rows, grid {grid}", grid, 0, K),
        ("no rows, grid 1", 1, 0, K),
        ("16 x 256 weights, grid 1", 1, 16, 256),
    ):
        seconds = graph_seconds(
            lambda i, g=g, n=n, k=k: launch(rt.launch, g, threads, stream, q.buf.ptr, x_buf.ptr, y.ptr, n, k, 1),
            stream.handle,
        )
        rows[f"floor: qmatvec_q4_0 launch, {label}: device time per launch (us)"] = seconds * 1e6
    import torch

    tiny = torch.zeros(2, device="cuda")
    rows["floor: torch tiny add_ in a torch graph: device time per launch (us)"] = (
        torch_graph_seconds(lambda i: tiny.add_(1.0)) * 1e6
    )


def profile_launches() -> None:
    """A few launches for a profiler (ncu -k regex:qmatvec): each format on distinct weights."""
    import numpy as np

    from generated import kernels_hip
    from runtime.gpu import quant as gpu_quant

    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
    stream = rt.stream(0)
    rng = np.random.default_rng(0)
    x_buf, y = rt.from_host(0, rng.standard_normal(K).astype(np.float32)), rt.alloc(0, N, np.dtype(np.float32))
    for fmt in ("q4_0", "q8_0"):
        q = gpu_quant.quantize(rt, 0, rng.standard_normal(N * K).astype(np.float32), fmt)
        data = gpu_quant.q_data(rt, q)
        weights = [q] + [gpu_quant.qstorage_from_bytes(rt, 0, data, fmt) for _ in range(3)]
        launch = getattr(kernels_hip, f"launch_qmatvec_{fmt}")
        item_rows, threads = gpu_quant.qmatvec_launch(rt, fmt)
        for wq in weights:
            launch(rt.launch, -(-N // item_rows), threads, stream, wq.buf.ptr, x_buf.ptr, y.ptr, N, K, 1)
    rt.synchronize(0)
    import torch

    w = torch.randn(N, K, device="cuda").to(torch.bfloat16)
    tx = torch.randn(K, device="cuda").to(torch.bfloat16)
    for _ in range(2):
        torch.mv(w, tx)
    torch.cuda.synchronize()


if __name__ == "__main__":
    if "--profile" in sys.argv:
        profile_launches()
        sys.exit(0)
    if "--profile-variants" in sys.argv:  # --profile-variants q4_0:0,1 (EXPLORE's numbers)
        fmt, numbers = sys.argv[sys.argv.index("--profile-variants") + 1].split(":")
        profile_variants(fmt, [int(v) for v in numbers.split(",")])
        sys.exit(0)
    table: dict = {}
    formats = ("q4_0", "q8_0")
    if "--formats" in sys.argv:
        formats = tuple(sys.argv[sys.argv.index("--formats") + 1].split(","))
    if "--explore-only" in sys.argv:  # the variants alone, each printed as it is measured, no profiler
        picked = None
        if "--variants" in sys.argv:  # --variants 9,10 (EXPLORE's indices; the first always runs)
            picked = {int(v) for v in sys.argv[sys.argv.index("--variants") + 1].split(",")}
        explore_quant(table, formats if "--formats" in sys.argv else None, profile=False, echo=True, numbers=picked)
        sys.exit(0)
    bench_quant(table, formats, torch_mv="--no-torch" not in sys.argv)
    if "--floor" in sys.argv:
        floor_quant(table)
    if "--explore" in sys.argv:
        explore_quant(table, formats)
    for key, value in table.items():
        print(f"| {key} | {value:.4g} |" if isinstance(value, float) else f"| {key} | {value} |")


def bench_qmatmul_rows(rows: dict, counts=(1, 4, 8, 16, 24, 32, 128, 512)) -> None:
    """QMatMul of a q4_0 / q4_k / q6_k 4096 x 4096 weight by x of 1 to 512 rows, both ways the
    runtime can take (qmatvec, which reads the weight per row of x, and the weight
    dequantized to f32 then the BLAS GEMM), device time per call: where the runtime's
    QMATMUL_GEMM_ROWS should sit."""
    import numpy as np

    import generated as g
    from bench.gpu_nn import _opgen_seconds
    from runtime.gpu import quant as gpu_quant

    dev = g.Device.parse("cuda:0")
    rng = np.random.default_rng(5)
    saved = dict(gpu_quant.QMATMUL_GEMM_ROWS)
    try:
        for fmt in ("q4_0", "q4_k", "q6_k"):
            q = dev.quantize(rng.standard_normal(N * K).astype(np.float32), g.GgmlDType(fmt))
            for count in counts:
                x = dev.storage_from_slice(rng.standard_normal(count * K).astype(np.float32))
                layout = g.Layout.contiguous((count, K))
                times = {}
                for path, threshold in (("qmatvec", 1 << 62), ("dequantize + GEMM", 1)):
                    gpu_quant.QMATMUL_GEMM_ROWS.update({key: threshold for key in saved})
                    times[path] = _opgen_seconds(lambda: q.matmul(x, layout, (N, K)), 5)
                best = min(times, key=times.get)
                rows[f"qmatmul {fmt} {N}x{K}, {count} rows of x: us per call"] = (
                    ", ".join(f"{p} {t * 1e6:.1f}" for p, t in times.items()) + f" (faster: {best}; the runtime "
                    f"takes {'dequantize + GEMM' if count >= saved.get(fmt, saved[None]) else 'qmatvec'})"
                )
    finally:
        gpu_quant.QMATMUL_GEMM_ROWS.update(saved)

"""Quantized matrix-vector products on the GPU (cuda): y = W x for a 4096 x 4096 weight in
q4_0, q8_0, q4_1, q4_K and q6_K and one row of x, through qmatvec_<fmt> of hip/quantized.hip,
beside torch.mv on the same weight dequantized to bf16, and the copy bandwidth of the same run;
and QMatMul by 1 to 512 rows of x, qmatvec against dequantize + GEMM.

Two figures of a product, each labelled in its row:
- per product in a graph: LAUNCHES back-to-back products captured in a CUDA graph (as a
  model's layers would run) and the graph timed with CUDA events, launch gaps included. Our
  kernels are launched as the runtime launches them (programmatic dependent launch on
  sm_90: a product may start while the one before it ends) and, beside that, plainly
  ("no PDL": each waits for the one before to finish);
- kernel duration: the kernel's own start-to-end time as CUPTI reports it through
  torch.profiler (it sees the kernels launched through cuda-python in this process too, and
  each row says how many of the launches it saw), over plain launches, no graph, not
  overlapping: ours, and every kernel torch.mv runs. CUPTI, once on, slows the graphs timed
  after it in the same process (q4_0 from HBM 5.00-5.12 against 4.70-4.76 us on an H100), so
  every profiler figure is taken after every graph: bench/gpu.py's part quant-durations, its last.
Two weights: one read over and over (9.4 / 17.8 MB: it stays in the H100's 50 MB L2), and
DISTINCT weights in turn (several times the L2), which reads every weight from HBM: the
honest "read once" figure. Bandwidth counts the quantized weight's bytes (x and y are 16 KB).

Exploration (bench/gpu.py --explore qmatvec): qmatvec_<fmt> compiled from copies of
hip/quantized.hip changed as EXPLORE says, to re-check the shipped shapes."""

from __future__ import annotations

import statistics
from pathlib import Path

from bench.timing import (
    checked,
    cuda_runtime,
    graph_seconds,
    kernel_seconds,
    seconds_behind_fill,
    torch_graph_seconds,
)

N = K = 4096
DISTINCT = 16  # weights cycled through: 16 x 9.4 MB (q4_0) is 3x the L2
REPEATS = 10
COPY_ELEMS = 64 * 1024 * 1024
PROFILED = 64  # plain launches per kernel duration figure (weights in turn, as in the graphs)


def copy_bandwidth() -> float:
    """torch device-to-device copy, bytes read and written (as bench/elementwise.py measures it)."""
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


def plain_launch(rt):
    """A `launch` for the generated wrappers that goes through the driver's cuLaunchKernel,
    without the runtime's prepared launch and its attributes (no programmatic dependent
    launch); the function must have been launched once through rt.launch."""

    def launch(source, name, grid, block, stream, args, types):
        rt.driver.launch(rt._functions[(stream.ordinal, source, name)], grid, block, stream.handle, args, types)

    return launch


def graphs(rows: dict) -> None:
    """bench/gpu.py's part quant: per product in a graph, q4_0 and q8_0 beside torch.mv, then
    q4_1, q4_k and q6_k (against the same copy bandwidth)."""
    products(rows, figures=("graph",))
    products(rows, ("q4_1", "q4_k", "q6_k"), torch_mv=False, figures=("graph",))


def durations(rows: dict) -> None:
    """bench/gpu.py's part quant-durations: the same products' kernel durations by the profiler
    (last in a run: CUPTI slows every graph timed after it)."""
    products(rows, figures=("profiler",))
    products(rows, ("q4_1", "q4_k", "q6_k"), torch_mv=False, figures=("profiler",))


def products(rows: dict, formats=("q4_0", "q8_0"), torch_mv: bool = True, figures=("graph", "profiler")) -> None:
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

    rt = cuda_runtime()
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
    regs = checked(cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, fn))
    resident = checked(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, 0))
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


# explore_qmatvec's variants: (label, threads per block, rows per item, {text: replacement} in
# hip/quantized.hip[, blocks per multiprocessor]). The last, where given, caps the grid at that
# many blocks per multiprocessor (the kernels stride over items; by default a block per item).
# Each variant changes the shipped source's text; the first of a format is the shipped kernel,
# the reference of the others' results. Variants tried and not kept are in git history with
# their kernels: the compile switches of the dp4a path and of the integer K path (cp.async on
# sm_90, 4 or 16 stages, the first chunk after the wait, other launch bounds, row copies, caps)
# up to commit 3eb441a; x in 2 digits, 32 rows per item, stage sums up to 53c9f14; x's digits
# on tensor cores (mma.m16n8k32) in f62a32f; realigned chunks in 6da0d29; x shared by a
# cluster's blocks through distributed shared memory in 08096bd; interleaved quant words in
# 1fe4a5e; x multicast to a cluster in 981c140. Every one was slower from HBM on an H100.


# The integer K path (q4_k, q6_k): shipped q4_k_lean (2 stages) and q6_k_pair (4 stages), on
# sm_90 by bulk copies, the first step before the wait, launch bounds of 5 blocks/SM; on sm_80
# by cp.async after the wait, 4 blocks/SM.
def _k_blocks(fmt: str, blocks: int) -> dict:  # the K path's launch bounds on sm_90 (blocks per SM)
    return {f"{fmt}_path, 5>": f"{fmt}_path, {blocks}>"}


_SM80 = {"#define OPGEN_QMV_SM90 1": "#define OPGEN_QMV_SM90 0"}  # sm_80's code: cp.async, after the wait
_K4L = "static constexpr int kStages = 2;  // q4_k's stages"
_K6R = "static constexpr int kStages = 4;  // q6_k's stages"


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
        ("8 rows per item", 256, 8, _rows("q4_0", 8)),
        # a whole weight block per thread (blocks of 128 threads): every next product's block fits beside
        ("a weight block per thread", 128, 16, _WHOLE),
        ("a weight block per thread, 8 rows per item", 128, 8, {**_WHOLE, **_rows("q4_0", 8)}),
    ],
    "q4_1": [
        ("shipped: bulk copies, 2 stages, first chunk before the wait", 256, 16, {}),
    ],
    "q8_0": [
        ("shipped: cp.async, 4 stages", 256, 8, {}),
        ("bulk copies, 2 stages, first chunk before the wait", 256, 8, _Q8_BULK),
    ],
    # the K path on sm_90: bulk copies with an mbarrier per stage, the first step copied before
    # the wait, the launch bounds' blocks per SM; and sm_80's code on the same device
    "q4_k": [
        ("shipped (bulk + early, 5 blocks/SM, 2 stages; lean + tc digits)", 128, 8, {}),
        ("bulk + early, 4 blocks/SM, 2 stages", 128, 8, _k_blocks("q4_k", 4)),
        ("bulk + early, 6 blocks/SM", 128, 8, _k_blocks("q4_k", 6)),
        ("bulk + early, 5 blocks/SM, 4 stages", 128, 8, {_K4L: _K4L.replace("= 2;", "= 4;")}),
        ("bulk + early, 5 blocks/SM, 8 stages", 128, 8, {_K4L: _K4L.replace("= 2;", "= 8;")}),
        ("sm_80's code (cp.async, after the wait, 4 blocks/SM)", 128, 8, _SM80),
    ],
    "q6_k": [
        ("shipped (bulk + early, 5 blocks/SM; pair + tc digits, 4 stages)", 128, 8, {}),
        ("bulk + early, 4 blocks/SM", 128, 8, _k_blocks("q6_k", 4)),
        ("bulk + early, 5 blocks/SM, 2 stages", 128, 8, {_K6R: _K6R.replace("= 4;", "= 2;")}),
        ("sm_80's code (cp.async, after the wait, 4 blocks/SM)", 128, 8, _SM80),
    ],
}


def explore_qmatvec(rows: dict, formats=None, profile: bool = True) -> None:
    """qmatvec_<fmt> compiled from copies of hip/quantized.hip changed as EXPLORE says:
    per product in a graph (one weight from L2; 16 from HBM with and without programmatic
    dependent launch) and the kernel duration from HBM (profiler). Each variant's result is
    checked against the first's, with y poisoned before. profile=False leaves out the
    profiler's figure."""
    import ctypes
    import shutil
    import tempfile

    import numpy as np

    from runtime.gpu import quant as gpu_quant
    from runtime.gpu.compile import HIP_DIR

    rt = cuda_runtime()
    text = (HIP_DIR / "quantized.hip").read_text()
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

                regs = checked(cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, fn))
                resident = checked(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, 0))
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
    shutil.rmtree(tmp, ignore_errors=True)


def qmatmul(rows: dict, counts=(1, 4, 8, 16, 24, 32, 128, 512)) -> None:
    """QMatMul of a q4_0 / q4_k / q6_k 4096 x 4096 weight by x of 1 to 512 rows, both ways the
    runtime can take (qmatvec, which reads the weight per row of x, and the weight
    dequantized to f32 then the BLAS GEMM), device time per call: where the runtime's
    QMATMUL_GEMM_ROWS should sit."""
    import numpy as np

    import generated as g
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
                    times[path] = seconds_behind_fill(lambda: q.matmul(x, layout, (N, K)), 5)
                best = min(times, key=times.get)
                rows[f"qmatmul {fmt} {N}x{K}, {count} rows of x: us per call"] = (
                    ", ".join(f"{p} {t * 1e6:.1f}" for p, t in times.items()) + f" (faster: {best}; the runtime "
                    f"takes {'dequantize + GEMM' if count >= saved.get(fmt, saved[None]) else 'qmatvec'})"
                )
    finally:
        gpu_quant.QMATMUL_GEMM_ROWS.update(saved)

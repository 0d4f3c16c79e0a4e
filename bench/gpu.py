"""GPU benchmarks (issues #3 and #4), run on the H100 through the device tool; side by side with
torch in one run. Writes bench/results/gpu.json and gpu.md under --out.

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
    return _timed_in_turn(((fn, sync),), repeats, inner)[0]


def timed_pair(fn, sync, other, other_sync, repeats: int = REPEATS, inner: int = 5) -> tuple[float, float]:
    """timed() of fn and of other, their samples taken in turn (fn, other, fn, ...), so that a
    burst of the machine's noise slows both alike: the median seconds per call of each."""
    first, second = _timed_in_turn(((fn, sync), (other, other_sync)), repeats, inner)
    return first, second


def _timed_in_turn(calls, repeats: int, inner: int) -> list[float]:
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


def device_seconds(fn, repeats: int = REPEATS, inner: int = 5) -> float:
    """Median seconds per call on opgen's stream (CUDA events), the host's launch cost
    excluded: a first call keeps the GPU busy while the timed ones are queued."""
    from cuda.bindings import driver as cu

    stream = __import__("runtime.cuda", fromlist=["_rt"])._rt.stream(0).handle
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


def cold_and_warm_compile(rows: dict) -> None:
    """Compile every kernel source with an empty disk cache, then load from the cache."""
    import generated as g
    from runtime.gpu import compile as gpu_compile

    cache = Path(tempfile.mkdtemp(prefix="opgen-cache-"))
    device = g.Device.parse("cuda:0")
    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
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

    # The GPU busy for a second first: after the compile part it idles (a minute on a fresh
    # machine), and stop 20's first run on one read the sum over all dims at 85.7% of copy
    # bandwidth against 90-91% in the runs after it (torch's sum 2% slower too).
    deadline = time.perf_counter() + 1.0
    while time.perf_counter() < deadline:
        for _ in range(20):
            ty.copy_(tx)
        tsync()
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
        "exp f32 64M transposed": (
            lambda: a.unary(g.UnaryOp.EXP, square),
            lambda: torch.exp(tx.view(8192, -1).t().contiguous()),
            2,
        ),
        "add f32 64M transposed": (
            lambda: a.binary(g.BinaryOp.ADD, b, square, square),
            lambda: torch.add(tx.view(8192, -1).t(), tx2.view(8192, -1).t()).contiguous(),
            3,
        ),
    }
    # Each op's share of copy bandwidth against a copy timed in turn with it (copy, opgen,
    # torch, copy, ...), so that a drift of the machine over the part (clocks, a first
    # process on a fresh machine) moves the op and its reference alike.
    copy = (lambda: ty.copy_(tx), tsync)
    for name, (ours, theirs, arrays) in cases.items():
        t_copy, t_ours, t_torch = _timed_in_turn((copy, (ours, sync), (theirs, tsync)), REPEATS, 5)
        bw_ours, bw_torch = gb(arrays * 4 * N, t_ours), gb(arrays * 4 * N, t_torch)
        rows[f"{name}: opgen (GB/s)"] = bw_ours
        rows[f"{name}: torch (GB/s)"] = bw_torch
        rows[f"{name}: copy timed in turn (GB/s)"] = gb(2 * 4 * N, t_copy)
        rows[f"{name}: opgen / copy bandwidth"] = bw_ours / gb(2 * 4 * N, t_copy)
        rows[f"{name}: opgen / torch"] = bw_ours / bw_torch
        rows[f"{name}: opgen, device time only (GB/s)"] = gb(arrays * 4 * N, device_seconds(ours))
    # Reductions read every element once (bytes = 4N; the output is negligible).
    grid = g.Layout.contiguous((8192, N // 8192))
    reductions = {
        "sum f32 64M over the last dim": (
            lambda: a.reduce_op(g.ReduceOp.SUM, grid, (1,)),
            lambda: tx.view(8192, -1).sum(dim=1, keepdim=True),
        ),
        "sum f32 64M over all dims": (lambda: a.reduce_op(g.ReduceOp.SUM, grid, (0, 1)), lambda: tx.sum()),
    }
    for name, (ours, theirs) in reductions.items():
        t_copy, t_ours, t_torch = _timed_in_turn((copy, (ours, sync), (theirs, tsync)), REPEATS, 5)
        rows[f"{name}: opgen (GB/s)"] = gb(4 * N, t_ours)
        rows[f"{name}: torch (GB/s)"] = gb(4 * N, t_torch)
        rows[f"{name}: copy timed in turn (GB/s)"] = gb(2 * 4 * N, t_copy)
        rows[f"{name}: opgen / copy bandwidth"] = gb(4 * N, t_ours) / gb(2 * 4 * N, t_copy)
        rows[f"{name}: opgen / torch"] = t_torch / t_ours
        rows[f"{name}: opgen, device time only (GB/s)"] = gb(4 * N, device_seconds(ours))
    # matmul bf16 8192^3 through cuBLAS (nvmath-python's binding), against torch.matmul.
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


def checks(rows: dict) -> None:
    """The fast paths the benchmarks time, and those the conformance suite's small shapes
    do not reach (chunked reductions, a thread per group, tiles with ragged edges and
    batches), against the cpu backend on larger shapes."""
    import numpy as np

    import generated as g

    dev, cpu = g.Device.parse("cuda:0"), g.Device.parse("cpu")
    rng = np.random.default_rng(11)
    failures: list[str] = []
    count = 0

    def compare(what, got, want, dtype):
        nonlocal count
        count += 1
        tol = {"bf16": 2e-2, "f16": 2e-3, "f32": 1e-5, "f64": 1e-12}.get(dtype)
        try:
            assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
            if tol is None:  # exact; NaN equals NaN (also for bf16, which numpy compares as an opaque type)
                if want.dtype.kind not in "iu":
                    got, want = got.astype(np.float64), want.astype(np.float64)
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
        except AssertionError as exc:
            failures.append(f"{what}: {str(exc).strip().splitlines()[0][:200]}")

    def data(dtype: str, shape, *, ties=False, nans=False, positive=False):
        dt = g.DType(dtype)
        n = int(np.prod(shape))
        if ties or dt.kind != "float":
            hi = 6 if dtype == "u8" else 50
            x = rng.integers(0 if dt.kind == "uint" or positive else -hi, hi, n)
        else:
            x = rng.uniform(0 if positive else -3, 3, n)
        x = x.astype(dt.numpy)
        if nans and dt.kind == "float":
            x[rng.integers(0, n, 3)] = np.nan
        return x.reshape(shape)

    # (name, base shape, view from the contiguous layout, dims)
    cases = [
        ("all of 3M (chunked, a block per chunk)", (3_000_017,), lambda l: l, (0,)),
        ("last dim of (700, 3001) (a block per group)", (700, 3001), lambda l: l, (1,)),
        ("last dim of (5000, 40) (a warp per group)", (5000, 40), lambda l: l, (1,)),
        ("dim 0 of (4099, 37) (a thread per group)", (4099, 37), lambda l: l, (0,)),
        ("dim 0 of (200003, 3) (a thread per chunk)", (200_003, 3), lambda l: l, (0,)),
        ("dims 0, 2 of (300, 7, 500) (generic index, chunked)", (300, 7, 500), lambda l: l, (0, 2)),
        ("all of a transposed (901, 1203) (chunked, strided)", (901, 1203), lambda l: l.transpose(0, 1), (0, 1)),
        ("dim 1 of an offset (64, 70001) (unaligned chunks)", (64, 70_001), lambda l: l.narrow(1, 3, 69_990), (1,)),
    ]
    for dtype in [d.value for d in g.DType]:
        for op in ("sum", "min", "max", "argmin", "argmax"):
            for name, shape, make_view, dims in cases:
                if op == "sum":
                    x = data(dtype, shape, positive=True)
                else:
                    x = data(dtype, shape, ties=True, nans=op in ("min", "argmax") and "3M" in name or "dim 0" in name)
                layout = make_view(g.Layout.contiguous(shape))
                out_shape = tuple(1 if i in dims else n for i, n in enumerate(layout.shape))
                res = []
                for d in (cpu, dev):
                    st = d.storage_from_slice(x.reshape(-1))
                    res.append(g.to_numpy(st.reduce_op(g.ReduceOp(op), layout, dims), g.Layout.contiguous(out_shape)))
                kind = dtype if op == "sum" else "exact"
                compare(f"{op} {dtype} {name}", res[1], res[0], kind)
    # tiles: unary and binary over transposed / batched / mixed views
    views = [
        ("(1000, 777) transposed", (1000, 777), lambda l: l.transpose(0, 1)),
        ("(3, 100, 67) batch of transposes", (3, 100, 67), lambda l: l.transpose(1, 2)),
        ("(33, 65) transposed, offset", (40, 70), lambda l: l.narrow(0, 3, 33).narrow(1, 2, 65).transpose(0, 1)),
    ]
    for dtype in ("f32", "f64", "bf16", "u8", "i64"):
        dt = g.DType(dtype)
        for name, shape, make_view in views:
            x, y = data(dtype, shape, positive=True), data(dtype, shape, positive=True)
            layout = make_view(g.Layout.contiguous(shape))
            out = g.Layout.contiguous(layout.shape)
            plain = g.Layout.contiguous(layout.shape)  # a contiguous operand of the same shape
            yc = np.ascontiguousarray(np.asarray(x).reshape(-1)[: int(np.prod(layout.shape))])
            res = {}
            for d in (cpu, dev):
                sx, sy, sc = (
                    d.storage_from_slice(x.reshape(-1)),
                    d.storage_from_slice(y.reshape(-1)),
                    d.storage_from_slice(yc),
                )
                r = []
                if dt.kind == "float":
                    r.append(g.to_numpy(sx.unary(g.UnaryOp.EXP, layout), out))
                r.append(g.to_numpy(sx.binary(g.BinaryOp.ADD, sy, layout, layout), out))
                r.append(g.to_numpy(sx.binary(g.BinaryOp.SUB, sc, layout, plain), out))
                r.append(g.to_numpy(sc.binary(g.BinaryOp.SUB, sx, plain, layout), out))
                r.append(g.to_numpy(sx.to_dtype(layout, g.DType.F32), out))
                res[d.backend] = r
            for i, (want, got) in enumerate(zip(res[cpu.backend], res[dev.backend])):
                compare(f"tiles {dtype} {name} #{i}", got, want, dtype if i < len(res[cpu.backend]) - 1 else "f32")
    rows["self-checks of the fast paths (cuda against cpu)"] = f"{count - len(failures)} of {count} passed"
    for f in failures[:20]:
        rows[f"check FAILED: {f}"] = "failed"


def explore(rows: dict) -> None:
    """Device time of variants: transposed exp for grid caps (GpuRuntime.geometry), and the
    sum kernels of hip/reduce.hip (compiled from a trimmed copy, with register bounds
    varied) for block sizes and chunk counts. (The first run of this, with the kernels of
    that time, also compared contiguous exp / add for unroll factors 1, 2, 4 and grids of 4
    to 64 blocks per multiprocessor: 64 was best, unrolling made no difference.)"""
    import ctypes

    import numpy as np

    import generated as g

    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
    dev = g.Device.parse("cuda:0")
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    a = dev.storage_from_slice(x)
    out = dev.storage_from_slice(x)
    gb = lambda nbytes, seconds: nbytes / seconds / 1e9  # noqa: E731
    sms = rt.driver.multiprocessors(0)
    square = g.Layout.contiguous((8192, N // 8192)).transpose(0, 1)
    original = rt.geometry
    for per_sm in (16, 32, 64, 128):
        rt.geometry = lambda numel, ordinal, per_sm=per_sm: max(1, min(-(-numel // 256), sms * per_sm))
        rows[f"explore exp f32 64M transposed, grid {per_sm}/SM: device GB/s"] = gb(
            8 * N, device_seconds(lambda: a.unary(g.UnaryOp.EXP, square))
        )
    rt.geometry = original

    text = (ROOT / "hip" / "reduce.hip").read_text()
    head = text.split("}  // namespace\n")[0] + "}  // namespace\n"
    entries = (
        'extern "C" __global__ void BOUNDS fast_sum_f32(const size_t src_numel, const size_t el, '
        "const size_t num_dims, const size_t* info, const float* src, float* dst) { "
        "reduce_groups(sum_of<float>(), src_numel, el, num_dims, info, 1, src, dst, false); }\n"
        'extern "C" __global__ void BOUNDS reduce_chunks_f32(const uint32_t op, const uint32_t pass, '
        "const size_t src_numel, const size_t el, const size_t num_dims, const size_t* info, const size_t chunks, "
        "const float* src, void* partial, void* dst) { reduce_chunks(op, pass, src_numel, el, num_dims, info, "
        "chunks, src, partial, dst); }\n"
    )
    variants = {
        "launch_bounds(1024)": (head, "__launch_bounds__(1024)"),
        "launch_bounds(1024,2)": (head, "__launch_bounds__(1024, 2)"),
    }
    tmp = Path(tempfile.mkdtemp(prefix="opgen-explore-"))
    size, ptr, u32 = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_uint32
    stream = rt.stream(0)
    partial = dev.storage_from_slice(np.zeros(1 << 20, np.float32))
    groups = 8192
    for label, (source, bounds) in variants.items():
        path = tmp / f"reduce_{len(rows)}.hip"
        path.write_text(source + entries.replace("BOUNDS", bounds))
        try:
            for block in (256, 512):
                fast = lambda block=block: rt.launch(  # noqa: E731
                    str(path),
                    "fast_sum_f32",
                    groups,
                    block,
                    stream,
                    (N, N // groups, 2, 0, a.inner.ptr, out.inner.ptr),
                    (size, size, size, ptr, ptr, ptr),
                )
                rows[f"explore sum last dim (a warp per row), {label}, block {block}: device GB/s"] = gb(
                    4 * N, device_seconds(fast)
                )
            for chunks in (2112, 4224, 16896):

                def two(chunks=chunks):
                    for pass_, grid in ((1, chunks // 8), (2, 1)):
                        rt.launch(
                            str(path),
                            "reduce_chunks_f32",
                            grid,
                            256,
                            stream,
                            (0, pass_, N, N, 1, 0, chunks, a.inner.ptr, partial.inner.ptr, out.inner.ptr),
                            (u32, u32, size, size, size, ptr, size, ptr, ptr, ptr),
                        )

                rows[f"explore sum all, {label}, {chunks} chunks: device GB/s"] = gb(4 * N, device_seconds(two))
        except Exception as exc:  # noqa: BLE001
            rows[f"explore {label} failed"] = f"{type(exc).__name__}: {exc}"
    shutil.rmtree(tmp, ignore_errors=True)


def latency(rows: dict, rounds: int = 5) -> None:
    """Host time per call of a 1,024-element f32 exp and add, opgen (Storage.unary / binary)
    and torch alternating, `rounds` rounds of 2,000 calls each: the median of the rounds.
    Then opgen again with its launches keeping the GIL (runtime.cuda.LAUNCH_HOLDS_GIL
    flipped, the prepared launches made afresh)."""
    import numpy as np
    import torch

    import generated as g
    import runtime.cuda as cuda

    dev = g.Device.parse("cuda:0")
    x = np.ones(1024, np.float32)
    a, b = dev.storage_from_slice(x), dev.storage_from_slice(x)
    layout = g.Layout.contiguous((1024,))
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(x).cuda()
    n = 2000
    cases = {
        "exp": (
            ("opgen Storage.unary exp", lambda: a.unary(g.UnaryOp.EXP, layout)),
            ("torch.exp", lambda: torch.exp(tx)),
        ),
        "add": (
            ("opgen Storage.binary add", lambda: a.binary(g.BinaryOp.ADD, b, layout, layout)),
            ("torch.add", lambda: torch.add(tx, ty)),
        ),
    }

    def per_call(fn) -> float:
        fn()
        torch.cuda.synchronize()
        dev.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        seconds = (time.perf_counter() - start) / n
        dev.synchronize()
        torch.cuda.synchronize()
        return seconds * 1e6

    def measure(label: str = "") -> None:
        for case in cases.values():
            samples: dict[str, list[float]] = {name: [] for name, _ in case}
            for _ in range(rounds):
                for name, fn in case:
                    if label and not name.startswith("opgen"):
                        continue
                    samples[name].append(per_call(fn))
            for name, values in samples.items():
                if values:
                    rows[f"small op 1,024 f32, host time per op: {name}{label} (us)"] = statistics.median(values)
            if not label:
                (ours, _), (theirs, _) = case
                rows[f"small op 1,024 f32, host time per op: {ours} / {theirs}"] = statistics.median(
                    samples[ours]
                ) / statistics.median(samples[theirs])

    measure()
    rt, held = cuda._rt, cuda.LAUNCH_HOLDS_GIL
    try:
        cuda.LAUNCH_HOLDS_GIL = not held
        rt._launches.clear()
        rt._direct.clear()
        measure(", launch keeping the GIL" if not held else ", launch releasing the GIL")
    finally:
        cuda.LAUNCH_HOLDS_GIL = held
        rt._launches.clear()
        rt._direct.clear()


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


def nn(rows: dict) -> None:
    from bench.gpu_nn import bench_nn

    bench_nn(rows)


def qmatmul(rows: dict) -> None:
    from bench.gpu_quant import bench_qmatmul_rows

    bench_qmatmul_rows(rows)


def nn_explore(rows: dict) -> None:
    from bench.gpu_nn import explore_rows

    explore_rows(rows)


def quant(rows: dict) -> None:
    from bench.gpu_quant import bench_quant

    bench_quant(rows, figures=("graph",))  # q4_0, q8_0, beside torch.mv
    bench_quant(rows, ("q4_1", "q4_k", "q6_k"), torch_mv=False, figures=("graph",))  # the same copy bandwidth figure


def quant_durations(rows: dict) -> None:
    """quant's kernel durations (the profiler): last, as CUPTI slows every graph timed after it."""
    from bench.gpu_quant import bench_quant

    bench_quant(rows, figures=("profiler",))
    bench_quant(rows, ("q4_1", "q4_k", "q6_k"), torch_mv=False, figures=("profiler",))


def issue11(rows: dict) -> None:
    from bench.gpu_issue11 import bench_issue11

    bench_issue11(rows)


def cudnn(rows: dict) -> None:
    from bench.gpu_issue11 import bench_cudnn

    bench_cudnn(rows)


def cudnn_explore(rows: dict) -> None:
    from bench.gpu_issue11 import explore_cudnn

    explore_cudnn(rows)


def conv_explore(rows: dict) -> None:
    from bench.gpu_issue11 import explore_conv_chunks

    explore_conv_chunks(rows)


def reduce_explore(rows: dict) -> None:
    from bench.gpu_issue11 import explore_reductions

    explore_reductions(rows)


def strided_explore(rows: dict) -> None:
    from bench.gpu_issue11 import explore_strided_loads

    explore_strided_loads(rows)


def column_explore(rows: dict) -> None:
    from bench.gpu_issue11 import explore_column_tiles

    explore_column_tiles(rows)


def sum_dim0(rows: dict) -> None:
    from bench.gpu_issue11 import bench_sum_dim0

    bench_sum_dim0(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument(
        "--parts",
        default="compile,bandwidth,latency,checks,nn,quant,qmatmul,issue11,quant-durations",
        help="comma-separated: compile, bandwidth, latency, checks (fast-path self-checks), "
        "explore (launch-geometry and unroll variants), nn (softmax, norms, attention "
        "against torch: bench/gpu_nn.py), nn-explore (the row kernels with other bytes of a row per "
        "thread), quant (q4_0/q8_0/q4_1/q4_K/q6_K matrix-vector: "
        "bench/gpu_quant.py; its kernel durations by the profiler: quant-durations, last, as CUPTI "
        "slows what is timed after it), qmatmul (QMatMul by 1 to 512 rows of x, qmatvec against "
        "dequantize + GEMM), issue11, conv-explore, reduce-explore (the sums' kernel "
        "variants), strided-explore (one column a thread, 4 to 32 loads in flight), "
        "sum-dim0 (issue11's sum over dim 0 alone), column-explore (its one-launch column tiles' "
        "variants), cudnn (convolutions and attention with "
        "and without cuDNN, against torch: bench/gpu_issue11.py), cudnn-explore (its settings)",
    )
    args = parser.parse_args()
    import torch

    device = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    rows: dict = {}
    # OPGEN_REDUCE_SETTINGS="NAME=VALUE,...": integer settings of runtime/gpu/reduce.py for this
    # run (bench/gpu_issue11.py's pick_column_settings writes them), recorded in the rows
    settings = [item.split("=", 1) for item in os.environ.get("OPGEN_REDUCE_SETTINGS", "").split(",") if item.strip()]
    if settings:
        import runtime.gpu.reduce as reductions

        for name, value in settings:
            getattr(reductions, name.strip())  # AttributeError: no such setting
            setattr(reductions, name.strip(), int(value))
        rows["reduce settings (OPGEN_REDUCE_SETTINGS)"] = ",".join(f"{n.strip()}={v.strip()}" for n, v in settings)
    parts = {
        "compile": cold_and_warm_compile,
        "bandwidth": bandwidth,
        "latency": latency,
        "checks": checks,
        "explore": explore,
        "nn": nn,
        "nn-explore": nn_explore,
        "quant": quant,
        "quant-durations": quant_durations,
        "qmatmul": qmatmul,
        "issue11": issue11,
        "conv-explore": conv_explore,
        "reduce-explore": reduce_explore,
        "sum-dim0": sum_dim0,
        "column-explore": column_explore,
        "strided-explore": strided_explore,
        "cudnn": cudnn,
        "cudnn-explore": cudnn_explore,
    }
    for part in (parts[p.strip()] for p in args.parts.split(",") if p.strip()):
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

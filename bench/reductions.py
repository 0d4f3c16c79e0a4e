"""Reductions on the GPU, beside torch: the sums over the last dim and over all dims of 64M f32
(bandwidth as a share of a copy timed in turn), the sum over dim 0 of (8192, 8192) f32 (one
launch of column tiles; host and device time), and the self-checks of every reduction path
(chunked, a block / a warp / a thread per group, generic index, strided, unaligned) against
the cpu backend.

Explorations (bench/gpu.py --explore NAME), each re-checking a choice of runtime/gpu/reduce.py
or hip/reduce.hip:
- `reduce`: threads and warps aimed at per multiprocessor (THREAD_ITEMS_PER_SM,
  WARP_ITEMS_PER_SM), a thread's rows as a band or interleaved (OPGEN_COLUMN_INTERLEAVED,
  OPGEN_PASS0_INTERLEAVED);
- `strided-loads`: strided loads in flight per thread on the one-column-a-thread path
  (OPGEN_STRIDED_LOADS);
- `columns`: the column tiles' variants (column_variants), rounds in turn with torch."""

from __future__ import annotations

import os
import statistics
from typing import Any

import numpy as np

from bench.compare import FastPathChecks, check, pair
from bench.elementwise import N, gb_per_s
from bench.timing import (
    cuda_runtime,
    device_seconds,
    timed,
    timed_in_turn,
    torch_device_seconds,
)


def bandwidth(rows: dict) -> None:
    """The sums over 64M f32: they read every element once (bytes = 4N; the output is negligible)."""
    import torch

    import generated as g

    dev = g.Device.parse("cuda:0")
    sync, tsync = dev.synchronize, torch.cuda.synchronize
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    a = dev.storage_from_slice(x)
    tx = torch.from_numpy(x).cuda()
    ty = torch.empty_like(tx)
    grid = g.Layout.contiguous((8192, N // 8192))
    reductions = {
        "sum f32 64M over the last dim": (
            lambda: a.reduce_op(g.ReduceOp.SUM, grid, (1,)),
            lambda: tx.view(8192, -1).sum(dim=1, keepdim=True),
        ),
        "sum f32 64M over all dims": (lambda: a.reduce_op(g.ReduceOp.SUM, grid, (0, 1)), lambda: tx.sum()),
    }
    copy = (lambda: ty.copy_(tx), tsync)
    for name, (ours, theirs) in reductions.items():
        t_copy, t_ours, t_torch = timed_in_turn((copy, (ours, sync), (theirs, tsync)))
        rows[f"{name}: opgen (GB/s)"] = gb_per_s(4 * N, t_ours)
        rows[f"{name}: torch (GB/s)"] = gb_per_s(4 * N, t_torch)
        rows[f"{name}: copy timed in turn (GB/s)"] = gb_per_s(2 * 4 * N, t_copy)
        rows[f"{name}: opgen / copy bandwidth"] = gb_per_s(4 * N, t_ours) / gb_per_s(2 * 4 * N, t_copy)
        rows[f"{name}: opgen / torch"] = t_torch / t_ours
        rows[f"{name}: opgen, device time only (GB/s)"] = gb_per_s(4 * N, device_seconds(ours))


def sum_dim0(rows: dict) -> None:
    """The sum over dim 0 of (8192, 8192) f32 (reads 256 MB) against torch, host and device
    time, and whether two calls give the same bits."""
    import torch

    import generated as g

    dev = g.Device.parse("cuda:0")
    sync, tsync = dev.synchronize, torch.cuda.synchronize
    rng = np.random.default_rng(11)
    xr = rng.standard_normal((8192, 8192), dtype=np.float32)
    sr_, tr_ = dev.storage_from_slice(xr), torch.from_numpy(xr).cuda()
    lrr = g.Layout.contiguous(xr.shape)
    out = g.Layout.contiguous((1, 8192))
    name = "sum f32 (8192,8192) over dim 0"
    ours = lambda: sr_.reduce_op(g.ReduceOp.SUM, lrr, (0,))  # noqa: E731
    theirs = lambda: tr_.sum(dim=0, keepdim=True)  # noqa: E731
    check(rows, name, g.to_numpy(ours(), out), theirs().cpu().numpy(), 1e-5)
    pair(rows, name, ours, theirs, sync, tsync, 4 * 8192 * 8192 / 1e9, "GB/s")
    rows[f"{name}: torch, device time only (ms)"] = torch_device_seconds(theirs) * 1e3
    rows[f"{name}: device time opgen / torch"] = (
        rows[f"{name}: opgen, device time only (ms)"] / rows[f"{name}: torch, device time only (ms)"]
    )
    first, again = g.to_numpy(ours(), out), g.to_numpy(ours(), out)
    rows[f"{name}: the same bits twice"] = bool(np.array_equal(first.view(np.uint32), again.view(np.uint32)))


def check_reductions(checks: FastPathChecks) -> None:
    """Every reduction of every dtype over shapes that take each path, against the cpu backend."""
    import generated as g

    dev, cpu = g.Device.parse("cuda:0"), g.Device.parse("cpu")
    # (name, base shape, view from the contiguous layout, dims)
    cases = [
        ("all of 3M (chunked, a block per chunk)", (3_000_017,), lambda lay: lay, (0,)),
        ("last dim of (700, 3001) (a block per group)", (700, 3001), lambda lay: lay, (1,)),
        ("last dim of (5000, 40) (a warp per group)", (5000, 40), lambda lay: lay, (1,)),
        ("dim 0 of (4099, 37) (a thread per group)", (4099, 37), lambda lay: lay, (0,)),
        ("dim 0 of (200003, 3) (a thread per chunk)", (200_003, 3), lambda lay: lay, (0,)),
        ("dims 0, 2 of (300, 7, 500) (generic index, chunked)", (300, 7, 500), lambda lay: lay, (0, 2)),
        (
            "all of a transposed (901, 1203) (chunked, strided)",
            (901, 1203),
            lambda lay: lay.transpose(0, 1),
            (0, 1),
        ),
        (
            "dim 1 of an offset (64, 70001) (unaligned chunks)",
            (64, 70_001),
            lambda lay: lay.narrow(1, 3, 69_990),
            (1,),
        ),
    ]
    for dtype in [d.value for d in g.DType]:
        for op in ("sum", "min", "max", "argmin", "argmax"):
            for name, shape, make_view, dims in cases:
                if op == "sum":
                    x = checks.data(dtype, shape, positive=True)
                else:
                    nans = op in ("min", "argmax") and "3M" in name or "dim 0" in name
                    x = checks.data(dtype, shape, ties=True, nans=nans)
                layout = make_view(g.Layout.contiguous(shape))
                out_shape = tuple(1 if i in dims else n for i, n in enumerate(layout.shape))
                res = []
                for d in (cpu, dev):
                    st = d.storage_from_slice(x.reshape(-1))
                    res.append(g.to_numpy(st.reduce_op(g.ReduceOp(op), layout, dims), g.Layout.contiguous(out_shape)))
                checks.compare(f"{op} {dtype} {name}", res[1], res[0], dtype if op == "sum" else "exact")


class ReduceSource:
    """hip/reduce.hip as the runtime compiles it replaced by `text` inside the block (the
    runtime's compiled module, functions and prepared launches of it are forgotten on the
    way in and out)."""

    def __init__(self, text: str) -> None:
        from runtime.gpu.compile import HIP_DIR

        self.rt, self.text = cuda_runtime(), text
        self.source = str(HIP_DIR / "reduce.hip")
        self.kept = (HIP_DIR / "reduce.hip").read_text()

    def forget(self) -> None:
        for cache in (self.rt._modules, self.rt._functions, self.rt._launches):
            for key in [k for k in cache if self.source in k]:
                del cache[key]
        self.rt._direct.clear()

    def __enter__(self) -> ReduceSource:
        self.rt._sources[self.source] = self.text
        self.forget()
        return self

    def __exit__(self, *exc: object) -> None:
        self.rt._sources[self.source] = self.kept
        self.forget()


def _square() -> tuple[Any, Any, Any, np.ndarray]:
    """(device, storage, layout, host array) of the (8192, 8192) f32 the explorations sum."""
    import generated as g

    dev = g.Device.parse("cuda:0")
    x = np.random.default_rng(3).standard_normal((8192, 8192), dtype=np.float32)
    return dev, dev.storage_from_slice(x), g.Layout.contiguous(x.shape), x


def explore_reduce(rows: dict) -> None:
    """The sum over dim 0 of (8192, 8192) f32 with a thread's rows as a band or interleaved
    with the other chunks' (OPGEN_COLUMN_INTERLEAVED) and threads aimed at per multiprocessor
    (THREAD_ITEMS_PER_SM); the sum over all dims with a chunk a warp or the blocks interleaved
    (OPGEN_PASS0_INTERLEAVED) and warps per multiprocessor (WARP_ITEMS_PER_SM); the sum over
    the last dim (the same kernels' warp path), against regressions. Device time (and host time
    for the sum over all dims); torch's beside them."""
    import torch

    import generated as g
    import runtime.gpu.reduce as gpu
    from runtime.gpu.compile import HIP_DIR

    dev, sx, layout, x = _square()
    sync = dev.synchronize
    tx = torch.from_numpy(x).cuda()
    text = (HIP_DIR / "reduce.hip").read_text()
    gbs = lambda seconds: 4 * x.size / seconds / 1e9  # noqa: E731
    dim0 = lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (0,))  # noqa: E731
    every = lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (0, 1))  # noqa: E731
    last = lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (1,))  # noqa: E731
    rows["explore torch sum over dim 0: device (GB/s)"] = gbs(torch_device_seconds(lambda: tx.sum(dim=0, keepdim=True)))
    rows["explore torch sum over all dims: device (GB/s)"] = gbs(torch_device_seconds(lambda: tx.sum()))
    rows["explore torch sum over all dims: host (GB/s)"] = gbs(timed(lambda: tx.sum(), torch.cuda.synchronize))
    kept = (gpu.WARP_ITEMS_PER_SM, gpu.THREAD_ITEMS_PER_SM)
    try:
        for interleaved in (0, 1):
            for per_sm in (1024, 2048, 4096):
                gpu.THREAD_ITEMS_PER_SM = per_sm
                with ReduceSource(f"#define OPGEN_COLUMN_INTERLEAVED {interleaved}\n" + text):
                    rows[
                        f"explore sum over dim 0, columns, rows interleaved {interleaved}, {per_sm} threads/SM: "
                        "device (GB/s)"
                    ] = gbs(device_seconds(dim0))
        gpu.THREAD_ITEMS_PER_SM = kept[1]
        for interleaved in (0, 1):
            for per_sm in (32, 64):
                gpu.WARP_ITEMS_PER_SM = per_sm
                with ReduceSource(f"#define OPGEN_PASS0_INTERLEAVED {interleaved}\n" + text):
                    label = f"explore sum over all dims, interleaved {interleaved}, {per_sm} warps/SM"
                    rows[f"{label}: device (GB/s)"] = gbs(device_seconds(every))
                    rows[f"{label}: host (GB/s)"] = gbs(timed(every, sync))
        gpu.WARP_ITEMS_PER_SM = kept[0]
        with ReduceSource(text):
            rows["explore sum over the last dim, this source: device (GB/s)"] = gbs(device_seconds(last))
    finally:
        gpu.WARP_ITEMS_PER_SM, gpu.THREAD_ITEMS_PER_SM = kept


def explore_strided_loads(rows: dict, settings: tuple[int, ...] = (4, 8, 16, 32)) -> None:
    """The sum over dim 0 of (8192, 8192) f32 on the one-column-a-thread path, hip/reduce.hip
    compiled with other strided loads in flight per thread (OPGEN_STRIDED_LOADS): device time,
    GB/s of the 256 MB read."""
    import generated as g
    import runtime.gpu.reduce as gpu
    from runtime.gpu.compile import HIP_DIR

    _, sx, layout, x = _square()
    text = (HIP_DIR / "reduce.hip").read_text()
    columns = gpu._reduce_columns
    gpu._reduce_columns = lambda *args: 1  # the runtime's grid as for one column a thread
    try:
        for loads in settings:
            with ReduceSource(f"#define OPGEN_STRIDED_LOADS {loads}\n#define OPGEN_COLUMN_LOADS 0\n" + text):
                seconds = device_seconds(lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (0,)))
            rows[f"explore sum f32 (8192,8192) over dim 0, {loads} strided loads in flight: device (GB/s)"] = (
                4 * x.size / seconds / 1e9
            )
    finally:
        gpu._reduce_columns = columns


def column_variants() -> list[tuple[str, dict, str]]:
    """The column tiles' variants: (label, runtime/gpu/reduce.py settings, #defines put before
    hip/reduce.hip). "default": the source and settings as they are (reduce_columns_<dt>, a
    rank-2 view by value with 32-bit indices; 256-thread blocks, 3 a multiprocessor: 6
    slices); the others change what their label says."""
    torch_like = {"COLUMN_BLOCK": 128, "COLUMN_THREADS_PER_SM": 2048}
    return [
        ("pass 3 with info", {"COLUMN_BY_VALUE": False}, ""),
        ("default", {}, ""),
        ("size_t indices", {}, "#define OPGEN_COLUMN_INDEX32 0\n"),
        # the register cap of 4 blocks of 256 and the grid that fills them (8 slices); 2 blocks
        # (128 registers, 4 slices)
        ("4 blocks a multiprocessor (8 slices)", {"COLUMN_MIN_BLOCKS": 4}, "#define OPGEN_COLUMN_MIN_BLOCKS 4\n"),
        ("2 blocks a multiprocessor (4 slices)", {"COLUMN_MIN_BLOCKS": 2}, "#define OPGEN_COLUMN_MIN_BLOCKS 2\n"),
        ("the block's warps in one round, thread 0 fencing", {}, "#define OPGEN_TILE_COMBINE 1\n"),
        ("8 states in flight in the final combine", {}, "#define OPGEN_TILE_COMBINE_LOADS 8\n"),
        ("default, 128-thread blocks, 12 slices", {"COLUMN_BLOCK": 128, "COLUMN_THREADS_PER_SM": 768}, ""),
        ("default, 128-thread blocks, 33 slices (torch's grid)", torch_like, ""),
    ]


def column_variant_sources() -> list[str]:
    """hip/reduce.hip as `--explore columns` compiles it, each variant (bench/precompile.py)."""
    from runtime.gpu.compile import HIP_DIR

    text = (HIP_DIR / "reduce.hip").read_text(encoding="utf-8")
    return list(dict.fromkeys(defines + text for _, _, defines in column_variants()))


def explore_columns(rows: dict, rounds: int = 3) -> None:
    """The sum over dim 0 of (8192, 8192) f32 in one launch of column tiles under each of
    column_variants(), device time (CUDA events) and host time, torch in the same process;
    `rounds` rounds of every variant in turn (the machine drifts: each variant's median of its
    rounds and its spread). OPGEN_EXPLORE_COLUMNS (labels, comma-separated) times those alone."""
    import torch

    import generated as g
    import runtime.gpu.reduce as gpu
    from runtime.gpu.compile import HIP_DIR

    dev, sx, layout, x = _square()
    sync = dev.synchronize
    tx = torch.from_numpy(x).cuda()
    text = (HIP_DIR / "reduce.hip").read_text()
    dim0 = lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (0,))  # noqa: E731
    want = tx.sum(dim=0, keepdim=True).double().cpu().numpy()
    torch_fn = lambda: tx.sum(dim=0, keepdim=True)  # noqa: E731
    names = ("COLUMN_THREADS_PER_SM", "COLUMN_BLOCK", "COLUMN_TILES", "COLUMN_PACKS", "COLUMN_BY_VALUE")
    names += ("COLUMN_SPLITS", "COLUMN_GRID_MAX", "COLUMN_MIN_BLOCKS")
    kept = {name: getattr(gpu, name) for name in names}
    only = [n.strip() for n in os.environ.get("OPGEN_EXPLORE_COLUMNS", "").split(",") if n.strip()]
    variants = [v for v in column_variants() if not only or v[0] in only]
    samples: dict[str, list[tuple[float, float]]] = {}
    first = None
    out = g.Layout.contiguous((1, 8192))
    try:
        for r in range(rounds):
            samples.setdefault("torch", []).append(
                (torch_device_seconds(torch_fn), timed(torch_fn, torch.cuda.synchronize))
            )
            for label, settings, defines in variants:
                for name, value in {**kept, **settings}.items():
                    setattr(gpu, name, value)
                try:
                    with ReduceSource(defines + text):
                        got = g.to_numpy(dim0(), out)
                        if r == 0:
                            err = float(np.abs(got - want).max() / np.abs(want).max())
                            rows[f"explore columns, {label}: max error / max |sum|"] = err
                            again = g.to_numpy(dim0(), out)
                            same = np.array_equal(got.view(np.uint32), again.view(np.uint32))
                            if first is None:
                                first = got
                            rows[f"explore columns, {label}: the same bits twice / as the first variant"] = (
                                f"{same} / {np.array_equal(got.view(np.uint32), first.view(np.uint32))}"
                            )
                        samples.setdefault(label, []).append((device_seconds(dim0), timed(dim0, sync)))
                except Exception as exc:  # noqa: BLE001  (a failed variant is reported, the others run)
                    rows[f"explore columns, {label}: failed"] = f"{type(exc).__name__}: {exc}"
    finally:
        for name, value in kept.items():
            setattr(gpu, name, value)
    _column_rows(rows, samples, 4 * x.size)


def _column_rows(rows: dict, samples: dict[str, list[tuple[float, float]]], nbytes: int) -> None:
    """Each variant's median and rounds, device and host, and its ratio to torch's."""
    for label, got in samples.items():
        dev_us = [d * 1e6 for d, _ in got]
        host_us = [h * 1e6 for _, h in got]
        rows[f"explore columns, {label}: device (us), median / rounds"] = (
            f"{statistics.median(dev_us):.2f} / " + ", ".join(f"{v:.2f}" for v in dev_us)
        )
        rows[f"explore columns, {label}: host (us), median / rounds"] = (
            f"{statistics.median(host_us):.2f} / " + ", ".join(f"{v:.2f}" for v in host_us)
        )
        rows[f"explore columns, {label}: device (GB/s)"] = nbytes / statistics.median(d for d, _ in got) / 1e9
    if "torch" not in samples:
        return
    t_dev = statistics.median(d for d, _ in samples["torch"])
    t_host = statistics.median(h for _, h in samples["torch"])
    for label, got in samples.items():
        if label != "torch":
            rows[f"explore columns, {label}: / torch, device / host"] = (
                f"{statistics.median(d for d, _ in got) / t_dev:.3f} / "
                f"{statistics.median(h for _, h in got) / t_host:.3f}"
            )

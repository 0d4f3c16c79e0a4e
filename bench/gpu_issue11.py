"""Issue 11's GPU rows, side by side with torch in the same run (`bench/gpu.py --parts
issue11`): index ops, convolutions, arg_sort, the sum over dim 0, matmul through nvmath.

Host time: the median of batches of synchronised calls (bench/gpu.timed), both libraries
timed the same way; "device time" rows time opgen's kernels with CUDA events. Each row is
checked against torch's result first (a wrong fast result is not a result)."""

from __future__ import annotations

import time

import numpy as np

from bench.gpu import device_seconds, timed, timed_pair


def _pair(
    rows: dict, name: str, ours, theirs, sync, tsync, unit_work: float | None = None, unit: str = "", repeats: int = 10
) -> None:
    """Time both, their samples in turn (bench.gpu.timed_pair: stop 20's conv1d read 2.25x in
    one run of three, 0.42 against 0.17-0.18 ms, its device time unchanged, when timed whole
    before torch); rows: each's ms, opgen / torch (time ratio, lower is better), and the work
    rate where `unit_work` (units per call) is given."""
    t_ours, t_torch = timed_pair(ours, sync, theirs, tsync, repeats=repeats)
    rows[f"{name}: opgen (ms)"] = t_ours * 1e3
    rows[f"{name}: torch (ms)"] = t_torch * 1e3
    rows[f"{name}: opgen time / torch time"] = t_ours / t_torch
    rows[f"{name}: opgen, device time only (ms)"] = device_seconds(ours, repeats=repeats) * 1e3
    if unit_work:
        rows[f"{name}: opgen ({unit})"] = unit_work / t_ours
        rows[f"{name}: torch ({unit})"] = unit_work / t_torch


def _check(rows: dict, name: str, got: np.ndarray, want: np.ndarray, rel: float | None = None) -> None:
    if rel is None:
        ok = got.shape == want.shape and np.array_equal(got, want)
        rows[f"{name}: check"] = "exact" if ok else "MISMATCH"
    else:
        err = float(np.linalg.norm((got - want).astype(np.float64)) / np.linalg.norm(want.astype(np.float64)))
        rows[f"{name}: check"] = f"rel err {err:.2e}" + ("" if err < rel else " MISMATCH")


def bench_issue11(rows: dict) -> None:
    import torch

    import generated as g

    torch.backends.cudnn.allow_tf32 = False  # f32 convolutions in f32, as opgen computes them
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = g.Device.parse("cuda:0")
    sync, tsync = dev.synchronize, torch.cuda.synchronize
    rng = np.random.default_rng(11)

    def put(array):
        return dev.storage_from_slice(array), torch.from_numpy(array).cuda()

    # gather (4096, 4096) f32 by (4096, 1024) i64 ids along dim 1
    x = rng.standard_normal((4096, 4096), dtype=np.float32)
    ids = rng.integers(0, 4096, (4096, 1024)).astype(np.int64)
    (sx, tx), (si, ti) = put(x), put(ids)
    lx, li = g.Layout.contiguous(x.shape), g.Layout.contiguous(ids.shape)
    _check(
        rows,
        "gather (4096,4096) f32 by (4096,1024) i64 ids",
        g.to_numpy(sx.gather(lx, si, li, 1), li),
        torch.gather(tx, 1, ti).cpu().numpy(),
    )
    _pair(
        rows,
        "gather (4096,4096) f32 by (4096,1024) i64 ids",
        lambda: sx.gather(lx, si, li, 1),
        lambda: torch.gather(tx, 1, ti),
        sync,
        tsync,
    )
    del sx, tx, si, ti

    # index_select: 8,192 i64 ids of an embedding table (32000, 4096) f32 along dim 0
    table = rng.standard_normal((32000, 4096), dtype=np.float32)
    rows_ids = rng.integers(0, 32000, 8192).astype(np.int64)
    (st, tt), (sr, tr) = put(table), put(rows_ids)
    lt, lr = g.Layout.contiguous(table.shape), g.Layout.contiguous(rows_ids.shape)
    name = "index_select 8,192 i64 ids of (32000,4096) f32, dim 0"
    _check(
        rows,
        name,
        g.to_numpy(st.index_select(sr, lt, lr, 0), g.Layout.contiguous((8192, 4096))),
        torch.index_select(tt, 0, tr).cpu().numpy(),
    )
    _pair(
        rows,
        name,
        lambda: st.index_select(sr, lt, lr, 0),
        lambda: torch.index_select(tt, 0, tr),
        sync,
        tsync,
        2 * 8192 * 4096 * 4 / 1e9,
        "GB/s",
    )
    del st, tt

    # convolutions, f32, TF32 off on both sides
    F = torch.nn.functional
    xs = rng.standard_normal((16, 64, 56, 56), dtype=np.float32)
    ws = (rng.standard_normal((64, 64, 3, 3), dtype=np.float32) / 24).astype(np.float32)
    (sxc, txc), (swc, twc) = put(xs), put(ws)
    lxc, lwc = g.Layout.contiguous(xs.shape), g.Layout.contiguous(ws.shape)
    flops = 2 * 16 * 64 * 56 * 56 * 64 * 9 / 1e12
    p2 = g.ConvParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
    name = "conv2d f32 (16,64,56,56) by (64,64,3,3), padding 1"
    out_l = g.Layout.contiguous((16, 64, 56, 56))
    _check(
        rows, name, g.to_numpy(sxc.conv2d(lxc, swc, lwc, p2), out_l), F.conv2d(txc, twc, padding=1).cpu().numpy(), 1e-5
    )
    _pair(
        rows,
        name,
        lambda: sxc.conv2d(lxc, swc, lwc, p2),
        lambda: F.conv2d(txc, twc, padding=1),
        sync,
        tsync,
        flops,
        "TFLOP/s",
    )
    pt = g.ConvTransposeParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
    name = "conv_transpose2d f32 (16,64,56,56) by (64,64,3,3), padding 1"
    _check(
        rows,
        name,
        g.to_numpy(sxc.conv_transpose2d(lxc, swc, lwc, pt), out_l),
        F.conv_transpose2d(txc, twc, padding=1).cpu().numpy(),
        1e-5,
    )
    _pair(
        rows,
        name,
        lambda: sxc.conv_transpose2d(lxc, swc, lwc, pt),
        lambda: F.conv_transpose2d(txc, twc, padding=1),
        sync,
        tsync,
        flops,
        "TFLOP/s",
    )
    xu = rng.standard_normal((16, 64, 28, 28), dtype=np.float32)
    wu = (rng.standard_normal((64, 64, 4, 4), dtype=np.float32) / 32).astype(np.float32)
    (sxu, txu), (swu, twu) = put(xu), put(wu)
    lxu, lwu = g.Layout.contiguous(xu.shape), g.Layout.contiguous(wu.shape)
    pu = g.ConvTransposeParams2D(b_size=16, i_h=28, i_w=28, k_h=4, k_w=4, c_out=64, c_in=64, padding=1, stride=2)
    name = "conv_transpose2d f32 (16,64,28,28) by (64,64,4,4), stride 2, padding 1"
    _check(
        rows,
        name,
        g.to_numpy(sxu.conv_transpose2d(lxu, swu, lwu, pu), out_l),
        F.conv_transpose2d(txu, twu, stride=2, padding=1).cpu().numpy(),
        1e-5,
    )
    _pair(
        rows,
        name,
        lambda: sxu.conv_transpose2d(lxu, swu, lwu, pu),
        lambda: F.conv_transpose2d(txu, twu, stride=2, padding=1),
        sync,
        tsync,
        2 * 16 * 64 * 28 * 28 * 64 * 16 / 1e12,
        "TFLOP/s",
    )
    x1 = rng.standard_normal((16, 128, 4096), dtype=np.float32)
    w1 = (rng.standard_normal((128, 128, 3), dtype=np.float32) / 20).astype(np.float32)
    (sx1, tx1), (sw1, tw1) = put(x1), put(w1)
    p1 = g.ConvParams1D(b_size=16, l_in=4096, c_out=128, c_in=128, k_size=3, padding=1)
    l1, lw1 = g.Layout.contiguous(x1.shape), g.Layout.contiguous(w1.shape)
    name = "conv1d f32 (16,128,4096) by (128,128,3), padding 1"
    _check(rows, name, g.to_numpy(sx1.conv1d(l1, sw1, lw1, p1), l1), F.conv1d(tx1, tw1, padding=1).cpu().numpy(), 1e-5)
    _pair(
        rows,
        name,
        lambda: sx1.conv1d(l1, sw1, lw1, p1),
        lambda: F.conv1d(tx1, tw1, padding=1),
        sync,
        tsync,
        2 * 16 * 128 * 4096 * 128 * 3 / 1e12,
        "TFLOP/s",
    )
    del sxc, txc, sx1, tx1

    # arg_sort (4096, 4096) f32, ascending: the values at opgen's indices must be torch's sorted values
    xa = rng.standard_normal((4096, 4096), dtype=np.float32)
    sa, ta = put(xa)
    la = g.Layout.contiguous(xa.shape)
    sort = g.nn.ArgSort(ascending=True)
    name = "arg_sort (4096,4096) f32"
    try:
        got, _ = sa.apply_op1(la, sort)
        order = g.to_numpy(got, la).astype(np.int64)
        _check(rows, name, np.take_along_axis(xa, order, 1), torch.sort(ta, dim=1).values.cpu().numpy())
        _pair(rows, name, lambda: sa.apply_op1(la, sort), lambda: torch.argsort(ta, dim=1), sync, tsync)
    except Exception as exc:  # noqa: BLE001  (reported, the other rows still run)
        rows[f"{name}: failed"] = f"{type(exc).__name__}: {exc}"
    long_row = rng.standard_normal((64, 65536), dtype=np.float32)
    sl, tl = put(long_row)
    ll = g.Layout.contiguous(long_row.shape)
    name = "arg_sort (64,65536) f32"
    try:
        got, _ = sl.apply_op1(ll, sort)
        order = g.to_numpy(got, ll).astype(np.int64)
        _check(rows, name, np.take_along_axis(long_row, order, 1), torch.sort(tl, dim=1).values.cpu().numpy())
        _pair(rows, name, lambda: sl.apply_op1(ll, sort), lambda: torch.argsort(tl, dim=1), sync, tsync)
    except Exception as exc:  # noqa: BLE001
        rows[f"{name}: failed"] = f"{type(exc).__name__}: {exc}"

    bench_sum_dim0(rows)


def bench_sum_dim0(rows: dict) -> None:
    """The sum over dim 0 of (8192, 8192) f32 (reads 256 MB) against torch: issue11's row,
    alone as `--parts sum-dim0`."""
    import torch

    import generated as g

    dev = g.Device.parse("cuda:0")
    sync, tsync = dev.synchronize, torch.cuda.synchronize
    rng = np.random.default_rng(11)
    xr = rng.standard_normal((8192, 8192), dtype=np.float32)
    sr_, tr_ = dev.storage_from_slice(xr), torch.from_numpy(xr).cuda()
    lrr = g.Layout.contiguous(xr.shape)
    name = "sum f32 (8192,8192) over dim 0"
    _check(
        rows,
        name,
        g.to_numpy(sr_.reduce_op(g.ReduceOp.SUM, lrr, (0,)), g.Layout.contiguous((1, 8192))),
        tr_.sum(dim=0, keepdim=True).cpu().numpy(),
        1e-5,
    )
    _pair(
        rows,
        name,
        lambda: sr_.reduce_op(g.ReduceOp.SUM, lrr, (0,)),
        lambda: tr_.sum(dim=0, keepdim=True),
        sync,
        tsync,
        4 * 8192 * 8192 / 1e9,
        "GB/s",
    )
    rows[f"{name}: torch, device time only (ms)"] = _device_seconds_torch(lambda: tr_.sum(dim=0, keepdim=True)) * 1e3
    rows[f"{name}: device time opgen / torch"] = (
        rows[f"{name}: opgen, device time only (ms)"] / rows[f"{name}: torch, device time only (ms)"]
    )
    first = g.to_numpy(sr_.reduce_op(g.ReduceOp.SUM, lrr, (0,)), g.Layout.contiguous((1, 8192)))
    again = g.to_numpy(sr_.reduce_op(g.ReduceOp.SUM, lrr, (0,)), g.Layout.contiguous((1, 8192)))
    rows[f"{name}: the same bits twice"] = bool(np.array_equal(first.view(np.uint32), again.view(np.uint32)))


def _column_variants() -> list[tuple[str, dict, str]]:
    """column-explore's variants: (label, runtime/gpu/reduce.py settings, #defines put before
    hip/reduce.hip). "default": the source and settings as they are (reduce_columns_<dt>, a
    rank-2 view by value with 32-bit indices; 256-thread blocks, 3 a multiprocessor: 6
    slices); the others change what their label says. Labels that start with "default, "
    change only runtime settings: pick_column_settings chooses among them. The variants of
    the rounds before (bands, 8 columns, load hints: column-explore2-h100.md; the grids of one
    round: column-explore3/4-h100.md; HEAD's source and launch bounds on reduce_chunks:
    column-explore5-h100.json) are in git history."""
    torch_like = {"COLUMN_BLOCK": 128, "COLUMN_THREADS_PER_SM": 2048}
    return [
        ("pass 3 with info", {"COLUMN_BY_VALUE": False}, ""),
        ("default", {}, ""),
        ("size_t indices", {}, "#define OPGEN_COLUMN_INDEX32 0\n"),
        # the register cap of 4 blocks of 256 (64, as reduce_chunks' bound for 1024 threads
        # gave the column tiles before dim0e) and the grid that fills them (8 slices); 2
        # blocks (128 registers, 4 slices)
        ("4 blocks a multiprocessor (8 slices)", {"COLUMN_MIN_BLOCKS": 4}, "#define OPGEN_COLUMN_MIN_BLOCKS 4\n"),
        ("2 blocks a multiprocessor (4 slices)", {"COLUMN_MIN_BLOCKS": 2}, "#define OPGEN_COLUMN_MIN_BLOCKS 2\n"),
        ("the block's warps in one round, thread 0 fencing", {}, "#define OPGEN_TILE_COMBINE 1\n"),
        ("8 states in flight in the final combine", {}, "#define OPGEN_TILE_COMBINE_LOADS 8\n"),
        ("default, 128-thread blocks, 12 slices", {"COLUMN_BLOCK": 128, "COLUMN_THREADS_PER_SM": 768}, ""),
        ("default, 128-thread blocks, 33 slices (torch's grid)", torch_like, ""),
    ]


def pick_column_settings(path: str) -> str:
    """From a column-explore run's gpu.json: the settings ("NAME=VALUE,...", for bench/gpu.py's
    OPGEN_REDUCE_SETTINGS and the GPU tests' OPGEN_TEST_REDUCE_DEFINES) of the runtime-only
    variant ("default, ...") with the lowest median device time among those faster than the
    default in every round, on device and host time both; "" where none is."""
    import json
    from pathlib import Path

    rows = json.loads(Path(path).read_text(encoding="utf-8"))["rows"]

    def rounds(label: str, kind: str) -> list[float] | None:
        text = rows.get(f"explore columns, {label}: {kind} (us), median / rounds")
        return [float(v) for v in text.split("/")[1].split(",")] if text else None

    base_dev, base_host = rounds("default", "device"), rounds("default", "host")
    if not base_dev or not base_host:
        return ""
    best, best_time = "", float("inf")
    for label, settings, defines in _column_variants():
        if not label.startswith("default, ") or defines:
            continue
        dev, host = rounds(label, "device"), rounds(label, "host")
        if not dev or not host or len(dev) != len(base_dev) or len(host) != len(base_host):
            continue
        if all(d < b for d, b in zip(dev, base_dev)) and all(h < b for h, b in zip(host, base_host)):
            median = sorted(dev)[len(dev) // 2]
            if median < best_time:
                best, best_time = ",".join(f"{k}={int(v)}" for k, v in settings.items()), median
    return best


def _variant_text(defines: str, text: str) -> str:
    """A variant's source: `text` under its #defines."""
    return defines + text


def column_variant_sources() -> list[str]:
    """hip/reduce.hip as column-explore compiles it, each variant (bench/precompile.py)."""
    from runtime.gpu.compile import HIP_DIR

    text = (HIP_DIR / "reduce.hip").read_text(encoding="utf-8")
    return list(dict.fromkeys(_variant_text(defines, text) for _, _, defines in _column_variants()))


def explore_column_tiles(rows: dict, rounds: int = 3) -> None:
    """The sum over dim 0 of (8192, 8192) f32 in one launch of column tiles under variants
    (_column_variants: reduce_columns_<dt> with the view's dims and strides uploaded and read
    by every thread, or the row stride as an argument; 32-bit or size_t indices; 3 or 4 blocks
    a multiprocessor; the tiles' last blocks combining with 1 or 8 states in flight
    (OPGEN_TILE_COMBINE_LOADS); other grids), device time (CUDA events) and host time, torch
    in the same process; `rounds`
    rounds of every variant in turn (the machine drifts: each variant's median of its rounds
    and its spread). OPGEN_EXPLORE_COLUMNS (labels, comma-separated) times those alone."""
    import os
    import statistics

    import torch

    import generated as g
    import runtime.gpu.reduce as gpu
    from bench.gpu import timed
    from runtime.gpu.compile import HIP_DIR

    dev = g.Device.parse("cuda:0")
    sync = dev.synchronize
    x = np.random.default_rng(3).standard_normal((8192, 8192), dtype=np.float32)
    sx, layout = dev.storage_from_slice(x), g.Layout.contiguous(x.shape)
    tx = torch.from_numpy(x).cuda()
    text = (HIP_DIR / "reduce.hip").read_text()
    gbs = lambda seconds: 4 * x.size / seconds / 1e9  # noqa: E731
    dim0 = lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (0,))  # noqa: E731
    want = tx.sum(dim=0, keepdim=True).double().cpu().numpy()
    torch_fn = lambda: tx.sum(dim=0, keepdim=True)  # noqa: E731
    names = ("COLUMN_THREADS_PER_SM", "COLUMN_BLOCK", "COLUMN_TILES", "COLUMN_PACKS", "COLUMN_BY_VALUE")
    names += ("COLUMN_SPLITS", "COLUMN_GRID_MAX", "COLUMN_MIN_BLOCKS")
    kept = {name: getattr(gpu, name) for name in names}
    variants = _column_variants()
    only = [n.strip() for n in os.environ.get("OPGEN_EXPLORE_COLUMNS", "").split(",") if n.strip()]
    variants = [v for v in variants if not only or v[0] in only]
    samples: dict[str, list[tuple[float, float]]] = {}
    first = None
    try:
        for r in range(rounds):
            t_dev, t_host = _device_seconds_torch(torch_fn), timed(torch_fn, torch.cuda.synchronize)
            samples.setdefault("torch", []).append((t_dev, t_host))
            for label, settings, defines in variants:
                source = _variant_text(defines, text)
                for name, value in {**kept, **settings}.items():
                    setattr(gpu, name, value)
                try:
                    with _reduce_source(source):
                        got = g.to_numpy(dim0(), g.Layout.contiguous((1, 8192)))
                        if r == 0:
                            err = float(np.abs(got - want).max() / np.abs(want).max())
                            rows[f"explore columns, {label}: max error / max |sum|"] = err
                            again = g.to_numpy(dim0(), g.Layout.contiguous((1, 8192)))
                            same = np.array_equal(got.view(np.uint32), again.view(np.uint32))
                            if first is None:
                                first = got
                            rows[f"explore columns, {label}: the same bits twice / as the first variant"] = (
                                f"{same} / {np.array_equal(got.view(np.uint32), first.view(np.uint32))}"
                            )
                        samples.setdefault(label, []).append((_device_seconds_of(dim0), timed(dim0, sync)))
                except Exception as exc:  # noqa: BLE001
                    rows[f"explore columns, {label}: failed"] = f"{type(exc).__name__}: {exc}"
    finally:
        for name, value in kept.items():
            setattr(gpu, name, value)
    for label, got in samples.items():
        dev_us = [d * 1e6 for d, _ in got]
        host_us = [h * 1e6 for _, h in got]
        rows[f"explore columns, {label}: device (us), median / rounds"] = (
            f"{statistics.median(dev_us):.2f} / " + ", ".join(f"{v:.2f}" for v in dev_us)
        )
        rows[f"explore columns, {label}: host (us), median / rounds"] = (
            f"{statistics.median(host_us):.2f} / " + ", ".join(f"{v:.2f}" for v in host_us)
        )
        rows[f"explore columns, {label}: device (GB/s)"] = gbs(statistics.median(d for d, _ in got))
    if "torch" in samples:
        t_dev = statistics.median(d for d, _ in samples["torch"])
        t_host = statistics.median(h for _, h in samples["torch"])
        for label, got in samples.items():
            if label != "torch":
                rows[f"explore columns, {label}: / torch, device / host"] = (
                    f"{statistics.median(d for d, _ in got) / t_dev:.3f} / "
                    f"{statistics.median(h for _, h in got) / t_host:.3f}"
                )


def explore_conv_chunks(rows: dict) -> None:
    """conv2d / conv_transpose2d (stride 1) / conv1d of the rows above with the im2col columns
    made and multiplied in chunks of several sizes (runtime/gpu/conv.py's CONV_COLUMN_BYTES): whole
    (115 MB, in HBM) or a few batches at a time (the GEMM may read them from the 50 MB L2)."""
    import torch

    import generated as g
    import runtime.gpu.conv as gpu

    dev = g.Device.parse("cuda:0")
    rng = np.random.default_rng(11)
    xs = rng.standard_normal((16, 64, 56, 56), dtype=np.float32)
    ws = (rng.standard_normal((64, 64, 3, 3), dtype=np.float32) / 24).astype(np.float32)
    sx, sw = dev.storage_from_slice(xs), dev.storage_from_slice(ws)
    lx, lw = g.Layout.contiguous(xs.shape), g.Layout.contiguous(ws.shape)
    p2 = g.ConvParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
    pt = g.ConvTransposeParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
    x1 = rng.standard_normal((16, 128, 4096), dtype=np.float32)
    w1 = (rng.standard_normal((128, 128, 3), dtype=np.float32) / 20).astype(np.float32)
    s1, sw1 = dev.storage_from_slice(x1), dev.storage_from_slice(w1)
    p1 = g.ConvParams1D(b_size=16, l_in=4096, c_out=128, c_in=128, k_size=3, padding=1)
    l1, lw1 = g.Layout.contiguous(x1.shape), g.Layout.contiguous(w1.shape)
    cases = {
        "conv2d": lambda: sx.conv2d(lx, sw, lw, p2),
        "conv_transpose2d": lambda: sx.conv_transpose2d(lx, sw, lw, pt),
        "conv1d": lambda: s1.conv1d(l1, sw1, lw1, p1),
    }
    kept = gpu.CONV_COLUMN_BYTES
    try:
        for mb in (512, 64, 32, 16, 8):
            gpu.CONV_COLUMN_BYTES = mb << 20
            for name, fn in cases.items():
                rows[f"explore {name}, columns of {mb} MB: device time (ms)"] = device_seconds(fn) * 1e3
    finally:
        gpu.CONV_COLUMN_BYTES = kept
    del torch


def explore_strided_loads(rows: dict, settings=(4, 8, 16, 32)) -> None:
    """The sum over dim 0 of (8192, 8192) f32 with hip/reduce.hip compiled with other strided
    loads in flight per thread (OPGEN_STRIDED_LOADS): device time, GB/s of the 256 MB read.
    (The scalar path: a thread per column, as before 16-byte loads of several columns.)"""
    import generated as g
    import runtime.gpu.reduce as gpu
    from runtime.gpu.compile import HIP_DIR

    dev = g.Device.parse("cuda:0")
    x = np.random.default_rng(3).standard_normal((8192, 8192), dtype=np.float32)
    sx, layout = dev.storage_from_slice(x), g.Layout.contiguous(x.shape)
    text = (HIP_DIR / "reduce.hip").read_text()
    columns = gpu._reduce_columns
    gpu._reduce_columns = lambda *args: 1  # noqa: E731  (the runtime's grid as for one column a thread)
    try:
        for loads in settings:
            with _reduce_source(f"#define OPGEN_STRIDED_LOADS {loads}\n#define OPGEN_COLUMN_LOADS 0\n" + text):
                seconds = _device_seconds_of(lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (0,)))
            rows[f"explore sum f32 (8192,8192) over dim 0, {loads} strided loads in flight: device (GB/s)"] = (
                4 * x.size / seconds / 1e9
            )
    finally:
        gpu._reduce_columns = columns


def bench_cudnn(rows: dict) -> None:
    """The convolution rows of bench_issue11 and the attention rows of bench/gpu_nn.py, each
    three ways in one run: opgen with cuDNN (runtime/gpu/cudnn.py, the default where it
    loads), opgen without it (its own kernels and the BLAS: vendor_nn.enabled off) and torch.
    Host time (medians of batches of 5 synchronised calls) and device time (CUDA events);
    attention: device time behind a busy fill, as bench/gpu_nn.py times it. Also the dtypes
    the cuDNN path was chosen for (bf16 / f16 / f64 convolutions) and the host cost of a tiny
    convolution (the Python around one cuDNN call)."""
    import torch

    import generated as g
    import runtime.gpu.cudnn as gpu_cudnn
    from bench.gpu_nn import _to_torch
    from runtime.cuda import _rt as rt

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    vendor = rt.vendor_nn
    rows["cudnn: status"] = vendor.status()
    dev = g.Device.parse("cuda:0")
    sync, tsync = dev.synchronize, torch.cuda.synchronize
    rng = np.random.default_rng(11)
    F = torch.nn.functional

    def both(name: str, ours, theirs, want_fn, out_layout, rel: float, flops: float) -> None:
        """ours / theirs: calls; each opgen variant checked against torch first."""
        want = want_fn()
        t_torch = timed(theirs, tsync)
        rows[f"{name}: torch (ms)"] = t_torch * 1e3
        for variant, enabled in (("cudnn", True), ("own", False)):
            vendor.enabled = enabled
            try:
                before, start = sum(vendor.calls.values()), time.perf_counter()
                got = g.to_numpy(ours(), out_layout)
                first = time.perf_counter() - start
                took = sum(vendor.calls.values()) > before
                label = f"{name} [{variant}{'' if took or not enabled else ': cuDNN declined'}]"
                rows[
                    f"{label}: first call, plan built and autotuned (ms)" if enabled else f"{label}: first call (ms)"
                ] = first * 1e3
                if enabled and not took:
                    rows[f"{label}: why"] = vendor.last_refusal
                _check(rows, label, got.astype(np.float64), want, rel)
                t = timed(ours, sync)
                rows[f"{label}: opgen (ms)"] = t * 1e3
                rows[f"{label}: opgen time / torch time"] = t / t_torch
                rows[f"{label}: opgen, device time only (ms)"] = device_seconds(ours) * 1e3
                rows[f"{label}: opgen (TFLOP/s)"] = flops / t / 1e12
            except Exception as exc:  # noqa: BLE001  (reported; the other rows still run)
                rows[f"{name} [{variant}]: failed"] = f"{type(exc).__name__}: {exc}"
        vendor.enabled = True

    def put(array):
        return dev.storage_from_slice(array), _to_torch(array)

    chosen = dict(gpu_cudnn.CONV_DTYPES)
    rows["cudnn: convolution dtypes"] = {op: sorted(dtypes) for op, dtypes in chosen.items()}
    # every float dtype through cuDNN here, to measure the ones not chosen too
    gpu_cudnn.CONV_DTYPES.update({op: frozenset({"float16", "bfloat16", "float32", "float64"}) for op in chosen})
    try:
        _conv_rows(rows, both, put, rng, dev, F, vendor, sync, tsync)
    finally:
        gpu_cudnn.CONV_DTYPES.update(chosen)
    _attention_rows(rows, vendor, dev, rng, F, sync, tsync)


def _conv_rows(rows, both, put, rng, dev, F, vendor, sync, tsync) -> None:
    for dtype, rel in (("f32", 1e-5), ("bf16", 2e-2), ("f16", 2e-3), ("f64", 1e-12)):
        _conv_rows_of(dtype, rel, rows, both, put, rng, dev, F, vendor, sync, tsync)


def _conv_rows_of(dtype, rel, rows, both, put, rng, dev, F, vendor, sync, tsync) -> None:
    import generated as g

    dt = g.DType(dtype).numpy
    xs = rng.standard_normal((16, 64, 56, 56), dtype=np.float32).astype(dt)
    ws = (rng.standard_normal((64, 64, 3, 3), dtype=np.float32) / 24).astype(dt)
    (sx, tx), (sw, tw) = put(xs), put(ws)
    lx, lw = g.Layout.contiguous(xs.shape), g.Layout.contiguous(ws.shape)
    out_l = g.Layout.contiguous((16, 64, 56, 56))
    flops = 2 * 16 * 64 * 56 * 56 * 64 * 9
    p2 = g.ConvParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
    pt = g.ConvTransposeParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
    both(
        f"conv2d {dtype} (16,64,56,56) by (64,64,3,3), padding 1",
        lambda: sx.conv2d(lx, sw, lw, p2),
        lambda: F.conv2d(tx, tw, padding=1),
        lambda: F.conv2d(tx, tw, padding=1).double().cpu().numpy(),
        out_l,
        rel,
        flops,
    )
    both(
        f"conv_transpose2d {dtype} (16,64,56,56) by (64,64,3,3), padding 1",
        lambda: sx.conv_transpose2d(lx, sw, lw, pt),
        lambda: F.conv_transpose2d(tx, tw, padding=1),
        lambda: F.conv_transpose2d(tx, tw, padding=1).double().cpu().numpy(),
        out_l,
        rel,
        flops,
    )
    xu = rng.standard_normal((16, 64, 28, 28), dtype=np.float32).astype(dt)
    wu = (rng.standard_normal((64, 64, 4, 4), dtype=np.float32) / 32).astype(dt)
    (sxu, txu), (swu, twu) = put(xu), put(wu)
    lxu, lwu = g.Layout.contiguous(xu.shape), g.Layout.contiguous(wu.shape)
    pu = g.ConvTransposeParams2D(b_size=16, i_h=28, i_w=28, k_h=4, k_w=4, c_out=64, c_in=64, padding=1, stride=2)
    both(
        f"conv_transpose2d {dtype} (16,64,28,28) by (64,64,4,4), stride 2, padding 1",
        lambda: sxu.conv_transpose2d(lxu, swu, lwu, pu),
        lambda: F.conv_transpose2d(txu, twu, stride=2, padding=1),
        lambda: F.conv_transpose2d(txu, twu, stride=2, padding=1).double().cpu().numpy(),
        out_l,
        rel,
        2 * 16 * 64 * 28 * 28 * 64 * 16,
    )
    x1 = rng.standard_normal((16, 128, 4096), dtype=np.float32).astype(dt)
    w1 = (rng.standard_normal((128, 128, 3), dtype=np.float32) / 20).astype(dt)
    (sx1, tx1), (sw1, tw1) = put(x1), put(w1)
    p1 = g.ConvParams1D(b_size=16, l_in=4096, c_out=128, c_in=128, k_size=3, padding=1)
    l1, lw1 = g.Layout.contiguous(x1.shape), g.Layout.contiguous(w1.shape)
    both(
        f"conv1d {dtype} (16,128,4096) by (128,128,3), padding 1",
        lambda: sx1.conv1d(l1, sw1, lw1, p1),
        lambda: F.conv1d(tx1, tw1, padding=1),
        lambda: F.conv1d(tx1, tw1, padding=1).double().cpu().numpy(),
        l1,
        rel,
        2 * 16 * 128 * 4096 * 128 * 3,
    )
    del sx, tx, sxu, txu, sx1, tx1
    if dtype != "f32":
        return
    # the host cost of one call: a tiny conv2d (8 channels of 8 x 8)
    xt = rng.standard_normal((1, 8, 8, 8), dtype=np.float32)
    wt = rng.standard_normal((8, 8, 3, 3), dtype=np.float32)
    (sxt, txt), (swt, twt) = put(xt), put(wt)
    lxt, lwt = g.Layout.contiguous(xt.shape), g.Layout.contiguous(wt.shape)
    ptiny = g.ConvParams2D(b_size=1, i_h=8, i_w=8, k_h=3, k_w=3, c_out=8, c_in=8, padding=1)
    for variant, enabled in (("cudnn", True), ("own", False)):
        vendor.enabled = enabled
        rows[f"conv2d f32 (1,8,8,8) by (8,8,3,3) [{variant}]: host time per call (us)"] = (
            timed(lambda: sxt.conv2d(lxt, swt, lwt, ptiny), sync, inner=50) * 1e6
        )
    vendor.enabled = True
    rows["conv2d f32 (1,8,8,8) by (8,8,3,3): torch host time per call (us)"] = (
        timed(lambda: F.conv2d(txt, twt, padding=1), tsync, inner=50) * 1e6
    )


def _attention_rows(rows, vendor, dev, rng, F, sync, tsync) -> None:
    """attention bf16 (8, 16, 2048, 128), full and causal: device time as bench/gpu_nn.py."""
    import math

    import generated as g
    from bench.gpu_nn import _opgen_seconds, _to_torch, _torch_seconds

    shape = (8, 16, 2048, 128)
    b, h, s, d = shape
    arrays = [rng.standard_normal(shape, dtype=np.float32).astype(g.DType.BF16.numpy) for _ in range(3)]
    sq, sk, sv = (dev.storage_from_slice(a) for a in arrays)
    tq, tk, tv = (_to_torch(a) for a in arrays)
    layout = g.Layout.contiguous(shape)
    scale = 1 / math.sqrt(d)
    for causal in (False, True):
        name = f"attention bf16 {shape} {'causal' if causal else 'full'}"
        op = g.nn.Sdpa(scale=scale, causal=causal)
        ours = lambda op=op: sq.apply_op3(layout, sk, layout, sv, layout, op)  # noqa: E731
        theirs = lambda causal=causal: F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=scale)  # noqa: E731
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        want = theirs().float().cpu().numpy()
        t_torch = _torch_seconds(theirs, 3)
        rows[f"{name}: torch (TFLOP/s)"] = flops / t_torch / 1e12
        for variant, enabled in (("cudnn", True), ("own", False)):
            vendor.enabled = enabled
            try:
                before = vendor.calls.get("sdpa", 0)
                got = g.to_numpy(ours()[0], layout).astype(np.float32)
                label = f"{name} [{variant}{'' if vendor.calls.get('sdpa', 0) > before or not enabled else ': cuDNN declined'}]"
                rows[f"{label}: max |opgen - torch|"] = float(np.abs(got - want).max())
                t = _opgen_seconds(ours, 3)
                rows[f"{label}: opgen (TFLOP/s)"] = flops / t / 1e12
                rows[f"{label}: opgen / torch"] = t_torch / t
                rows[f"{label}: opgen host wall clock (ms)"] = timed(ours, sync) * 1e3
            except Exception as exc:  # noqa: BLE001
                rows[f"{name} [{variant}]: failed"] = f"{type(exc).__name__}: {exc}"
        vendor.enabled = True
        rows[f"{name}: torch host wall clock (ms)"] = timed(theirs, tsync) * 1e3


def explore_cudnn(rows: dict) -> None:
    """The cuDNN path's settings (runtime/gpu/cudnn.py) on the convolution rows, f32 and bf16:
    the heuristics' first plan (A or B) or autotuning (every plan timed on the first call, the
    default). Host time and device time of each, torch's host time beside them, each result
    checked against torch's first. (A fourth, transposed convolutions of stride 1 as
    convolutions of the flipped kernel, was measured in gpu-notes.md's run and removed.)"""
    import torch

    import generated as g
    import runtime.gpu.cudnn as gpu_cudnn
    from bench.gpu_nn import _to_torch
    from runtime.cuda import _rt as rt

    torch.backends.cudnn.allow_tf32 = False
    vendor = rt.vendor_nn
    dev = g.Device.parse("cuda:0")
    sync, tsync = dev.synchronize, torch.cuda.synchronize
    F = torch.nn.functional
    rng = np.random.default_rng(11)
    settings = {
        "heuristics A": {},
        "heuristics B": {"HEURISTICS": ("B", "FALLBACK")},
        "autotune": {},  # the runtime's autotune switch, below
    }
    kept = {name: getattr(gpu_cudnn, name) for name in ("HEURISTICS", "CONV_DTYPES")}
    kept_autotune = rt.autotune()
    cases = []
    for dtype in ("f32", "bf16"):
        dt = g.DType(dtype).numpy
        x = rng.standard_normal((16, 64, 56, 56), dtype=np.float32).astype(dt)
        w = (rng.standard_normal((64, 64, 3, 3), dtype=np.float32) / 24).astype(dt)
        xu = rng.standard_normal((16, 64, 28, 28), dtype=np.float32).astype(dt)
        wu = (rng.standard_normal((64, 64, 4, 4), dtype=np.float32) / 32).astype(dt)
        x1 = rng.standard_normal((16, 128, 4096), dtype=np.float32).astype(dt)
        w1 = (rng.standard_normal((128, 128, 3), dtype=np.float32) / 20).astype(dt)
        s = {
            name: (dev.storage_from_slice(a), _to_torch(a), g.Layout.contiguous(a.shape))
            for name, a in (("x", x), ("w", w), ("xu", xu), ("wu", wu), ("x1", x1), ("w1", w1))
        }
        p2 = g.ConvParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
        pt = g.ConvTransposeParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
        pu = g.ConvTransposeParams2D(b_size=16, i_h=28, i_w=28, k_h=4, k_w=4, c_out=64, c_in=64, padding=1, stride=2)
        p1 = g.ConvParams1D(b_size=16, l_in=4096, c_out=128, c_in=128, k_size=3, padding=1)
        rel = 1e-5 if dtype == "f32" else 2e-2

        def case(op, a, b, p, shape, torch_fn, s=s):
            (sa, ta, la), (sb, tb, lb) = s[a], s[b]
            return (lambda: getattr(sa, op)(la, sb, lb, p)), (lambda: torch_fn(ta, tb)), g.Layout.contiguous(shape)

        cases += [
            (
                f"conv2d {dtype}",
                rel,
                *case("conv2d", "x", "w", p2, (16, 64, 56, 56), lambda a, b: F.conv2d(a, b, padding=1)),
            ),
            (
                f"conv_transpose2d {dtype} stride 1",
                rel,
                *case(
                    "conv_transpose2d", "x", "w", pt, (16, 64, 56, 56), lambda a, b: F.conv_transpose2d(a, b, padding=1)
                ),
            ),
            (
                f"conv_transpose2d {dtype} stride 2",
                rel,
                *case(
                    "conv_transpose2d",
                    "xu",
                    "wu",
                    pu,
                    (16, 64, 56, 56),
                    lambda a, b: F.conv_transpose2d(a, b, stride=2, padding=1),
                ),
            ),
            (
                f"conv1d {dtype}",
                rel,
                *case("conv1d", "x1", "w1", p1, (16, 128, 4096), lambda a, b: F.conv1d(a, b, padding=1)),
            ),
        ]
    for name, _, _, theirs, _ in cases:
        rows[f"explore cudnn {name}: torch (ms)"] = timed(theirs, tsync) * 1e3
    try:
        for setting, values in settings.items():
            for attr, value in kept.items():
                setattr(gpu_cudnn, attr, value)
            for attr, value in values.items():
                setattr(gpu_cudnn, attr, value)
            rt.set_autotune(setting == "autotune")
            vendor._plans.clear()
            for name, rel, ours, theirs, layout in cases:
                label = f"explore cudnn {name}, {setting}"
                try:
                    before = sum(vendor.calls.values())
                    got = g.to_numpy(ours(), layout).astype(np.float64)
                    if sum(vendor.calls.values()) == before:
                        rows[f"{label}: cuDNN declined"] = vendor.last_refusal
                        continue
                    _check(rows, label, got, theirs().double().cpu().numpy(), rel)
                    t = timed(ours, sync)
                    rows[f"{label}: opgen (ms)"] = t * 1e3
                    rows[f"{label}: opgen, device time only (ms)"] = device_seconds(ours) * 1e3
                    rows[f"{label}: opgen time / torch time"] = t * 1e3 / rows[f"explore cudnn {name}: torch (ms)"]
                except Exception as exc:  # noqa: BLE001
                    rows[f"{label}: failed"] = f"{type(exc).__name__}: {exc}"
    finally:
        for attr, value in kept.items():
            setattr(gpu_cudnn, attr, value)
        rt.set_autotune(kept_autotune)
        vendor._plans.clear()


class _reduce_source:
    """hip/reduce.hip as the runtime compiles it replaced by `text` inside the block (the
    runtime's compiled module, functions and prepared launches of it are forgotten on the
    way in and out)."""

    def __init__(self, text: str) -> None:
        from runtime.cuda import _rt
        from runtime.gpu.compile import HIP_DIR

        self.rt, self.text = _rt, text
        self.source = str(HIP_DIR / "reduce.hip")
        self.kept = (HIP_DIR / "reduce.hip").read_text()

    def forget(self) -> None:
        for cache in (self.rt._modules, self.rt._functions, self.rt._launches):
            for key in [k for k in cache if self.source in k]:
                del cache[key]
        self.rt._direct.clear()

    def __enter__(self):
        self.rt._sources[self.source] = self.text
        self.forget()
        return self

    def __exit__(self, *exc) -> None:
        self.rt._sources[self.source] = self.kept
        self.forget()


def _device_seconds_of(fn) -> float:
    from bench.gpu import device_seconds

    return device_seconds(fn)


def explore_reductions(rows: dict) -> None:
    """Issue 11's two sums under variants, device time (and host time for the sum over all
    dims), in one run: the sum over dim 0 of (8192, 8192) f32 with several columns a thread
    (16-byte loads), a thread's rows a band or interleaved with the other chunks'
    (OPGEN_COLUMN_INTERLEAVED), threads aimed at per multiprocessor (gpu.THREAD_ITEMS_PER_SM);
    the sum over all 64M with a chunk a warp or the blocks interleaved
    (OPGEN_PASS0_INTERLEAVED), warps per multiprocessor (gpu.WARP_ITEMS_PER_SM); and the sum
    over the last dim (the same kernels' warp path), against regressions. A source given by
    OPGEN_REDUCE_BEFORE (a path) is timed as "before", with one column a thread.
    (A first run also compared 2, 4 and 8 rows in flight a thread (OPGEN_COLUMN_LOADS): 2,326
    / 2,332 / 2,329 GB/s with 1,024 threads per SM; and pass 0 with and without block states
    (OPGEN_BLOCK_STATES): the same, 2,673 / 2,673 GB/s: reduce-explore-h100.md.)"""
    import os

    import torch

    import generated as g
    import runtime.gpu.reduce as gpu
    from bench.gpu import timed
    from runtime.gpu.compile import HIP_DIR

    dev = g.Device.parse("cuda:0")
    sync = dev.synchronize
    x = np.random.default_rng(3).standard_normal((8192, 8192), dtype=np.float32)
    sx, layout = dev.storage_from_slice(x), g.Layout.contiguous(x.shape)
    tx = torch.from_numpy(x).cuda()
    text = (HIP_DIR / "reduce.hip").read_text()
    gbs = lambda seconds: 4 * x.size / seconds / 1e9  # noqa: E731
    dim0 = lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (0,))  # noqa: E731
    every = lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (0, 1))  # noqa: E731
    last = lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (1,))  # noqa: E731
    t_torch0 = _device_seconds_torch(lambda: tx.sum(dim=0, keepdim=True))
    rows["explore torch sum over dim 0: device (GB/s)"] = gbs(t_torch0)
    rows["explore torch sum over all dims: device (GB/s)"] = gbs(_device_seconds_torch(lambda: tx.sum()))
    rows["explore torch sum over all dims: host (GB/s)"] = gbs(timed(lambda: tx.sum(), torch.cuda.synchronize))
    kept = (gpu.WARP_ITEMS_PER_SM, gpu.THREAD_ITEMS_PER_SM, gpu._reduce_columns)
    before = os.environ.get("OPGEN_REDUCE_BEFORE")
    try:
        if before:
            gpu._reduce_columns = lambda *args: 1  # noqa: E731
            with _reduce_source(open(before).read()):
                for name, fn in (("dim 0", dim0), ("all dims", every), ("last dim", last)):
                    rows[f"explore before: sum over {name}: device (GB/s)"] = gbs(_device_seconds_of(fn))
                rows["explore before: sum over all dims: host (GB/s)"] = gbs(timed(every, sync))
            gpu._reduce_columns = kept[2]
        for interleaved in (0, 1):
            for per_sm in (1024, 2048, 4096):
                gpu.THREAD_ITEMS_PER_SM = per_sm
                with _reduce_source(f"#define OPGEN_COLUMN_INTERLEAVED {interleaved}\n" + text):
                    rows[
                        f"explore sum over dim 0, columns, rows interleaved {interleaved}, {per_sm} threads/SM: "
                        "device (GB/s)"
                    ] = gbs(_device_seconds_of(dim0))
        gpu.THREAD_ITEMS_PER_SM = kept[1]
        for interleaved in (0, 1):
            for per_sm in (32, 64):
                gpu.WARP_ITEMS_PER_SM = per_sm
                with _reduce_source(f"#define OPGEN_PASS0_INTERLEAVED {interleaved}\n" + text):
                    label = f"explore sum over all dims, interleaved {interleaved}, {per_sm} warps/SM"
                    rows[f"{label}: device (GB/s)"] = gbs(_device_seconds_of(every))
                    rows[f"{label}: host (GB/s)"] = gbs(timed(every, sync))
        gpu.WARP_ITEMS_PER_SM = kept[0]
        with _reduce_source(text):
            rows["explore sum over the last dim, this source: device (GB/s)"] = gbs(_device_seconds_of(last))
    finally:
        gpu.WARP_ITEMS_PER_SM, gpu.THREAD_ITEMS_PER_SM, gpu._reduce_columns = kept


def _device_seconds_torch(fn, repeats: int = 10, inner: int = 5) -> float:
    """Median seconds per call of a torch op on torch's stream (CUDA events), a first call
    keeping the GPU busy while the timed ones are queued (as bench.gpu.device_seconds)."""
    import statistics

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


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["pick-columns"]:
        print(pick_column_settings(sys.argv[2]))

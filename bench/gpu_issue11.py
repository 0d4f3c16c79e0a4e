"""Issue 11's GPU rows, side by side with torch in the same run (`bench/gpu.py --parts
issue11`): index ops, convolutions, arg_sort, the sum over dim 0, matmul through nvmath.

Host time: the median of batches of synchronised calls (bench/gpu.timed), both libraries
timed the same way; "device time" rows time opgen's kernels with CUDA events. Each row is
checked against torch's result first (a wrong fast result is not a result)."""

from __future__ import annotations

import numpy as np

from bench.gpu import device_seconds, timed


def _pair(rows: dict, name: str, ours, theirs, sync, tsync, unit_work: float | None = None, unit: str = "",
          repeats: int = 10) -> None:
    """Time both; rows: each's ms, opgen / torch (time ratio, lower is better), and the
    work rate where `unit_work` (units per call) is given."""
    t_ours, t_torch = timed(ours, sync, repeats=repeats), timed(theirs, tsync, repeats=repeats)
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
    _check(rows, "gather (4096,4096) f32 by (4096,1024) i64 ids",
           g.to_numpy(sx.gather(lx, si, li, 1), li), torch.gather(tx, 1, ti).cpu().numpy())
    _pair(rows, "gather (4096,4096) f32 by (4096,1024) i64 ids", lambda: sx.gather(lx, si, li, 1),
          lambda: torch.gather(tx, 1, ti), sync, tsync)
    del sx, tx, si, ti

    # index_select: 8,192 i64 ids of an embedding table (32000, 4096) f32 along dim 0
    table = rng.standard_normal((32000, 4096), dtype=np.float32)
    rows_ids = rng.integers(0, 32000, 8192).astype(np.int64)
    (st, tt), (sr, tr) = put(table), put(rows_ids)
    lt, lr = g.Layout.contiguous(table.shape), g.Layout.contiguous(rows_ids.shape)
    name = "index_select 8,192 i64 ids of (32000,4096) f32, dim 0"
    _check(rows, name, g.to_numpy(st.index_select(sr, lt, lr, 0), g.Layout.contiguous((8192, 4096))),
           torch.index_select(tt, 0, tr).cpu().numpy())
    _pair(rows, name, lambda: st.index_select(sr, lt, lr, 0), lambda: torch.index_select(tt, 0, tr), sync, tsync,
          2 * 8192 * 4096 * 4 / 1e9, "GB/s")
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
    _check(rows, name, g.to_numpy(sxc.conv2d(lxc, swc, lwc, p2), out_l),
           F.conv2d(txc, twc, padding=1).cpu().numpy(), 1e-5)
    _pair(rows, name, lambda: sxc.conv2d(lxc, swc, lwc, p2), lambda: F.conv2d(txc, twc, padding=1), sync, tsync,
          flops, "TFLOP/s")
    pt = g.ConvTransposeParams2D(b_size=16, i_h=56, i_w=56, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
    name = "conv_transpose2d f32 (16,64,56,56) by (64,64,3,3), padding 1"
    _check(rows, name, g.to_numpy(sxc.conv_transpose2d(lxc, swc, lwc, pt), out_l),
           F.conv_transpose2d(txc, twc, padding=1).cpu().numpy(), 1e-5)
    _pair(rows, name, lambda: sxc.conv_transpose2d(lxc, swc, lwc, pt),
          lambda: F.conv_transpose2d(txc, twc, padding=1), sync, tsync, flops, "TFLOP/s")
    xu = rng.standard_normal((16, 64, 28, 28), dtype=np.float32)
    wu = (rng.standard_normal((64, 64, 4, 4), dtype=np.float32) / 32).astype(np.float32)
    (sxu, txu), (swu, twu) = put(xu), put(wu)
    lxu, lwu = g.Layout.contiguous(xu.shape), g.Layout.contiguous(wu.shape)
    pu = g.ConvTransposeParams2D(b_size=16, i_h=28, i_w=28, k_h=4, k_w=4, c_out=64, c_in=64, padding=1, stride=2)
    name = "conv_transpose2d f32 (16,64,28,28) by (64,64,4,4), stride 2, padding 1"
    _check(rows, name, g.to_numpy(sxu.conv_transpose2d(lxu, swu, lwu, pu), out_l),
           F.conv_transpose2d(txu, twu, stride=2, padding=1).cpu().numpy(), 1e-5)
    _pair(rows, name, lambda: sxu.conv_transpose2d(lxu, swu, lwu, pu),
          lambda: F.conv_transpose2d(txu, twu, stride=2, padding=1), sync, tsync,
          2 * 16 * 64 * 28 * 28 * 64 * 16 / 1e12, "TFLOP/s")
    x1 = rng.standard_normal((16, 128, 4096), dtype=np.float32)
    w1 = (rng.standard_normal((128, 128, 3), dtype=np.float32) / 20).astype(np.float32)
    (sx1, tx1), (sw1, tw1) = put(x1), put(w1)
    p1 = g.ConvParams1D(b_size=16, l_in=4096, c_out=128, c_in=128, k_size=3, padding=1)
    l1, lw1 = g.Layout.contiguous(x1.shape), g.Layout.contiguous(w1.shape)
    name = "conv1d f32 (16,128,4096) by (128,128,3), padding 1"
    _check(rows, name, g.to_numpy(sx1.conv1d(l1, sw1, lw1, p1), l1), F.conv1d(tx1, tw1, padding=1).cpu().numpy(), 1e-5)
    _pair(rows, name, lambda: sx1.conv1d(l1, sw1, lw1, p1), lambda: F.conv1d(tx1, tw1, padding=1), sync, tsync,
          2 * 16 * 128 * 4096 * 128 * 3 / 1e12, "TFLOP/s")
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

    # sum over dim 0 of (8192, 8192) f32: reads 256 MB
    xr = rng.standard_normal((8192, 8192), dtype=np.float32)
    sr_, tr_ = put(xr)
    lrr = g.Layout.contiguous(xr.shape)
    name = "sum f32 (8192,8192) over dim 0"
    _check(rows, name, g.to_numpy(sr_.reduce_op(g.ReduceOp.SUM, lrr, (0,)), g.Layout.contiguous((1, 8192))),
           tr_.sum(dim=0, keepdim=True).cpu().numpy(), 1e-5)
    _pair(rows, name, lambda: sr_.reduce_op(g.ReduceOp.SUM, lrr, (0,)), lambda: tr_.sum(dim=0, keepdim=True),
          sync, tsync, 4 * 8192 * 8192 / 1e9, "GB/s")


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
    cases = {"conv2d": lambda: sx.conv2d(lx, sw, lw, p2), "conv_transpose2d": lambda: sx.conv_transpose2d(lx, sw, lw, pt),
             "conv1d": lambda: s1.conv1d(l1, sw1, lw1, p1)}
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
    loads in flight per thread (OPGEN_STRIDED_LOADS): device time, GB/s of the 256 MB read."""
    import generated as g
    import runtime.gpu.compile as gpu
    from runtime.cuda import _rt as rt

    dev = g.Device.parse("cuda:0")
    x = np.random.default_rng(3).standard_normal((8192, 8192), dtype=np.float32)
    sx, layout = dev.storage_from_slice(x), g.Layout.contiguous(x.shape)
    source = str(gpu.HIP_DIR / "reduce.hip")
    text = (gpu.HIP_DIR / "reduce.hip").read_text()

    def forget() -> None:  # the runtime's compiled module and functions of reduce.hip
        for cache in (rt._modules, rt._functions, rt._launches):
            for key in [k for k in cache if source in k]:
                del cache[key]

    try:
        for loads in settings:
            rt._sources[source] = f"#define OPGEN_STRIDED_LOADS {loads}\n" + text
            forget()
            seconds = device_seconds(lambda: sx.reduce_op(g.ReduceOp.SUM, layout, (0,)))
            rows[f"explore sum f32 (8192,8192) over dim 0, {loads} strided loads in flight: device (GB/s)"] = (
                4 * x.size / seconds / 1e9)
    finally:
        rt._sources[source] = text
        forget()

"""Elementwise ops on the GPU: bandwidth of unary exp and binary add over 64M f32, contiguous and
transposed, as a share of a device-to-device copy timed in turn with each, beside torch; the
self-checks of the tiled paths (transposed, batched and offset views) against the cpu backend;
and the exploration of the launch grid's cap (`--explore grid`).

Bandwidth counts bytes read and written; a figure is the median of timed batches after
warm-up, host wall clock around a synchronised batch (ops of milliseconds: launch cost is noise),
with opgen's device time beside it."""

from __future__ import annotations

import time

import numpy as np

from bench.compare import FastPathChecks
from bench.timing import cuda_runtime, device_seconds, timed, timed_in_turn

N = 64 * 1024 * 1024  # elements


def gb_per_s(nbytes: float, seconds: float) -> float:
    return nbytes / seconds / 1e9


def bandwidth(rows: dict) -> None:
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

    # The GPU busy for a second first: after the compile part it idles (a minute on a fresh
    # machine), and a first run on one read the sum over all dims at 85.7% of copy bandwidth
    # against 90-91% in the runs after it (torch's sum 2% slower too).
    deadline = time.perf_counter() + 1.0
    while time.perf_counter() < deadline:
        for _ in range(20):
            ty.copy_(tx)
        tsync()
    t_copy = timed(lambda: ty.copy_(tx), tsync)
    rows["torch device-to-device copy (GB/s)"] = gb_per_s(2 * 4 * N, t_copy)
    t_clone = timed(lambda: a.try_clone(flat), sync)
    rows["opgen try_clone, cuMemcpyDtoD (GB/s)"] = gb_per_s(2 * 4 * N, t_clone)

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
        t_copy, t_ours, t_torch = timed_in_turn((copy, (ours, sync), (theirs, tsync)))
        bw_ours, bw_torch = gb_per_s(arrays * 4 * N, t_ours), gb_per_s(arrays * 4 * N, t_torch)
        rows[f"{name}: opgen (GB/s)"] = bw_ours
        rows[f"{name}: torch (GB/s)"] = bw_torch
        rows[f"{name}: copy timed in turn (GB/s)"] = gb_per_s(2 * 4 * N, t_copy)
        rows[f"{name}: opgen / copy bandwidth"] = bw_ours / gb_per_s(2 * 4 * N, t_copy)
        rows[f"{name}: opgen / torch"] = bw_ours / bw_torch
        rows[f"{name}: opgen, device time only (GB/s)"] = gb_per_s(arrays * 4 * N, device_seconds(ours))


def check_tiles(checks: FastPathChecks) -> None:
    """Unary and binary over transposed / batched / offset views (the tiled paths, ragged edges
    and batches), and a contiguous operand beside a strided one, against the cpu backend."""
    import generated as g

    dev, cpu = g.Device.parse("cuda:0"), g.Device.parse("cpu")
    views = [
        ("(1000, 777) transposed", (1000, 777), lambda lay: lay.transpose(0, 1)),
        ("(3, 100, 67) batch of transposes", (3, 100, 67), lambda lay: lay.transpose(1, 2)),
        (
            "(33, 65) transposed, offset",
            (40, 70),
            lambda lay: lay.narrow(0, 3, 33).narrow(1, 2, 65).transpose(0, 1),
        ),
    ]
    for dtype in ("f32", "f64", "bf16", "u8", "i64"):
        dt = g.DType(dtype)
        for name, shape, make_view in views:
            x, y = checks.data(dtype, shape, positive=True), checks.data(dtype, shape, positive=True)
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
            last = len(res[cpu.backend]) - 1  # to_dtype: an f32 result
            for i, (want, got) in enumerate(zip(res[cpu.backend], res[dev.backend])):
                checks.compare(f"tiles {dtype} {name} #{i}", got, want, dtype if i < last else "f32")


def explore_grid(rows: dict) -> None:
    """Device time of the transposed exp with the elementwise grid capped at 16 to 128 blocks
    per multiprocessor (GpuRuntime.geometry; the runtime's cap is 64)."""
    import generated as g

    rt = cuda_runtime()
    dev = g.Device.parse("cuda:0")
    a = dev.storage_from_slice(np.random.default_rng(0).standard_normal(N).astype(np.float32))
    sms = rt.driver.multiprocessors(0)
    square = g.Layout.contiguous((8192, N // 8192)).transpose(0, 1)
    original = rt.geometry
    try:
        for per_sm in (16, 32, 64, 128):
            rt.geometry = lambda numel, ordinal, per_sm=per_sm: max(1, min(-(-numel // 256), sms * per_sm))
            rows[f"explore exp f32 64M transposed, grid {per_sm}/SM: device GB/s"] = gb_per_s(
                8 * N, device_seconds(lambda: a.unary(g.UnaryOp.EXP, square))
            )
    finally:
        rt.geometry = original

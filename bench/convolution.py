"""Convolutions on the GPU, f32 with TF32 off on both sides, beside torch in one process, each
checked against torch's result first: conv2d (16,64,56,56) by (64,64,3,3), conv_transpose2d of
stride 1 and 2, conv1d (16,128,4096) by (128,128,3). Host time of pairs timed in turn, opgen's
device time and TFLOP/s beside it.

Explorations (bench/gpu.py --explore NAME), each re-checking a choice of runtime/gpu/conv.py or
runtime/gpu/cudnn.py:
- `conv-chunks`: the im2col columns made and multiplied whole or a few batches at a time
  (CONV_COLUMN_BYTES);
- `cudnn`: each convolution three ways, through cuDNN, through opgen's own kernels and the BLAS,
  and torch's, for f32, bf16, f16 and f64 (which dtypes CONV_DTYPES sends to cuDNN), and the host
  cost of a tiny convolution (`cudnn-attention`, in bench/nn.py: attention the same ways);
- `cudnn-plans`: the heuristics' first plan (A or B) against autotuning (the runtime's autotune switch, HEURISTICS)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.compare import check, pair, to_torch
from bench.timing import cuda_runtime, device_seconds, timed

# (name, method, input shape, kernel shape, kernel scale, params' keywords, torch call's keywords)
SHAPES = (
    ("conv2d", "conv2d", (16, 64, 56, 56), (64, 64, 3, 3), 24, {"padding": 1}),
    ("conv_transpose2d", "conv_transpose2d", (16, 64, 56, 56), (64, 64, 3, 3), 24, {"padding": 1}),
    ("conv_transpose2d", "conv_transpose2d", (16, 64, 28, 28), (64, 64, 4, 4), 32, {"padding": 1, "stride": 2}),
    ("conv1d", "conv1d", (16, 128, 4096), (128, 128, 3), 20, {"padding": 1}),
)


def _name(op: str, dtype: str, x: tuple, w: tuple, keywords: dict) -> str:
    """conv2d f32 (16,64,56,56) by (64,64,3,3), padding 1 (stride before padding where given)."""
    shape = lambda s: "(" + ",".join(map(str, s)) + ")"  # noqa: E731
    extra = ", ".join(f"{k} {keywords[k]}" for k in ("stride", "padding") if k in keywords)
    return f"{op} {dtype} {shape(x)} by {shape(w)}, {extra}"


def _params(op: str, x: tuple, w: tuple, keywords: dict) -> Any:
    import generated as g

    if op == "conv1d":
        return g.ConvParams1D(b_size=x[0], l_in=x[2], c_out=w[0], c_in=w[1], k_size=w[2], **keywords)
    cls = g.ConvParams2D if op == "conv2d" else g.ConvTransposeParams2D
    return cls(b_size=x[0], i_h=x[2], i_w=x[3], k_h=w[2], k_w=w[3], c_out=w[0], c_in=w[1], **keywords)


def _output_shape(op: str, x: tuple, w: tuple, keywords: dict) -> tuple:
    """The output's shape: the input's lengths for these stride-1, padding-1 convolutions of odd
    kernels; a transposed convolution's (in - 1) * stride - 2 * padding + kernel."""
    if op != "conv_transpose2d":
        return (x[0], w[0], *x[2:])
    stride, padding = keywords.get("stride", 1), keywords["padding"]
    return (x[0], w[1], *((n - 1) * stride - 2 * padding + k for n, k in zip(x[2:], w[2:])))


def _flops(op: str, x: tuple, w: tuple, keywords: dict) -> float:
    """2 x the multiply-adds: per output (stride 1) or per input (transposed) element."""
    if op == "conv1d":
        return 2 * x[0] * w[0] * x[2] * w[1] * w[2]
    return 2 * x[0] * w[1] * x[2] * x[3] * w[0] * w[2] * w[3]


def _cases(dtype: str, rng: np.random.Generator, put: Callable) -> list[tuple]:
    """(name, opgen call, torch call, output layout, flops) of each of SHAPES in `dtype`."""
    import torch

    import generated as g

    F = torch.nn.functional
    dt = g.DType(dtype).numpy
    cases = []
    for op, method, xs, ws, scale, keywords in SHAPES:
        x = rng.standard_normal(xs, dtype=np.float32).astype(dt)
        w = (rng.standard_normal(ws, dtype=np.float32) / scale).astype(dt)
        (sx, tx), (sw, tw) = put(x), put(w)
        lx, lw = g.Layout.contiguous(xs), g.Layout.contiguous(ws)
        p = _params(op, xs, ws, keywords)
        out = g.Layout.contiguous(_output_shape(op, xs, ws, keywords))
        ours = lambda sx=sx, lx=lx, sw=sw, lw=lw, p=p, method=method: getattr(sx, method)(lx, sw, lw, p)  # noqa: E731
        theirs = lambda tx=tx, tw=tw, op=op, kw=keywords: getattr(F, op)(tx, tw, **kw)  # noqa: E731
        cases.append((_name(op, dtype, xs, ws, keywords), ours, theirs, out, _flops(op, xs, ws, keywords)))
    return cases


def convolution(rows: dict) -> None:
    import torch

    import generated as g

    torch.backends.cudnn.allow_tf32 = False  # f32 convolutions in f32, as opgen computes them
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = g.Device.parse("cuda:0")
    sync, tsync = dev.synchronize, torch.cuda.synchronize
    rng = np.random.default_rng(11)
    put = lambda a: (dev.storage_from_slice(a), torch.from_numpy(a).cuda())  # noqa: E731
    for name, ours, theirs, out, flops in _cases("f32", rng, put):
        check(rows, name, g.to_numpy(ours(), out), theirs().cpu().numpy(), 1e-5)
        pair(rows, name, ours, theirs, sync, tsync, flops / 1e12, "TFLOP/s")


def explore_chunks(rows: dict) -> None:
    """conv2d / conv_transpose2d (stride 1) / conv1d with the im2col columns made and multiplied
    in chunks of several sizes (CONV_COLUMN_BYTES): whole (115 MB, in HBM) or a few batches at a
    time (the GEMM may read them from the 50 MB L2). Device time."""
    import generated as g
    import runtime.gpu.conv as gpu

    dev = g.Device.parse("cuda:0")
    rng = np.random.default_rng(11)
    put = lambda a: (dev.storage_from_slice(a), None)  # noqa: E731  (torch's side is not timed here)
    cases = {name.split(" ")[0]: ours for name, ours, _, _, _ in _cases("f32", rng, put) if "stride" not in name}
    kept = gpu.CONV_COLUMN_BYTES
    try:
        for mb in (512, 64, 32, 16, 8):
            gpu.CONV_COLUMN_BYTES = mb << 20
            for name, fn in cases.items():
                rows[f"explore {name}, columns of {mb} MB: device time (ms)"] = device_seconds(fn) * 1e3
    finally:
        gpu.CONV_COLUMN_BYTES = kept


class _Paths:
    """One convolution timed three ways: through cuDNN, through opgen's own kernels (the
    vendor path off) and torch's, each opgen result checked against torch's first."""

    def __init__(self, rows: dict, vendor: Any, sync: Callable, tsync: Callable) -> None:
        self.rows, self.vendor, self.sync, self.tsync = rows, vendor, sync, tsync

    def time(self, name: str, ours: Callable, theirs: Callable, out_layout: Any, rel: float, flops: float) -> None:
        import generated as g

        rows, vendor = self.rows, self.vendor
        want = theirs().double().cpu().numpy()
        t_torch = timed(theirs, self.tsync)
        rows[f"{name}: torch (ms)"] = t_torch * 1e3
        for variant, enabled in (("cudnn", True), ("own", False)):
            vendor.enabled = enabled
            try:
                before, start = sum(vendor.calls.values()), time.perf_counter()
                got = g.to_numpy(ours(), out_layout)
                first = time.perf_counter() - start
                took = sum(vendor.calls.values()) > before
                label = f"{name} [{variant}{'' if took or not enabled else ': cuDNN declined'}]"
                first_label = "first call, plan built and autotuned" if enabled else "first call"
                rows[f"{label}: {first_label} (ms)"] = first * 1e3
                if enabled and not took:
                    rows[f"{label}: why"] = vendor.last_refusal
                check(rows, label, got.astype(np.float64), want, rel)
                t = timed(ours, self.sync)
                rows[f"{label}: opgen (ms)"] = t * 1e3
                rows[f"{label}: opgen time / torch time"] = t / t_torch
                rows[f"{label}: opgen, device time only (ms)"] = device_seconds(ours) * 1e3
                rows[f"{label}: opgen (TFLOP/s)"] = flops / t / 1e12
            except Exception as exc:  # noqa: BLE001  (reported; the other rows still run)
                rows[f"{name} [{variant}]: failed"] = f"{type(exc).__name__}: {exc}"
        vendor.enabled = True


RELATIVE = (("f32", 1e-5), ("bf16", 2e-2), ("f16", 2e-3), ("f64", 1e-12))


def explore_cudnn(rows: dict) -> None:
    """The convolutions through cuDNN (runtime/gpu/cudnn.py, the default where it loads),
    through opgen's own kernels and the BLAS (vendor_nn.enabled off) and torch's, host and
    device time, for every float dtype (CONV_DTYPES widened to all of them, to measure those
    not chosen too); then the host cost of a tiny conv2d (the Python around one cuDNN call)."""
    import torch

    import generated as g
    import runtime.gpu.cudnn as gpu_cudnn

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    vendor = cuda_runtime().vendor_nn
    rows["cudnn: status"] = vendor.status()
    dev = g.Device.parse("cuda:0")
    paths = _Paths(rows, vendor, dev.synchronize, torch.cuda.synchronize)
    rng = np.random.default_rng(11)
    put = lambda a: (dev.storage_from_slice(a), to_torch(a))  # noqa: E731
    chosen = dict(gpu_cudnn.CONV_DTYPES)
    rows["cudnn: convolution dtypes"] = {op: sorted(dtypes) for op, dtypes in chosen.items()}
    gpu_cudnn.CONV_DTYPES.update({op: frozenset({"float16", "bfloat16", "float32", "float64"}) for op in chosen})
    try:
        for dtype, rel in RELATIVE:
            for name, ours, theirs, out, flops in _cases(dtype, rng, put):
                paths.time(name, ours, theirs, out, rel, flops)
    finally:
        gpu_cudnn.CONV_DTYPES.update(chosen)
    _tiny_conv(rows, vendor, dev, rng, put)


def _tiny_conv(rows: dict, vendor: Any, dev: Any, rng: np.random.Generator, put: Callable) -> None:
    """The host cost of one call: a conv2d of 8 channels of 8 x 8, each path, and torch's."""
    import torch

    import generated as g

    xt = rng.standard_normal((1, 8, 8, 8), dtype=np.float32)
    wt = rng.standard_normal((8, 8, 3, 3), dtype=np.float32)
    (sxt, txt), (swt, twt) = put(xt), put(wt)
    lxt, lwt = g.Layout.contiguous(xt.shape), g.Layout.contiguous(wt.shape)
    ptiny = g.ConvParams2D(b_size=1, i_h=8, i_w=8, k_h=3, k_w=3, c_out=8, c_in=8, padding=1)
    for variant, enabled in (("cudnn", True), ("own", False)):
        vendor.enabled = enabled
        rows[f"conv2d f32 (1,8,8,8) by (8,8,3,3) [{variant}]: host time per call (us)"] = (
            timed(lambda: sxt.conv2d(lxt, swt, lwt, ptiny), dev.synchronize, inner=50) * 1e6
        )
    vendor.enabled = True
    rows["conv2d f32 (1,8,8,8) by (8,8,3,3): torch host time per call (us)"] = (
        timed(lambda: torch.nn.functional.conv2d(txt, twt, padding=1), torch.cuda.synchronize, inner=50) * 1e6
    )


def explore_cudnn_plans(rows: dict) -> None:
    """The cuDNN path's plan choice on the convolutions, f32 and bf16: the heuristics' first
    plan (A or B) or autotuning (every plan timed on the first call, the default). Host and
    device time of each, torch's host time beside them, each result checked against torch's."""
    import torch

    import generated as g
    import runtime.gpu.cudnn as gpu_cudnn

    torch.backends.cudnn.allow_tf32 = False
    vendor = cuda_runtime().vendor_nn
    dev = g.Device.parse("cuda:0")
    rng = np.random.default_rng(11)
    put = lambda a: (dev.storage_from_slice(a), to_torch(a))  # noqa: E731
    settings = {  # (the runtime's autotune switch, the module's settings)
        "heuristics A": (False, {}),
        "heuristics B": (False, {"HEURISTICS": ("B", "FALLBACK")}),
        "autotune": (True, {}),
    }
    switches = cuda_runtime().switches
    kept_autotune = switches.autotune
    kept = {name: getattr(gpu_cudnn, name) for name in ("HEURISTICS", "CONV_DTYPES")}
    cases = [(name, rel, *case) for dtype, rel in RELATIVE[:2] for name, *case in _cases(dtype, rng, put)]
    for name, _, _, theirs, _, _ in cases:
        rows[f"explore cudnn {name}: torch (ms)"] = timed(theirs, torch.cuda.synchronize) * 1e3
    try:
        for setting, (autotune, values) in settings.items():
            switches.autotune = autotune
            for attr, value in {**kept, **values}.items():
                setattr(gpu_cudnn, attr, value)
            vendor._plans.clear()
            for name, rel, ours, theirs, layout, _ in cases:
                _plan_rows(rows, f"explore cudnn {name}, {setting}", name, vendor, ours, theirs, layout, rel, dev)
    finally:
        switches.autotune = kept_autotune
        for attr, value in kept.items():
            setattr(gpu_cudnn, attr, value)
        vendor._plans.clear()


def _plan_rows(rows, label, name, vendor, ours, theirs, layout, rel, dev) -> None:
    import generated as g

    try:
        before = sum(vendor.calls.values())
        got = g.to_numpy(ours(), layout).astype(np.float64)
        if sum(vendor.calls.values()) == before:
            rows[f"{label}: cuDNN declined"] = vendor.last_refusal
            return
        check(rows, label, got, theirs().double().cpu().numpy(), rel)
        t = timed(ours, dev.synchronize)
        rows[f"{label}: opgen (ms)"] = t * 1e3
        rows[f"{label}: opgen, device time only (ms)"] = device_seconds(ours) * 1e3
        rows[f"{label}: opgen time / torch time"] = t * 1e3 / rows[f"explore cudnn {name}: torch (ms)"]
    except Exception as exc:  # noqa: BLE001
        rows[f"{label}: failed"] = f"{type(exc).__name__}: {exc}"

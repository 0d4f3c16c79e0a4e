"""NN ops on the GPU (hip/nn.hip and hip/attention.hip through g.nn), beside torch in one run:

- softmax_last_dim, rms_norm, layer_norm over (4096, 4096), f32 and bf16, against
  torch.softmax, torch.nn.functional.rms_norm and torch.nn.functional.layer_norm: GB/s
  (bytes read and written), the share of the copy bandwidth of the same bytes (a torch
  device-to-device copy of the input), the ratio to torch;
- sdpa bf16, batch 8, 16 heads, 2048 queries and keys, head dim 128, causal and not, against
  torch.nn.functional.scaled_dot_product_attention: TFLOP/s (4 b h s^2 d, half of it when
  causal: the work a causal kernel does) and the ratio to torch;
- arg_sort of (4096, 4096) and (64, 65536) f32 rows against torch.argsort (host time of pairs
  timed in turn).

Figures of the row ops and attention are device time: CUDA events around a batch of calls
queued behind a long fill of a scratch buffer on the same stream, so that the host's cost per
call (opgen's is larger than torch's, and larger than a (4096, 4096) bf16 kernel) does not
leave the GPU idle between calls (bench/timing.py). Host wall-clock figures are beside them.

Explorations (bench/gpu.py --explore NAME): `nn-rows`, the row kernels compiled with other
bytes of a row per thread (OPGEN_ROW_BYTES, the runtime's ROW_BYTES alike); `cudnn-attention`, attention
through cuDNN and through opgen's own kernel (with bench/convolution.py's rows)."""

from __future__ import annotations

import math

from bench.compare import check, max_difference, pair, to_torch
from bench.timing import (
    cuda_runtime,
    seconds_behind_fill,
    timed,
    torch_seconds_behind_fill,
)

ROWS = COLS = 4096
SDPA_SHAPE = (8, 16, 2048, 128)  # batch, heads, sequence, head dim
EPS = 1e-5
CALLS = 20  # per timed batch of the row ops


def _host_arrays(dtype: str):
    """x (ROWS, COLS) and alpha, beta (COLS,), as numpy arrays of `dtype`."""
    import numpy as np

    import generated as g

    rng = np.random.default_rng(0)
    dt = g.DType(dtype).numpy
    return (
        rng.standard_normal((ROWS, COLS), dtype=np.float32).astype(dt),
        rng.uniform(0.5, 1.5, COLS).astype(dt),
        rng.uniform(-0.5, 0.5, COLS).astype(dt),
    )


def _row_cases(dtype: str):
    """({op: (opgen call, torch call, bytes read and written)}, the layout of x and the results)."""
    import torch
    import torch.nn.functional as F

    import generated as g

    dev = g.Device.parse("cuda:0")
    x, alpha, beta = _host_arrays(dtype)
    sx, sa, sb = (dev.storage_from_slice(a) for a in (x, alpha, beta))
    tx, ta, tb = (to_torch(a) for a in (x, alpha, beta))
    lx, lv = g.Layout.contiguous(x.shape), g.Layout.contiguous(alpha.shape)
    io = 2 * x.nbytes
    softmax, rms, ln = g.nn.SoftmaxLastDim(), g.nn.RmsNorm(eps=EPS), g.nn.LayerNorm(eps=EPS)
    cases = {
        "softmax_last_dim": (lambda: sx.apply_op1(lx, softmax), lambda: torch.softmax(tx, dim=-1), io),
        "layer_norm": (
            lambda: sx.apply_op3(lx, sa, lv, sb, lv, ln),
            lambda: F.layer_norm(tx, (COLS,), ta, tb, EPS),
            io + 2 * alpha.nbytes,
        ),
    }
    if hasattr(F, "rms_norm"):  # torch >= 2.4
        cases["rms_norm"] = (
            lambda: sx.apply_op2(lx, sa, lv, rms),
            lambda: F.rms_norm(tx, (COLS,), ta, EPS),
            io + alpha.nbytes,
        )
    return cases, lx


def rows_ops(rows: dict) -> None:
    import torch

    import generated as g

    gb = lambda nbytes, seconds: nbytes / seconds / 1e9  # noqa: E731
    for dtype in ("f32", "bf16"):
        cases, layout = _row_cases(dtype)
        x = to_torch(_host_arrays(dtype)[0])
        y = torch.empty_like(x)
        io = 2 * x.numel() * x.element_size()
        copy_bw = gb(io, torch_seconds_behind_fill(lambda: y.copy_(x), CALLS))
        rows[f"nn (4096, 4096) {dtype}: torch copy of the input, device time (GB/s)"] = copy_bw
        for name, (ours, theirs, nbytes) in cases.items():
            label = f"nn {name} (4096, 4096) {dtype}"
            bw_ours, bw_torch = (
                gb(nbytes, seconds_behind_fill(ours, CALLS)),
                gb(nbytes, torch_seconds_behind_fill(theirs, CALLS)),
            )
            rows[f"{label}: opgen, device time (GB/s)"] = bw_ours
            rows[f"{label}: torch, device time (GB/s)"] = bw_torch
            rows[f"{label}: opgen / copy bandwidth"] = bw_ours / copy_bw
            rows[f"{label}: opgen / torch"] = bw_ours / bw_torch
            rows[f"{label}: opgen, host wall clock (GB/s)"] = gb(
                nbytes, timed(ours, lambda: cuda_runtime().synchronize(0))
            )
            rows[f"{label}: max |opgen - torch|"] = max_difference(g.to_numpy(ours()[0], layout), theirs())
        if "rms_norm" not in cases:
            rows[f"nn rms_norm (4096, 4096) {dtype}: torch"] = f"torch {torch.__version__} has no rms_norm"


def sdpa(rows: dict) -> None:
    import numpy as np
    import torch.nn.functional as F

    import generated as g

    b, h, s, d = SDPA_SHAPE
    dev = g.Device.parse("cuda:0")
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(SDPA_SHAPE, dtype=np.float32).astype(g.DType.BF16.numpy) for _ in range(3)]
    sq, sk, sv = (dev.storage_from_slice(a) for a in arrays)
    tq, tk, tv = (to_torch(a) for a in arrays)
    layout = g.Layout.contiguous(SDPA_SHAPE)
    scale = 1 / math.sqrt(d)
    for causal in (False, True):
        label = f"nn sdpa bf16 {SDPA_SHAPE} {'causal' if causal else 'full'}"
        op = g.nn.Sdpa(scale=scale, causal=causal)
        ours = lambda op=op: sq.apply_op3(layout, sk, layout, sv, layout, op)  # noqa: E731
        theirs = lambda causal=causal: F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=scale)  # noqa: E731
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        t_ours, t_torch = seconds_behind_fill(ours, 3), torch_seconds_behind_fill(theirs, 3)
        rows[f"{label}: opgen (TFLOP/s)"] = flops / t_ours / 1e12
        rows[f"{label}: torch (TFLOP/s)"] = flops / t_torch / 1e12
        rows[f"{label}: opgen / torch"] = t_torch / t_ours
        rows[f"{label}: max |opgen - torch|"] = max_difference(g.to_numpy(ours()[0], layout), theirs())


def nn(rows: dict) -> None:
    """Every figure above into `rows` (bench/gpu.py's table); a failed half says so and the
    other still runs."""
    for part in (rows_ops, sdpa):
        try:
            part(rows)
        except Exception as exc:  # noqa: BLE001  (reported in the table, as bench/gpu.py does)
            rows[f"nn {part.__name__} failed"] = f"{type(exc).__name__}: {exc}"


def explore_row_bytes(rows: dict, settings=(32, 64, 128)) -> None:
    """Device time of the row kernels compiled from copies of hip/nn.hip with other bytes of
    a row per thread (OPGEN_ROW_BYTES), on the bench's shapes,
    with the runtime's geometry for that setting: GB/s, share of copy bandwidth, registers
    and resident blocks per multiprocessor, and the largest difference from torch."""
    import ctypes
    import shutil
    import tempfile
    from pathlib import Path

    import torch
    import torch.nn.functional as F
    from cuda.bindings import driver as cu

    from runtime.gpu import nn as gpu_nn
    from runtime.gpu.compile import HIP_DIR

    rt = cuda_runtime()

    text = (HIP_DIR / "nn.hip").read_text()
    tmp = Path(tempfile.mkdtemp(prefix="opgen-rows-"))
    stream = rt.stream(0)
    sms = rt.driver.multiprocessors(0)
    size_t, ptr = ctypes.c_size_t, ctypes.c_void_p
    for dtype in ("f32", "bf16"):
        x, alpha, beta = (to_torch(a) for a in _host_arrays(dtype))
        out = torch.empty_like(x)
        y = torch.empty_like(x)
        copy_bw = 2 * x.nbytes / torch_seconds_behind_fill(lambda: y.copy_(x), CALLS) / 1e9
        cases = {  # op: (args after nrows, ncols; their ctypes; bytes moved; torch's result)
            "softmax_last_dim": (
                (x.data_ptr(), out.data_ptr()),
                (ptr, ptr),
                2 * x.nbytes,
                torch.softmax(x.float(), -1),
            ),
            "rms_norm": (
                (EPS, x.data_ptr(), alpha.data_ptr(), out.data_ptr()),
                (ctypes.c_double, ptr, ptr, ptr),
                2 * x.nbytes + alpha.nbytes,
                x.float() * torch.rsqrt((x.float() ** 2).mean(-1, keepdim=True) + EPS) * alpha.float(),
            ),
            "layer_norm": (
                (EPS, x.data_ptr(), alpha.data_ptr(), beta.data_ptr(), out.data_ptr()),
                (ctypes.c_double, ptr, ptr, ptr, ptr),
                2 * x.nbytes + 2 * alpha.nbytes,
                F.layer_norm(x.float(), (COLS,), alpha.float(), beta.float(), EPS),
            ),
        }
        for setting in settings:
            path = tmp / f"nn_{setting}.hip"
            path.write_text(f"#define OPGEN_ROW_BYTES {setting}\n" + text)
            saved, gpu_nn.ROW_BYTES = gpu_nn.ROW_BYTES, setting
            try:
                for op, (args, types, nbytes, want) in cases.items():
                    name = f"{op}_{dtype}"
                    label = f"explore nn {op} (4096, 4096) {dtype}, {setting} bytes a thread"
                    grid, block = gpu_nn._rows_geometry(rt, 0, ROWS, COLS, x.element_size())
                    run = lambda: rt.launch(  # noqa: E731
                        str(path),
                        name,
                        grid,
                        block,
                        stream,
                        (ROWS, COLS, *args),
                        (size_t, size_t, *types),
                    )
                    try:
                        out.fill_(float("nan"))
                        torch.cuda.synchronize()
                        run()
                        rt.synchronize(0)
                        error = float((out.float() - want).abs().max())
                        seconds = seconds_behind_fill(run, CALLS)
                        fn = rt._functions[(0, str(path), name)]
                        regs = cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, fn)[1]
                        resident = cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, block, 0)[1]
                        gbs = nbytes / seconds / 1e9
                        rows[label] = (
                            f"{gbs:.0f} GB/s = {gbs / copy_bw:.3f} of copy; block {block}, grid {grid} "
                            f"({sms} SMs), {regs} registers, {resident} blocks/SM; max |diff| {error:.2e}"
                        )
                    except Exception as exc:  # noqa: BLE001  (a failed variant is reported, the others run)
                        rows[label] = f"failed: {type(exc).__name__}: {exc}"
            finally:
                gpu_nn.ROW_BYTES = saved
    shutil.rmtree(tmp, ignore_errors=True)


def arg_sort(rows: dict) -> None:
    """arg_sort ascending: the values at opgen's indices must be torch's sorted values."""
    import numpy as np
    import torch

    import generated as g

    dev = g.Device.parse("cuda:0")
    sync, tsync = dev.synchronize, torch.cuda.synchronize
    rng = np.random.default_rng(11)
    sort = g.nn.ArgSort(ascending=True)
    for shape in ((4096, 4096), (64, 65536)):
        x = rng.standard_normal(shape, dtype=np.float32)
        sx, tx = dev.storage_from_slice(x), torch.from_numpy(x).cuda()
        layout = g.Layout.contiguous(shape)
        name = f"arg_sort ({shape[0]},{shape[1]}) f32"
        try:
            got, _ = sx.apply_op1(layout, sort)
            order = g.to_numpy(got, layout).astype(np.int64)
            check(rows, name, np.take_along_axis(x, order, 1), torch.sort(tx, dim=1).values.cpu().numpy())
            pair(rows, name, lambda: sx.apply_op1(layout, sort), lambda: torch.argsort(tx, dim=1), sync, tsync)
        except Exception as exc:  # noqa: BLE001  (reported, the other rows still run)
            rows[f"{name}: failed"] = f"{type(exc).__name__}: {exc}"


def explore_cudnn_attention(rows: dict) -> None:
    """attention bf16 (8, 16, 2048, 128), full and causal, through cuDNN and through opgen's own
    kernel (vendor_nn.enabled off), against torch: device time behind a fill, and host time."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    import generated as g

    vendor = cuda_runtime().vendor_nn
    dev = g.Device.parse("cuda:0")
    b, h, s, d = SDPA_SHAPE
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal(SDPA_SHAPE, dtype=np.float32).astype(g.DType.BF16.numpy) for _ in range(3)]
    sq, sk, sv = (dev.storage_from_slice(a) for a in arrays)
    tq, tk, tv = (to_torch(a) for a in arrays)
    layout = g.Layout.contiguous(SDPA_SHAPE)
    scale = 1 / math.sqrt(d)
    for causal in (False, True):
        name = f"attention bf16 {SDPA_SHAPE} {'causal' if causal else 'full'}"
        op = g.nn.Sdpa(scale=scale, causal=causal)
        ours = lambda op=op: sq.apply_op3(layout, sk, layout, sv, layout, op)  # noqa: E731
        theirs = lambda causal=causal: F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=scale)  # noqa: E731
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        want = theirs().float().cpu().numpy()
        t_torch = torch_seconds_behind_fill(theirs, 3)
        rows[f"{name}: torch (TFLOP/s)"] = flops / t_torch / 1e12
        for variant, enabled in (("cudnn", True), ("own", False)):
            vendor.enabled = enabled
            try:
                before = vendor.calls.get("sdpa", 0)
                got = g.to_numpy(ours()[0], layout).astype(np.float32)
                declined = enabled and vendor.calls.get("sdpa", 0) == before
                label = f"{name} [{variant}{': cuDNN declined' if declined else ''}]"
                rows[f"{label}: max |opgen - torch|"] = float(np.abs(got - want).max())
                t = seconds_behind_fill(ours, 3)
                rows[f"{label}: opgen (TFLOP/s)"] = flops / t / 1e12
                rows[f"{label}: opgen / torch"] = t_torch / t
                rows[f"{label}: opgen host wall clock (ms)"] = timed(ours, dev.synchronize) * 1e3
            except Exception as exc:  # noqa: BLE001
                rows[f"{name} [{variant}]: failed"] = f"{type(exc).__name__}: {exc}"
        vendor.enabled = True
        rows[f"{name}: torch host wall clock (ms)"] = timed(theirs, torch.cuda.synchronize) * 1e3

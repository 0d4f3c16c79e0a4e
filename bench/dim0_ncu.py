"""The sum over dim 0 of (8192, 8192) f32, ours and torch's, a few launches each, for a
profiler (bench/dim0c_device.sh runs it under `ncu --set full`):

    python3 -m bench.dim0_ncu

In order: opgen's default path (pass 4: the row stride by value) twice, pass 3 with the
view's dims and strides uploaded (runtime/gpu/reduce.py's COLUMN_BY_VALUE off) twice,
torch's sum twice; each after one warm-up call outside the profiled range
(ncu --launch-skip counts those), then a device synchronize and a check against torch."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main() -> int:
    import numpy as np
    import torch

    import generated as g
    import runtime.gpu.reduce as gpu

    dev = g.Device.parse("cuda:0")
    x = np.random.default_rng(7).standard_normal((8192, 8192), dtype=np.float32)
    sx, layout = dev.storage_from_slice(x), g.Layout.contiguous(x.shape)
    tx = torch.from_numpy(x).cuda()
    want = x.sum(axis=0, keepdims=True, dtype=np.float64)  # on the host: no kernel before the profiled ones
    for label, by_value in (("pass 4 (by value)", True), ("pass 3 (info)", False)):
        gpu.COLUMN_BY_VALUE = by_value
        for _ in range(2):
            out = sx.reduce_op(g.ReduceOp.SUM, layout, (0,))
        dev.synchronize()
        got = g.to_numpy(out, g.Layout.contiguous((1, 8192)))
        print(f"{label}: max rel err {np.abs(got - want).max() / np.abs(want).max():.2e}", flush=True)
    gpu.COLUMN_BY_VALUE = True
    for _ in range(2):
        tx.sum(dim=0, keepdim=True)
    torch.cuda.synchronize()
    print("torch: done", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

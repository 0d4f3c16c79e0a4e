"""Matrix multiplication on the GPU: bf16 8192^3 through the vendor BLAS (cuBLAS, through
nvmath-python's binding), against torch.matmul, host wall clock of batches of calls."""

from __future__ import annotations

import numpy as np

from bench.timing import timed

SIZE = 8192


def matmul(rows: dict) -> None:
    import ml_dtypes
    import torch

    import generated as g

    dev = g.Device.parse("cuda:0")
    host = np.random.default_rng(1).standard_normal((SIZE, SIZE), dtype=np.float32).astype(ml_dtypes.bfloat16)
    ma, mb = dev.storage_from_slice(host), dev.storage_from_slice(host)
    layout = g.Layout.contiguous((SIZE, SIZE))
    ta = torch.from_numpy(host.view(np.uint16)).cuda().view(torch.bfloat16)
    flops = 2 * SIZE**3
    dims = g.MatmulDims(1, SIZE, SIZE, SIZE)
    t_ours = timed(lambda: ma.matmul(mb, dims, layout, layout), dev.synchronize, repeats=5, inner=3)
    t_torch = timed(lambda: torch.matmul(ta, ta), torch.cuda.synchronize, repeats=5, inner=3)
    rows["matmul bf16 8192^3: opgen (TFLOP/s)"] = flops / t_ours / 1e12
    rows["matmul bf16 8192^3: torch (TFLOP/s)"] = flops / t_torch / 1e12
    rows["matmul bf16 8192^3: opgen / torch"] = t_torch / t_ours

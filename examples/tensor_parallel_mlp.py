"""A tensor-parallel MLP block on opgen's collectives: y = gelu(x @ W1) @ W2, with W1 split by
columns and W2 by rows over the ranks (column-parallel, then row-parallel linear), each rank's
partial product summed by one all_reduce. Rank 0 also runs the whole block on its own device, and
checks that both agree within f32 tolerance; then both are timed.

    mpiexec -n 2 python examples/tensor_parallel_mlp.py --backend cuda   # one process a GPU
    mpiexec -n 2 python examples/tensor_parallel_mlp.py --backend cpu --tokens 64 --width 128

Prints one JSON line (rank 0): sizes, the largest difference, and milliseconds per forward of
the sharded and the whole block."""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from generated import Comm, DType, MatmulDims, Reduction, UnaryOp, to_numpy
from runtime.layout import Layout


def linear(x, w, m: int, k: int, n: int):
    """x (m, k) @ w (k, n)."""
    return x.matmul(w, MatmulDims(1, m, n, k), Layout.contiguous((m, k)), Layout.contiguous((k, n)))


def block(x, w1, w2, m: int, d: int, h: int):
    """gelu(x @ w1) @ w2 for x (m, d), w1 (d, h), w2 (h, d): this rank's part of y."""
    return linear(linear(x, w1, m, d, h).unary(UnaryOp.GELU, Layout.contiguous((m, h))), w2, m, h, d)


def timed(run, sync, iters: int) -> float:
    run()
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        run()
    sync()
    return (time.perf_counter() - start) / iters * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--width", type=int, default=4096, help="d; the hidden width is 4 d")
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()
    comm = Comm.world(args.backend)
    device = comm.device()
    m, d = args.tokens, args.width
    h = 4 * d
    shard = h // comm.size
    rng = np.random.default_rng(0)  # the same weights on every rank: each takes its shard
    x = rng.standard_normal((m, d), dtype=np.float32)
    w1 = rng.standard_normal((d, h), dtype=np.float32) / np.float32(np.sqrt(d))
    w2 = rng.standard_normal((h, d), dtype=np.float32) / np.float32(np.sqrt(h))
    cols = slice(comm.rank * shard, (comm.rank + 1) * shard)

    def put(a: np.ndarray):
        return device.storage_from_slice(np.ascontiguousarray(a).reshape(-1))

    xs, w1s, w2s = put(x), put(w1[:, cols]), put(w2[cols, :])
    y = device.zeros((m * d,), DType.F32)

    def sharded() -> None:
        comm.all_reduce(block(xs, w1s, w2s, m, d, shard), y, Reduction.SUM)

    sharded()
    got = to_numpy(y, Layout.contiguous((m, d)))
    t_sharded = timed(sharded, device.synchronize, args.iters)
    comm.barrier()
    if comm.rank == 0:
        whole = (put(w1), put(w2))
        want = to_numpy(block(xs, *whole, m, d, h), Layout.contiguous((m, d)))
        t_whole = timed(lambda: block(xs, *whole, m, d, h), device.synchronize, args.iters)
        scale = float(np.abs(want).max())
        error = float(np.abs(got - want).max()) / scale
        result = {
            "backend": args.backend,
            "ranks": comm.size,
            "tokens": m,
            "width": d,
            "hidden": h,
            "max_error_relative": error,
            "agrees": error < 1e-4,
            "ms_sharded": round(t_sharded, 3),
            "ms_one_device": round(t_whole, 3),
            "speedup": round(t_whole / t_sharded, 3),
        }
        print(json.dumps(result), flush=True)
    comm.barrier()


if __name__ == "__main__":
    main()

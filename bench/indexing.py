"""Index ops on the GPU, beside torch in one process, each checked against torch's result
first: gather (4096, 4096) f32 by (4096, 1024) i64 ids along dim 1, and index_select of 8,192
rows of an embedding table (32000, 4096) f32. Host time of pairs timed in turn, opgen's
device time beside it."""

from __future__ import annotations

import numpy as np

from bench.compare import check, pair


def indexing(rows: dict) -> None:
    import torch

    import generated as g

    dev = g.Device.parse("cuda:0")
    rng = np.random.default_rng(11)

    def put(array):
        return dev.storage_from_slice(array), torch.from_numpy(array).cuda()

    gather(rows, g, torch, put, rng, dev.synchronize)
    index_select(rows, g, torch, put, rng, dev.synchronize)


def gather(rows: dict, g, torch, put, rng, sync) -> None:
    """gather (4096, 4096) f32 by (4096, 1024) i64 ids along dim 1."""
    x = rng.standard_normal((4096, 4096), dtype=np.float32)
    ids = rng.integers(0, 4096, (4096, 1024)).astype(np.int64)
    (sx, tx), (si, ti) = put(x), put(ids)
    lx, li = g.Layout.contiguous(x.shape), g.Layout.contiguous(ids.shape)
    name = "gather (4096,4096) f32 by (4096,1024) i64 ids"
    check(rows, name, g.to_numpy(sx.gather(lx, si, li, 1), li), torch.gather(tx, 1, ti).cpu().numpy())
    pair(rows, name, lambda: sx.gather(lx, si, li, 1), lambda: torch.gather(tx, 1, ti), sync, torch.cuda.synchronize)


def index_select(rows: dict, g, torch, put, rng, sync) -> None:
    """index_select of 8,192 i64 ids of an embedding table (32000, 4096) f32 along dim 0."""
    table = rng.standard_normal((32000, 4096), dtype=np.float32)
    rows_ids = rng.integers(0, 32000, 8192).astype(np.int64)
    (st, tt), (sr, tr) = put(table), put(rows_ids)
    lt, lr = g.Layout.contiguous(table.shape), g.Layout.contiguous(rows_ids.shape)
    name = "index_select 8,192 i64 ids of (32000,4096) f32, dim 0"
    check(
        rows,
        name,
        g.to_numpy(st.index_select(sr, lt, lr, 0), g.Layout.contiguous((8192, 4096))),
        torch.index_select(tt, 0, tr).cpu().numpy(),
    )
    pair(
        rows,
        name,
        lambda: st.index_select(sr, lt, lr, 0),
        lambda: torch.index_select(tt, 0, tr),
        sync,
        torch.cuda.synchronize,
        2 * 8192 * 4096 * 4 / 1e9,
        "GB/s",
    )

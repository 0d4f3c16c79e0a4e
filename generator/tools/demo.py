"""A short demo of the generated package: a few ops on every backend that can run here."""

from __future__ import annotations

import numpy as np

import generated as g


def run_on(device: g.Device) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    layout = g.Layout.contiguous(x.shape)
    a = device.storage_from_slice(x)
    e = a.unary(g.UnaryOp.EXP, layout)
    s = e.binary(g.BinaryOp.ADD, a, layout, layout)
    total = s.reduce_op(g.ReduceOp.SUM, layout, (1,))
    t = layout.transpose(0, 1)
    print(f"  x            = {g.to_vec2(a, layout).tolist()}")
    print(f"  exp(x) + x   = {g.to_vec2(s, layout).astype(float).round(4).tolist()}")
    print(f"  sum over dim1= {g.to_numpy(total, g.Layout.contiguous((2, 1))).ravel().astype(float).round(4).tolist()}")
    print(f"  x transposed = {g.to_vec2(a, t).tolist()} (strided view, no copy)")


def main() -> None:
    for backend, reason in g.Device.available().items():
        if reason is not None:
            print(f"{backend.value}: unavailable: {reason}")
            continue
        device = g.Device(backend)
        print(f"{device}: available ({backend.doc})")
        run_on(device)


if __name__ == "__main__":
    main()

"""Dispatch cost of a small cpu op, for callgrind: the public calls `make bench`'s dispatch part
times (Storage.unary(EXP) / Storage.binary(ADD) of 16 contiguous f32) and numpy's own calls.

    python bench/cpu_dispatch.py unary|binary|np_unary|np_binary|none N   # CPU time per call

Instructions added per call over numpy, exact and unmoved by the machine's load
(bench/results/cpu-notes.md): run each of `unary N` and `np_unary N` (`binary`, `np_binary`)
under `valgrind --tool=callgrind` with PYTHONHASHSEED=0 and divide the difference by N;
`none N` gives the loop's own cost, for instructions per call of each alone."""

from __future__ import annotations

import sys
import time

import numpy as np


def main(which: str, n: int) -> None:
    import generated as g

    x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    layout = g.Layout.contiguous((16,))
    s = g.Device.parse("cpu").storage_from_slice(x)
    exp, add = g.UnaryOp.EXP, g.BinaryOp.ADD
    calls = {
        "unary": lambda: s.unary(exp, layout),
        "binary": lambda: s.binary(add, s, layout, layout),
        "np_unary": lambda: np.exp(x),
        "np_binary": lambda: np.add(x, x),
        "none": lambda: None,
    }
    for call in calls.values():  # warm: first-use imports, specialized bytecode
        for _ in range(100):
            call()
    call = calls[which]
    start = time.process_time()
    for _ in range(n):
        call()
    print(which, round((time.process_time() - start) / max(n, 1) * 1e9), "ns CPU time per call")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

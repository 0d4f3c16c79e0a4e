"""Dispatch cost of a small cpu op, for callgrind: the public calls `make bench`'s dispatch part
times (Storage.unary(EXP) / Storage.binary(ADD) of 16 contiguous f32) and numpy's own calls.

    python bench/cpu_dispatch.py unary|binary|binary2|np_unary|np_binary|none N   # CPU time per call

(`binary` passes one Layout object for both operands, as `make bench` does; `binary2` two equal
ones.)

Instructions per call, exact and unmoved by the machine's load (bench/results/cpu-notes.md):
run `WHICH 20000` and `WHICH 40000` under `valgrind --tool=callgrind` (PYTHONHASHSEED=0,
OPENBLAS_NUM_THREADS=1: OpenBLAS's idle threads spin a varying number of instructions) and
divide the difference of the two totals by 20,000: start-up and imports cancel out. Added over
numpy: `unary` less `np_unary` (`binary` less `np_binary`); the loop and the lambda's call are
in both. `none` is the loop and the call alone."""

from __future__ import annotations

import sys
import time

import numpy as np


def main(which: str, n: int) -> None:
    import generated as g

    x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    layout, other = g.Layout.contiguous((16,)), g.Layout.contiguous((16,))
    s = g.Device.parse("cpu").storage_from_slice(x)
    exp, add = g.UnaryOp.EXP, g.BinaryOp.ADD
    calls = {
        "unary": lambda: s.unary(exp, layout),
        "binary": lambda: s.binary(add, s, layout, layout),
        "binary2": lambda: s.binary(add, s, layout, other),
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

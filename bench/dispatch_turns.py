"""Dispatch cost before and after a change, in one process and in turns: `make bench`'s two
calls (Storage.unary(EXP) / Storage.binary(ADD) of 16 f32) through another tree's generated
package (copied under the name `generated_before`; the runtime is this tree's) and through this
tree's, numpy's own calls between them. On a noisy machine, timings taken minutes apart differ
by more than a change of tens of nanoseconds; here every round times all six calls back to back.

    git -C /work/main worktree add /tmp/before main    # or any other tree
    python bench/dispatch_turns.py /tmp/before/generated [ROUNDS [NUMBER]]

Prints per call (ns, wall clock): each call's best round, 10th percentile and median over
ROUNDS rounds of NUMBER calls, and the added cost over numpy by best rounds."""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main(before: Path, rounds: int, number: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(before, Path(tmp) / "generated_before", ignore=shutil.ignore_patterns("__pycache__"))
        sys.path.insert(0, tmp)
        import generated_before  # type: ignore[import-not-found]

        import generated as after

        x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
        calls = {}
        for name, g in (("before", generated_before), ("after", after)):
            layout = g.Layout.contiguous((16,))
            s = g.Device.parse("cpu").storage_from_slice(x)
            exp, add = g.UnaryOp.EXP, g.BinaryOp.ADD
            calls[f"unary {name}"] = lambda s=s, exp=exp, layout=layout: s.unary(exp, layout)
            calls[f"binary {name}"] = lambda s=s, add=add, layout=layout: s.binary(add, s, layout, layout)
        calls["np.exp"] = lambda: np.exp(x)
        calls["np.add"] = lambda: np.add(x, x)
        times: dict[str, list[float]] = {k: [] for k in calls}
        for call in calls.values():
            for _ in range(1000):
                call()
        for _ in range(rounds):
            for key, call in calls.items():
                start = time.perf_counter()
                for _ in range(number):
                    call()
                times[key].append((time.perf_counter() - start) / number * 1e9)
    for key, t in times.items():
        t.sort()
        print(f"{key:14s} best {t[0]:6.0f}  p10 {t[len(t) // 10]:6.0f}  median {statistics.median(t):6.0f}")
    for kind, ref in (("unary", "np.exp"), ("binary", "np.add")):
        added = {name: times[f"{kind} {name}"][0] - times[ref][0] for name in ("before", "after")}
        print(f"added {kind}: before {added['before']:.0f} ns, after {added['after']:.0f} ns (best rounds)")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(Path(args[0]), int(args[1]) if len(args) > 1 else 100, int(args[2]) if len(args) > 2 else 20_000)

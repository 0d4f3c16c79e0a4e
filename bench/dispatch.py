"""Dispatch cost on the cpu backend: what a generated Storage call adds over calling numpy.

- `rows` (`make bench`): Storage.unary(EXP) / Storage.binary(ADD) of 16 contiguous f32 against
  np.exp / np.add, best of repeated batches, by the wall clock and by CPU time.
- `calls` (for callgrind): one of those calls, or numpy's, or none, N times:

      python -m bench.dispatch calls unary|binary|binary2|np_unary|np_binary|none N

  (`binary` passes one Layout object for both operands, as `make bench` does; `binary2` two
  equal ones.) Instructions per call, exact and unmoved by the machine's load: run `WHICH 20000`
  and `WHICH 40000` under `valgrind --tool=callgrind` (PYTHONHASHSEED=0, OPENBLAS_NUM_THREADS=1:
  OpenBLAS's idle threads spin a varying number of instructions) and divide the difference of
  the two totals by 20,000: start-up and imports cancel out. Added over numpy: `unary` less
  `np_unary` (`binary` less `np_binary`); `none` is the loop and the call alone.
- `turns`: before and after a change, in one process: the calls through another tree's
  generated package (copied under the name `generated_before`; the runtime is this tree's) and
  through this tree's, numpy's own calls between them, every round timing all six back to back
  (on a noisy machine, timings minutes apart differ by more than a change of tens of ns):

      git worktree add /tmp/before main    # or any other tree
      python -m bench.dispatch turns /tmp/before/generated [ROUNDS [NUMBER]]

  Prints per call (ns, wall clock): each call's best round, 10th percentile and median, and the
  added cost over numpy by best rounds."""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.timing import per_call_ns


def rows() -> dict:
    """`make bench`'s dispatch rows."""
    import generated as g

    x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    layout = g.Layout.contiguous((16,))
    cpu = g.Device.parse("cpu")
    s = cpu.storage_from_slice(x)
    exp, add = g.UnaryOp.EXP, g.BinaryOp.ADD
    table = {}
    for kind, name, ours, ref in (
        ("unary", "unary exp, 16 f32", lambda: s.unary(exp, layout), lambda: np.exp(x)),
        ("binary", "binary add, 16 f32", lambda: s.binary(add, s, layout, layout), lambda: np.add(x, x)),
    ):
        (t_ours, cpu_ours), (t_ref, cpu_ref) = per_call_ns(ours), per_call_ns(ref)
        table[name] = {
            "kind": kind,
            "opgen_ns": t_ours,
            "numpy_ns": t_ref,
            "added_ns": t_ours - t_ref,
            "ratio": t_ours / t_ref,
            "cpu_added_ns": cpu_ours - cpu_ref,
        }
    return table


def calls(which: str, n: int) -> None:
    """CPU time per call of one of the calls, over n calls (for callgrind: see the module's doc)."""
    import generated as g

    x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    layout, other = g.Layout.contiguous((16,)), g.Layout.contiguous((16,))
    s = g.Device.parse("cpu").storage_from_slice(x)
    exp, add = g.UnaryOp.EXP, g.BinaryOp.ADD
    choices = {
        "unary": lambda: s.unary(exp, layout),
        "binary": lambda: s.binary(add, s, layout, layout),
        "binary2": lambda: s.binary(add, s, layout, other),
        "np_unary": lambda: np.exp(x),
        "np_binary": lambda: np.add(x, x),
        "none": lambda: None,
    }
    for call in choices.values():  # warm: first-use imports, specialized bytecode
        for _ in range(100):
            call()
    call = choices[which]
    start = time.process_time()
    for _ in range(n):
        call()
    print(which, round((time.process_time() - start) / max(n, 1) * 1e9), "ns CPU time per call")


def turns(before: Path, rounds: int = 100, number: int = 20_000) -> None:
    """Dispatch of another tree's generated package and this tree's, in turns (see the module's doc)."""
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
    command, *args = sys.argv[1:]
    if command == "calls":
        calls(args[0], int(args[1]))
    elif command == "turns":
        turns(Path(args[0]), *(int(a) for a in args[1:3]))
    else:
        raise SystemExit(f"bench.dispatch: unknown command {command!r} (calls, turns)")

"""One rank of the collectives suite, run under mpiexec (tests/collectives/test_mpi.py launches it;
the device runs it on GPUs): every collective of the registry x every dtype it declares x element
counts 0, 1, odd and large, against numpy, then the checks before dispatch (each a typed error
naming the op, the backend and the rank), then split.

Every rank makes every rank's inputs from the same seeds, so each computes the whole reference
itself. Prints one JSON line per rank; exits 1 if any check failed.

    mpiexec -n 4 python -m tests.collectives.rank_suite --backend cpu
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from generated import CollectiveMismatch, Comm, Reduction, to_numpy
from runtime.layout import Layout
from tests.collectives.references import REGISTRY, inputs, reduce_ref, tolerance

COUNTS = (0, 1, 7, 100_003)  # none, one, odd, large (and odd)


class Suite:
    def __init__(self, comm: Comm) -> None:
        self.comm = comm
        self.device = comm.device()
        self.checks = 0
        self.failures: list[str] = []

    def storage(self, array: np.ndarray):
        return self.device.storage_from_slice(np.ascontiguousarray(array).reshape(-1))

    def host(self, storage, count: int) -> np.ndarray:
        self.comm.synchronize()
        return to_numpy(storage, Layout.contiguous((count,)))

    def expect(self, what: str, got: np.ndarray, want: np.ndarray, dtype: str) -> None:
        self.checks += 1
        rtol, atol = tolerance(dtype)
        g, w = got.astype(np.float64), want.astype(np.float64)
        if g.shape != w.shape or not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
            bad = int(np.argmax(~np.isclose(g, w, rtol=rtol, atol=atol))) if g.shape == w.shape else -1
            self.failures.append(f"{what}: shape {g.shape} vs {w.shape}, first bad index {bad}")

    # -- the ops ------------------------------------------------------------------------------
    def every_rank(self, op: str, dtype: str, count: int, reduction: str = "sum") -> list[np.ndarray]:
        return [inputs(op, dtype, count, r, reduction) for r in range(self.comm.size)]

    def all_reduce(self, dtype: str, count: int, reduction: str, in_place: bool) -> None:
        xs = self.every_rank("all_reduce", dtype, count, reduction)
        send = self.storage(xs[self.comm.rank])
        recv = send if in_place else self.storage(np.zeros_like(xs[0]))
        self.comm.all_reduce(send, recv, Reduction(reduction))
        want = reduce_ref(xs, reduction)
        self.expect(
            f"all_reduce {reduction} {dtype} n={count} in_place={in_place}", self.host(recv, count), want, dtype
        )

    def reduce_scatter(self, dtype: str, count: int, reduction: str) -> None:
        size, rank = self.comm.size, self.comm.rank
        xs = self.every_rank("reduce_scatter", dtype, count * size, reduction)
        recv = self.storage(np.zeros(count, xs[0].dtype))
        self.comm.reduce_scatter(self.storage(xs[rank]), recv, Reduction(reduction))
        want = reduce_ref(xs, reduction)[rank * count : (rank + 1) * count]
        self.expect(f"reduce_scatter {reduction} {dtype} n={count}", self.host(recv, count), want, dtype)

    def reduce(self, dtype: str, count: int, reduction: str) -> None:
        size, rank = self.comm.size, self.comm.rank
        root = (count + 1) % size
        xs = self.every_rank("reduce", dtype, count, reduction)
        before = np.full(count, 3, xs[0].dtype)
        recv = self.storage(before)
        self.comm.reduce(self.storage(xs[rank]), recv, Reduction(reduction), root)
        want = reduce_ref(xs, reduction) if rank == root else before
        self.expect(f"reduce {reduction} {dtype} n={count} root={root}", self.host(recv, count), want, dtype)

    def all_gather(self, dtype: str, count: int) -> None:
        xs = self.every_rank("all_gather", dtype, count)
        recv = self.storage(np.zeros(count * self.comm.size, xs[0].dtype))
        self.comm.all_gather(self.storage(xs[self.comm.rank]), recv)
        self.expect(f"all_gather {dtype} n={count}", self.host(recv, count * self.comm.size), np.concatenate(xs), dtype)

    def broadcast(self, dtype: str, count: int) -> None:
        root = count % self.comm.size
        xs = self.every_rank("broadcast", dtype, count)
        buf = self.storage(xs[self.comm.rank])
        self.comm.broadcast(buf, root)
        self.expect(f"broadcast {dtype} n={count} root={root}", self.host(buf, count), xs[root], dtype)

    def all_to_all(self, dtype: str, count: int) -> None:
        size, rank = self.comm.size, self.comm.rank
        xs = self.every_rank("all_to_all", dtype, count * size)
        recv = self.storage(np.zeros(count * size, xs[0].dtype))
        self.comm.all_to_all(self.storage(xs[rank]), recv)
        want = np.concatenate([xs[j][rank * count : (rank + 1) * count] for j in range(size)])
        self.expect(f"all_to_all {dtype} n={count}", self.host(recv, count * size), want, dtype)

    def ring(self, dtype: str, count: int) -> None:
        """send_recv one step round the ring, then send / recv pairs (even ranks send first)."""
        size, rank = self.comm.size, self.comm.rank
        xs = self.every_rank("send_recv", dtype, count)
        right, left = (rank + 1) % size, (rank - 1) % size
        recv = self.storage(np.zeros(count, xs[0].dtype))
        self.comm.send_recv(self.storage(xs[rank]), right, recv, left)
        self.expect(f"send_recv {dtype} n={count}", self.host(recv, count), xs[left], dtype)
        if size % 2:
            return
        peer = rank ^ 1
        buf = self.storage(np.zeros(count, xs[0].dtype))
        if rank % 2 == 0:
            self.comm.send(self.storage(xs[rank]), peer)
            self.comm.recv(buf, peer)
        else:
            self.comm.recv(buf, peer)
            self.comm.send(self.storage(xs[rank]), peer)
        self.expect(f"send/recv {dtype} n={count}", self.host(buf, count), xs[peer], dtype)

    def run_all(self, counts: tuple[int, ...]) -> None:
        spec = REGISTRY["collectives"]
        reductions = {op: spec[op]["reductions"] for op in ("all_reduce", "reduce_scatter", "reduce")}
        for dtype in REGISTRY["dtypes"]:
            for count in counts:
                for op, table in reductions.items():
                    for reduction, allowed in table.items():
                        if dtype not in allowed_dtypes(allowed):
                            continue
                        if op == "all_reduce":
                            self.all_reduce(dtype, count, reduction, in_place=False)
                            self.all_reduce(dtype, count, reduction, in_place=True)
                        else:
                            getattr(self, op)(dtype, count, reduction)
                self.all_gather(dtype, count)
                self.broadcast(dtype, count)
                self.all_to_all(dtype, count)
                self.ring(dtype, count)
        self.comm.barrier()

    # -- the checks before dispatch -------------------------------------------------------------
    def expect_error(self, what: str, call, *words: str) -> None:
        self.checks += 1
        try:
            call()
        except CollectiveMismatch as exc:
            text = str(exc)
            needed = (exc.op, self.comm.backend.value, f"rank {self.comm.rank}", *words)
            if exc.rank != self.comm.rank or not all(w in text for w in needed):
                self.failures.append(f"{what}: message {text!r} lacks one of {needed}")
        except Exception as exc:  # noqa: BLE001  (any other error is the failure reported)
            self.failures.append(f"{what}: raised {type(exc).__name__}: {exc}")
        else:
            self.failures.append(f"{what}: raised nothing")

    def errors(self) -> None:
        c, size = self.comm, self.comm.size
        f32 = self.storage(np.ones(4 * size, np.float32))
        f64 = self.storage(np.ones(4 * size, np.float64))
        i64 = self.storage(np.ones(4 * size, np.int64))
        short = self.storage(np.ones(3, np.float32))
        odd = self.storage(np.ones(4 * size + 1, np.float32))  # a count no size divides into 4-element parts
        self.expect_error("dtype mismatch", lambda: c.all_reduce(f32, f64, Reduction.SUM), "dtype", "f32", "f64")
        self.expect_error("avg of i64", lambda: c.all_reduce(i64, i64, Reduction.AVG), "dtype", "avg", "i64")
        self.expect_error("count", lambda: c.all_reduce(f32, short, Reduction.SUM), "recv elements", "3")
        self.expect_error("gather count", lambda: c.all_gather(f32, odd), "recv elements")
        self.expect_error("scatter count", lambda: c.reduce_scatter(odd, short, Reduction.MAX), "send elements")
        if size > 1:  # every count is a multiple of 1
            self.expect_error(
                "per rank", lambda: c.all_to_all(odd, self.storage(np.ones(4 * size + 1, np.float32))), "multiple"
            )
        self.expect_error("root", lambda: c.broadcast(f32, size), "root", str(size))
        self.expect_error("peer", lambda: c.send(f32, -1), "peer")
        self.expect_error("in place", lambda: c.all_to_all(f32, f32), "send and recv")
        if self.device.backend.value != "cpu":
            host = __import__("generated").Device.parse("cpu").storage_from_slice(np.ones(4 * size, np.float32))
            self.expect_error("device", lambda: c.all_reduce(host, f32, Reduction.SUM), "device")

    def split(self) -> None:
        """Even and odd ranks in two groups, ordered by descending rank: an all_reduce in each."""
        sub = self.comm.split(self.comm.rank % 2, -self.comm.rank)
        members = [r for r in range(self.comm.size) if r % 2 == self.comm.rank % 2]
        self.checks += 1
        if sub.size != len(members) or sub.rank != sorted(members, reverse=True).index(self.comm.rank):
            self.failures.append(f"split: rank {sub.rank} of {sub.size} for world rank {self.comm.rank}")
        x = np.arange(5, dtype=np.float32) + self.comm.rank
        recv = self.storage(np.zeros(5, np.float32))
        sub.all_reduce(self.storage(x), recv, Reduction.SUM)
        want = sum(np.arange(5, dtype=np.float32) + r for r in members)
        self.expect("split all_reduce", self.host(recv, 5), want, "f32")


def report(folder: Path | None, result: dict) -> None:
    """One JSON line on stdout, and a file per rank in `folder` (ranks' stdout lines interleave)."""
    text = json.dumps(result)
    print(text, flush=True)
    if folder is not None:
        (folder / f"rank{result['rank']}.json").write_text(text)


def allowed_dtypes(allowed) -> list[str]:
    sets = REGISTRY["dtype_sets"]
    return list(sets[allowed]) if isinstance(allowed, str) else list(allowed)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--quick", action="store_true", help="counts 0, 1 and 7 alone")
    parser.add_argument("--reports", type=Path, help="a folder: each rank writes rank<N>.json there too")
    args = parser.parse_args()
    comm = Comm.world(args.backend, timeout=120)
    suite = Suite(comm)
    suite.run_all(COUNTS[:3] if args.quick else COUNTS)
    suite.errors()
    suite.split()
    comm.barrier()
    result = {"rank": comm.rank, "size": comm.size, "checks": suite.checks, "failures": suite.failures[:20]}
    report(args.reports, result)
    return 1 if suite.failures else 0


if __name__ == "__main__":
    sys.exit(main())

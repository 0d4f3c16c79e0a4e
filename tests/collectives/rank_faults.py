"""One rank of a fault case, run under mpiexec by tests/collectives/test_mpi.py (and on the device):

- late: the last rank sleeps past the timeout before its all_reduce;
- exit: the last rank exits before the all_reduce, without a word to MPI;
- disagree: the last rank passes another count, on a communicator that checks agreement.

Every other rank must end with a typed error within the timeout (and some slack). Each rank
prints one JSON line: the error's type, its message and the seconds the call took; then leaves
at once (os._exit), since MPI cannot cancel the collective still pending.

    mpiexec -n 2 python -m tests.collectives.rank_faults --case late --timeout 2
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from generated import Comm, Reduction
from tests.collectives.rank_suite import report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=("late", "exit", "disagree"), required=True)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--reports", type=Path, help="a folder: each rank writes rank<N>.json there too")
    args = parser.parse_args()
    comm = Comm.world(args.backend, timeout=args.timeout, check_agree=args.case == "disagree")
    last = comm.rank == comm.size - 1
    count = 1000 + (1 if last and args.case == "disagree" else 0)
    device = comm.device()
    send = device.storage_from_slice(np.ones(count, np.float32))
    recv = device.storage_from_slice(np.zeros(count, np.float32))
    comm.barrier()
    if last and args.case == "exit":
        os._exit(0)
    if last and args.case == "late":
        time.sleep(args.timeout * 2)
    start = time.monotonic()
    try:
        comm.all_reduce(send, recv, Reduction.SUM)
        comm.synchronize()
        result = {"error": None}
    except Exception as exc:  # noqa: BLE001  (the case's answer is which error, reported)
        result = {"error": type(exc).__name__, "message": str(exc)}
    result.update(rank=comm.rank, seconds=round(time.monotonic() - start, 3))
    report(args.reports, result)
    os._exit(0)


if __name__ == "__main__":
    main()

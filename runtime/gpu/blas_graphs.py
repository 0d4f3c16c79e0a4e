"""BLAS GEMMs replayed as CUDA graphs, one per set of addresses that comes back.

A cuBLAS call costs host time on every call (its heuristics' cache looked up, the kernel's
arguments made, the launch): bench/matmul_host.py measured opgen's warm bf16 2048^3 matmul at
21.7-43.6 us of host time per call in three fresh processes on the H200, the same kernel
(23.9 us) in each, so that the call waited on the host in some processes and not in others.
A graph of the GEMM replays by one cuGraphLaunch. As for cuDNN's plans
(runtime/gpu/cudnn_graphs.py, whose PlanGraphs this uses): per GEMM shape (every argument but
the three addresses), a graph per address set, captured the second time that set runs, a few
kept; a capture that fails leaves that shape on plain calls. SHAPES shapes are kept, the first
made dropped first.

OPGEN_BLAS_GRAPHS=0 turns replays off (every GEMM calls cuBLAS)."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from runtime.gpu.cudnn_graphs import PlanGraphs

#: GEMM shapes whose graphs are kept; past it the first made shape's are dropped.
SHAPES = 64
#: Replays on unless OPGEN_BLAS_GRAPHS=0.
ENABLED = os.environ.get("OPGEN_BLAS_GRAPHS", "1") != "0"


class GemmGraphs:
    """The graphs of a driver's GEMMs. `capture(shape, args)` records the GEMM of `args` as a
    graph (None where it cannot); `launcher` and `destroy` as PlanGraphs takes them."""

    def __init__(
        self,
        capture: Callable[[tuple, tuple], Any],
        launcher: Callable[[Any], Callable[[int], None]],
        destroy: Callable[[Any], None],
    ) -> None:
        self._capture, self._launcher, self._destroy = capture, launcher, destroy
        self._shapes: OrderedDict[tuple, PlanGraphs] = OrderedDict()

    def run(self, shape: tuple, addresses: tuple, stream: int, args: tuple) -> bool:
        """Replay the GEMM of `shape` on `addresses` from its graph, captured now where they
        come for the second time; False where the caller calls the BLAS itself."""
        graphs = self._shapes.get(shape)
        if graphs is None:
            graphs = self._shapes[shape] = PlanGraphs(self._launcher, self._destroy)
            if len(self._shapes) > SHAPES:
                self._shapes.popitem(last=False)
        return graphs.run(addresses, stream, self._capture, shape, args)

    def replays(self) -> int:
        """GEMMs run from a graph, over the shapes kept (tests and the bench read it)."""
        return sum(graphs.replays for graphs in self._shapes.values())

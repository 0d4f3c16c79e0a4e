"""A built cuDNN plan replayed as a CUDA graph, one per set of addresses that comes back.

cuDNN's execute costs host time on every call: the backend makes a variant pack, looks its
engine's kernels up and launches them (41 of the direct run's 54 us of host time for conv2d f32
(16,64,56,56) by (64,64,3,3) with TF32 on the H200, by cProfile; torch's whole call 23-33 us).
Where the GPU's share is shorter than that (43 us there), calls queued back to back wait on
the host. A CUDA graph of the plan's launches is replayed by one cuGraphLaunch, a few
microseconds, so a plan run again on the same buffers (a loop over layers, a bench, a model's
steady state: the memory pool hands a dropped output's block back to the next output of its
size) replays its graph instead: 16.5-26.5 us of host time for that call in all, the GPU
bounding it (bench/results/NOTES.md).

- **What a graph holds:** the kernels with the addresses they were captured with, the
  workspace's too. So a graph is kept per (addresses, workspace) and replays only for those;
  the plan's shapes are fixed, so the same addresses are the same call.
- **When:** an address set is captured the second time it runs (the first runs directly, so
  a set used once costs nothing extra); a plan keeps GRAPHS_PER_PLAN graphs, the oldest
  dropped first, remembers SEEN_PER_PLAN sets seen once, and stops capturing once it has
  dropped DROPS_PER_PLAN graphs (addresses that never settle).
- **How:** on a stream of its own (runtime/gpu/cudnn.py binds the handle to it while it
  records), so work other threads queue on the device's stream meanwhile stays out of the
  graph. A capture that fails (a plan whose engine cannot be captured) turns graphs off
  for that plan; its calls run directly, as before.
- **Order:** a replay is queued on the device's one stream, like the direct run it stands
  for; graphs of one plan are replayed under its lock (a graph is not to be launched from
  two threads at once).

OPGEN_CUDNN_GRAPHS=0 turns replays off (every call runs the plan directly)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

#: Graphs a plan keeps, by address set; past it the oldest is dropped.
GRAPHS_PER_PLAN = 4
#: Address sets a plan remembers having run once (forgotten all at once past it).
SEEN_PER_PLAN = 16
#: Graphs dropped for newer ones after which a plan stops capturing (its addresses keep
#: changing: each capture would cost more than the replays it brings).
DROPS_PER_PLAN = 8
#: Replays on unless OPGEN_CUDNN_GRAPHS=0.
ENABLED = os.environ.get("OPGEN_CUDNN_GRAPHS", "1") != "0"


class PlanGraphs:
    """The graphs of one plan: `run` replays the graph of an address set, capturing it on the
    set's second run; under it, `launch` replays a kept graph, `due` says whether a set is to be
    captured now, `keep` stores a captured graph (or, given None, turns graphs off for the plan)."""

    __slots__ = ("_destroy", "_dropped", "_graphs", "_launcher", "_lock", "_seen", "failed", "replays")

    def __init__(self, launcher: Callable[[Any], Callable[[int], None]], destroy: Callable[[Any], None]) -> None:
        self._launcher = launcher  # graph -> its launch(stream)
        self._destroy = destroy
        self._graphs: dict[tuple, tuple[Any, Callable[[int], None]]] = {}
        self._seen: set[tuple] = set()
        self._lock = threading.Lock()
        self._dropped = 0
        self.failed = False  # a capture failed: this plan runs directly from now on
        self.replays = 0  # calls run from a graph (tests and the bench read it)

    def launch(self, key: tuple, stream: int) -> bool:
        """Replay the graph of `key` on `stream`; False where none is kept."""
        with self._lock:
            kept = self._graphs.get(key)
            if kept is None:
                return False
            kept[1](stream)
            self.replays += 1
        return True

    def run(self, key: tuple, stream: int, capture: Callable[..., Any], *args: Any) -> bool:
        """Replay the graph of `key` on `stream`, `capture(*args)` making it first where `key`
        comes for the second time; False where the caller runs the work itself. (Arguments, not
        a closure: a replay, the common case, makes nothing.)"""
        if self.launch(key, stream):
            return True
        if not self.due(key):
            return False
        self.keep(key, capture(*args))
        return self.launch(key, stream)

    def due(self, key: tuple) -> bool:
        """Whether `key` is to be captured now: it ran once before. Its first run is remembered."""
        if self.failed:
            return False
        seen = self._seen
        if key in seen:
            seen.discard(key)
            return True
        if len(seen) >= SEEN_PER_PLAN:
            seen.clear()
        seen.add(key)
        return False

    def keep(self, key: tuple, graph: Any) -> None:
        """Keep `graph` for `key` (the oldest dropped past GRAPHS_PER_PLAN); None: the capture
        failed, and the plan runs directly from now on, as it does once DROPS_PER_PLAN graphs
        were dropped."""
        if graph is None:
            self.failed = True
            return
        launch = self._launcher(graph)
        with self._lock:
            old = self._graphs.pop(key, None)
            self._graphs[key] = (graph, launch)
            if old is None and len(self._graphs) > GRAPHS_PER_PLAN:
                old = self._graphs.pop(next(iter(self._graphs)))
                self._dropped += 1
                self.failed = self._dropped >= DROPS_PER_PLAN  # its addresses do not settle
            if old is not None:
                self._destroy(old[0])  # a launch still queued keeps its graph until it has run

    def __del__(self) -> None:
        for graph, _ in self._graphs.values():
            with contextlib.suppress(Exception):  # at interpreter exit the driver may be gone
                self._destroy(graph)

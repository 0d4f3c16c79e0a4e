"""runtime/gpu/cudnn_graphs.py without a GPU: built cuDNN plans replayed as CUDA graphs, on
tests/gpu/test_cudnn_paths.py's fake driver and frontend, the driver given graphs that record
what a capture ran and each replay. What is checked: an address set is captured the second
time it runs (on the capture stream, the handle bound to it meanwhile and then back) and
replayed after, on the device's stream; sets run once are never captured; a capture that
fails turns graphs off for the plan, which keeps running directly; the kept graphs are bounded
and dropped ones destroyed; OPGEN_CUDNN_GRAPHS=0's switch and a driver without graphs run
directly. The bits on a GPU: tests/gpu/test_cudnn_gpu.py."""

from __future__ import annotations

import pytest

from runtime.gpu import cudnn_graphs
from runtime.gpu.cudnn_graphs import PlanGraphs
from runtime.gpu.driver import GpuError
from tests.gpu.test_cudnn_paths import (  # noqa: F401  (plan_cache_directory: its autouse fixture, each test's cache)
    Driver,
    LoweredCudnn,
    _conv2d,
    _runtime,
    plan_cache_directory,
)

CAPTURE_STREAM = 9000


class GraphDriver(Driver):
    """The fake driver with graphs: a capture runs `record` and keeps what the frontend ran
    meanwhile (fake.direct's new entries); a replay logs (graph, stream)."""

    def __init__(self, fake: LoweredCudnn, fail: bool = False) -> None:
        super().__init__()
        self.fake, self.fail = fake, fail
        self.captured: list[tuple[int, list]] = []  # (stream, the direct runs recorded)
        self.replayed: list[tuple[int, int]] = []  # (graph, stream)
        self.destroyed: list[int] = []

    def create_stream(self):
        return CAPTURE_STREAM

    def capture_graph(self, stream, record):
        if self.fail:
            raise GpuError("fake", "cuStreamEndCapture", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED")
        start = len(self.fake.direct)
        record()
        self.captured.append((stream, self.fake.direct[start:]))
        return len(self.captured) - 1  # the graph: its index

    def graph_launcher(self, graph):
        return lambda stream: self.replayed.append((graph, stream))

    def destroy_graph(self, graph):
        self.destroyed.append(graph)


def _graph_runtime(monkeypatch, fail: bool = False):
    fake = LoweredCudnn()
    rt, _ = _runtime(monkeypatch, fake)
    rt.driver = GraphDriver(fake, fail)
    return rt, fake


def test_addresses_run_again_are_captured_once_and_replayed_on_the_devices_stream(monkeypatch):
    rt, fake = _graph_runtime(monkeypatch)
    addresses = set()
    for _ in range(4):  # each call's buffers dropped: the next call's get the same blocks back
        x, k, out, _ = _conv2d(rt)
        addresses.add((x.ptr, k.ptr, out.ptr))
        del x, k, out
    assert len(addresses) == 1
    (x_ptr, k_ptr, out_ptr) = addresses.pop()
    [(stream, recorded)] = rt.driver.captured  # the second call, recorded, not run
    assert stream == CAPTURE_STREAM
    [(order, workspace, handle, index)] = recorded
    assert order == [out_ptr, x_ptr, k_ptr] and workspace == rt.vendor_nn._workspaces[0].ptr
    assert (handle, index) == (4242, 10)
    assert len(fake.direct) == 2  # the first call ran directly, the second was recorded
    assert rt.driver.replayed == [(0, 7000)] * 3  # calls 2-4 from the graph, on the device's stream
    handle_object = fake.handles[0]
    assert fake.streams == [(handle_object, 7000), (handle_object, CAPTURE_STREAM), (handle_object, 7000)]
    assert rt.vendor_nn.calls == {"conv2d": 4} and rt.vendor_nn.replays() == 3


def test_addresses_run_once_are_never_captured(monkeypatch):
    rt, fake = _graph_runtime(monkeypatch)
    held = [_conv2d(rt) for _ in range(5)]  # every call's buffers held: new addresses each time
    assert len({out.ptr for _, _, out, _ in held}) == 5
    assert not rt.driver.captured and not rt.driver.replayed
    assert len(fake.direct) == 5 and rt.vendor_nn.replays() == 0


def test_a_capture_that_fails_leaves_the_plan_running_directly(monkeypatch):
    rt, fake = _graph_runtime(monkeypatch, fail=True)
    for _ in range(5):
        _conv2d(rt)
    assert not rt.driver.captured and not rt.driver.replayed
    assert len(fake.direct) == 5  # every call ran, directly
    assert "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED" in rt.vendor_nn.last_capture_failure
    assert fake.streams[-1] == (fake.handles[0], 7000)  # bound to the device's stream again
    [plan] = rt.vendor_nn._plans.values()
    assert plan.graphs.failed


@pytest.mark.parametrize("why", ["switched off", "driver without graphs"])
def test_without_graphs_every_call_runs_directly(monkeypatch, why):
    if why == "switched off":
        monkeypatch.setattr(cudnn_graphs, "ENABLED", False)
        rt, fake = _graph_runtime(monkeypatch)
    else:
        fake = LoweredCudnn()
        rt, _ = _runtime(monkeypatch, fake)
    for _ in range(4):
        _conv2d(rt)
    assert len(fake.direct) == 4 and rt.vendor_nn.replays() == 0
    assert not getattr(rt.driver, "captured", [])


def test_a_plan_keeps_its_newest_graphs_and_stops_capturing_addresses_that_never_settle():
    destroyed: list[int] = []
    graphs = PlanGraphs(lambda graph: lambda stream: None, destroyed.append)
    made = 0
    for key in range(cudnn_graphs.GRAPHS_PER_PLAN + cudnn_graphs.DROPS_PER_PLAN):
        assert not graphs.launch((key,), 7000) and not graphs.due((key,))  # first run: remembered
        assert graphs.due((key,))  # second run: captured now
        graphs.keep((key,), made)
        made += 1
        assert graphs.launch((key,), 7000)
    assert graphs.failed  # DROPS_PER_PLAN graphs dropped: no more captures
    assert destroyed == list(range(cudnn_graphs.DROPS_PER_PLAN))  # the oldest first
    kept = range(made - cudnn_graphs.GRAPHS_PER_PLAN, made)
    assert all(graphs.launch((key,), 7000) for key in kept)
    assert not graphs.due((made,)) and not graphs.due((made,))
    del graphs
    assert sorted(destroyed) == list(range(made))  # the kept ones with the plan


def test_address_sets_seen_once_are_forgotten_past_the_bound():
    graphs = PlanGraphs(lambda graph: lambda stream: None, lambda graph: None)
    assert not graphs.due((0,))
    for key in range(1, cudnn_graphs.SEEN_PER_PLAN + 1):
        graphs.due((key,))
    assert not graphs.due((0,))  # forgotten: its run counts as a first again
    assert graphs.due((0,))


def test_runs_and_captures_hold_the_handles_lock(monkeypatch):
    """A capture binds the device's handle to the capture stream while it records: another
    thread's run meanwhile would be recorded too, so each run holds the Cudnn's lock."""
    rt, fake = _graph_runtime(monkeypatch)
    held = []
    run = LoweredCudnn.pygraph

    def pygraph(self, **settings):
        graph = run(self, **settings)
        execute = graph._lowered_graph._execute_with_raw_ptrs
        graph._lowered_graph._execute_with_raw_ptrs = lambda *a: (
            held.append(rt.vendor_nn._binding.locked()) or execute(*a)
        )
        return graph

    monkeypatch.setattr(LoweredCudnn, "pygraph", pygraph)
    for _ in range(3):
        _conv2d(rt)
    assert held == [True, True] and not rt.vendor_nn._binding.locked()  # the direct run and the recorded one

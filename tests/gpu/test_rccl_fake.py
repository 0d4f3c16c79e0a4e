"""The rocm collectives (generated Comm -> runtime/comm/gpu.py -> runtime/comm/rccl.py) against the
recording fake of hip.rccl (tests/gpu/fake_rccl.py) over the fake HIP: two ranks in this process,
one fake AMD device each, every op and dtype of the registry checked against numpy, the calls'
argument types checked by the fake, the buffers kept alive until an event says the stream ran
them, and the faults (an asynchronous error, a stream that never finishes) ending in the typed
error with the communicator aborted. No AMD hardware: this checks the calls, not RCCL itself."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("hip.rccl", reason="hip-python is not installed: `make test` installs it")

import generated as g  # noqa: E402
from runtime import rocm  # noqa: E402
from runtime.comm import gpu as comm_gpu  # noqa: E402
from runtime.errors import CollectiveAborted, CollectiveTimeout  # noqa: E402
from tests.collectives.references import REGISTRY, inputs, reduce_ref, tolerance  # noqa: E402
from tests.gpu.fake_rccl import FakeRccl, hip_queries  # noqa: E402
from tests.gpu.test_rocm_fake import fake  # noqa: E402, F401  (the fixture: runtime.rocm on the fake HIP)


class FakeGroup:
    """The MPI side of one rank (runtime/comm/host.py's HostGroup), for ranks in one process."""

    board: dict = {}

    def __init__(self, rank: int, size: int, timeout: float) -> None:
        self.rank, self.size, self.local_rank, self.timeout, self.backend = rank, size, rank, timeout, "rocm"

    def bcast_bytes(self, op, data, nbytes, root=0):
        if data is not None:
            FakeGroup.board[op] = data
        return FakeGroup.board[op]

    def barrier(self, op="barrier"):
        pass

    def agree(self, op, facts):
        pass


@pytest.fixture
def ranks(fake, monkeypatch):
    """Two generated Comms on rocm:0 and rocm:1, through rocm.comm_world."""
    rccl = FakeRccl(fake)
    hip_queries(fake)
    rt = rocm.alloc_uninit.__self__
    monkeypatch.setattr(rocm, "_rt", rt)
    monkeypatch.setattr(rocm, "_rccl", lambda: rccl)
    groups = iter([FakeGroup(0, 2, 0.3), FakeGroup(1, 2, 0.3)])
    monkeypatch.setattr(comm_gpu.HostGroup, "world", classmethod(lambda cls, timeout, backend: next(groups)))
    comms = [g.Comm.world("rocm"), g.Comm.world("rocm")]
    comms[0].inner.rccl = comms[1].inner.rccl = rccl
    return comms


def put(comm, array):
    return comm.device().storage_from_slice(np.ascontiguousarray(array))


def host(storage, count):
    return g.to_numpy(storage, g.Layout.contiguous((count,)))


def close(got, want, dtype):
    rtol, atol = tolerance(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


DTYPES = list(REGISTRY["dtypes"])
REDUCTIONS = [r for r in REGISTRY["collectives"]["all_reduce"]["reductions"]]


def test_each_rank_runs_on_its_local_rank_s_device(ranks):
    assert [(c.rank, c.size, c.ordinal, c.backend.value) for c in ranks] == [(0, 2, 0, "rocm"), (1, 2, 1, "rocm")]
    calls = [c for c in ranks[0].inner.rccl.calls if c[0] == "ncclCommInitRank"]
    assert calls == [("ncclCommInitRank", 2, 0, 0), ("ncclCommInitRank", 2, 1, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("count", [0, 1, 7, 1001])
def test_all_reduce_matches_numpy(ranks, dtype, reduction, count):
    if dtype not in _allowed("all_reduce", reduction):
        with pytest.raises(g.CollectiveMismatch, match=f"all_reduce on rocm rank 0: expected dtype .* for {reduction}"):
            x = put(ranks[0], inputs("all_reduce", dtype, count, 0))
            ranks[0].all_reduce(x, x, g.Reduction(reduction))
        return
    xs = [inputs("all_reduce", dtype, count, r, reduction) for r in range(2)]
    recvs = [put(c, np.zeros_like(xs[0])) for c in ranks]
    for c, x, recv in zip(ranks, xs, recvs):
        c.all_reduce(put(c, x), recv, g.Reduction(reduction))
    for recv in recvs:
        close(host(recv, count), reduce_ref(xs, reduction), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("count", [0, 1, 7, 1001])
def test_data_movement_matches_numpy(ranks, dtype, count):
    """all_gather, reduce_scatter (sum), broadcast, reduce (max, root 1), all_to_all, send_recv, send / recv."""
    xs = [inputs("x", dtype, count * 2, r) for r in range(2)]
    gathered = [put(c, np.zeros(count * 4, xs[0].dtype)) for c in ranks]
    scattered = [put(c, np.zeros(count, xs[0].dtype)) for c in ranks]
    swapped = [put(c, np.zeros(count * 2, xs[0].dtype)) for c in ranks]
    bufs = [put(c, x) for c, x in zip(ranks, xs)]
    reduced = [put(c, np.full(count * 2, 3, xs[0].dtype)) for c in ranks]
    ring = [put(c, np.zeros(count * 2, xs[0].dtype)) for c in ranks]
    for r, c in enumerate(ranks):
        c.all_gather(put(c, xs[r]), gathered[r])
    for r, c in enumerate(ranks):
        c.reduce_scatter(put(c, xs[r]), scattered[r], g.Reduction.SUM)
    for r, c in enumerate(ranks):
        c.reduce(put(c, xs[r]), reduced[r], g.Reduction.MAX, 1)
    for r, c in enumerate(ranks):
        c.all_to_all(put(c, xs[r]), swapped[r])
    for r, c in enumerate(ranks):
        c.send_recv(put(c, xs[r]), 1 - r, ring[r], 1 - r)
    for r, c in enumerate(ranks):
        c.broadcast(bufs[r], 0)
    for r in range(2):
        close(host(gathered[r], count * 4), np.concatenate(xs), dtype)
        close(host(scattered[r], count), reduce_ref(xs, "sum")[r * count : (r + 1) * count], dtype)
        close(
            host(swapped[r], count * 2), np.concatenate([xs[j][r * count : (r + 1) * count] for j in range(2)]), dtype
        )
        close(host(ring[r], count * 2), xs[1 - r], dtype)
        close(host(bufs[r], count * 2), xs[0], dtype)
    close(host(reduced[1], count * 2), reduce_ref(xs, "max"), dtype)
    close(host(reduced[0], count * 2), np.full(count * 2, 3, xs[0].dtype), dtype)
    ranks[0].send(put(ranks[0], xs[0]), 1)
    got = put(ranks[1], np.zeros(count * 2, xs[0].dtype))
    ranks[1].recv(got, 0)
    close(host(got, count * 2), xs[0], dtype)
    assert ranks[0].inner.rccl.undelivered() == 0


def test_sends_and_receives_of_a_step_are_one_group(ranks):
    x = [put(c, np.arange(8, dtype=np.float32)) for c in ranks]
    y = [put(c, np.zeros(8, np.float32)) for c in ranks]
    rccl = ranks[0].inner.rccl
    start = len(rccl.calls)
    ranks[0].all_to_all(x[0], y[0])
    names = [c[0] for c in rccl.calls[start:]]
    assert names == ["ncclGroupStart", "ncclSend", "ncclRecv", "ncclSend", "ncclRecv", "ncclGroupEnd"]
    ranks[1].all_to_all(x[1], y[1])


def test_buffers_live_until_an_event_says_the_stream_ran_them(ranks, fake):
    c = ranks[0]
    start = len(fake.calls)
    for _ in itertools.repeat(None, comm_gpu.KEEP_BATCH):
        c.inner.all_reduce(put(c, np.ones(4, np.float32)).inner, put(c, np.ones(4, np.float32)).inner, "sum")
    recorded = [call for call in fake.calls[start:] if call[0] == "record"]
    assert len(recorded) == 1  # one event for the whole batch, on the comm's stream
    assert recorded[0][2] is c.inner.stream
    assert c.inner._held == [] and len(c.inner._batches) <= 1


def test_an_asynchronous_error_aborts_with_a_typed_error(ranks, fake):
    rccl = ranks[0].inner.rccl
    fake.stalled = True
    rccl.async_error = 6  # ncclRemoteError: a peer gone
    with pytest.raises(CollectiveAborted, match=r"synchronize on rocm rank 0: RCCL: fake ncclRemoteError"):
        ranks[0].synchronize()
    assert ("ncclCommAbort", 0) in rccl.calls
    x = put(ranks[0], np.ones(4, np.float32))
    with pytest.raises(CollectiveAborted, match="all_reduce on rocm rank 0: the communicator was aborted"):
        ranks[0].all_reduce(x, x, g.Reduction.SUM)


def test_a_stream_that_never_finishes_times_out_and_aborts(ranks, fake):
    fake.stalled = True
    with pytest.raises(CollectiveTimeout, match=r"synchronize on rocm rank 1: not finished after 0.3 s"):
        ranks[1].synchronize()
    assert ("ncclCommAbort", 1) in ranks[1].inner.rccl.calls


def test_a_host_call_stuck_past_the_timeout_is_aborted_by_the_watchdog(ranks):
    """A library call that blocks (a peer that never connects) returns once the watchdog aborts."""
    inner = ranks[0].inner
    blocked = inner.lib.all_reduce

    def stuck(*args):
        while inner.broken is None:
            pass
        return 6

    inner.lib.all_reduce = stuck
    x = put(ranks[0], np.ones(4, np.float32))
    with pytest.raises(CollectiveTimeout, match="all_reduce on rocm rank 0"):
        ranks[0].all_reduce(x, x, g.Reduction.SUM)
    inner.lib.all_reduce = blocked


def _allowed(op, reduction):
    allowed = REGISTRY["collectives"][op]["reductions"][reduction]
    return REGISTRY["dtype_sets"][allowed] if isinstance(allowed, str) else allowed

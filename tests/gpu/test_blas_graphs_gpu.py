"""GEMMs replayed as CUDA graphs (runtime/gpu/blas_graphs.py) on cuda: the same matmul on the
same buffers, new input values written in place before each call, with graphs on and off, in
every dtype the BLAS takes and with the reduced-precision switches on: from the second call on
a graph runs it, and every output is the plain call's bit for bit and the cpu's within the
suite's tolerance (the graph reads the buffers' values at each replay). The recording and
replaying themselves are checked on a fake binding in tests/gpu/test_cuda_blas.py.

Skips (saying why) where cuda cannot run."""

from __future__ import annotations

import numpy as np
import pytest

import generated as g

_REASON = g.Backend.CUDA.unavailable_reason()
if _REASON is not None:
    pytest.skip(f"cuda: unavailable: {_REASON}", allow_module_level=True)

import runtime.cuda as cuda  # noqa: E402
from runtime.gpu import blas_graphs  # noqa: E402

CUDA, CPU = g.Device.parse("cuda:0"), g.Device.parse("cpu")
TOLERANCE = {"bf16": 2e-2, "f16": 2e-3, "f32": 1e-5, "f64": 1e-12}
B, M, N, K = 2, 64, 48, 96


pytestmark = pytest.mark.usefixtures("cuda_switches_restored")


def _matmul(dev, a, b):
    la, lb = g.Layout.contiguous((B, M, K)), g.Layout.contiguous((B, K, N))
    out = a.matmul(b, g.MatmulDims(B, M, N, K), la, lb)
    return g.to_numpy(out, g.Layout.contiguous((B, M, N)))


def _runs(inputs, fresh, graphs: bool, monkeypatch) -> tuple[list, int]:
    """Each call's output over the same storages, their values rewritten in place first (the
    output dropped after each, so that the pool hands its block to the next), and the replays."""
    monkeypatch.setattr(blas_graphs, "ENABLED", graphs)
    before = cuda._driver.gemm_graphs.replays()
    outputs = []
    for values in fresh:
        for storage, host in zip(inputs, values):
            cuda._driver.upload(storage.inner.ptr, host.reshape(-1), cuda._driver.stream(0))
        outputs.append(_matmul(CUDA, *inputs))
    return outputs, cuda._driver.gemm_graphs.replays() - before


@pytest.mark.parametrize("reduced", [False, True], ids=["full", "reduced"])
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f64"])
def test_a_gemm_run_again_on_its_buffers_replays_a_graph_with_the_plain_calls_bits(dtype, reduced, monkeypatch):
    if reduced:
        if dtype == "f64":
            pytest.skip("f64 has no reduced-precision switch")
        getattr(cuda, f"set_gemm_reduced_precision_{dtype}")(True)
    rng = np.random.default_rng(23)
    dt = g.DType(dtype).numpy
    fresh = [[rng.uniform(-1, 1, s).astype(dt) for s in ((B, M, K), (B, K, N))] for _ in range(6)]
    inputs = [CUDA.storage_from_slice(values) for values in fresh[0]]
    replayed, replays = _runs(inputs, fresh, True, monkeypatch)
    assert replays >= 4, f"GEMM graphs did not replay ({cuda._driver.last_capture_failure})"
    plain, none = _runs(inputs, fresh, False, monkeypatch)
    assert none == 0
    tolerance = TOLERANCE["bf16" if reduced and dtype != "bf16" else dtype] * (16 if reduced else 1)
    for n, values in enumerate(fresh):
        np.testing.assert_array_equal(replayed[n], plain[n], err_msg=f"{dtype} call {n + 1}")
        want = _matmul(CPU, *(CPU.storage_from_slice(v) for v in values)).astype(np.float64)
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(replayed[n].astype(np.float64), want, rtol=tolerance, atol=tolerance * scale)

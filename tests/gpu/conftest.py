import pytest

import runtime.gpu.memory


@pytest.fixture(autouse=True)
def poison_fresh_gpu_buffers(monkeypatch):
    """Fresh GPU buffers hold 0xFF bytes (NaN, the largest integer): an element a kernel
    fails to write cannot pass as a right answer."""
    monkeypatch.setattr(runtime.gpu.memory, "POISON", True)

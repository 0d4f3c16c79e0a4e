"""DLPack's stream ordering on the GPU: how often a consumer (torch) reads unfinished data
WITHOUT it (a producer that asks for no ordering: stream=-1), against the same hand-off WITH it.
Shows that tests/gpu/test_interop_gpu.py's ordering tests can fail. Prints one line per
variant; run on a CUDA GPU with torch:

    python3 -m bench.interop"""

from __future__ import annotations

import sys
from typing import Any

N, STEPS, TRIALS = 1 << 24, 30, 20


class NoOrder:
    """A producer that ignores the consumer's stream (asks for no ordering)."""

    def __init__(self, view: Any) -> None:
        self.view = view

    def __dlpack__(self, stream: Any = None, max_version: Any = None, **_: Any) -> Any:
        return self.view.__dlpack__(stream=-1, max_version=max_version)

    def __dlpack_device__(self) -> Any:
        return self.view.__dlpack_device__()


def trial(ordered: bool) -> bool:
    """STEPS queued affine kernels on N f32, then the hand-off: whether torch read the end."""
    import torch

    import generated as g

    layout = g.Layout.contiguous((N,))
    x = g.Device.parse("cuda:0").zeros((N,), g.DType.F32)
    for _ in range(STEPS):
        x = x.affine(layout, 1.0, 1.0)
    view = g.View(x, layout)
    t = torch.from_dlpack(view if ordered else NoOrder(view))
    ok = bool(((t == STEPS).all()).item())
    torch.cuda.synchronize()
    return ok


def main() -> None:
    import torch

    import runtime.gpu.memory

    runtime.gpu.memory.POISON = True  # fresh buffers are NaN until the kernels write them
    for ordered in (True, False):
        wrong = sum(not trial(ordered) for _ in range(TRIALS))
        print(
            f"{'with' if ordered else 'without'} stream ordering: {wrong}/{TRIALS} hand-offs read unfinished data "
            f"({N} f32, {STEPS} queued affine kernels, torch {torch.__version__}, {torch.cuda.get_device_name()})"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()

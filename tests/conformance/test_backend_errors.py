"""One check, one error on every backend: reduce_op's dims (runtime/checks.py). cpu through
the generated API; the GPU runtime (shared by cuda and rocm) through a driver that keeps its
memory in host memory, so this runs without a GPU. Nothing is launched: the check comes first."""

from __future__ import annotations

import numpy as np
import pytest

from generated import Layout, ReduceOp, ShapeMismatch, kernels_hip
from runtime.gpu.memory import GpuBuffer
from runtime.gpu.runtime import GpuRuntime

from .refs import CPU

SHAPE = (3, 4, 5)
BAD = [((-1,), "distinct dims in [0, 3)"), ((0, 0), "distinct dims in [0, 3)"), ((3,), "distinct dims in [0, 3)"),
       ((1, -2), "distinct dims in [0, 3)")]


class _NoDevice:
    """A Driver that must not be reached: the dims are refused before any allocation."""

    name = "gpu"

    def __getattr__(self, name):
        raise AssertionError(f"the driver's {name} was called before the dims were checked")


@pytest.mark.parametrize("dims, expected", BAD, ids=str)
def test_cpu_refuses_negative_repeated_and_out_of_range_dims(dims, expected, rng):
    s = CPU.storage_from_slice(rng.standard_normal(SHAPE).astype(np.float32))
    with pytest.raises(ShapeMismatch) as err:
        s.reduce_op(ReduceOp.SUM, Layout.contiguous(SHAPE), dims)
    assert (err.value.op, err.value.backend, err.value.expected, err.value.got) == ("sum", "cpu", expected, dims)


@pytest.mark.parametrize("dims, expected", BAD, ids=str)
def test_the_gpu_runtime_refuses_them_with_the_same_error(dims, expected):
    rt = GpuRuntime(_NoDevice())
    buf = GpuBuffer(1 << 40, int(np.prod(SHAPE)), np.dtype(np.float32), 0)  # never read
    with pytest.raises(ShapeMismatch) as err:
        rt.reduce_op(buf, kernels_hip.REDUCE[ReduceOp.SUM], Layout.contiguous(SHAPE), dims,
                     kernels_hip.STORAGE["reduce_op"])
    assert (err.value.op, err.value.backend, err.value.expected, err.value.got) == ("sum", "gpu", expected, dims)

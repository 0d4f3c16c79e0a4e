"""One check, one error on every backend: reduce_op's dims and matmul's operand shapes
(runtime/checks.py). cpu through
the generated API; the GPU runtime (shared by cuda and rocm) through a driver that keeps its
memory in host memory, so this runs without a GPU. Nothing is launched: the check comes first."""

from __future__ import annotations

import numpy as np
import pytest

from generated import Backend, Device, Layout, MatmulDims, ReduceOp, ShapeMismatch, kernels_hip
from runtime.gpu.memory import GpuBuffer
from runtime.gpu.runtime import GpuRuntime

from .refs import CPU

SHAPE = (3, 4, 5)
BAD = [
    ((-1,), "distinct dims in [0, 3)"),
    ((0, 0), "distinct dims in [0, 3)"),
    ((3,), "distinct dims in [0, 3)"),
    ((1, -2), "distinct dims in [0, 3)"),
]


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
        rt.reduce_op(
            buf, kernels_hip.REDUCE[ReduceOp.SUM], Layout.contiguous(SHAPE), dims, kernels_hip.STORAGE["reduce_op"]
        )
    assert (err.value.op, err.value.backend, err.value.expected, err.value.got) == ("sum", "gpu", expected, dims)


# matmul's operand shapes (runtime/checks.py's matmul_dims): one error for every backend.
# (lhs shape, rhs shape, (b, m, n, k), the expected of the error, its got)
MATMUL_BAD = [
    ((2, 3, 5), (2, 4, 6), (2, 3, 6, 4), "lhs of shape (..., 3, 4) with 2 batches", (2, 3, 5)),
    ((2, 3, 4), (2, 5, 6), (2, 3, 6, 4), "rhs of shape (..., 4, 6) with 2 batches", (2, 5, 6)),
    ((3, 3, 4), (2, 4, 6), (2, 3, 6, 4), "lhs of shape (..., 3, 4) with 2 batches", (3, 3, 4)),
    ((2, 3, 4), (1, 4, 6), (2, 3, 6, 4), "rhs of shape (..., 4, 6) with 2 batches", (1, 4, 6)),
    ((4,), (4, 6), (1, 1, 6, 4), "lhs of shape (..., 1, 4) with 1 batches", (4,)),
]
GPU_BACKENDS = [Backend.CUDA, Backend.ROCM]


def _matmul_error(device: Device, lhs_shape, rhs_shape, bmnk, rng) -> ShapeMismatch:
    lhs = device.storage_from_slice(rng.standard_normal(int(np.prod(lhs_shape))).astype(np.float32))
    rhs = device.storage_from_slice(rng.standard_normal(int(np.prod(rhs_shape))).astype(np.float32))
    with pytest.raises(ShapeMismatch) as err:
        lhs.matmul(rhs, MatmulDims(*bmnk), Layout.contiguous(lhs_shape), Layout.contiguous(rhs_shape))
    return err.value


@pytest.mark.parametrize("lhs_shape, rhs_shape, bmnk, expected, got", MATMUL_BAD, ids=str)
def test_cpu_refuses_matmul_operands_of_other_shapes(lhs_shape, rhs_shape, bmnk, expected, got, rng):
    err = _matmul_error(CPU, lhs_shape, rhs_shape, bmnk, rng)
    assert (err.op, err.backend, err.expected, err.got) == ("matmul", "cpu", expected, got)


@pytest.mark.parametrize("lhs_shape, rhs_shape, bmnk, expected, got", MATMUL_BAD, ids=str)
def test_the_gpu_runtime_refuses_those_operands_with_the_same_error(lhs_shape, rhs_shape, bmnk, expected, got):
    rt = GpuRuntime(_NoDevice())
    lhs = GpuBuffer(1 << 40, int(np.prod(lhs_shape)), np.dtype(np.float32), 0)  # never read
    rhs = GpuBuffer(1 << 41, int(np.prod(rhs_shape)), np.dtype(np.float32), 0)
    with pytest.raises(ShapeMismatch) as err:
        rt.matmul(
            lhs,
            rhs,
            MatmulDims(*bmnk),
            Layout.contiguous(lhs_shape),
            Layout.contiguous(rhs_shape),
            kernels_hip.STORAGE["matmul"],
        )
    assert (err.value.op, err.value.backend, err.value.expected, err.value.got) == ("matmul", "gpu", expected, got)


@pytest.mark.parametrize("backend", GPU_BACKENDS, ids=str)
@pytest.mark.parametrize("lhs_shape, rhs_shape, bmnk, expected, got", MATMUL_BAD[:2], ids=str)
def test_each_gpu_backend_refuses_them_through_the_api(backend, lhs_shape, rhs_shape, bmnk, expected, got, rng):
    """On a machine with the backend's GPU (the GPU suite's)."""
    reason = backend.unavailable_reason()
    if reason is not None:
        pytest.skip(f"{backend.value}: unavailable: {reason}")
    err = _matmul_error(Device(backend, 0), lhs_shape, rhs_shape, bmnk, rng)
    assert (err.op, err.backend, err.expected, err.got) == ("matmul", backend.value, expected, got)

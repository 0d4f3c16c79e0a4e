"""The cuda driver's GEMM through nvmath-python's cuBLAS binding, against a recording fake of
that binding: no GPU needed. (On the H100 the GEMMs themselves run in the conformance suite.)"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np
import pytest

from runtime import cuda
from runtime.errors import BackendUnavailable
from runtime.gpu.driver import GpuError


class FakeCublas:
    """nvmath.bindings.cublas as the driver uses it; gemm reads alpha and beta while the
    call lasts (host pointers, as cuBLAS's default pointer mode reads them)."""

    class cuBLASError(Exception):
        pass

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple] = []
        self.fail = fail

    def create(self):
        self.calls.append(("create",))
        return 77

    def set_stream(self, handle, stream):
        self.calls.append(("set_stream", handle, stream))

    def gemm_strided_batched_ex(self, *args):
        if self.fail:
            raise self.cuBLASError("CUBLAS_STATUS_INVALID_VALUE")
        scalar = ctypes.c_double if args[21] == 70 else ctypes.c_float  # CUBLAS_COMPUTE_64F: double scalars
        alpha, beta = scalar.from_address(args[6]).value, scalar.from_address(args[15]).value
        self.calls.append(("gemm", *args[:6], alpha, *args[7:15], beta, *args[16:]))

    def get_cudart_version(self):
        return 13000


def _driver(monkeypatch, fake) -> cuda.CudaDriver:
    monkeypatch.setattr(cuda, "_cublas", lambda: fake)
    return cuda.CudaDriver()


@pytest.mark.parametrize(
    "dtype, data, compute",
    [(np.float32, 0, 68), (np.float64, 1, 70), (np.float16, 2, 68), (ml_dtypes.bfloat16, 14, 68)],
)
def test_gemm_passes_cublas_its_arguments_on_our_stream(monkeypatch, dtype, data, compute):
    """f32 computes in f32 (CUBLAS_COMPUTE_32F, not the TF32 mode), halves accumulate in f32."""
    fake = FakeCublas()
    driver = _driver(monkeypatch, fake)
    driver.gemm(0, 5, np.dtype(dtype), True, False, 2, 3, 4, 100, 4, 8, 200, 4, 0, 300, 2, 6, 7)
    [create, bind, gemm] = fake.calls
    assert create == ("create",) and bind == ("set_stream", 77, 5)
    assert gemm == (
        "gemm",
        77,
        1,
        0,
        2,
        3,
        4,
        1.0,
        100,
        data,
        4,
        8,
        200,
        data,
        4,
        0,
        0.0,
        300,
        data,
        2,
        6,
        7,
        compute,
        -1,
    )


def test_one_handle_per_device_rebound_only_when_the_stream_changes(monkeypatch):
    fake = FakeCublas()
    driver = _driver(monkeypatch, fake)
    for ordinal, stream in ((0, 5), (0, 5), (0, 9), (1, 11), (0, 9)):
        driver.gemm(ordinal, stream, np.dtype(np.float32), False, False, 1, 1, 1, 8, 1, 1, 16, 1, 1, 24, 1, 1, 1)
    assert [c for c in fake.calls if c[0] != "gemm"] == [
        ("create",),
        ("set_stream", 77, 5),
        ("set_stream", 77, 9),
        ("create",),
        ("set_stream", 77, 11),
    ]


def test_a_cublas_failure_is_a_gpu_error_naming_the_call(monkeypatch):
    driver = _driver(monkeypatch, FakeCublas(fail=True))
    with pytest.raises(GpuError, match="cuda: cublasGemmStridedBatchedEx failed: CUBLAS_STATUS_INVALID_VALUE"):
        driver.gemm(0, 5, np.dtype(np.float32), False, False, 1, 1, 1, 8, 1, 1, 16, 1, 1, 24, 1, 1, 1)


def test_without_nvmath_matmul_says_what_to_install_and_the_blas_is_unavailable(monkeypatch):
    def missing():
        raise ImportError("No module named 'nvmath'")

    monkeypatch.setattr(cuda, "_cublas", missing)
    driver = cuda.CudaDriver()
    assert driver.blas_available() is False
    with pytest.raises(BackendUnavailable, match=r"cuda: unavailable: matmul needs cuBLAS through nvmath-python"):
        driver.gemm(0, 5, np.dtype(np.float32), False, False, 1, 1, 1, 8, 1, 1, 16, 1, 1, 24, 1, 1, 1)

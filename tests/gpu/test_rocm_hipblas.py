"""rocm matmul through hipBLAS, checked without an AMD GPU: the enums each dtype maps to,
the call hip-python receives, and the typed error where libhipblas is missing."""

from __future__ import annotations

import ctypes
import types

import ml_dtypes
import numpy as np
import pytest

from runtime import rocm
from runtime.errors import BackendUnavailable
from runtime.gpu.driver import GpuError

hipblas = pytest.importorskip("hip.hipblas", reason="hip-python is not installed: `make test` installs it")
hip = pytest.importorskip("hip.hip")

# hipBLAS 2.x's values (hipblas.h, library_types.h), which the library reads as plain ints.
DATA = {"HIP_R_16F": 2, "HIP_R_32F": 0, "HIP_R_64F": 1, "HIP_R_16BF": 14}
COMPUTE = {"HIPBLAS_COMPUTE_32F": 2, "HIPBLAS_COMPUTE_64F": 7}


def _has_hipblas() -> bool:
    for name in rocm._HIPBLAS_LIBRARIES:
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return True
    return False


def test_every_gemm_dtype_maps_to_the_enums_hipblas_expects():
    expected = {
        np.dtype(np.float16): ("HIP_R_16F", "HIPBLAS_COMPUTE_32F", np.float32),
        np.dtype(ml_dtypes.bfloat16): ("HIP_R_16BF", "HIPBLAS_COMPUTE_32F", np.float32),
        np.dtype(np.float32): ("HIP_R_32F", "HIPBLAS_COMPUTE_32F", np.float32),
        np.dtype(np.float64): ("HIP_R_64F", "HIPBLAS_COMPUTE_64F", np.float64),
    }
    assert rocm._GEMM_TYPES == expected
    for data, compute, _ in expected.values():
        assert getattr(hip.hipDataType, data).value == DATA[data]
        assert getattr(hipblas.hipblasComputeType_t, compute).value == COMPUTE[compute]
    assert hipblas.hipblasOperation_t.HIPBLAS_OP_N.value == 111
    assert hipblas.hipblasOperation_t.HIPBLAS_OP_T.value == 112
    assert hipblas.hipblasGemmAlgo_t.HIPBLAS_GEMM_DEFAULT.value == 160
    assert callable(getattr(hipblas, rocm._GEMM))


class _FakeHipblas(types.SimpleNamespace):
    """hip.hipblas's enums, with the calls recorded instead of made."""

    def __init__(self, status=0):
        super().__init__(
            hipblasOperation_t=hipblas.hipblasOperation_t,
            hipblasComputeType_t=hipblas.hipblasComputeType_t,
            hipblasGemmAlgo_t=hipblas.hipblasGemmAlgo_t,
            calls=[],
            status=status,
        )

    def hipblasCreate(self):
        self.calls.append(("create",))
        return hipblas.hipblasStatus_t.HIPBLAS_STATUS_SUCCESS, "handle"

    def hipblasSetStream(self, handle, stream):
        self.calls.append(("stream", handle, stream))
        return (hipblas.hipblasStatus_t.HIPBLAS_STATUS_SUCCESS,)

    def hipblasGemmStridedBatchedEx_v2(self, *args):
        self.calls.append(("gemm", *args))
        return (hipblas.hipblasStatus_t(self.status),)


@pytest.fixture
def fake(monkeypatch):
    blas = _FakeHipblas()
    monkeypatch.setattr(rocm, "_hipblas", lambda: blas)
    monkeypatch.setattr(rocm, "_hip", lambda: hip)
    return blas


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64], ids=str)
def test_gemm_passes_cuda_drivers_arguments_to_hipblas(fake, dtype):
    driver = rocm.HipDriver()
    driver.gemm(0, "stream0", np.dtype(dtype), True, False, 3, 4, 5, 0xA000, 5, 15, 0xB000, 5, 20, 0xC000, 3, 12, 2)
    driver.gemm(0, "stream0", np.dtype(dtype), False, True, 3, 4, 5, 0xA000, 3, 0, 0xB000, 4, 20, 0xC000, 3, 12, 2)
    assert fake.calls[:2] == [("create",), ("stream", "handle", "stream0")]  # one handle per device
    first, second = fake.calls[2], fake.calls[3]
    data, compute, scalar = rocm._GEMM_TYPES[np.dtype(dtype)]
    op = hipblas.hipblasOperation_t
    (
        _,
        handle,
        ta,
        tb,
        m,
        n,
        k,
        alpha,
        a,
        a_type,
        lda,
        stride_a,
        b,
        b_type,
        ldb,
        stride_b,
        beta,
        c,
        c_type,
        ldc,
        stride_c,
        batch,
        compute_type,
        algo,
    ) = first
    assert (handle, ta, tb, m, n, k) == ("handle", op.HIPBLAS_OP_T, op.HIPBLAS_OP_N, 3, 4, 5)
    assert (a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c, batch) == (
        0xA000,
        5,
        15,
        0xB000,
        5,
        20,
        0xC000,
        3,
        12,
        2,
    )
    assert a_type == b_type == c_type == getattr(hip.hipDataType, data)
    assert compute_type == getattr(hipblas.hipblasComputeType_t, compute)
    assert algo == hipblas.hipblasGemmAlgo_t.HIPBLAS_GEMM_DEFAULT
    assert alpha.dtype == beta.dtype == np.dtype(scalar) and alpha.tolist() == [1] and beta.tolist() == [0]
    assert second[2:4] == (op.HIPBLAS_OP_N, op.HIPBLAS_OP_T)


def test_a_failed_gemm_raises_naming_the_call_and_the_status(fake):
    fake.status = hipblas.hipblasStatus_t.HIPBLAS_STATUS_NOT_SUPPORTED.value
    with pytest.raises(GpuError, match=f"^rocm: {rocm._GEMM} failed: HIPBLAS_STATUS_NOT_SUPPORTED$"):
        rocm.HipDriver().gemm(0, "s", np.dtype(np.float32), False, False, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)


def test_without_libhipblas_matmul_is_unavailable_with_the_reason():
    if _has_hipblas():
        pytest.skip("libhipblas is installed here")
    rocm._hipblas.cache_clear()
    with pytest.raises(
        BackendUnavailable,
        match=r"^rocm: unavailable: matmul needs hipBLAS: library not found "
        r"\(libhipblas\)$",
    ):
        rocm.HipDriver().gemm(0, "s", np.dtype(np.float32), False, False, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)


def test_a_hipblas_without_the_v2_gemm_is_refused_not_called(monkeypatch):
    """hipBLAS 3's unsuffixed GEMM and 2.x's take different enums: only the _v2 symbol is
    called, so the wrong library is a typed error, never a GEMM on misread types."""
    monkeypatch.setattr(rocm, "_HIPBLAS_LIBRARIES", ("libc.so.6",))  # loads, has no GEMM
    rocm._hipblas.cache_clear()
    with pytest.raises(BackendUnavailable, match=r"matmul needs hipBLAS 2.x \(ROCm 6\): libc.so.6 has no "):
        rocm._hipblas()
    rocm._hipblas.cache_clear()

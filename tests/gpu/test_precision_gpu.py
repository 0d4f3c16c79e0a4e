"""The precision modes of runtime/gpu/switches.py on cuda, each switch off and on, against f64
references of the same (rounded) inputs: the error of every element within the documented
bound, relative to sum |a b| of its products (the scale of the rounding errors an element can
collect). Where a mode must change the arithmetic (TF32, f16 accumulation), the test also
asserts that it did: its error is well above the full-precision mode's.

Skips (saying why) where cuda cannot run."""

from __future__ import annotations

import numpy as np
import pytest

import generated as g

_REASON = g.Backend.CUDA.unavailable_reason()
if _REASON is not None:
    pytest.skip(f"cuda: unavailable: {_REASON}", allow_module_level=True)

import runtime.cuda as cuda  # noqa: E402
from runtime.gpu.switches import BF16_REDUCED_TOLERANCE, TF32_TOLERANCE, f16_reduced_tolerance  # noqa: E402

CUDA, CPU = g.Device.parse("cuda:0"), g.Device.parse("cpu")
#: Full precision: f32 accumulation, the output rounded to the dtype (2^-24, 2^-11, 2^-8 of
#: sum |a b|), with room for the summation order.
FULL = {"f32": 1e-5, "f16": 2.0**-10, "bf16": 2.0**-7}
B, M, N, K = 2, 96, 80, 1024


pytestmark = pytest.mark.usefixtures("cuda_switches_restored")


def _operands(dtype: str, *shapes, seed: int = 3):
    rng = np.random.default_rng(seed)
    dt = g.DType(dtype).numpy
    return [rng.uniform(-1, 1, shape).astype(dt) for shape in shapes]


def _relative(got: np.ndarray, want: np.ndarray, scale: np.ndarray) -> float:
    """The largest |got - want| / scale of the elements (scale: sum |a b| of each)."""
    return float(np.max(np.abs(got.astype(np.float64) - want) / np.maximum(scale, 1e-30)))


def _matmul_error(dtype: str) -> float:
    a, b = _operands(dtype, (B, M, K), (B, K, N))
    out = CUDA.storage_from_slice(a).matmul(
        CUDA.storage_from_slice(b), g.MatmulDims(B, M, N, K), g.Layout.contiguous(a.shape), g.Layout.contiguous(b.shape)
    )
    got = g.to_numpy(out, g.Layout.contiguous((B, M, N)))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return _relative(got, a64 @ b64, np.abs(a64) @ np.abs(b64))


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_matmul_with_its_gemm_switch_off_keeps_full_precision(dtype):
    assert _matmul_error(dtype) <= FULL[dtype]


def test_f32_matmul_on_tf32_is_within_its_tolerance_and_is_tf32():
    full = _matmul_error("f32")
    cuda.set_gemm_reduced_precision_f32(True)
    reduced = _matmul_error("f32")
    assert reduced <= TF32_TOLERANCE
    assert reduced > 10 * full, f"TF32 on: error {reduced:.3g}, as f32's {full:.3g}: the switch did nothing"


def test_f16_matmul_accumulating_in_f16_is_within_its_tolerance_and_is_f16():
    full = _matmul_error("f16")
    cuda.set_gemm_reduced_precision_f16(True)
    reduced = _matmul_error("f16")
    assert reduced <= f16_reduced_tolerance(K)
    assert reduced > 2 * full, f"f16 accumulation: error {reduced:.3g}, as f32's {full:.3g}: the switch did nothing"


def test_bf16_matmul_with_reduced_reductions_is_within_its_tolerance():
    """Whether cuBLAS splits k (and sums in bf16) is its own choice: only the bound is checked."""
    cuda.set_gemm_reduced_precision_bf16(True)
    assert _matmul_error("bf16") <= BF16_REDUCED_TOLERANCE


def _conv_error(cudnn: bool) -> float:
    x, w = _operands("f32", (4, 64, 20, 18), (64, 64, 3, 3), seed=5)
    p = g.ConvParams2D(b_size=4, i_h=20, i_w=18, k_h=3, k_w=3, c_out=64, c_in=64, padding=1)
    lx, lw, lo = g.Layout.contiguous(x.shape), g.Layout.contiguous(w.shape), g.Layout.contiguous((4, 64, 20, 18))
    vendor = cuda._rt.vendor_nn
    kept = vendor.enabled
    vendor.enabled = cudnn
    try:
        got = g.to_numpy(CUDA.storage_from_slice(x).conv2d(lx, CUDA.storage_from_slice(w), lw, p), lo)
    finally:
        vendor.enabled = kept

    def reference(x64, w64):
        return g.to_numpy(CPU.storage_from_slice(x64).conv2d(lx, CPU.storage_from_slice(w64), lw, p), lo)

    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    return _relative(got, reference(x64, w64), reference(np.abs(x64), np.abs(w64)))


@pytest.mark.parametrize("path", ["cudnn", "gemm"])
def test_f32_conv2d_on_tf32_is_within_its_tolerance_and_is_tf32(path):
    """cuDNN's TENSOR_CORE plans, or (cuDNN off) im2col and the TF32 GEMM."""
    if path == "cudnn" and cuda._rt.vendor_nn.unavailable() is not None:
        pytest.skip(f"cuDNN: {cuda._rt.vendor_nn.unavailable()}")
    full = _conv_error(path == "cudnn")
    assert full <= FULL["f32"]
    cuda.set_gemm_reduced_precision_f32(True)  # the GEMM switch does not reach convolutions
    assert _conv_error(path == "cudnn") <= FULL["f32"]
    cuda.set_conv_reduced_precision_f32(True)
    reduced = _conv_error(path == "cudnn")
    assert reduced <= TF32_TOLERANCE
    assert reduced > 10 * full, f"TF32 on: error {reduced:.3g}, as f32's {full:.3g}: the switch did nothing"

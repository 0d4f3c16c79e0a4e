"""The process-wide switches of a GPU backend: reduced precision for its GEMMs and convolutions
(Candle's `set_gemm_reduced_precision_f32/_f16/_bf16`, torch's `allow_tf32` and
`allow_fp16/bf16_reduced_precision_reduction`) and autotuning of cuDNN's plans (torch's
`cudnn.benchmark`). One set per backend and process, as in Candle and torch: a switch holds
for every device of the backend from the next call on.

All are off by default, as in Candle: f32 computes in f32 and the half types accumulate in f32,
so every backend agrees with the cpu reference within the tolerances the conformance tests
check, and the first call of a convolution takes cuDNN's heuristic plan instead of timing
every plan inside the user's call.

Each switch, on: what runs, and the error it allows (of each output element, relative to
sum |a b| over its products; the constants below, which tests/gpu/test_precision_gpu.py checks):

- gemm_reduced_precision_f32: f32 GEMMs on TF32 tensor cores (cuBLAS COMPUTE_32F_FAST_TF32):
  matmul, attention's BLAS path, QMatMul's dequantized GEMM. Inputs rounded to 10 mantissa
  bits: TF32_TOLERANCE.
- gemm_reduced_precision_f16: f16 GEMMs accumulate in f16 (cuBLAS COMPUTE_16F, as Candle's
  switch): f16_reduced_tolerance(k), (k + 2) 2^-11.
- gemm_reduced_precision_bf16: bf16 GEMMs may sum their split-K partial products in bf16
  (cuBLAS's default math mode; off, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION keeps
  them in f32): BF16_REDUCED_TOLERANCE.
- conv_reduced_precision_f32: f32 convolutions on TF32 tensor cores (cuDNN's TENSOR_CORE
  plans; without cuDNN, the im2col GEMM in TF32): TF32_TOLERANCE over the taps.
- autotune: cuDNN times every plan of a convolution on its first call and keeps the fastest,
  also on disk (runtime/gpu/plan_cache.py), so that later processes start with it. Off, the
  heuristics' plan runs (kept on disk too). No change to the precision.

- qmatmul_exact_x: QMatMul of the block formats multiplies x as given (hip/quantized.hip,
  within 1e-5 of sum |x W| of the f64 product) instead of x quantized on the device to q8_1
  blocks and integer dot products (hip/qmatvec_q8.hip, ggml's and Candle's product: a
  normalized mean squared error near 1e-5, under ggml's bound of 5e-4; QMATMUL_Q8_1_NMSE).
  Off, the quantized-x product is the faster of the two (bench/results/NOTES.md, GGML). f32,
  f16 and bf16 weights multiply x as given either way.

Environment: OPGEN_TF32=1 turns both f32 switches on at import, OPGEN_AUTOTUNE=1 autotuning,
OPGEN_QMATMUL_EXACT_X=1 the exact x.
rocm: the switches are kept and read back; hipBLAS computes in full precision whatever they
say (no AMD GPU here to test the reduced modes on)."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

import ml_dtypes
import numpy as np

#: The bound the f32 reduced modes are tested to: TF32 rounds each input to 10 explicit
#: mantissa bits (relative error 2^-11 each), the f32 sums add little: 2 * 2^-11 + slack.
TF32_TOLERANCE = 2e-3
#: bf16 GEMMs with reduced-precision reductions: each split-K partial rounded to bf16 (2^-9
#: relative) and summed in bf16, a few splits: 2^-6.
BF16_REDUCED_TOLERANCE = 2.0**-6
#: The bound QMatMul's quantized-x product is tested to: test-backend-ops' normalized mean
#: squared error against the f64 product (sum (y - y64)^2 / sum y64^2).
QMATMUL_Q8_1_NMSE = 5e-4


def f16_reduced_tolerance(k: int) -> float:
    """The bound of f16 GEMMs accumulating in f16 over k products: each addition and the
    products round to 11 bits (the classic (k + 2) u bound, u = 2^-11)."""
    return (k + 2) * 2.0**-11


#: dtype -> the switch of its GEMMs (keyed by the dtype itself: numpy computes a dtype's name
#: in Python on every read, a few microseconds of each call).
_GEMM_SWITCH = {
    np.dtype("float32"): "gemm_reduced_precision_f32",
    np.dtype("float16"): "gemm_reduced_precision_f16",
    np.dtype(ml_dtypes.bfloat16): "gemm_reduced_precision_bf16",
}
_F32 = np.dtype("float32")


def _environment(name: str) -> bool:
    return os.environ.get(name, "0") not in ("", "0")


@dataclass
class Switches:
    """The switches' values (see the module's table); the defaults read the environment."""

    gemm_reduced_precision_f32: bool = False
    gemm_reduced_precision_f16: bool = False
    gemm_reduced_precision_bf16: bool = False
    conv_reduced_precision_f32: bool = False
    autotune: bool = False
    qmatmul_exact_x: bool = False

    @classmethod
    def from_environment(cls) -> Switches:
        tf32 = _environment("OPGEN_TF32")
        return cls(
            gemm_reduced_precision_f32=tf32,
            conv_reduced_precision_f32=tf32,
            autotune=_environment("OPGEN_AUTOTUNE"),
            qmatmul_exact_x=_environment("OPGEN_QMATMUL_EXACT_X"),
        )

    def gemm_reduced(self, dtype: np.dtype) -> bool:
        """Whether GEMMs of `dtype` may compute in reduced precision."""
        name = _GEMM_SWITCH.get(np.dtype(dtype))
        return bool(name and getattr(self, name))

    def conv_reduced(self, dtype: np.dtype) -> bool:
        """Whether convolutions of `dtype` may compute in reduced precision (f32 only: the half
        types' convolutions accumulate in f32 either way)."""
        return self.conv_reduced_precision_f32 and np.dtype(dtype) == _F32


SWITCH_NAMES = tuple(f.name for f in fields(Switches))


class Switched:
    """GpuRuntime's switches: `switches` is set up by GpuRuntime; each switch has a getter of
    its name and a setter `set_<name>(enabled)`, Candle's spelling (exported by
    runtime/gpu/exports.py as runtime.cuda.set_gemm_reduced_precision_f32 and so on)."""

    switches: Switches

    def gemm_reduced_precision_f32(self) -> bool:
        return self.switches.gemm_reduced_precision_f32

    def set_gemm_reduced_precision_f32(self, enabled: bool) -> None:
        self.switches.gemm_reduced_precision_f32 = bool(enabled)

    def gemm_reduced_precision_f16(self) -> bool:
        return self.switches.gemm_reduced_precision_f16

    def set_gemm_reduced_precision_f16(self, enabled: bool) -> None:
        self.switches.gemm_reduced_precision_f16 = bool(enabled)

    def gemm_reduced_precision_bf16(self) -> bool:
        return self.switches.gemm_reduced_precision_bf16

    def set_gemm_reduced_precision_bf16(self, enabled: bool) -> None:
        self.switches.gemm_reduced_precision_bf16 = bool(enabled)

    def conv_reduced_precision_f32(self) -> bool:
        return self.switches.conv_reduced_precision_f32

    def set_conv_reduced_precision_f32(self, enabled: bool) -> None:
        self.switches.conv_reduced_precision_f32 = bool(enabled)

    def autotune(self) -> bool:
        return self.switches.autotune

    def set_autotune(self, enabled: bool) -> None:
        self.switches.autotune = bool(enabled)

    def qmatmul_exact_x(self) -> bool:
        return self.switches.qmatmul_exact_x

    def set_qmatmul_exact_x(self, enabled: bool) -> None:
        self.switches.qmatmul_exact_x = bool(enabled)

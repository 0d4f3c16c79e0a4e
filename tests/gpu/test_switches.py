"""The GPU backends' switches (runtime/gpu/switches.py) without a GPU: their defaults and
environment, their export from both vendor modules, and which GEMMs each reaches (the fake
drivers record each gemm's `reduced`). The numbers each mode gives: tests/gpu/test_precision_gpu.py
on the H100."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import runtime.cuda
import runtime.rocm
from generated import kernels_hip
from runtime.gpu import nn as gpu_nn
from runtime.gpu.runtime import GpuRuntime
from runtime.gpu.switches import SWITCH_NAMES, Switches
from runtime.layout import Layout
from runtime.params import ConvParams2D, MatmulDims
from tests.gpu.test_gpu_runtime_paths import BlasDriver, GemmArgsDriver

BF16 = np.dtype(ml_dtypes.bfloat16)
GEMM_SWITCHES = {
    np.dtype(np.float32): "gemm_reduced_precision_f32",
    np.dtype(np.float16): "gemm_reduced_precision_f16",
    BF16: "gemm_reduced_precision_bf16",
}


def test_every_switch_is_off_by_default(monkeypatch):
    monkeypatch.delenv("OPGEN_TF32", raising=False)
    monkeypatch.delenv("OPGEN_AUTOTUNE", raising=False)
    monkeypatch.delenv("OPGEN_QMATMUL_EXACT_X", raising=False)
    switches = Switches.from_environment()
    assert [getattr(switches, name) for name in SWITCH_NAMES] == [False] * len(SWITCH_NAMES) == [False] * 6


@pytest.mark.parametrize("value, on", [("1", True), ("0", False), ("", False)])
def test_the_environment_turns_tf32_and_autotuning_on(monkeypatch, value, on):
    monkeypatch.setenv("OPGEN_TF32", value)
    monkeypatch.setenv("OPGEN_AUTOTUNE", value)
    switches = Switches.from_environment()
    assert (switches.gemm_reduced_precision_f32, switches.conv_reduced_precision_f32, switches.autotune) == (on,) * 3
    assert not switches.gemm_reduced_precision_f16 and not switches.gemm_reduced_precision_bf16


@pytest.mark.parametrize("vendor", [runtime.cuda, runtime.rocm], ids=["cuda", "rocm"])
@pytest.mark.parametrize("name", SWITCH_NAMES)
def test_each_vendor_exports_each_switch_and_its_getter(vendor, name):
    getter, setter = getattr(vendor, name), getattr(vendor, f"set_{name}")
    kept = getter()
    try:
        setter(1)  # any truth value, kept as a bool
        assert getter() is True and getattr(vendor._rt.switches, name) is True
        setter(False)
        assert getter() is False
    finally:
        setter(kept)


@pytest.mark.parametrize("dtype", list(GEMM_SWITCHES))
def test_matmul_reaches_the_gemm_switch_of_its_dtype_alone(dtype):
    rt = GpuRuntime(driver := GemmArgsDriver())
    rt.switches = Switches()
    lhs, rhs = rt.from_host(0, np.ones((2, 3), dtype)), rt.from_host(0, np.ones((3, 4), dtype))

    def matmul():
        rt.matmul(lhs, rhs, MatmulDims(1, 2, 4, 3), Layout.contiguous((2, 3)), Layout.contiguous((3, 4)), {})

    matmul()
    for name in set(GEMM_SWITCHES.values()) - {GEMM_SWITCHES[dtype]}:
        setattr(rt.switches, name, True)
    rt.switches.conv_reduced_precision_f32 = True
    matmul()  # every other switch on
    setattr(rt.switches, GEMM_SWITCHES[dtype], True)
    matmul()
    assert driver.reduced == [False, False, True]


def test_f64_gemms_are_never_reduced():
    assert not Switches(True, True, True, True, True).gemm_reduced(np.dtype(np.float64))


def _conv2d(rt, dtype):
    x = rt.from_host(0, np.ones((2, 3, 5, 4), dtype))
    k = rt.from_host(0, np.ones((4, 3, 3, 3), dtype))
    p = ConvParams2D(b_size=2, i_h=5, i_w=4, k_h=3, k_w=3, c_out=4, c_in=3, padding=1)
    rt.conv2d(x, Layout.contiguous((2, 3, 5, 4)), k, Layout.contiguous((4, 3, 3, 3)), p, kernels_hip.STORAGE["conv2d"])


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16])
def test_the_convolutions_gemm_path_follows_the_conv_switch_for_f32_alone(dtype):
    rt = GpuRuntime(driver := BlasDriver())
    rt.switches = Switches()
    rt.launch = lambda *args: None
    rt.set_gemm_reduced_precision_f32(True)
    rt.set_gemm_reduced_precision_bf16(True)
    _conv2d(rt, dtype)  # the GEMM switches do not reach convolutions
    rt.set_conv_reduced_precision_f32(True)
    _conv2d(rt, dtype)
    assert driver.reduced == [False, dtype == np.float32]


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16)])
def test_attention_through_the_blas_follows_the_gemm_switch(dtype):
    rt = GpuRuntime(driver := GemmArgsDriver())
    rt.switches = Switches()
    rt.launch = lambda *args: None
    q = rt.from_host(0, np.ones((1, 2, 8, 24), dtype))  # head dim 24: no fused kernel
    layout = Layout.contiguous((1, 2, 8, 24))
    table = kernels_hip.NN["sdpa"]
    gpu_nn.sdpa(rt, q, layout, q, layout, q, layout, 0.5, False, table)
    setattr(rt.switches, GEMM_SWITCHES[dtype], True)
    gpu_nn.sdpa(rt, q, layout, q, layout, q, layout, 0.5, False, table)
    assert driver.reduced == [False, False, True, True]  # S = Q K^T and O = P V, each call


def test_qmatmul_gemm_follows_the_f32_gemm_switch():
    from runtime import ggml
    from runtime.gpu.quant import QGpuBuffer, q_matmul

    rt = GpuRuntime(driver := GemmArgsDriver())
    rt.switches = Switches()
    rt.launch = lambda *args: None
    n, k, rows = 3, 64, 32
    q = QGpuBuffer("q4_0", rt.from_host(0, np.zeros(n * (k // 32) * ggml.FORMATS["q4_0"].nbytes, np.uint8)))
    x = rt.from_host(0, np.ones(rows * k, np.float32))
    for on in (False, True):
        rt.set_gemm_reduced_precision_f32(on)
        q_matmul(rt, q, x, Layout.contiguous((rows, k)), (n, k), kernels_hip.QSTORAGE["matmul"])
    assert driver.reduced == [False, True]

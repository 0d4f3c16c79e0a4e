"""Quantized storage through the generated API on cpu: every GGML format of the registry,
against GGML's own byte images (tests/fixtures/ggml) and float64 numpy references."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import generated as g

from .conftest import REGISTRY

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ggml"
FORMATS = [g.GgmlDType(name) for name in REGISTRY["quantized"]]
CPU = g.Device.parse("cpu")


def reference_inputs() -> np.ndarray:
    return np.load(FIXTURES / "inputs.npy")


def ggml_bytes(fmt: g.GgmlDType) -> np.ndarray:
    return np.fromfile(FIXTURES / f"{fmt.value}.bin", np.uint8)


def values(storage: g.Storage, n: int) -> np.ndarray:
    return g.to_numpy(storage, g.Layout.contiguous((n,)))


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_quantize_writes_ggml_blocks(fmt):
    x = reference_inputs()
    q = CPU.quantize(x, fmt)
    assert q.dtype() is fmt and q.device() == CPU
    assert q.size_in_bytes() == x.size // fmt.block_size * fmt.type_size
    np.testing.assert_array_equal(q.data(), ggml_bytes(fmt))


@pytest.mark.parametrize(
    "fmt", [f for f in FORMATS if f is not g.GgmlDType.Q8_1], ids=str
)  # GGML has no q8_1 dequantizer
def test_dequantize_reads_ggml_blocks(fmt):
    q = CPU.qstorage_from_bytes(ggml_bytes(fmt), fmt)
    n = reference_inputs().size
    expected = np.load(FIXTURES / f"{fmt.value}.dequant.npy")
    out = q.dequantize(n)
    assert out.dtype() is g.DType.F32
    np.testing.assert_array_equal(values(out, n).view(np.uint32), expected.view(np.uint32))
    half = q.dequantize_f16(n)
    assert half.dtype() is g.DType.F16
    np.testing.assert_array_equal(values(half, n), expected.astype(np.float16))
    np.testing.assert_array_equal(values(q.dequantize(fmt.block_size), fmt.block_size), expected[: fmt.block_size])


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_qzeros_and_copies(fmt):
    zeros = CPU.qzeros(2 * fmt.block_size, fmt)
    assert zeros.size_in_bytes() == 2 * fmt.type_size
    np.testing.assert_array_equal(values(zeros.dequantize(2 * fmt.block_size), 2 * fmt.block_size), 0)
    q = CPU.qstorage_from_bytes(ggml_bytes(fmt), fmt)
    moved = q.to_device(CPU)
    assert moved is not q and moved.dtype() is fmt
    np.testing.assert_array_equal(moved.data(), q.data())


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_matmul_is_x_times_the_dequantized_weight(fmt):
    n, k = 5, 2 * max(fmt.block_size, 64)
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((n, k)).astype(np.float32)
    q = CPU.quantize(weight, fmt)
    w = values(q.dequantize(n * k), n * k).reshape(n, k).astype(np.float64)
    x = rng.standard_normal((3, k)).astype(np.float32)
    layouts = {
        "contiguous": (x, g.Layout.contiguous((3, k))),
        "transposed": (np.ascontiguousarray(x.T), g.Layout.contiguous((k, 3)).transpose(0, 1)),
        "broadcast": (x[0], g.Layout.contiguous((k,)).broadcast_as((2, 3, k))),
    }
    for name, (host, layout) in layouts.items():
        out = q.matmul(CPU.storage_from_slice(host), layout, (n, k))
        xs = np.lib.stride_tricks.as_strided(host, layout.shape, [s * 4 for s in layout.stride])
        expected = xs.astype(np.float64) @ w.T
        got = g.to_numpy(out, g.Layout.contiguous(expected.shape))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4, err_msg=name)


def test_errors_are_typed_and_name_the_op():
    fmt = g.GgmlDType.Q4_0
    with pytest.raises(g.ShapeMismatch, match="quantize"):
        CPU.quantize(np.ones(33, np.float32), fmt)
    with pytest.raises(g.ShapeMismatch, match="qstorage_from_bytes"):
        CPU.qstorage_from_bytes(np.zeros(fmt.type_size + 1, np.uint8), fmt)
    q = CPU.quantize(np.ones((2, 32), np.float32), fmt)
    with pytest.raises(g.DTypeMismatch, match=r"matmul on cpu: expected dtype one of f32, got f16"):
        q.matmul(CPU.storage_from_slice(np.ones(32, np.float16)), g.Layout.contiguous((32,)), (2, 32))
    with pytest.raises(g.ShapeMismatch, match="qmatmul"):
        q.matmul(CPU.storage_from_slice(np.ones(64, np.float32)), g.Layout.contiguous((64,)), (2, 32))

"""The fixture package, generated and imported: every kind of dispatch arm runs.

cpu implements everything; on gpu, `affine` falls back to cpu through host memory, `unary`,
`binary` and `zeros` are missing, `apply_scale` runs its custom op's hook."""

from __future__ import annotations

import numpy as np
import pytest
from gen_harness import MINI, run_cli

from runtime.errors import (
    BackendUnavailable,
    DeviceMismatch,
    DTypeMismatch,
    NotImplementedForBackend,
    ShapeMismatch,
)
from runtime.layout import Layout


@pytest.fixture(scope="module")
def m(tmp_path_factory, package_importer):
    out = tmp_path_factory.mktemp("fixturepkg") / "minipkg"
    result = run_cli("--registry", MINI, "--out", out)
    assert result.exit_code == 0, result.output
    return package_importer(out)


@pytest.fixture
def cpu(m):
    return m.Device(m.Backend.CPU)


@pytest.fixture
def gpu(m):
    return m.Device(m.Backend.GPU, 1)


L3 = Layout.contiguous((3,))
X = np.array([1.0, 2.0, 4.0], np.float32)


def test_enums_follow_the_registry(m):
    assert [b.value for b in m.Backend] == ["cpu", "gpu"]
    assert [d.value for d in m.DType] == ["u8", "f32", "bf16"]
    assert [o.value for o in m.UnaryOp] == ["neg", "exp"]
    assert [o.value for o in m.BinaryOp] == ["div"]
    assert [o.value for o in m.CmpOp] == ["lt"]
    assert [o.value for o in m.ReduceOp] == ["sum"]
    assert m.UnaryOp.NEG.dtypes == (m.DType.F32, m.DType.BF16)
    assert m.BinaryOp.DIV.dtypes == (m.DType.U8, m.DType.F32, m.DType.BF16)
    assert m.DType.BF16.numpy.name == "bfloat16" and m.DType.U8.kind == "uint" and m.DType.F32.hip == "float"
    assert m.DType.of(np.dtype("float32")) is m.DType.F32 and m.DType.of("u8") is m.DType.U8
    assert not m.Backend.CPU.numbered and m.Backend.GPU.numbered
    assert m.Backend.GPU.doc == "fixture device backend; only some ops"


def test_exports(m):
    for name in ("Scale1", "Bump2", "Storage", "Device", "DType", "UnaryOp", "to_numpy", "to_device", "Layout"):
        assert name in m.__all__ and hasattr(m, name)
    assert m.__all__ == sorted(m.__all__)


def test_kernel_tables(m):
    k = m.kernels_numpy
    assert k.CMP[m.CmpOp.LT].result == np.dtype("uint8")  # comparisons return u8 where the registry has it
    assert k.UNARY[m.UnaryOp.EXP].result is None
    assert set(k.BINARY[m.BinaryOp.DIV].by_dtype) == {np.dtype("uint8"), np.dtype("float32"), m.DType.BF16.numpy}
    div = k.BINARY[m.BinaryOp.DIV].by_dtype
    assert div[np.dtype("uint8")](np.array([7], np.uint8), np.array([2], np.uint8)).tolist() == [3]  # uint: x // y
    assert div[np.dtype("float32")](np.float32(7), np.float32(2)) == 3.5  # float: x / y
    bf = m.DType.BF16.numpy
    out = k.UNARY[m.UnaryOp.EXP].by_dtype[bf](np.array([1.0], bf))  # computes in f32, cast back
    assert out.dtype == bf and float(out[0]) == pytest.approx(np.e, rel=1e-2)
    total = k.REDUCE[m.ReduceOp.SUM].by_dtype[np.dtype("float32")](np.arange(6, dtype=np.float32).reshape(2, 3))
    assert total.tolist() == [3.0, 12.0]


def test_implemented_arms_on_cpu(m, cpu):
    a = cpu.storage_from_slice(X)
    assert a.backend is m.Backend.CPU and a.dtype() is m.DType.F32 and a.device() == cpu
    np.testing.assert_allclose(m.to_numpy(a.unary(m.UnaryOp.EXP, L3), L3), np.exp(X), rtol=1e-6)
    np.testing.assert_array_equal(m.to_vec1(a.unary(m.UnaryOp.NEG, L3), L3), -X)
    np.testing.assert_array_equal(m.to_vec1(a.binary(m.BinaryOp.DIV, a, L3, L3), L3), [1, 1, 1])
    np.testing.assert_array_equal(m.to_vec1(a.affine(L3, 2.0, 1.0), L3), X * 2 + 1)
    a.fill(5.0)
    np.testing.assert_array_equal(m.to_vec1(a, L3), [5, 5, 5])
    z = cpu.zeros((2, 2), m.DType.U8)
    assert z.dtype() is m.DType.U8 and m.to_vec2(z, Layout.contiguous((2, 2))).tolist() == [[0, 0], [0, 0]]
    assert cpu.location() == "host memory"


def test_strided_layouts_reach_the_runtime(m, cpu):
    a = cpu.storage_from_slice(np.arange(6, dtype=np.float32))
    t = Layout.contiguous((2, 3)).transpose(0, 1)
    np.testing.assert_array_equal(
        m.to_vec2(a.unary(m.UnaryOp.NEG, t), Layout.contiguous((3, 2))), -np.arange(6, dtype=np.float32).reshape(2, 3).T
    )


def test_fallback_arm_runs_on_cpu_and_stays_on_gpu(m, gpu):
    g = gpu.storage_from_slice(X)
    out = g.affine(L3, 3.0, -1.0)
    assert out.backend is m.Backend.GPU and out.device() == gpu
    assert out.inner.ordinal == 1  # moved back to the device the input lives on
    np.testing.assert_array_equal(m.to_vec1(out, L3), X * 3 - 1)


def test_missing_arms_name_backend_and_op(m, gpu):
    g = gpu.storage_from_slice(X)
    with pytest.raises(NotImplementedForBackend, match="no gpu implementation for unary") as exc:
        g.unary(m.UnaryOp.NEG, L3)
    assert (exc.value.backend, exc.value.op) == ("gpu", "unary")
    with pytest.raises(NotImplementedForBackend, match="no gpu implementation for binary"):
        g.binary(m.BinaryOp.DIV, g, L3, L3)
    with pytest.raises(NotImplementedForBackend, match="no gpu implementation for zeros"):
        gpu.zeros((2,), m.DType.F32)


def test_missing_arm_of_unavailable_backend(m, gpu, monkeypatch):
    import mini_rt.gpu

    g = gpu.storage_from_slice(X)
    monkeypatch.setattr(mini_rt.gpu, "availability", lambda: "no fixture device here")
    with pytest.raises(BackendUnavailable, match="gpu: unavailable: no fixture device here"):
        g.unary(m.UnaryOp.NEG, L3)
    assert m.Device.available() == {m.Backend.CPU: None, m.Backend.GPU: "no fixture device here"}
    monkeypatch.setattr(mini_rt.gpu, "availability", lambda: 1 / 0)
    assert m.Backend.GPU.unavailable_reason().startswith("availability check failed")


def test_hook_arms(m, cpu, gpu):
    class Double(m.Scale1):
        name = "double"

        def cpu_fwd(self, s1, l1):
            return (s1 * 2), l1.shape

    a = cpu.storage_from_slice(X)
    out, shape = a.apply_scale(L3, Double())
    assert out.backend is m.Backend.CPU and shape == (3,)
    np.testing.assert_array_equal(m.to_vec1(out, L3), X * 2)
    with pytest.raises(NotImplementedForBackend, match="no gpu implementation for double"):
        gpu.storage_from_slice(X).apply_scale(L3, Double())
    assert hasattr(m.Bump2, "cpu_fwd") and hasattr(m.Bump2, "gpu_fwd")
    with pytest.raises(NotImplementedForBackend, match="no cpu implementation for Bump2"):
        m.Bump2().cpu_fwd(None, None, None, None)


def test_checks_before_dispatch(m, cpu, gpu):
    a = cpu.storage_from_slice(X)
    with pytest.raises(DeviceMismatch):
        a.binary(m.BinaryOp.DIV, gpu.storage_from_slice(X), L3, L3)
    with pytest.raises(DTypeMismatch):
        a.binary(m.BinaryOp.DIV, cpu.storage_from_slice(X.astype(np.uint8)), L3, L3)
    with pytest.raises(ShapeMismatch):
        a.binary(m.BinaryOp.DIV, a, L3, Layout.contiguous((1, 3)))
    with pytest.raises(DTypeMismatch, match="affine"):  # dtypes: {self: float}
        cpu.storage_from_slice(X.astype(np.uint8)).affine(L3, 1.0, 0.0)


def test_to_device_every_pair(m, cpu, gpu):
    for src in (cpu, gpu):
        for dst in (cpu, gpu):
            s = src.storage_from_slice(X)
            moved = m.to_device(s, L3, dst)
            assert moved.backend is dst.backend, (src, dst)
            np.testing.assert_array_equal(m.to_vec1(moved, L3), X)
    strided = m.to_device(
        cpu.storage_from_slice(np.arange(6, dtype=np.float32)), Layout.contiguous((2, 3)).transpose(0, 1), gpu
    )
    assert m.to_vec2(strided, Layout.contiguous((3, 2))).tolist() == [[0, 3], [1, 4], [2, 5]]


def test_device_parse_and_str(m):
    assert str(m.Device.parse("gpu:1")) == "gpu:1" and str(m.Device.parse("cpu")) == "cpu"
    assert m.Device.parse("gpu:1").is_gpu() and not m.Device.parse("gpu:1").is_cpu()
    with pytest.raises(ValueError, match="unknown backend"):
        m.Device.parse("tpu")
    with pytest.raises(ValueError):
        m.Device(m.Backend.CPU, 1)  # cpu has no ordinals


def test_conversions_check_rank(m, cpu):
    a = cpu.storage_from_slice(X)
    with pytest.raises(ShapeMismatch):
        m.to_vec2(a, L3)
    assert m.to_scalar(a, Layout.contiguous(())) == 1.0


def test_nn_op_class_runs_its_backend_hook(m, cpu, gpu):
    op = m.nn.ScaleRows(factor=2.0)
    assert isinstance(op, m.Scale1) and op.name == "scale_rows" and "nn" in m.__all__
    out, shape = cpu.storage_from_slice(X).apply_scale(L3, op)
    assert shape == (3,) and m.to_numpy(out, L3).tolist() == [2.0, 4.0, 8.0]
    with pytest.raises(NotImplementedForBackend, match="no gpu implementation for scale_rows"):
        gpu.storage_from_slice(X).apply_scale(L3, op)


def test_nn_op_checks_dtypes_before_the_runtime(m, cpu):
    ints = cpu.storage_from_slice(np.array([1, 2, 3], np.uint8))
    with pytest.raises(DTypeMismatch, match=r"scale_rows on cpu: expected dtype one of bf16, f32, got u8"):
        ints.apply_scale(L3, m.nn.ScaleRows(factor=2.0))


def test_qstorage_round_trip_and_missing_arms(m, cpu, gpu):
    values = np.array([1.0, -2.0, 0.5, 0.0, 127.0, 0.0, 0.0, -127.0], np.float32)
    q = cpu.quantize(values, m.GgmlDType.Q8)
    assert isinstance(q, m.QStorage) and q.dtype() is m.GgmlDType.Q8
    assert m.GgmlDType.Q8.block_size == 4 and m.GgmlDType.Q8.type_size == 8 and m.GgmlDType.Q8.ggml_type == 99
    back = m.to_numpy(q.dequantize(8), Layout.contiguous((8,)))
    np.testing.assert_allclose(back, values, atol=2 / 127)
    with pytest.raises(NotImplementedForBackend, match="no cpu implementation for QStorage.matmul"):
        q.matmul(cpu.storage_from_slice(X), L3)
    with pytest.raises(NotImplementedForBackend, match="no gpu implementation for quantize"):
        gpu.quantize(values, m.GgmlDType.Q8)

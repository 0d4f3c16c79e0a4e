"""The rocm driver's device paths, run against the recording fake of hip-python
(tests/gpu/fake_hip.py): memory, copies, streams, events, module loading, launches with
packed arguments, peer copies, hipBLAS and DLPack, through the generated Storage API, with
results compared with the cpu backend. No AMD hardware: this checks the calls the driver
makes, not what an AMD GPU does with them."""

from __future__ import annotations

import functools
import gc

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("hip.hip", reason="hip-python is not installed: `make test` installs it")

import generated as g  # noqa: E402
from runtime import rocm  # noqa: E402
from runtime.gpu import launch, runtime as gpu  # noqa: E402
from tests.gpu.fake_hip import FakeHip, FakeHipblas, FakeHipError  # noqa: E402

CPU = g.Device.parse("cpu")
ROCM = g.Device.parse("rocm:0")
FLOATS = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """runtime.rocm's functions bound to a fresh runtime over a HipDriver on the fake."""
    fake = FakeHip()
    blas = FakeHipblas(fake)
    monkeypatch.setattr(rocm, "_hip", lambda: fake)
    monkeypatch.setattr(rocm, "_hipblas", lambda: blas)
    monkeypatch.setattr(rocm, "_loadable", lambda name: True)
    monkeypatch.setattr(rocm.HipDriver, "compiler_version", lambda self: "fake hiprtc")
    monkeypatch.setattr(rocm.HipDriver, "compile", lambda self, text, name, arch: b"FAKE:" + name.encode())
    monkeypatch.setattr("runtime.gpu.compile.hiprtc_version", lambda: (5, 2))
    monkeypatch.setattr("runtime.gpu.compile.CACHE_DIR", tmp_path)
    rt = gpu.GpuRuntime(rocm.HipDriver())
    rt.cache.directory = tmp_path / "rocm"
    old = rocm._rt
    for name, value in list(vars(rocm).items()):
        if getattr(value, "__self__", None) is old:
            monkeypatch.setattr(rocm, name, getattr(rt, value.__name__))
        elif isinstance(value, functools.partial) and value.args and value.args[0] is old:
            monkeypatch.setattr(rocm, name, functools.partial(value.func, rt))
    fake.blas = blas
    yield fake
    gc.collect()


def _both(array: np.ndarray):
    return CPU.storage_from_slice(array), ROCM.storage_from_slice(array)


LAYOUTS = {
    "contiguous": g.Layout.contiguous((5, 7)),
    "transposed": g.Layout.contiguous((5, 7)).transpose(0, 1),
    "offset": g.Layout.contiguous((5, 7)).narrow(0, 1, 3).narrow(1, 2, 4),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("dtype", list(FLOATS))
def test_affine_and_unary_match_the_cpu_backend(fake, dtype, name):
    layout = LAYOUTS[name]
    x = np.random.default_rng(0).uniform(-2, 2, 35).astype(FLOATS[dtype])
    cpu, dev = _both(x)
    out = g.Layout.contiguous(layout.shape)
    # halves: the kernels round once from f32, the cpu backend may round twice (as in
    # test_gpu_conformance.py's tolerances)
    tol = {"f16": 2e-3, "bf16": 2e-2}.get(dtype, 0)
    np.testing.assert_allclose(
        g.to_numpy(dev.affine(layout, 1.5, -0.25), out).astype(np.float64),
        g.to_numpy(cpu.affine(layout, 1.5, -0.25), out).astype(np.float64),
        rtol=tol,
        atol=tol,
    )
    np.testing.assert_array_equal(
        g.to_numpy(dev.unary(g.UnaryOp.NEG, layout), out), g.to_numpy(cpu.unary(g.UnaryOp.NEG, layout), out)
    )
    launches = [c for c in fake.calls if c[0] == "launch"]
    assert {c[1] for c in launches} >= {f"affine_{dtype}", f"unary_neg_{dtype}"}
    affine = next(c[2] for c in launches if c[1] == f"affine_{dtype}")
    assert affine[:2] == (layout.elem_count, layout.rank) and (affine[2] == 0) == layout.is_contiguous


@pytest.mark.parametrize("dtype", ["f32", "bf16", "i64", "u8"])
def test_const_set_and_strided_copies_match(fake, dtype):
    dt = {**FLOATS, "i64": np.int64, "u8": np.uint8}[dtype]
    cpu, dev = _both(np.arange(35).astype(dt))
    layout = LAYOUTS["offset"]
    cpu.const_set(3, layout)
    dev.const_set(3, layout)
    full = g.Layout.contiguous((35,))
    np.testing.assert_array_equal(g.to_numpy(dev, full), g.to_numpy(cpu, full))
    moved = g.to_device(dev, LAYOUTS["transposed"], ROCM)  # copy_strided on the device
    np.testing.assert_array_equal(
        g.to_numpy(moved, g.Layout.contiguous((7, 5))), g.to_numpy(cpu, LAYOUTS["transposed"])
    )


def test_peer_copies_between_two_devices_order_both_streams(fake):
    x = np.arange(12, dtype=np.float32)
    dev = ROCM.storage_from_slice(x)
    other = g.to_device(dev, g.Layout.contiguous((12,)), g.Device.parse("rocm:1"))
    assert other.device() == g.Device.parse("rocm:1")
    np.testing.assert_array_equal(g.to_numpy(other, g.Layout.contiguous((12,))), x)
    assert ("peer", 1, 0, 48) in fake.calls
    waits = [c for c in fake.calls if c[0] == "wait"]
    assert len(waits) == 2 and not fake.live_events()  # both directions, events released


def test_without_peer_access_the_copy_goes_through_the_host(fake):
    fake.peer = False
    x = np.arange(6, dtype=np.float64)
    other = g.to_device(ROCM.storage_from_slice(x), g.Layout.contiguous((6,)), g.Device.parse("rocm:1"))
    np.testing.assert_array_equal(g.to_numpy(other, g.Layout.contiguous((6,))), x)
    assert not fake.live_events()


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16"])
def test_matmul_through_hipblas_matches_the_cpu_backend(fake, dtype):
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (2, 3, 4)).astype(FLOATS[dtype]), rng.uniform(-1, 1, (2, 4, 5)).astype(FLOATS[dtype])
    la, lb = g.Layout.contiguous((2, 3, 4)), g.Layout.contiguous((2, 4, 5))
    dims = g.MatmulDims(2, 3, 5, 4)
    want = g.to_numpy(
        CPU.storage_from_slice(a).matmul(CPU.storage_from_slice(b), dims, la, lb), g.Layout.contiguous((2, 3, 5))
    )
    got = g.to_numpy(
        ROCM.storage_from_slice(a).matmul(ROCM.storage_from_slice(b), dims, la, lb), g.Layout.contiguous((2, 3, 5))
    )
    tol = {"f32": 1e-6, "f64": 1e-12, "f16": 2e-3, "bf16": 1e-2}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
    assert fake.blas.gemms == 1


def test_dlpack_on_rocm_shares_memory_and_orders_the_null_stream(fake):
    x = np.arange(12, dtype=np.float32)
    dev = ROCM.storage_from_slice(x)
    layout = g.Layout.contiguous((3, 4)).transpose(0, 1)
    view = g.View(dev, layout)
    assert view.__dlpack_device__() == (10, 0)  # kDLROCM
    view.__dlpack__()  # stream None on ROCm: the null stream (0) waits for ours, by an event
    assert any(c[0] == "wait" and c[1] == 0 for c in fake.calls)
    back, back_layout = g.from_dlpack(view)
    assert back.inner.ptr == dev.inner.ptr and back_layout.stride == layout.stride
    np.testing.assert_array_equal(g.to_numpy(back, back_layout), x.reshape(3, 4).T)
    assert not fake.live_events()
    assert not hasattr(view, "__cuda_array_interface__")


def test_the_fake_refuses_what_hip_would(fake):
    """The checks themselves: an address outside any allocation, an event recorded on
    another device's stream, a launch whose arguments are packed for another signature."""
    dev = ROCM.storage_from_slice(np.zeros(4, np.float32))
    with pytest.raises(FakeHipError, match="not inside one live allocation"):
        fake.hipMemcpyDtoDAsync(dev.inner.ptr, dev.inner.ptr + 8, 4096, None)  # past the block
    fake.hipSetDevice(1)
    _, stream1 = fake.hipStreamCreateWithFlags(fake.hipStreamNonBlocking)
    fake.hipSetDevice(0)
    _, event = fake.hipEventCreateWithFlags(fake.hipEventDisableTiming)
    with pytest.raises(FakeHipError, match="stream of device 1 used on device 0"):
        fake.hipEventRecord(event, stream1)
    _, (module, sigs) = fake.hipModuleLoadData(b"FAKE:affine.hip")
    fn = fake.hipModuleGetFunction((module, sigs), b"affine_f64")[1]
    import ctypes

    # affine_f32's packing (float mul, add) handed to affine_f64 (double mul, add): misaligned
    params = launch.kernel_params(
        type("L", (), {})(),
        (
            ctypes.c_size_t,
            ctypes.c_size_t,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_float,
            ctypes.c_float,
        ),
        (4, 0, 0, dev.inner.ptr, dev.inner.ptr, 1.0, 0.0),
    )
    with pytest.raises(FakeHipError, match="misaligned"):
        fake.hipModuleLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, None, params, None)
    with pytest.raises(FakeHipError, match="must be bytes"):
        fake.hipModuleGetFunction((module, sigs), "affine_f64")

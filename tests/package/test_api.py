"""The generated package's API beyond the ops themselves: devices, availability, custom-op
hooks, conversions, and the arms of backends that cannot run here."""

from __future__ import annotations

import numpy as np
import pytest

import generated as g

CPU = g.Device.parse("cpu")


def storage(array: np.ndarray) -> tuple[g.Storage, g.Layout]:
    return CPU.storage_from_slice(array), g.Layout.contiguous(array.shape)


@pytest.mark.parametrize(
    "text, backend, ordinal", [("cpu", "cpu", 0), ("cuda", "cuda", 0), ("cuda:3", "cuda", 3), ("rocm:0", "rocm", 0)]
)
def test_parse_and_str_round_trip(text, backend, ordinal):
    d = g.Device.parse(text)
    assert (d.backend.value, d.ordinal) == (backend, ordinal)
    assert g.Device.parse(str(d)) == d


@pytest.mark.parametrize("text", ["tpu", "cuda:x", "cpu:1", "cuda:-1", ""])
def test_parse_rejects_bad_devices(text):
    with pytest.raises(ValueError, match="device"):
        g.Device.parse(text)


def test_is_backend_and_same_device():
    cuda0, cuda1 = g.Device.parse("cuda:0"), g.Device.parse("cuda:1")
    assert CPU.is_cpu() and not CPU.is_cuda() and not CPU.is_rocm()
    assert cuda1.is_cuda() and not cuda1.is_cpu()
    assert cuda0.same_device(g.Device.parse("cuda")) and not cuda0.same_device(cuda1)


def test_available_lists_every_backend_with_a_reason():
    available = g.Device.available()
    assert set(available) == set(g.Backend)
    assert available[g.Backend.CPU] is None
    for backend, reason in available.items():
        assert reason is None or (isinstance(reason, str) and reason), backend


def test_cpu_device_methods():
    assert CPU.location() == "cpu" and CPU.supports_bf16() is True
    CPU.synchronize()
    z = CPU.zeros((2, 3), g.DType.BF16)
    assert z.dtype() is g.DType.BF16 and z.device() == CPU
    np.testing.assert_array_equal(g.to_vec2(z, g.Layout.contiguous((2, 3))).astype(np.float32), np.zeros((2, 3)))
    o = CPU.ones((4,), g.DType.U32)
    np.testing.assert_array_equal(g.to_vec1(o, g.Layout.contiguous((4,))), np.ones(4, np.uint32))


def test_set_seed_makes_random_storages_reproducible():
    layout = g.Layout.contiguous((64,))

    def draw():
        CPU.set_seed(1234)
        u = g.to_vec1(CPU.rand_uniform((64,), g.DType.F32, -1.0, 1.0), layout)
        n = g.to_vec1(CPU.rand_normal((64,), g.DType.F64, 3.0, 0.5), layout)
        return u, n

    (u1, n1), (u2, n2) = draw(), draw()
    np.testing.assert_array_equal(u1, u2)
    np.testing.assert_array_equal(n1, n2)
    assert u1.dtype == np.float32 and -1 <= u1.min() and u1.max() < 1 and len(set(u1.tolist())) > 32
    assert abs(n1.mean() - 3.0) < 0.3


def test_conversions_check_rank():
    s, layout = storage(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert g.to_vec2(s, layout).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert g.to_vec2(s, layout.transpose(0, 1)).tolist() == [[0, 3], [1, 4], [2, 5]]
    with pytest.raises(g.ShapeMismatch, match="to_vec1 on cpu: expected shape rank 1"):
        g.to_vec1(s, layout)
    scalar, scalar_layout = storage(np.array(7.5, dtype=np.float64))
    assert g.to_scalar(scalar, scalar_layout) == 7.5
    with pytest.raises(g.ShapeMismatch, match="to_scalar"):
        g.to_scalar(s, layout)


def test_to_device_cpu_to_cpu_copies_the_view():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    s, layout = storage(x)
    view = layout.narrow(1, 1, 2)
    moved = g.to_device(s, view, CPU)
    assert moved.backend is g.Backend.CPU
    np.testing.assert_array_equal(g.to_vec2(moved, g.Layout.contiguous((3, 2))), x[:, 1:3])
    s.const_set(0.0, layout)  # the copy does not alias the source
    np.testing.assert_array_equal(g.to_vec2(moved, g.Layout.contiguous((3, 2))), x[:, 1:3])


@pytest.mark.parametrize("target", ["cuda:0", "rocm:0"])
def test_to_device_to_an_unavailable_backend_says_why(target):
    device = g.Device.parse(target)
    reason = g.Device.available()[device.backend]
    if reason is None:
        pytest.skip(f"{target} is available on this machine; this test covers the unavailable case")
    s, layout = storage(np.ones(3, np.float32))
    with pytest.raises(g.BackendUnavailable, match=f"{device.backend.value}: unavailable: "):
        g.to_device(s, layout, device)


@pytest.mark.parametrize("backend", [g.Backend.CUDA, g.Backend.ROCM])
def test_arms_of_unavailable_backends_raise_typed_errors(backend):
    reason = backend.unavailable_reason()
    if reason is None:
        pytest.skip(f"{backend.value} is available on this machine; this test covers the unavailable case")
    device = g.Device(backend)
    with pytest.raises(g.BackendUnavailable) as err:
        device.zeros((2,), g.DType.F32)
    assert err.value.backend == backend.value and err.value.reason == reason
    with pytest.raises(g.BackendUnavailable, match=f"^{backend.value}: unavailable: "):
        device.set_seed(0)


def test_device_mismatch_is_typed_and_names_op_and_backend():
    s, layout = storage(np.ones(3, np.float32))
    other = g.Storage(g.Backend.CUDA, object())
    with pytest.raises(g.DeviceMismatch, match="binary on cpu: expected device cpu"):
        s.binary(g.BinaryOp.ADD, other, layout, layout)


class Scale(g.CustomOp1):
    name = "scale"

    def cpu_fwd(self, s1, l1):
        view = g.to_numpy(g.Storage(g.Backend.CPU, s1), l1)
        return (view * 3).reshape(-1), l1.shape


class AddInto(g.InplaceOp2):
    name = "add_into"

    def cpu_fwd(self, s1, l1, s2, l2):
        s1[l1.start_offset : l1.start_offset + l1.elem_count] += s2[l2.start_offset : l2.start_offset + l2.elem_count]


def test_custom_op_hooks_run_the_backend_fwd():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    s, layout = storage(x)
    out, shape = s.apply_op1(layout, Scale())
    assert shape == (2, 3) and out.backend is g.Backend.CPU
    np.testing.assert_array_equal(g.to_vec2(out, layout), x * 3)
    t, _ = storage(np.ones((2, 3), np.float32))
    s.inplace_op2(layout, t, layout, AddInto())
    np.testing.assert_array_equal(g.to_vec2(s, layout), x + 1)


@pytest.mark.parametrize("trait", [g.CustomOp1, g.CustomOp2, g.CustomOp3, g.InplaceOp1, g.InplaceOp2, g.InplaceOp3])
def test_every_trait_has_a_hook_per_backend_that_names_the_op(trait):
    class Named(trait):
        name = "my_op"

    op = Named()
    for backend in g.Backend:
        hook = getattr(op, f"{backend.value}_fwd")
        args = [object()] * (2 * int(trait.__name__[-1]))
        with pytest.raises(g.NotImplementedForBackend, match=f"^no {backend.value} implementation for my_op$"):
            hook(*args)


def test_custom_op_without_the_backend_hook_raises_for_that_backend():
    fake = g.Storage(g.Backend.CUDA, object())
    with pytest.raises(g.NotImplementedForBackend, match="no cuda implementation for scale"):
        fake.apply_op1(g.Layout.contiguous((3,)), Scale())


def test_dtype_of_accepts_names_members_and_numpy_dtypes():
    for d in g.DType:
        assert g.DType.of(d) is d and g.DType.of(d.value) is d and g.DType.of(d.numpy) is d
    with pytest.raises(TypeError, match="no registry dtype"):
        g.DType.of("f8")

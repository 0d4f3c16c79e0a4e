"""DLPack on the cpu backend: numpy (≥ 2, which speaks DLPack) takes views of storages in
place and gives its arrays in place, for every registry dtype and for contiguous, strided,
offset and broadcast layouts; bf16 (which numpy's own DLPack cannot carry) through our
capsules both ways. The GPU round trips (torch, CuPy) are in tests/gpu/test_interop_gpu.py."""

from __future__ import annotations

import ctypes
import gc

import ml_dtypes
import numpy as np
import pytest

import generated as g
from runtime import dlpack

CPU = g.Device.parse("cpu")
NUMPY_DTYPES = [np.uint8, np.uint32, np.int64, np.float16, np.float32, np.float64]
ALL_DTYPES = [*NUMPY_DTYPES, ml_dtypes.bfloat16]


def _random(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    return (rng.random(shape) * 100).astype(dtype)


def _layouts(shape=(4, 6)):
    base = g.Layout.contiguous(shape)
    return {
        "contiguous": base,
        "transposed": base.transpose(0, 1),
        "narrowed (offset)": base.narrow(0, 1, 2).narrow(1, 2, 3),
        "offset start": g.Layout.contiguous((3, 6), start_offset=6),
        "broadcast": g.Layout.contiguous((1, 6)).broadcast_as((5, 6)),
        "scalar": g.Layout((), (), 7),
    }


def _address(storage: g.Storage, layout: g.Layout) -> int:
    return storage.inner.ctypes.data + layout.start_offset * storage.inner.dtype.itemsize


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(_layouts()))
def test_numpy_takes_a_view_in_place(dtype, name):
    rng = np.random.default_rng(0)
    layout = _layouts()[name]
    storage = CPU.storage_from_slice(_random(rng, 24, dtype))
    array = np.from_dlpack(g.View(storage, layout))
    assert array.dtype == np.dtype(dtype)
    assert array.shape == layout.shape
    assert array.ctypes.data == _address(storage, layout)  # no copy
    assert array.strides == tuple(s * array.itemsize for s in layout.stride)
    np.testing.assert_array_equal(array, g.to_numpy(storage, layout))


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_arrays_come_in_place(dtype):
    rng = np.random.default_rng(1)
    full = _random(rng, (5, 8), dtype)
    for array in (full, full.T, full[1:4, 2:7], full[::2, 1::3], full[2]):
        storage, layout = g.from_dlpack(array)
        assert storage.dtype() == g.DType.of(np.dtype(dtype))
        assert _address(storage, layout) == array.ctypes.data
        assert layout.shape == array.shape
        assert layout.stride == tuple(s // array.itemsize for s in array.strides)
        np.testing.assert_array_equal(g.to_numpy(storage, layout), array)
        # and ops run on it, reading the producer's memory
        np.testing.assert_array_equal(
            g.to_numpy(storage.affine(layout, 1.0, 0.0), layout.contiguous(layout.shape)), array
        )


def test_writes_are_shared_both_ways():
    storage = CPU.storage_from_slice(np.zeros(12, np.float32))
    layout = g.Layout.contiguous((3, 4)).transpose(0, 1)
    array = np.from_dlpack(g.View(storage, layout))
    array[1, 2] = 5.0  # element (2, 1) of the row-major buffer
    assert storage.inner[2 * 4 + 1] == 5.0
    back, back_layout = g.from_dlpack(array)
    back.const_set(7.0, back_layout)
    assert np.all(array == 7.0) and storage.inner.sum() == 7.0 * 12


@pytest.mark.parametrize("versioned", [True, False], ids=["dltensor_versioned", "legacy dltensor"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_our_capsules_round_trip(dtype, versioned):
    """Ours both ways, every registry dtype (bf16 included), both capsule kinds."""
    rng = np.random.default_rng(2)
    storage = CPU.storage_from_slice(_random(rng, 30, dtype))
    layout = g.Layout.contiguous((5, 6)).narrow(1, 1, 4).transpose(0, 1)

    class Producer:  # asks for the legacy capsule when a consumer does not pass max_version
        def __dlpack__(self, stream=None, max_version=None):
            return g.View(storage, layout).__dlpack__(stream=stream, max_version=max_version if versioned else None)

        def __dlpack_device__(self):
            return g.View(storage, layout).__dlpack_device__()

    back, back_layout = g.from_dlpack(Producer())
    assert back.dtype() == storage.dtype()
    assert _address(back, back_layout) == _address(storage, layout)
    assert back_layout.shape == layout.shape and back_layout.stride == layout.stride
    np.testing.assert_array_equal(g.to_numpy(back, back_layout), g.to_numpy(storage, layout))


@pytest.mark.parametrize(
    "dtype,code,bits",
    [(ml_dtypes.bfloat16, 4, 16), (np.float16, 2, 16), (np.float32, 2, 32), (np.uint8, 1, 8), (np.int64, 0, 64)],
)
def test_capsule_fields_follow_dlpack_h(dtype, code, bits):
    """The C struct as dlpack.h lays it out (kDLBfloat = 4, kDLFloat = 2, kDLUInt = 1, kDLInt
    = 0; kDLCPU = 1), read at the offsets of the C ABI."""
    storage = CPU.storage_from_slice(np.arange(12).astype(dtype))
    layout = g.Layout.contiguous((3, 4)).narrow(1, 1, 2)
    capsule = g.View(storage, layout).__dlpack__(max_version=(1, 0))
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = get(capsule, b"dltensor_versioned")
    major, minor = (ctypes.c_uint32 * 2).from_address(address)
    assert (major, minor) == (1, 0)
    tensor = address + 8 + 8 + 8 + 8  # version, manager_ctx, deleter, flags
    data = ctypes.c_void_p.from_address(tensor).value
    device_type, device_id, ndim = (ctypes.c_int32 * 3).from_address(tensor + 8)
    dl_code, dl_bits = (ctypes.c_uint8 * 2).from_address(tensor + 20)
    lanes = ctypes.c_uint16.from_address(tensor + 22).value
    shape_p, strides_p = (ctypes.c_void_p * 2).from_address(tensor + 24)
    byte_offset = ctypes.c_uint64.from_address(tensor + 40).value
    assert data + byte_offset == _address(storage, layout)
    assert (device_type, device_id, ndim) == (1, 0, 2)
    assert (dl_code, dl_bits, lanes) == (code, bits, 1)
    assert list((ctypes.c_int64 * 2).from_address(shape_p)) == [3, 2]
    assert list((ctypes.c_int64 * 2).from_address(strides_p)) == [4, 1]


def test_the_producer_keeps_memory_until_the_consumer_lets_go():
    storage = CPU.storage_from_slice(np.arange(8, dtype=np.float32))
    before = len(dlpack._exports)
    array = np.from_dlpack(g.View(storage, g.Layout.contiguous((8,))))
    assert len(dlpack._exports) == before + 1
    del storage
    gc.collect()
    np.testing.assert_array_equal(array, np.arange(8, dtype=np.float32))  # still valid
    del array
    gc.collect()
    assert len(dlpack._exports) == before  # the deleter ran


def test_an_unconsumed_capsule_releases_on_its_own():
    storage = CPU.storage_from_slice(np.arange(8, dtype=np.float32))
    before = len(dlpack._exports)
    capsule = g.View(storage, g.Layout.contiguous((8,))).__dlpack__(max_version=(1, 0))
    assert len(dlpack._exports) == before + 1
    del capsule
    gc.collect()
    assert len(dlpack._exports) == before


def test_an_import_releases_the_producer_when_the_storage_goes():
    released = []
    storage = CPU.storage_from_slice(np.arange(8, dtype=np.float32))
    view = g.View(storage, g.Layout.contiguous((8,)))

    class Producer:
        def __dlpack__(self, stream=None, max_version=None):
            capsule = view.__dlpack__(stream=stream, max_version=max_version)
            released.append(len(dlpack._exports))
            return capsule

        def __dlpack_device__(self):
            return view.__dlpack_device__()

    imported, layout = g.from_dlpack(Producer())
    assert len(dlpack._exports) == released[0]
    del imported
    gc.collect()
    assert len(dlpack._exports) == released[0] - 1


def test_read_only_arrays_come_read_only():
    array = np.arange(6, dtype=np.float32)
    array.flags.writeable = False
    storage, layout = g.from_dlpack(array)
    assert not storage.inner.flags.writeable
    with pytest.raises(ValueError):
        storage.const_set(1.0, layout)
    assert not np.from_dlpack(g.View(storage, layout)).flags.writeable


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"stream": 1}, "cpu has no streams"),
        ({"dl_device": (2, 0)}, "lives on device (1, 0)"),
        ({"copy": True}, "copy=True is not supported"),
    ],
)
def test_requests_a_cpu_view_cannot_meet_raise_buffer_error(kwargs, message):
    view = g.View(CPU.storage_from_slice(np.arange(4, dtype=np.float32)), g.Layout.contiguous((4,)))
    with pytest.raises(BufferError, match=message.replace("(", r"\(").replace(")", r"\)")):
        view.__dlpack__(**kwargs)


def test_a_layout_outside_the_storage_is_refused():
    view = g.View(CPU.storage_from_slice(np.arange(4, dtype=np.float32)), g.Layout.contiguous((5,)))
    with pytest.raises(g.ShapeMismatch, match="to_dlpack"):
        view.__dlpack__()


def test_negative_strides_and_foreign_dtypes_are_refused():
    with pytest.raises(BufferError, match="negative strides"):
        g.from_dlpack(np.arange(6, dtype=np.float32)[::-1])
    with pytest.raises(g.DTypeMismatch, match="from_dlpack.*int16"):
        g.from_dlpack(np.arange(6, dtype=np.int16))  # DLPack has it, the registry does not
    with pytest.raises(BufferError, match="no numpy dtype"):
        g.from_dlpack(np.arange(6, dtype=np.complex64))


def test_device_and_cuda_array_interface_off_cuda():
    view = g.View(CPU.storage_from_slice(np.arange(4, dtype=np.float32)), g.Layout.contiguous((4,)))
    assert view.__dlpack_device__() == (1, 0)
    assert not hasattr(view, "__cuda_array_interface__")
    storage, layout = view  # a View unpacks as (storage, layout)
    assert layout == g.Layout.contiguous((4,))

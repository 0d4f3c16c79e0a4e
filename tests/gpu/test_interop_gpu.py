"""Zero-copy exchange with torch and CuPy on a CUDA GPU: DLPack both ways and the CUDA
Array Interface both ways. Every hand-off is checked for the same device pointer (no
copy), the layout (strided and offset views), the values (bf16 and f16 included), and the
stream order: work queued before the hand-off on the producer's stream is done before the
consumer reads.

Runs where the cuda backend is available (the H100 through the device tool); elsewhere the
module is one skip that says why."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

import generated as g

_REASON = g.Backend.CUDA.unavailable_reason()
if _REASON is not None:
    pytest.skip(f"cuda: unavailable: {_REASON}", allow_module_level=True)
torch = pytest.importorskip("torch", reason="torch is not installed (the H100 image has it)")
cupy = pytest.importorskip("cupy", reason="CuPy is not installed (the H100 image has it)")

CUDA = g.Device.parse("cuda:0")
DTYPES = {
    "f32": (np.float32, torch.float32),
    "f16": (np.float16, torch.float16),
    "bf16": (ml_dtypes.bfloat16, torch.bfloat16),
    "i64": (np.int64, torch.int64),
    "u8": (np.uint8, torch.uint8),
}
SHAPE = (6, 10)
LAYOUTS = {
    "contiguous": g.Layout.contiguous(SHAPE),
    "transposed": g.Layout.contiguous(SHAPE).transpose(0, 1),
    "offset": g.Layout.contiguous(SHAPE).narrow(0, 1, 4).narrow(1, 3, 5),
    "offset transposed": g.Layout.contiguous(SHAPE).narrow(1, 2, 7).transpose(0, 1),
}
BIG = 1 << 24  # elements: a chain of ops on these keeps the producer's stream busy for milliseconds


def _values(rng, dtype):
    return (rng.random(SHAPE) * 50).astype(dtype)


def _address(storage: g.Storage, layout: g.Layout) -> int:
    return storage.inner.ptr + layout.start_offset * storage.inner.dtype.itemsize


def _host(t) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.float().cpu().numpy().astype(ml_dtypes.bfloat16)
    return t.cpu().numpy()


@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_torch_takes_our_view_in_place(dtype, name):
    layout = LAYOUTS[name]
    rng = np.random.default_rng(0)
    storage = CUDA.storage_from_slice(_values(rng, DTYPES[dtype][0]))
    t = torch.from_dlpack(g.View(storage, layout))
    assert t.is_cuda and t.dtype == DTYPES[dtype][1]
    assert t.data_ptr() == _address(storage, layout)  # no copy
    assert tuple(t.shape) == layout.shape and t.stride() == layout.stride
    np.testing.assert_array_equal(_host(t), g.to_numpy(storage, layout))


@pytest.mark.parametrize("view", ["contiguous", "transposed", "sliced", "row"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_torch_tensors_come_in_place(dtype, view):
    rng = np.random.default_rng(1)
    full = torch.from_numpy(_values(rng, np.float32)).to(DTYPES[dtype][1]).cuda()
    t = {"contiguous": full, "transposed": full.T, "sliced": full[1:5, 2:9:2], "row": full[3]}[view]
    storage, layout = g.from_dlpack(t)
    assert storage.device() == CUDA
    assert _address(storage, layout) == t.data_ptr()
    assert layout.shape == tuple(t.shape) and layout.stride == t.stride()
    np.testing.assert_array_equal(g.to_numpy(storage, layout), _host(t))
    # our kernels read the producer's memory in place
    if dtype in ("f32", "f16", "bf16"):
        doubled = storage.affine(layout, 2.0, 0.0)
        np.testing.assert_array_equal(g.to_numpy(doubled, g.Layout.contiguous(layout.shape)), _host(t * 2))


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_cupy_dlpack_both_ways(name):
    layout = LAYOUTS[name]
    rng = np.random.default_rng(2)
    storage = CUDA.storage_from_slice(_values(rng, np.float32))
    a = cupy.from_dlpack(g.View(storage, layout))
    assert a.data.ptr == _address(storage, layout)
    assert a.strides == tuple(s * 4 for s in layout.stride)
    np.testing.assert_array_equal(cupy.asnumpy(a), g.to_numpy(storage, layout))
    back, back_layout = g.from_dlpack(a)
    assert _address(back, back_layout) == a.data.ptr and back_layout.stride == layout.stride


@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("dtype", ["f32", "f16", "i64"])
def test_cuda_array_interface_both_ways(dtype, name):
    layout = LAYOUTS[name]
    rng = np.random.default_rng(3)
    storage = CUDA.storage_from_slice(_values(rng, DTYPES[dtype][0]))
    view = g.View(storage, layout)
    cai = view.__cuda_array_interface__
    assert cai["version"] == 3 and cai["stream"] not in (None, 0)
    a = cupy.asarray(view)
    assert a.data.ptr == _address(storage, layout)
    np.testing.assert_array_equal(cupy.asnumpy(a), g.to_numpy(storage, layout))
    t = torch.as_tensor(view, device="cuda")
    assert t.data_ptr() == _address(storage, layout)
    back, back_layout = g.from_cuda_array_interface(a)
    assert _address(back, back_layout) == a.data.ptr and back_layout.stride == layout.stride
    np.testing.assert_array_equal(g.to_numpy(back, back_layout), cupy.asnumpy(a))


def test_bf16_has_no_cuda_array_interface():
    storage = CUDA.storage_from_slice(np.ones(4, ml_dtypes.bfloat16))
    with pytest.raises(g.DTypeMismatch, match="use DLPack for bf16"):
        g.View(storage, g.Layout.contiguous((4,))).__cuda_array_interface__


def _busy_chain(storage: g.Storage, layout: g.Layout, steps: int = 30) -> g.Storage:
    """Queue `steps` dependent kernels on our stream: x -> x * 1 + 1, `steps` times."""
    for _ in range(steps):
        storage = storage.affine(layout, 1.0, 1.0)
    return storage


@pytest.mark.parametrize("consumer", ["torch default stream", "torch side stream", "cupy dlpack", "cupy cai"])
def test_work_queued_before_the_hand_off_is_done_before_the_consumer_reads(consumer):
    layout = g.Layout.contiguous((BIG,))
    result = _busy_chain(CUDA.zeros((BIG,), g.DType.F32), layout)  # queued, not waited for
    view = g.View(result, layout)
    if consumer == "torch default stream":
        t = torch.from_dlpack(view)
        seen = (t.min().item(), t.max().item())
    elif consumer == "torch side stream":
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            t = torch.from_dlpack(view)
            extremes = torch.stack([t.min(), t.max()])
        side.synchronize()
        seen = tuple(extremes.tolist())
    else:
        a = cupy.from_dlpack(view) if consumer == "cupy dlpack" else cupy.asarray(view)
        seen = (float(a.min()), float(a.max()))
    assert seen == (30.0, 30.0)  # every element after all 30 kernels (poisoned: NaN before)


def _extremes(storage: g.Storage, layout: g.Layout) -> tuple[float, float]:
    one = g.Layout.contiguous((1,))
    return tuple(
        float(g.to_numpy(storage.reduce_op(op, layout, (0,)), one)[0]) for op in (g.ReduceOp.MIN, g.ReduceOp.MAX)
    )


def test_work_the_producer_queued_is_done_before_our_kernels_read():
    t = torch.zeros(BIG, device="cuda")
    for _ in range(30):
        t = t * 1.0 + 1.0  # queued on torch's stream
    storage, layout = g.from_dlpack(t)
    assert _extremes(storage, layout) == (30.0, 30.0)


def test_cupy_work_is_done_before_our_kernels_read_through_the_cai_stream():
    a = cupy.zeros(BIG, dtype=cupy.float32)
    for _ in range(30):
        a = a * 1.0 + 1.0
    storage, layout = g.from_cuda_array_interface(a)
    assert _extremes(storage, layout) == (30.0, 30.0)


def test_exported_memory_outlives_our_storage_until_torch_lets_go():
    storage = CUDA.storage_from_slice(np.arange(1024, dtype=np.float32))
    t = torch.from_dlpack(g.View(storage, g.Layout.contiguous((1024,))))
    del storage
    gc.collect()
    for _ in range(4):  # our pool hands freed blocks out again: they must not be this one
        CUDA.storage_from_slice(np.full(1024, -1, np.float32))
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(1024, dtype=np.float32))


def test_imported_memory_outlives_torch_until_our_storage_goes():
    t = torch.arange(1024, dtype=torch.float32, device="cuda")
    storage, layout = g.from_dlpack(t)
    del t
    gc.collect()
    junk = [torch.full((1024,), -1.0, device="cuda") for _ in range(4)]
    np.testing.assert_array_equal(g.to_numpy(storage, layout), np.arange(1024, dtype=np.float32))
    del junk


def test_stream_zero_is_refused_on_cuda():
    view = g.View(CUDA.zeros((4,), g.DType.F32), g.Layout.contiguous((4,)))
    with pytest.raises(BufferError, match="stream 0 is ambiguous"):
        view.__dlpack__(stream=0)
    assert view.__dlpack_device__() == (2, 0)

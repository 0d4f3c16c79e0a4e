"""DLPack and the CUDA Array Interface for the GPU backends, over a Driver (runtime/gpu/driver.py).

Stream semantics, as the DLPack spec asks: the producer makes the consumer's stream wait
for the work queued on its own, by an event; the consumer passes its stream. Both ways,
memory is freed after the work queued on it:
- exported: when the consumer lets go, this device's stream (where the buffer's free is
  queued) first waits for the consumer's stream (which must outlive its imports, as for
  any stream-ordered free);
- imported: this device's stream is synchronized before the producer gets its memory back.

The drivers give: `dlpack_device_type` (DLPack's kDLCUDA / kDLROCM), `dlpack_default_stream`
(what a `stream` of None means: CUDA's legacy default stream 1, HIP's null stream 0),
`stream_id(stream)` (the handle as an int) and `wait(waiter, producer)` (the stream
`waiter`, ours or a foreign int handle, waits for the work queued so far on `producer`)."""

from __future__ import annotations

import functools
from typing import Any, cast

import numpy as np

from runtime import dlpack
from runtime.errors import DTypeMismatch, ShapeMismatch
from runtime.gpu.driver import ArrayInterfaceDriver
from runtime.gpu.memory import GpuBuffer
from runtime.gpu.runtime import GpuRuntime
from runtime.layout import Layout

NO_SYNC = -1  # the DLPack `stream` value asking for no ordering


def dlpack_device(rt: GpuRuntime, buf: GpuBuffer) -> tuple[int, int]:
    return (rt.driver.dlpack_device_type, buf.ordinal)


def _fits(op: str, rt: GpuRuntime, buf: GpuBuffer, layout: Layout) -> None:
    if layout.max_offset() > buf.size:
        raise ShapeMismatch(op, rt.name, f"a layout within {buf.size} elements", layout)


def consumer_stream(rt: GpuRuntime, stream: int | None) -> int | None:
    """The consumer's stream as a handle, or None for no ordering (-1)."""
    if stream is None:
        return rt.driver.dlpack_default_stream
    stream = int(stream)
    if stream == NO_SYNC:
        return None
    if stream == 0 and rt.driver.dlpack_default_stream != 0:
        raise dlpack.DLPackError(
            f"dlpack: stream 0 is ambiguous on {rt.name}: pass 1 (legacy default) or "
            "2 (per-thread default) or a stream handle"
        )
    if stream < 0:
        raise dlpack.DLPackError(f"dlpack: stream {stream} is not a stream")
    return stream


def to_dlpack(rt: GpuRuntime, buf: GpuBuffer, layout: Layout, stream=None, max_version=None, dl_device=None, copy=None):
    _fits("to_dlpack", rt, buf, layout)
    device = dlpack_device(rt, buf)
    dlpack.check_request(device, dl_device, copy)
    consumer = consumer_stream(rt, stream)
    on_delete = None
    if consumer is not None:
        rt.driver.activate(buf.ordinal)
        rt.driver.wait(consumer, rt.driver.stream(buf.ordinal))
        on_delete = functools.partial(_after_consumer, rt, buf.ordinal, consumer)
    export = dlpack.Export(buf.at(layout), device, buf.dtype, layout.shape, layout.stride, buf, on_delete)
    return dlpack.capsule(export, max_version)


def _after_consumer(rt: GpuRuntime, ordinal: int, consumer: int) -> None:
    """Run before an exported buffer is let go: its free, queued on this device's stream,
    comes after the consumer's work."""
    rt.driver.activate(ordinal)
    rt.driver.wait(rt.driver.stream(ordinal), consumer)


def from_dlpack(rt: GpuRuntime, obj: Any, ordinal: int) -> tuple[GpuBuffer, Layout]:
    rt.driver.activate(ordinal)
    ours = rt.driver.stream(ordinal)
    imported = dlpack.take(dlpack.request(obj, rt.driver.stream_id(ours)))
    expected = (rt.driver.dlpack_device_type, ordinal)
    if imported.device != expected:
        imported.release()
        raise dlpack.DLPackError(
            f"from_dlpack: the capsule holds device {imported.device}, __dlpack_device__ said {expected}"
        )
    release = functools.partial(_release_import, rt, ordinal, imported.release)
    return GpuBuffer(imported.base, imported.span, imported.dtype, ordinal, release), imported.layout


def _release_import(rt: GpuRuntime, ordinal: int, release) -> None:
    try:
        rt.synchronize(ordinal)  # our queued kernels may still read it
    except Exception:  # noqa: BLE001  (at interpreter exit the driver may be gone)
        pass
    release()


# -- the CUDA Array Interface (v3) --------------------------------------------------------
def cuda_array_interface(rt: GpuRuntime, buf: GpuBuffer, layout: Layout) -> dict:
    """The view as __cuda_array_interface__ v3: consumers wait on `stream`, this device's."""
    _fits("cuda_array_interface", rt, buf, layout)
    if buf.dtype.kind == "V":  # bfloat16 (ml_dtypes) has no typestr of its own
        raise DTypeMismatch(
            "cuda_array_interface", rt.name, "a dtype with a numpy typestr (use DLPack for bf16)", str(buf.dtype)
        )
    itemsize = buf.dtype.itemsize
    strides = None if layout.is_contiguous else tuple(s * itemsize for s in layout.stride)
    data = buf.at(layout) if layout.elem_count else 0
    rt.driver.activate(buf.ordinal)
    return {
        "shape": layout.shape,
        "typestr": buf.dtype.str,
        "data": (data, False),
        "strides": strides,
        "version": 3,
        "stream": rt.driver.stream_id(rt.driver.stream(buf.ordinal)),
    }


def from_cuda_array_interface(rt: GpuRuntime, obj: Any) -> tuple[GpuBuffer, Layout]:
    """A buffer over the memory `obj` describes (kept alive with it), on the device that
    holds it; this device's stream waits for the work queued on the stream it names."""
    cai = obj.__cuda_array_interface__
    if cai.get("mask") is not None:
        raise dlpack.DLPackError("from_cuda_array_interface: masked arrays are not supported")
    dtype = np.dtype(cai["typestr"])
    shape = tuple(int(d) for d in cai["shape"])
    itemsize = dtype.itemsize
    if cai.get("strides") is None:
        stride = Layout.contiguous(shape).stride
    else:
        if any(s % itemsize or s < 0 for s in cai["strides"]):
            raise dlpack.DLPackError(
                f"from_cuda_array_interface: strides {cai['strides']} are not non-negative multiples of {itemsize}"
            )
        stride = tuple(s // itemsize for s in cai["strides"])
    layout = Layout(shape, stride)
    ptr = int(cai["data"][0])
    driver = cast(ArrayInterfaceDriver, rt.driver)  # runtime/cuda.py alone binds this function
    ordinal = driver.pointer_device(ptr) if layout.elem_count else 0
    rt.driver.activate(ordinal)
    theirs = cai.get("stream")
    if theirs is not None:
        rt.driver.wait(rt.driver.stream(ordinal), int(theirs))
    span = layout.max_offset() if layout.elem_count else 0
    release = functools.partial(_release_cai, rt, ordinal, obj)
    return GpuBuffer(ptr, span, dtype, ordinal, release), layout


def _release_cai(rt: GpuRuntime, ordinal: int, obj: Any) -> None:
    try:
        rt.synchronize(ordinal)  # then `obj`, bound here, goes
    except Exception:  # noqa: BLE001  (at interpreter exit the driver may be gone)
        pass

"""DLPack for the cpu backend: a storage's flat numpy array, shared both ways.

numpy ≥ 2 speaks DLPack itself, but not for ml_dtypes' bfloat16 (not a numpy builtin
type), so the exchange goes through runtime/dlpack.py for every dtype alike."""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime import dlpack
from runtime.errors import ShapeMismatch
from runtime.layout import Layout

_DEVICE = (dlpack.CPU, 0)


def dlpack_device(buf: np.ndarray) -> tuple[int, int]:
    return _DEVICE


def to_dlpack(buf: np.ndarray, layout: Layout, stream=None, max_version=None, dl_device=None, copy=None):
    """A capsule of the layout's view of `buf`, in place. Host memory has no stream: the
    protocol asks for `stream` None here."""
    if stream is not None:
        raise dlpack.DLPackError(f"dlpack: cpu has no streams; stream must be None, not {stream!r}")
    if layout.max_offset() > buf.size:
        raise ShapeMismatch("to_dlpack", "cpu", f"a layout within {buf.size} elements", layout)
    dlpack.check_request(_DEVICE, dl_device, copy)
    data = buf.ctypes.data + layout.start_offset * buf.dtype.itemsize
    export = dlpack.Export(
        data, _DEVICE, buf.dtype, layout.shape, layout.stride, buf, read_only=not buf.flags.writeable
    )
    return dlpack.capsule(export, max_version)


def from_dlpack(obj: Any, ordinal: int) -> tuple[np.ndarray, Layout]:
    """The flat array over a producer's host memory and the layout of its tensor in it."""
    imported = dlpack.take(dlpack.request(obj, None))
    return dlpack.host_array(imported), imported.layout

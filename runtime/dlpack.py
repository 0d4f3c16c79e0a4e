"""DLPack (dlpack.h 1.0) in ctypes: the C structs, and capsules made and taken apart.

One module for every backend: a backend's runtime says where its memory is (device type
and id) and keeps it alive; this module lays it out as DLPack's C structs, wraps them in
the PyCapsule of the Python protocol, and reads a producer's capsule back. No maintained
PyPI package covers this (pydlpack 0.2 and ctypes-dlpack 0.1 were looked at: neither
writes the 1.0 versioned struct nor takes a producer's capsule apart with its deleter).

Protocol (https://dmlc.github.io/dlpack/latest/python_spec.html): a producer's
`__dlpack__(stream=, max_version=, dl_device=, copy=)` returns a capsule named
"dltensor_versioned" (a DLManagedTensorVersioned, when the consumer's max_version is 1.x)
or "dltensor" (the legacy DLManagedTensor). A consumer renames the capsule to
"used_..." and calls the struct's deleter when it is done with the memory; a capsule
never consumed calls it from its own destructor.

Strides travel in elements, as in a Layout. Negative strides are refused on import
(Layout's start offset and the kernels' size_t strides cannot express them)."""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from runtime.layout import Layout

# DLDeviceType (dlpack.h)
CPU, CUDA, CUDA_HOST, ROCM, ROCM_HOST, CUDA_MANAGED = 1, 2, 3, 10, 11, 13
# Which backend holds memory of each device type (host-pinned memory is host memory).
BACKEND_OF = {CPU: "cpu", CUDA_HOST: "cpu", ROCM_HOST: "cpu", CUDA: "cuda", CUDA_MANAGED: "cuda", ROCM: "rocm"}

# DLDataTypeCode (dlpack.h)
_INT, _UINT, _FLOAT, _BFLOAT, _BOOL = 0, 1, 2, 4, 6
_CODES = {
    np.dtype(np.int8): (_INT, 8),
    np.dtype(np.int16): (_INT, 16),
    np.dtype(np.int32): (_INT, 32),
    np.dtype(np.int64): (_INT, 64),
    np.dtype(np.uint8): (_UINT, 8),
    np.dtype(np.uint16): (_UINT, 16),
    np.dtype(np.uint32): (_UINT, 32),
    np.dtype(np.uint64): (_UINT, 64),
    np.dtype(np.float16): (_FLOAT, 16),
    np.dtype(np.float32): (_FLOAT, 32),
    np.dtype(np.float64): (_FLOAT, 64),
    np.dtype(ml_dtypes.bfloat16): (_BFLOAT, 16),
    np.dtype(np.bool_): (_BOOL, 8),
}
_DTYPES = {code: dtype for dtype, code in _CODES.items()}

VERSION = (1, 0)  # the DLPack version this module writes
READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY

_VERSIONED, _LEGACY = b"dltensor_versioned", b"dltensor"
_USED = {_VERSIONED: b"used_dltensor_versioned", _LEGACY: b"used_dltensor"}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # void (*deleter)(struct DLManagedTensor*)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _Deleter),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api = ctypes.pythonapi
_api.PyCapsule_New.restype, _api.PyCapsule_New.argtypes = (
    ctypes.py_object,
    [ctypes.c_void_p, ctypes.c_char_p, _CapsuleDestructor],
)
_api.PyCapsule_IsValid.restype, _api.PyCapsule_IsValid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype, _api.PyCapsule_GetPointer.argtypes = (
    ctypes.c_void_p,
    [ctypes.py_object, ctypes.c_char_p],
)
_api.PyCapsule_SetName.restype, _api.PyCapsule_SetName.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
# The destructor gets the capsule as a borrowed PyObject*: read with these (no py_object
# conversion, which would touch the reference count of an object being destroyed).
_IsValid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))


class DLPackError(BufferError):
    """A DLPack exchange that cannot be made (BufferError, as the protocol asks)."""


def code_of(dtype: np.dtype) -> tuple[int, int]:
    """(DLDataTypeCode, bits) of a numpy dtype."""
    try:
        return _CODES[np.dtype(dtype)]
    except KeyError:
        raise DLPackError(f"dlpack: no DLPack type for {np.dtype(dtype)}") from None


# -- producing ------------------------------------------------------------------------------
# Exported structs and what they keep alive, by the struct's address, until the consumer (or
# the unconsumed capsule) calls the deleter. `on_delete` runs first (a GPU export orders the
# free of its memory after the consumer's stream there).
_exports: dict[int, tuple[Any, ...]] = {}
_lock = threading.Lock()


@_Deleter
def _delete(address: int) -> None:
    with _lock:
        entry = _exports.pop(address, None)
    if entry is not None and entry[-1] is not None:
        entry[-1]()


@_CapsuleDestructor
def _capsule_destructor(capsule: int) -> None:
    for name in (_VERSIONED, _LEGACY):  # not renamed to used_...: nobody took it
        if _IsValid(capsule, name):
            _delete(_GetPointer(capsule, name))
            return


@dataclass(frozen=True)
class Export:
    """What a backend hands out: `data` points at the layout's element 0 (the start offset
    already applied); `owner` is kept alive until the consumer lets go."""

    data: int
    device: tuple[int, int]
    dtype: np.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # elements
    owner: Any
    on_delete: Callable[[], None] | None = None
    read_only: bool = False


def capsule(export: Export, max_version: tuple[int, int] | None):
    """The capsule of `export`: versioned where the consumer takes DLPack 1.x."""
    versioned = max_version is not None and max_version[0] >= 1
    ndim = len(export.shape)
    shape = (ctypes.c_int64 * max(ndim, 1))(*export.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*export.strides)
    code, bits = code_of(export.dtype)
    tensor = DLTensor(export.data, DLDevice(*export.device), ndim, DLDataType(code, bits, 1), shape, strides, 0)
    if versioned:
        flags = READ_ONLY if export.read_only else 0
        managed: ctypes.Structure = DLManagedTensorVersioned(DLPackVersion(*VERSION), None, _delete, flags, tensor)
    else:
        managed = DLManagedTensor(tensor, None, _delete)
    address = ctypes.addressof(managed)
    with _lock:
        _exports[address] = (managed, shape, strides, export.owner, export.on_delete)
    return _api.PyCapsule_New(address, _VERSIONED if versioned else _LEGACY, _capsule_destructor)


def check_request(device: tuple[int, int], dl_device, copy) -> None:
    """The checks of __dlpack__'s dl_device and copy arguments: the view is shared, never
    copied, and only where it lives."""
    if dl_device is not None and tuple(dl_device) != tuple(device):
        raise DLPackError(f"dlpack: the view lives on device {tuple(device)}, not {tuple(dl_device)}")
    if copy:
        raise DLPackError(
            "dlpack: copy=True is not supported: views are exported in place "
            "(make the copy with try_clone or to_device first)"
        )


# -- consuming ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Imported:
    """A producer's tensor: `base` is the lowest address the view reads, `layout` counts
    elements from it; `release` (call once) gives the memory back to the producer."""

    base: int
    span: int  # elements from base to one past the highest element read
    dtype: np.dtype
    layout: Layout
    device: tuple[int, int]
    read_only: bool
    release: Callable[[], None]


def take(capsule_: Any) -> Imported:
    """Read a producer's capsule and mark it used; the caller owns `release`."""
    managed: DLManagedTensorVersioned | DLManagedTensor
    if _api.PyCapsule_IsValid(capsule_, _VERSIONED):
        name = _VERSIONED
        managed = DLManagedTensorVersioned.from_address(_api.PyCapsule_GetPointer(capsule_, name))
        if managed.version.major != VERSION[0]:
            raise DLPackError(
                f"dlpack: DLPack {managed.version.major}.{managed.version.minor} is not "
                f"supported (this reads {VERSION[0]}.x)"
            )
        read_only = bool(managed.flags & READ_ONLY)
    elif _api.PyCapsule_IsValid(capsule_, _LEGACY):
        name = _LEGACY
        managed = DLManagedTensor.from_address(_api.PyCapsule_GetPointer(capsule_, name))
        read_only = False
    else:
        raise DLPackError("dlpack: not an unused DLPack capsule (named dltensor or dltensor_versioned)")
    imported = _read(managed, read_only)
    _api.PyCapsule_SetName(capsule_, _USED[name])
    return imported


def _read(managed: ctypes.Structure, read_only: bool) -> Imported:
    tensor = managed.dl_tensor
    address, deleter = ctypes.addressof(managed), managed.deleter

    def release() -> None:
        if deleter:
            deleter(address)

    try:
        dtype = _dtype(tensor.dtype)
        shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        if tensor.strides:
            strides = tuple(tensor.strides[i] for i in range(tensor.ndim))
        else:  # NULL: compact row-major
            strides = Layout.contiguous(shape).stride
        if any(s < 0 for d, s in zip(shape, strides) if d > 1):
            raise DLPackError(f"dlpack: negative strides {strides} are not supported (pass a copy)")
        strides = tuple(max(s, 0) for s in strides)
        if tensor.byte_offset % dtype.itemsize:
            raise DLPackError(f"dlpack: byte_offset {tensor.byte_offset} is not a multiple of {dtype.itemsize}")
        layout = Layout(shape, strides, 0)
    except Exception:
        release()
        raise
    span = layout.max_offset() if math.prod(shape) else 0
    base = (tensor.data or 0) + tensor.byte_offset
    device = (tensor.device.device_type, tensor.device.device_id)
    return Imported(base, span, dtype, layout, device, read_only, release)


def _dtype(dl: DLDataType) -> np.dtype:
    if dl.lanes != 1:
        raise DLPackError(f"dlpack: vector types ({dl.lanes} lanes) are not supported")
    try:
        return _DTYPES[(dl.code, dl.bits)]
    except KeyError:
        raise DLPackError(f"dlpack: no numpy dtype for DLPack type code {dl.code}, {dl.bits} bits") from None


def request(obj: Any, stream: int | None) -> Any:
    """obj.__dlpack__ asked for a versioned capsule, for a consumer on `stream`; a
    producer that predates max_version is asked again without it."""
    try:
        return obj.__dlpack__(stream=stream, max_version=VERSION)
    except TypeError:
        return obj.__dlpack__(stream=stream)


def host_array(imported: Imported) -> np.ndarray:
    """A flat numpy array over host memory the producer keeps alive until the array dies."""
    nbytes = imported.span * imported.dtype.itemsize
    # Any: a ctypes array that also carries its _Release (ctypes instances take attributes)
    holder: Any = (ctypes.c_char * max(nbytes, 1)).from_address(imported.base or _EMPTY_ADDRESS)
    # numpy keeps `holder` as the array's base; the _Release on it goes with the last array.
    holder.release = _Release(imported.release)
    flat = np.frombuffer(holder, dtype=np.uint8, count=nbytes).view(imported.dtype)
    if imported.read_only:
        flat.flags.writeable = False
    return flat


_EMPTY = ctypes.c_char()
_EMPTY_ADDRESS = ctypes.addressof(_EMPTY)  # what an empty tensor's NULL data points at


class _Release:
    """Gives a host import back to its producer when garbage."""

    def __init__(self, release: Callable[[], None]) -> None:
        self._release = release

    def __del__(self) -> None:
        self._release()

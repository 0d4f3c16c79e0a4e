"""A recording fake of the part of hip-python's API that runtime/rocm.py calls, so that the
rocm driver's device paths run with no AMD GPU.

It checks what hip-python and HIP would refuse or misread: each argument's type (sizes and
enums as Cython converts them, pointers as hip-python's adapters take them), that every
device address lies inside a live allocation of the right device, that events and streams
belong to the device they are used on, and the packing of kernel arguments: a launch's
kernelParams is read back, one pointer per parameter of the entry point as
generator/registry/kernel_sigs.py parses it from the .hip source, each value at its C type's
alignment. Memory is host buffers. A small set of kernels (const_set, affine, copy_strided,
unary exp/neg) and the hipBLAS GEMM are computed with numpy from the recorded launch, so
results compare with the cpu backend."""

from __future__ import annotations

import ctypes
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np

from generator.registry import kernel_sigs

hip_enums = __import__("hip.hip", fromlist=["hip"])  # hip-python's enums (its library is never loaded)
hipblas_enums = __import__("hip.hipblas", fromlist=["hipblas"])

HIP_DIR = Path(__file__).resolve().parents[2] / "hip"
GENERATED_DIR = Path(__file__).resolve().parents[2] / "generated"
_DTYPES = {
    "u8": np.uint8,
    "u32": np.uint32,
    "i64": np.int64,
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "f32": np.float32,
    "f64": np.float64,
}
_OK = hip_enums.hipError_t.hipSuccess


class FakeHipError(AssertionError):
    """A call hip-python or HIP would refuse or misread."""


@dataclass(eq=False)
class Handle:
    kind: str
    device: int
    number: int
    recorded: bool = False
    alive: bool = True

    def __int__(self) -> int:
        return 0x5000 + self.number  # hip-python's handles convert to their address


@dataclass
class Allocation:
    device: int
    base: int
    data: np.ndarray
    alive: bool = True


@dataclass
class FakeHip:
    devices: int = 2
    arch: str = "gfx90a"
    peer: bool = True
    calls: list = field(default_factory=list)
    current: int = 0
    allocations: dict = field(default_factory=dict)  # base -> Allocation
    _numbers: itertools.count = field(default_factory=itertools.count)
    _tops: dict = field(default_factory=dict)

    # enums the driver reads as attributes of the module
    hipError_t = hip_enums.hipError_t
    hipDeviceAttribute_t = hip_enums.hipDeviceAttribute_t
    hipDataType = hip_enums.hipDataType
    hipStreamNonBlocking = hip_enums.hipStreamNonBlocking
    hipEventDisableTiming = hip_enums.hipEventDisableTiming

    # -- checks -------------------------------------------------------------------------
    def _record(self, name, *args):
        self.calls.append((name, *args))

    @staticmethod
    def _uint(what, value, bits=64):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**bits:
            raise FakeHipError(f"{what}: {value!r} is not an unsigned {bits}-bit int")

    def _stream(self, what, stream, device=None):
        device = self.current if device is None else device
        if isinstance(stream, Handle):
            if stream.kind != "stream" or not stream.alive:
                raise FakeHipError(f"{what}: {stream} is not a live stream")
            if stream.device != device:
                raise FakeHipError(f"{what}: stream of device {stream.device} used on device {device}")
        elif not (stream is None or isinstance(stream, int)):  # None / 0: the null stream; int: a foreign handle
            raise FakeHipError(f"{what}: {type(stream).__name__} is not a stream hip-python takes")

    def memory(self, what, ptr, nbytes, device=None):
        """The host bytes behind [ptr, ptr + nbytes) of one live allocation."""
        if not isinstance(ptr, int) or isinstance(ptr, bool):
            raise FakeHipError(f"{what}: device pointer {ptr!r} is not an int")
        for alloc in self.allocations.values():
            if alloc.alive and alloc.base <= ptr and ptr + nbytes <= alloc.base + alloc.data.size:
                if device is not None and alloc.device != device:
                    raise FakeHipError(f"{what}: {ptr:#x} is memory of device {alloc.device}, not {device}")
                return alloc.data[ptr - alloc.base : ptr - alloc.base + nbytes]
        raise FakeHipError(f"{what}: [{ptr:#x}, +{nbytes}) is not inside one live allocation")

    # -- devices ------------------------------------------------------------------------
    def hipGetErrorName(self, err):
        return _OK, hip_enums.hipError_t(int(err)).name.encode()

    def hipGetDeviceCount(self):
        return _OK, self.devices

    def hipSetDevice(self, ordinal):
        self._uint("hipSetDevice", ordinal, 31)
        if ordinal >= self.devices:
            return (hip_enums.hipError_t.hipErrorInvalidDevice,)
        self.current = ordinal
        return (_OK,)

    def hipGetDeviceProperties(self, ordinal):
        return _OK, type("props", (), {"gcnArchName": f"{self.arch}:sramecc+:xnack-".encode()})()

    def hipDeviceGetAttribute(self, attribute, ordinal):
        if not isinstance(attribute, hip_enums.hipDeviceAttribute_t):
            raise FakeHipError(f"hipDeviceGetAttribute: {attribute!r} is not a hipDeviceAttribute_t")
        return _OK, 104

    # -- streams and events -------------------------------------------------------------
    def hipStreamCreateWithFlags(self, flags):
        self._uint("hipStreamCreateWithFlags", int(flags), 32)
        return _OK, Handle("stream", self.current, next(self._numbers))

    def hipStreamSynchronize(self, stream):
        self._stream("hipStreamSynchronize", stream)
        self._record("sync", stream)
        return (_OK,)

    def hipEventCreateWithFlags(self, flags):
        self._uint("hipEventCreateWithFlags", int(flags), 32)
        event = Handle("event", self.current, next(self._numbers))
        self._record("event_create", event)
        return _OK, event

    def hipEventRecord(self, event, stream):
        if not (isinstance(event, Handle) and event.kind == "event" and event.alive):
            raise FakeHipError(f"hipEventRecord: {event!r} is not a live event")
        self._stream("hipEventRecord", stream, event.device)  # an event records on its own device's streams
        event.recorded = True
        self._record("record", event, stream)
        return (_OK,)

    def hipStreamWaitEvent(self, stream, event, flags):
        # a stream may wait on an event of another device, with either device current
        self._stream("hipStreamWaitEvent", stream, stream.device if isinstance(stream, Handle) else None)
        if not (isinstance(event, Handle) and event.alive and event.recorded):
            raise FakeHipError("hipStreamWaitEvent: the event is not recorded (or destroyed)")
        self._uint("hipStreamWaitEvent flags", flags, 32)
        self._record("wait", stream, event)
        return (_OK,)

    def hipEventDestroy(self, event):
        if not (isinstance(event, Handle) and event.alive):
            raise FakeHipError("hipEventDestroy: not a live event")
        event.alive = False
        self._record("event_destroy", event)
        return (_OK,)

    def live_events(self):
        created = [c[1] for c in self.calls if c[0] == "event_create"]
        return [e for e in created if e.alive]

    # -- memory -------------------------------------------------------------------------
    def hipMallocAsync(self, nbytes, stream):
        self._uint("hipMallocAsync size", nbytes)
        self._stream("hipMallocAsync", stream)
        top = self._tops.get(self.current, (self.current + 1) << 40)
        base = top
        self._tops[self.current] = top + max(256, -(-nbytes // 256) * 256)
        self.allocations[base] = Allocation(self.current, base, np.zeros(nbytes, np.uint8))
        self._record("malloc", base, nbytes)
        return _OK, Handle("ptr", self.current, base - 0x5000)  # int() gives base

    def hipFreeAsync(self, ptr, stream):
        alloc = self.allocations.get(int(ptr))
        if alloc is None or not alloc.alive:
            raise FakeHipError(f"hipFreeAsync: {int(ptr):#x} is not a live allocation")
        alloc.alive = False
        return (_OK,)

    def hipMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        self._uint("hipMemcpyHtoDAsync size", nbytes)
        self._stream("hipMemcpyHtoDAsync", stream)
        self.memory("hipMemcpyHtoDAsync dst", dst, nbytes, self.current)[:] = (ctypes.c_uint8 * nbytes).from_address(
            src
        )
        return (_OK,)

    def hipMemcpyDtoHAsync(self, dst, src, nbytes, stream):
        self._uint("hipMemcpyDtoHAsync size", nbytes)
        self._stream("hipMemcpyDtoHAsync", stream)
        ctypes.memmove(dst, self.memory("hipMemcpyDtoHAsync src", src, nbytes).ctypes.data, nbytes)
        return (_OK,)

    def hipMemcpyDtoDAsync(self, dst, src, nbytes, stream):
        self._uint("hipMemcpyDtoDAsync size", nbytes)
        self._stream("hipMemcpyDtoDAsync", stream)
        self.memory("hipMemcpyDtoDAsync dst", dst, nbytes)[:] = self.memory("hipMemcpyDtoDAsync src", src, nbytes)
        return (_OK,)

    def hipMemsetD8Async(self, ptr, byte, nbytes, stream):
        self._uint("hipMemsetD8Async value", byte, 8)
        self._stream("hipMemsetD8Async", stream)
        self.memory("hipMemsetD8Async", ptr, nbytes)[:] = byte
        return (_OK,)

    def hipMemcpyPeerAsync(self, dst, dst_device, src, src_device, nbytes, stream):
        self._uint("hipMemcpyPeerAsync size", nbytes)
        self._stream("hipMemcpyPeerAsync", stream)
        if not self.peer:
            return (hip_enums.hipError_t.hipErrorPeerAccessUnsupported,)
        self.memory("hipMemcpyPeerAsync dst", dst, nbytes, dst_device)[:] = self.memory(
            "hipMemcpyPeerAsync src", src, nbytes, src_device
        )
        self._record("peer", dst_device, src_device, nbytes)
        return (_OK,)

    # -- modules and launches -------------------------------------------------------------
    def hipModuleLoadData(self, image):
        if not isinstance(image, bytes) or not image.startswith(b"FAKE:"):
            raise FakeHipError("hipModuleLoadData: not an image of the fake compiler")
        name = image[5:].decode()
        path = HIP_DIR / name if (HIP_DIR / name).exists() else GENERATED_DIR / name
        text = path.read_text(encoding="utf-8")
        for include in re.findall(r'^#include "(\w+_entries\.h)"', text, re.M):  # the generated entry points
            text += "\n" + (GENERATED_DIR / include).read_text(encoding="utf-8")
        sigs = {s.name: s for s in kernel_sigs.parse(text, name)}
        return _OK, (Handle("module", self.current, next(self._numbers)), sigs)

    def hipModuleGetFunction(self, module, name):
        module, sigs = module
        if not isinstance(name, bytes):
            raise FakeHipError(f"hipModuleGetFunction: the name must be bytes (const char*), not {type(name).__name__}")
        sig = sigs.get(name.decode())
        if sig is None:
            return hip_enums.hipError_t.hipErrorNotFound, None
        return _OK, (module.device, sig)

    def hipModuleLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        device, sig = f
        for what, v in (
            ("grid", gx),
            ("grid", gy),
            ("grid", gz),
            ("block", bx),
            ("block", by),
            ("block", bz),
            ("shared", shared),
        ):
            self._uint(f"hipModuleLaunchKernel {what}", v, 32)
        if bx * by * bz > 1024 or gx == 0:
            raise FakeHipError(f"hipModuleLaunchKernel: block {bx}x{by}x{bz}, grid {gx}")
        if device != self.current:
            raise FakeHipError(f"hipModuleLaunchKernel: a function of device {device} launched on {self.current}")
        self._stream("hipModuleLaunchKernel", stream)
        if extra is not None or not isinstance(params, int):
            raise FakeHipError("hipModuleLaunchKernel: kernelParams must be the address of the argument pointers")
        args = self._unpack(sig, params)
        self._record("launch", sig.name, args)
        run_kernel(self, sig.name, args)
        return (_OK,)

    def _unpack(self, sig, params):
        pointers = (ctypes.c_void_p * len(sig.params)).from_address(params)
        args = []
        for p, address in zip(sig.params, pointers):
            ctype = getattr(ctypes, p.ctype.removeprefix("ctypes."))
            if address is None or address % ctypes.alignment(ctype):
                raise FakeHipError(
                    f"{sig.name}: argument {p.name} ({p.c_type}) at {address}: "
                    f"misaligned for its C type (packing does not match the signature)"
                )
            value = ctype.from_address(address).value
            if p.is_pointer and value:
                self.memory(f"{sig.name}: argument {p.name}", value, 1, self.current)
            args.append(value or 0)
        return tuple(args)


# -- kernels the fake computes ------------------------------------------------------------------
def _strided(fake, ptr, dtype, numel, num_dims, info):
    """The elements a kernel reads at `ptr` through info (dims, strides), as a flat array view."""
    if num_dims and info:
        meta = fake.memory("info", info, 16 * num_dims).view(np.uint64)
        dims, strides = meta[:num_dims].astype(np.int64), meta[num_dims:].astype(np.int64)
        span = int(sum((d - 1) * s for d, s in zip(dims, strides))) + 1 if numel else 0
        flat = fake.memory("strided", ptr, span * dtype.itemsize).view(dtype)
        return np.lib.stride_tricks.as_strided(flat, tuple(dims), tuple(s * dtype.itemsize for s in strides))
    return fake.memory("contiguous", ptr, numel * dtype.itemsize).view(dtype)


def _compute(dtype):
    return np.float32 if dtype.itemsize <= 4 and dtype.kind in "fV" else dtype.type


def run_kernel(fake, name, args):
    family, _, suffix = name.rpartition("_")
    dtype = np.dtype(_DTYPES[suffix])
    bits = lambda v: np.array([v], np.uint64).astype(np.uint16).view(dtype)[0] if dtype.itemsize == 2 else dtype.type(v)
    if family == "const_set":
        numel, nd, info, v, out = args
        view = _strided(fake, out, dtype, numel, nd, info)
        view[...] = bits(v)
    elif family in ("affine", "copy_strided") or family.startswith("unary_"):
        numel, nd, info, inp, out = args[:5]
        x = np.asarray(_strided(fake, inp, dtype, numel, nd, info)).reshape(-1)
        c = _compute(dtype)
        if family == "affine":
            y = x.astype(c) * c(bits(args[5])) + c(bits(args[6]))
        elif family == "copy_strided":
            y = x
        else:
            y = {"unary_exp": np.exp, "unary_neg": np.negative}[family](x.astype(c))
        fake.memory("out", out, numel * dtype.itemsize).view(dtype)[:] = y.astype(dtype)
    else:
        raise FakeHipError(f"the fake does not compute {name}")


class FakeHipblas:
    """hip.hipblas's calls the driver makes, checked, with the GEMM computed by numpy."""

    hipblasOperation_t = hipblas_enums.hipblasOperation_t
    hipblasComputeType_t = hipblas_enums.hipblasComputeType_t
    hipblasGemmAlgo_t = hipblas_enums.hipblasGemmAlgo_t

    def __init__(self, fake: FakeHip) -> None:
        self.fake, self.handles, self.gemms = fake, {}, 0

    def hipblasCreate(self):
        handle = Handle("blas", self.fake.current, next(self.fake._numbers))
        self.handles[id(handle)] = None
        return hipblas_enums.hipblasStatus_t.HIPBLAS_STATUS_SUCCESS, handle

    def hipblasSetStream(self, handle, stream):
        self.fake._stream("hipblasSetStream", stream)
        self.handles[id(handle)] = stream
        return (hipblas_enums.hipblasStatus_t.HIPBLAS_STATUS_SUCCESS,)

    def hipblasGemmStridedBatchedEx_v2(
        self,
        handle,
        ta,
        tb,
        m,
        n,
        k,
        alpha,
        a,
        a_type,
        lda,
        sa,
        b,
        b_type,
        ldb,
        sb,
        beta,
        c,
        c_type,
        ldc,
        sc,
        batch,
        compute,
        algo,
    ):
        if id(handle) not in self.handles or self.handles[id(handle)] is None:
            raise FakeHipError("hipblasGemm: a handle without a stream")
        for op in (ta, tb):
            if not isinstance(op, hipblas_enums.hipblasOperation_t):
                raise FakeHipError(f"hipblasGemm: {op!r} is not a hipblasOperation_t")
        if not (a_type == b_type == c_type and isinstance(a_type, hip_enums.hipDataType)):
            raise FakeHipError("hipblasGemm: data types differ or are not hipDataType")
        if not isinstance(compute, hipblas_enums.hipblasComputeType_t) or not isinstance(alpha, np.ndarray):
            raise FakeHipError("hipblasGemm: compute type or host alpha/beta of the wrong type")
        dtype = np.dtype(
            {
                "HIP_R_16F": np.float16,
                "HIP_R_32F": np.float32,
                "HIP_R_64F": np.float64,
                "HIP_R_16BF": ml_dtypes.bfloat16,
            }[a_type.name]
        )
        acc = alpha.dtype
        for i in range(batch):
            A = self._col_major(
                a + i * sa * dtype.itemsize, dtype, *((k, m) if ta.name.endswith("_T") else (m, k)), lda
            )
            B = self._col_major(
                b + i * sb * dtype.itemsize, dtype, *((n, k) if tb.name.endswith("_T") else (k, n)), ldb
            )
            A = A.T if ta.name.endswith("_T") else A
            B = B.T if tb.name.endswith("_T") else B
            C = alpha[0] * (A.astype(acc) @ B.astype(acc))
            out = self.fake.memory("hipblasGemm C", c + i * sc * dtype.itemsize, ((n - 1) * ldc + m) * dtype.itemsize)
            for j in range(n):
                out.view(dtype)[j * ldc : j * ldc + m] = C[:, j].astype(dtype)
        self.gemms += 1
        return (hipblas_enums.hipblasStatus_t.HIPBLAS_STATUS_SUCCESS,)

    def _col_major(self, ptr, dtype, rows, cols, ld):
        flat = self.fake.memory("hipblasGemm operand", ptr, ((cols - 1) * ld + rows) * dtype.itemsize).view(dtype)
        return np.lib.stride_tricks.as_strided(flat, (rows, cols), (dtype.itemsize, ld * dtype.itemsize))

"""Host work of a GPU op with no GPU: Storage.unary(EXP) / Storage.binary(ADD) of 1,024
contiguous f32, and Storage.reduce_op(SUM) over dim 0 of (8192, 8192) f32 (issue 11's row: one
launch of column tiles) or over the last dim of (32, 1,024) f32 (a small reduction), through
the generated cuda arms, over runtime/cuda.py's own CudaDriver with its device calls stubbed:
activate's fast path (device 0 current), pooled blocks, the prepared launcher's pack and its
ctypes call of cuLaunchKernelEx, here a C stub that returns 0 (built with `cc` into a temporary
directory). What is left out is the driver's own time in the launch.

    python bench/gpu_host.py unary|binary|sum0|sumsmall|none N     # CPU time per call over N calls

Instructions per call, exact and unmoved by the machine's load (bench/results/cpu-notes.md):
run under `valgrind --tool=callgrind` with PYTHONHASHSEED=0 for `none N` and for each op with
the same N, and divide the difference by N."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

STUB = "int cuLaunchKernelEx(void *config, void *f, void **params, void **extra) { return 0; }\n"


def _stub_library(directory: Path) -> str:
    (directory / "stub.c").write_text(STUB, encoding="utf-8")
    library = directory / "libstubcuda.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(directory / "stub.c")], check=True)
    return str(library)


def main(which: str, n: int) -> None:
    import runtime.cuda as cuda
    from generated.backends import On
    from generated.dtypes import BinaryOp, ReduceOp, UnaryOp
    from generated.storage import Storage
    from runtime.layout import Layout

    with tempfile.TemporaryDirectory() as tmp:
        library = _stub_library(Path(tmp))
        cuda._libcuda_symbol = lambda name, hold_gil=False: getattr(  # type: ignore[assignment]
            (ctypes.PyDLL if hold_gil else ctypes.CDLL)(library), name
        )
        rt, driver = cuda._rt, cuda._rt.driver
        driver._local.ordinal = 0  # activate's fast path: device 0 current on this thread
        driver._streams[0] = 0x1234  # a stream handle (an int, as int(CUstream) gives)
        top = [1 << 20]

        def alloc(nbytes: int, stream: object) -> int:
            top[0] += -(-nbytes // 256) * 256
            return top[0]

        driver.alloc = alloc  # type: ignore[method-assign]
        driver.free = lambda ptr, stream: None  # type: ignore[method-assign]
        driver.upload = lambda ptr, host, stream: None  # type: ignore[method-assign]
        driver.memset = lambda ptr, nbytes, stream, byte=0: None  # type: ignore[method-assign]
        driver.function = lambda module, name: 0x5000  # type: ignore[method-assign]
        rt._module = lambda ordinal, source: None  # type: ignore[method-assign]
        rt._multiprocessors[0] = 132  # an H100's

        a = Storage(On.CUDA, rt.from_host(0, np.ones(1024, np.float32)))
        b = Storage(On.CUDA, rt.from_host(0, np.ones(1024, np.float32)))
        lay = Layout.contiguous((1024,))
        exp, add, total = UnaryOp.EXP, BinaryOp.ADD, ReduceOp.SUM
        big = Storage(On.CUDA, rt.alloc(0, 8192 * 8192, np.dtype(np.float32)))  # no upload: nothing is read
        lay_big = Layout.contiguous((8192, 8192))
        small = Storage(On.CUDA, rt.from_host(0, np.ones(32 * 1024, np.float32)))
        lay_small = Layout.contiguous((32, 1024))
        dim0, last = (0,), (1,)
        for _ in range(100):  # compile nothing, prepare the launchers, fill the bins
            a.unary(exp, lay)
            a.binary(add, b, lay, lay)
            big.reduce_op(total, lay_big, dim0)
            small.reduce_op(total, lay_small, last)
        start = time.process_time()
        if which == "unary":
            for _ in range(n):
                a.unary(exp, lay)
        elif which == "binary":
            for _ in range(n):
                a.binary(add, b, lay, lay)
        elif which == "sum0":
            for _ in range(n):
                big.reduce_op(total, lay_big, dim0)
        elif which == "sumsmall":
            for _ in range(n):
                small.reduce_op(total, lay_small, last)
        else:
            for _ in range(n):
                pass
        print(which, round((time.process_time() - start) / max(n, 1) * 1e9), "ns CPU time per call")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

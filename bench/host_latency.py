"""Host time of a small op on the GPU backends: what a generated Storage call costs the host.

- `small_ops` (bench/gpu.py's part latency): host time per call of a 1,024-element f32 exp
  and add, opgen (Storage.unary / binary) and torch alternating, on the GPU; then opgen again
  with its launches keeping the GIL (runtime.cuda.LAUNCH_HOLDS_GIL flipped).
- `stubbed` (no GPU): Storage.unary(EXP) / Storage.binary(ADD) of 1,024 contiguous f32, and
  Storage.reduce_op(SUM) over dim 0 of (8192, 8192) f32 (one launch of column tiles) or over
  the last dim of (32, 1,024) f32 (a small reduction), through the generated cuda arms, over
  runtime/cuda.py's own CudaDriver with its device calls stubbed: activate's fast path (device
  0 current), pooled blocks, the prepared launcher's pack and its ctypes call of
  cuLaunchKernelEx, here a C stub that returns 0 (built with `cc` into a temporary directory).
  What is left out is the driver's own time in the launch.

    python -m bench.host_latency unary|binary|sum0|sumsmall|none N   # CPU time per call over N calls

Instructions per call, exact and unmoved by the machine's load: run under
`valgrind --tool=callgrind` with PYTHONHASHSEED=0 for `none N` and for each op with the same N,
and divide the difference by N."""

from __future__ import annotations

import ctypes
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.timing import cuda_runtime


def small_ops(rows: dict, rounds: int = 5) -> None:
    """Host time per call of a 1,024-element f32 exp and add, opgen (Storage.unary / binary)
    and torch alternating, `rounds` rounds of 2,000 calls each: the median of the rounds.
    Then opgen again with its launches keeping the GIL (runtime.cuda.LAUNCH_HOLDS_GIL
    flipped, the prepared launches made afresh)."""
    import torch

    import generated as g
    import runtime.cuda as cuda

    dev = g.Device.parse("cuda:0")
    x = np.ones(1024, np.float32)
    a, b = dev.storage_from_slice(x), dev.storage_from_slice(x)
    layout = g.Layout.contiguous((1024,))
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(x).cuda()
    n = 2000
    cases = {
        "exp": (
            ("opgen Storage.unary exp", lambda: a.unary(g.UnaryOp.EXP, layout)),
            ("torch.exp", lambda: torch.exp(tx)),
        ),
        "add": (
            ("opgen Storage.binary add", lambda: a.binary(g.BinaryOp.ADD, b, layout, layout)),
            ("torch.add", lambda: torch.add(tx, ty)),
        ),
    }

    def per_call(fn) -> float:
        fn()
        torch.cuda.synchronize()
        dev.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        seconds = (time.perf_counter() - start) / n
        dev.synchronize()
        torch.cuda.synchronize()
        return seconds * 1e6

    def measure(label: str = "") -> None:
        for case in cases.values():
            samples: dict[str, list[float]] = {name: [] for name, _ in case}
            for _ in range(rounds):
                for name, fn in case:
                    if label and not name.startswith("opgen"):
                        continue
                    samples[name].append(per_call(fn))
            for name, values in samples.items():
                if values:
                    rows[f"small op 1,024 f32, host time per op: {name}{label} (us)"] = statistics.median(values)
            if not label:
                (ours, _), (theirs, _) = case
                rows[f"small op 1,024 f32, host time per op: {ours} / {theirs}"] = statistics.median(
                    samples[ours]
                ) / statistics.median(samples[theirs])

    measure()
    rt, held = cuda_runtime(), cuda.LAUNCH_HOLDS_GIL
    try:
        cuda.LAUNCH_HOLDS_GIL = not held
        rt._launches.clear()
        rt._direct.clear()
        measure(", launch keeping the GIL" if not held else ", launch releasing the GIL")
    finally:
        cuda.LAUNCH_HOLDS_GIL = held
        rt._launches.clear()
        rt._direct.clear()


STUB = "int cuLaunchKernelEx(void *config, void *f, void **params, void **extra) { return 0; }\n"


def _stub_library(directory: Path) -> str:
    (directory / "stub.c").write_text(STUB, encoding="utf-8")
    library = directory / "libstubcuda.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(directory / "stub.c")], check=True)
    return str(library)


def stubbed(which: str, n: int) -> None:
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
        rt = cuda_runtime()
        driver = rt.driver
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
    stubbed(sys.argv[1], int(sys.argv[2]))

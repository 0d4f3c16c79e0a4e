"""The cuda driver's GEMM through nvmath-python's cuBLAS binding, against a recording fake of
that binding: no GPU needed. (On the H100 the GEMMs themselves run in the conformance suite.)"""

from __future__ import annotations

import ctypes
import importlib
import sys

import ml_dtypes
import numpy as np
import pytest

from runtime import cuda
from runtime.errors import BackendUnavailable
from runtime.gpu import blas_graphs
from runtime.gpu.driver import GpuError


class FakeCublas:
    """nvmath.bindings.cublas as the driver uses it; gemm reads alpha and beta while the
    call lasts (host pointers, as cuBLAS's default pointer mode reads them)."""

    class cuBLASError(Exception):
        pass

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple] = []
        self.fail = fail

    def create(self):
        self.calls.append(("create",))
        return 77

    def set_stream(self, handle, stream):
        self.calls.append(("set_stream", handle, stream))

    def set_workspace(self, handle, workspace, nbytes):
        self.calls.append(("set_workspace", handle, workspace, nbytes))

    def set_math_mode(self, handle, mode):
        self.calls.append(("set_math_mode", handle, mode))

    def gemm_strided_batched_ex(self, *args):
        if self.fail:
            raise self.cuBLASError("CUBLAS_STATUS_INVALID_VALUE")
        alpha, beta = _scalar(args[21], args[6]), _scalar(args[21], args[15])
        self.calls.append(("gemm", *args[:6], alpha, *args[7:15], beta, *args[16:]))

    def get_cudart_version(self):
        return 13000


def _scalar(compute: int, address: int) -> float:
    """alpha or beta as cuBLAS reads it for the compute type: double for CUBLAS_COMPUTE_64F,
    half for CUBLAS_COMPUTE_16F, else float."""
    if compute == 64:
        return float(np.frombuffer(ctypes.string_at(address, 2), np.float16)[0])
    return (ctypes.c_double if compute == 70 else ctypes.c_float).from_address(address).value


WORKSPACE = 32 << 20


def _driver(monkeypatch, fake, graphs: bool = False) -> cuda.CudaDriver:
    """A CudaDriver on `fake`, its pool's allocations logged in fake.calls (addresses 1000, 2000, ...)."""
    monkeypatch.setattr(cuda, "_cublas", lambda: fake)
    monkeypatch.setattr(cuda, "BLAS_WORKSPACE", WORKSPACE)  # whatever OPGEN_CUBLAS_WORKSPACE_MB says
    monkeypatch.setattr(blas_graphs, "ENABLED", graphs)
    driver = cuda.CudaDriver()

    def alloc(nbytes, stream):
        fake.calls.append(("alloc", nbytes, stream))
        return 1000 * sum(c[0] == "alloc" for c in fake.calls)

    monkeypatch.setattr(driver, "alloc", alloc)
    return driver


@pytest.mark.parametrize(
    "dtype, data, compute",
    [(np.float32, 0, 68), (np.float64, 1, 70), (np.float16, 2, 68), (ml_dtypes.bfloat16, 14, 68)],
)
def test_gemm_passes_cublas_its_arguments_on_our_stream(monkeypatch, dtype, data, compute):
    """f32 computes in f32 (CUBLAS_COMPUTE_32F, not the TF32 mode), halves accumulate in f32."""
    fake = FakeCublas()
    driver = _driver(monkeypatch, fake)
    driver.gemm(0, 5, np.dtype(dtype), True, False, 2, 3, 4, 100, 4, 8, 200, 4, 0, 300, 2, 6, 7)
    [create, bind, alloc, workspace, *math, gemm] = fake.calls
    assert create == ("create",) and bind == ("set_stream", 77, 5)
    assert alloc == ("alloc", WORKSPACE, 5) and workspace == ("set_workspace", 77, 1000, WORKSPACE)
    # the half types' split-K sums in f32 too (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
    assert math == ([("set_math_mode", 77, 16)] if data in (2, 14) else [])
    assert gemm == (
        "gemm",
        77,
        1,
        0,
        2,
        3,
        4,
        1.0,
        100,
        data,
        4,
        8,
        200,
        data,
        4,
        0,
        0.0,
        300,
        data,
        2,
        6,
        7,
        compute,
        -1,
    )


def test_one_handle_per_device_rebound_only_when_the_stream_changes(monkeypatch):
    fake = FakeCublas()
    driver = _driver(monkeypatch, fake)
    for ordinal, stream in ((0, 5), (0, 5), (0, 9), (1, 11), (0, 9)):
        driver.gemm(ordinal, stream, np.dtype(np.float32), False, False, 1, 1, 1, 8, 1, 1, 16, 1, 1, 24, 1, 1, 1)
    assert [c for c in fake.calls if c[0] != "gemm"] == [
        ("create",),
        ("set_stream", 77, 5),
        ("alloc", WORKSPACE, 5),  # the device's workspace, made once
        ("set_workspace", 77, 1000, WORKSPACE),
        ("set_stream", 77, 9),
        ("set_workspace", 77, 1000, WORKSPACE),  # set_stream put cuBLAS's own back: set again
        ("create",),
        ("set_stream", 77, 11),
        ("alloc", WORKSPACE, 11),
        ("set_workspace", 77, 2000, WORKSPACE),
    ]


def test_without_a_workspace_size_cublas_keeps_its_own(monkeypatch):
    fake = FakeCublas()
    driver = _driver(monkeypatch, fake)
    monkeypatch.setattr(cuda, "BLAS_WORKSPACE", 0)
    driver.gemm(0, 5, np.dtype(np.float32), False, False, 1, 1, 1, 8, 1, 1, 16, 1, 1, 24, 1, 1, 1)
    assert [c[0] for c in fake.calls] == ["create", "set_stream", "gemm"]


def test_a_cublas_failure_is_a_gpu_error_naming_the_call(monkeypatch):
    driver = _driver(monkeypatch, FakeCublas(fail=True))
    with pytest.raises(GpuError, match="cuda: cublasGemmStridedBatchedEx failed: CUBLAS_STATUS_INVALID_VALUE"):
        driver.gemm(0, 5, np.dtype(np.float32), False, False, 1, 1, 1, 8, 1, 1, 16, 1, 1, 24, 1, 1, 1)


def test_without_nvmath_matmul_says_what_to_install_and_the_blas_is_unavailable(monkeypatch):
    def missing():
        raise ImportError("No module named 'nvmath'")

    monkeypatch.setattr(cuda, "_cublas", missing)
    driver = cuda.CudaDriver()
    assert driver.blas_available() is False
    with pytest.raises(BackendUnavailable, match=r"cuda: unavailable: matmul needs cuBLAS through nvmath-python"):
        driver.gemm(0, 5, np.dtype(np.float32), False, False, 1, 1, 1, 8, 1, 1, 16, 1, 1, 24, 1, 1, 1)


@pytest.mark.parametrize(
    "dtype, data, compute, one",
    [(np.float32, 0, 77, 1.0), (np.float16, 2, 64, 1.0), (ml_dtypes.bfloat16, 14, 68, 1.0), (np.float64, 1, 70, 1.0)],
)
def test_reduced_gemms_take_the_reduced_compute_types(monkeypatch, dtype, data, compute, one):
    """f32: TF32 tensor cores; f16: accumulation in f16, with half scalars; bf16: f32
    accumulation, split-K sums allowed in bf16 (the default math mode); f64: as ever."""
    fake = FakeCublas()
    driver = _driver(monkeypatch, fake)
    driver.gemm(0, 5, np.dtype(dtype), False, False, 2, 3, 4, 100, 2, 8, 200, 4, 0, 300, 2, 6, 1, reduced=True)
    gemm = fake.calls[-1]
    assert gemm[0] == "gemm" and gemm[-2] == compute and gemm[7] == one and gemm[9] == data
    assert not [c for c in fake.calls if c[0] == "set_math_mode"]  # a new handle's mode is the default


def test_the_math_mode_is_set_only_when_the_half_types_switch(monkeypatch):
    fake = FakeCublas()
    driver = _driver(monkeypatch, fake)
    bf16, f32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)
    args = (False, False, 1, 1, 1, 8, 1, 1, 16, 1, 1, 24, 1, 1, 1)
    for dtype, reduced in ((bf16, False), (bf16, False), (f32, True), (bf16, True), (bf16, True), (bf16, False)):
        driver.gemm(0, 5, dtype, *args, reduced=reduced)
    assert [c for c in fake.calls if c[0] == "set_math_mode"] == [
        ("set_math_mode", 77, 16),
        ("set_math_mode", 77, 0),
        ("set_math_mode", 77, 16),
    ]


def test_the_binding_imports_without_running_its_packages(monkeypatch, tmp_path):
    """cuda._binding_alone (how _cublas imports nvmath's cuBLAS binding): the packages' __init__
    files do not run, the module and what it imports load, the stand-ins are gone after, and a
    later plain import runs the package as ever and finds the module already there."""
    package = tmp_path / "heavy" / "bindings"
    package.mkdir(parents=True)
    (tmp_path / "heavy" / "__init__.py").write_text("raise RuntimeError('the whole package ran')\n")
    (package / "__init__.py").write_text("raise RuntimeError('the bindings package ran')\n")
    (package / "helper.py").write_text("VALUE = 7\n")
    (package / "blas.py").write_text("from heavy.bindings.helper import VALUE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("heavy", "heavy.bindings", "heavy.bindings.blas", "heavy.bindings.helper"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    blas = cuda._binding_alone("heavy", ("heavy", "heavy.bindings"), "heavy.bindings.blas")
    assert blas.VALUE == 7 and "heavy" not in sys.modules and "heavy.bindings" not in sys.modules
    assert sys.modules["heavy.bindings.blas"] is blas
    with pytest.raises(RuntimeError, match="the whole package ran"):
        importlib.import_module("heavy")
    with pytest.raises(ImportError, match="nowhere"):
        cuda._binding_alone("nowhere", ("nowhere",), "nowhere.blas")


class LoadingCublas(FakeCublas):
    """A binding whose first call counts as loading the library."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0

    def get_cudart_version(self):
        self.loads += 1
        return 12090


@pytest.mark.parametrize("setting", [None, "0"])
def test_a_devices_first_use_loads_cublas_once(monkeypatch, setting):
    fake = LoadingCublas()
    monkeypatch.setattr(cuda, "_cublas", lambda: fake)
    monkeypatch.setattr(cuda, "_blas_loaded", False)
    if setting is None:
        monkeypatch.delenv("OPGEN_BLAS_PRELOAD", raising=False)
    else:
        monkeypatch.setenv("OPGEN_BLAS_PRELOAD", setting)
    cuda.load_blas()
    cuda.load_blas()  # a second device: nothing more
    assert fake.loads == (0 if setting == "0" else 1)


def test_a_cublas_that_cannot_load_is_left_for_the_first_matmul(monkeypatch):
    def missing():
        raise ImportError("No module named 'nvmath'")

    monkeypatch.setattr(cuda, "_cublas", missing)
    monkeypatch.setattr(cuda, "_blas_loaded", False)
    monkeypatch.delenv("OPGEN_BLAS_PRELOAD", raising=False)
    cuda.load_blas()  # no error here: the first matmul says what to install


def _graph_driver(monkeypatch, fake, fail: bool = False) -> cuda.CudaDriver:
    """_driver with graphs on: a capture runs `record` between ("capture", stream) and
    ("captured",) in fake.calls (or fails), a replay logs ("replay", graph, stream)."""
    driver = _driver(monkeypatch, fake, graphs=True)

    def capture_graph(stream, record):
        fake.calls.append(("capture", stream))
        if fail:
            raise GpuError("cuda", "cuStreamEndCapture", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED")
        record()
        fake.calls.append(("captured",))
        return "graph"

    monkeypatch.setattr(driver, "create_stream", lambda: 99)
    monkeypatch.setattr(driver, "capture_graph", capture_graph)

    def launcher(graph):
        return lambda stream: fake.calls.append(("replay", graph, stream))

    driver.gemm_graphs = blas_graphs.GemmGraphs(driver._capture_gemm, launcher, lambda graph: None)
    return driver


def _same_gemm(driver, c=24):
    driver.gemm(0, 5, np.dtype(ml_dtypes.bfloat16), False, False, 2, 3, 4, 8, 2, 6, 16, 4, 12, c, 2, 6, 1)


def test_a_gemm_run_again_on_its_addresses_is_captured_once_and_replayed(monkeypatch):
    fake = FakeCublas()
    driver = _graph_driver(monkeypatch, fake)
    _same_gemm(driver)  # first: called
    fake.calls.clear()
    _same_gemm(driver)  # second: recorded on the capture stream, then replayed on ours
    assert [c[:3] for c in fake.calls] == [
        ("set_stream", 77, 99),
        ("set_workspace", 77, 1000),  # set_stream dropped it: given again
        ("capture", 99),
        ("gemm", 77, 0),
        ("captured",),
        ("set_stream", 77, 5),
        ("set_workspace", 77, 1000),
        ("replay", "graph", 5),
    ]
    fake.calls.clear()
    _same_gemm(driver)
    assert fake.calls == [("replay", "graph", 5)]  # from then on: the graph alone
    _same_gemm(driver, c=48)  # another output: called (and remembered)
    assert fake.calls[-1][0] == "gemm" and driver.gemm_graphs.replays() == 2


def test_a_gemm_that_cannot_be_captured_is_called_as_ever(monkeypatch):
    fake = FakeCublas()
    driver = _graph_driver(monkeypatch, fake, fail=True)
    for _ in range(4):
        _same_gemm(driver)
    assert [c[0] for c in fake.calls].count("gemm") == 4 and [c[0] for c in fake.calls].count("capture") == 1
    assert "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED" in driver.last_capture_failure
    assert driver._blas_streams[0] == 5 and driver.gemm_graphs.replays() == 0


def test_every_gemm_and_capture_holds_the_handles_lock(monkeypatch):
    """A capture binds the handle to the capture stream while it records: another thread's
    GEMM meanwhile would be recorded too, so each GEMM holds the driver's lock throughout."""
    fake = FakeCublas()
    driver = _graph_driver(monkeypatch, fake)
    held = []
    record = fake.gemm_strided_batched_ex
    monkeypatch.setattr(
        fake, "gemm_strided_batched_ex", lambda *a: held.append(driver._blas_lock.locked()) or record(*a)
    )
    for _ in range(3):
        _same_gemm(driver)
    assert held == [True, True] and not driver._blas_lock.locked()  # the plain call and the recorded one

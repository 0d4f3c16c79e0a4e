"""The HIP kernel sources compile for both vendors, with no GPU: NVRTC for NVIDIA
(sm_80, sm_90) and hiprtc for AMD (gfx90a, gfx942, gfx1030, gfx1100: gpu_compile.ROCM_TARGETS).

Every hip/*.hip file and every generated/*.hip file is compiled once per target (a hip/ source
with the generated header of its entry points, generated/<name>_entries.h). The
compiles run in a process pool
started with the test run (OPGEN_COMPILE_JOBS workers, default: the CPU count, at most
2), so the suite takes about a minute and a compiler crash fails one test, not the
whole run. A missing compiler or target is a skip that says what is missing.

Also checked: every `extern "C"` entry point the registry (ops.yaml) needs exists, for
every dtype it declares, and that a broken source raises CompileError with the log.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runtime.gpu import compile as gpu_compile
from runtime.gpu.errors import CompileError, CompilerUnavailable

ROOT = Path(__file__).resolve().parents[2]
HIP = ROOT / "hip"
GENERATED = sorted((ROOT / "generated").glob("*.hip"))
SOURCES = sorted(HIP.glob("*.hip")) + GENERATED
TARGETS = [("cuda", t) for t in gpu_compile.CUDA_TARGETS] + [("rocm", t) for t in gpu_compile.ROCM_TARGETS]
REGISTRY = yaml.safe_load((ROOT / "ops.yaml").read_text(encoding="utf-8"))


def entry_names(path: Path) -> list[str]:
    """The entry points a source compiles to: those of its text and of the generated headers it
    includes (hip/<name>.hip's entry points are generated into generated/<name>_entries.h)."""
    text = path.read_text(encoding="utf-8")
    headers = gpu_compile.kernel_headers()
    for include in re.findall(r'^#include "(\w+_entries\.h)"', text, re.M):
        text += "\n" + headers[include]
    return gpu_compile.kernel_names(text)


def _label(path: Path) -> str:
    return path.name.split(".")[0] if path.parent == HIP else f"generated-{path.name.split('.')[0]}"


# --------------------------------------------------------------------------- compiles


@pytest.fixture(scope="session")
def compiled(request):
    """Futures of the (file, target) compiles this run selected, all submitted at
    once, biggest file first."""
    wanted = {
        (item.callspec.params["path"], item.callspec.params["target"]): item.callspec.params["backend"]
        for item in request.session.items
        if item.originalname == "test_source_compiles"
    }
    jobs = int(os.environ.get("OPGEN_COMPILE_JOBS", min(2, os.cpu_count() or 1)))
    # spawn: each worker loads NVRTC / hiprtc itself; nothing is forked from a process
    # that may hold them.
    pool = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))
    futures = {
        key: pool.submit(gpu_compile.compile_job, str(key[0]), backend, key[1])
        for key, backend in sorted(wanted.items(), key=lambda kv: -kv[0][0].stat().st_size)
    }
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("backend, target", TARGETS, ids=[t for _, t in TARGETS])
@pytest.mark.parametrize("path", SOURCES, ids=_label)
def test_source_compiles(compiled, path, backend, target):
    try:
        result = compiled[(path, target)].result()
    except concurrent.futures.process.BrokenProcessPool as e:
        pytest.fail(f"{backend}: the compiler crashed compiling {path.name} for {target} ({e})")
    if "unavailable" in result:
        pytest.skip(f"{backend}: {result['unavailable']}")
    if "error" in result:
        pytest.fail(result["error"], pytrace=False)
    names = entry_names(path)
    assert names, f'{path.name} declares no extern "C" __global__ entry point'
    missing = sorted(set(names) - set(result["symbols"]))
    assert not missing, f"{path.name} for {target}: entry points absent from the code object: {missing[:8]}"


# --------------------------------------------------------------------------- entry points


def _dtypes(spec) -> list[str]:
    if spec is None:
        return list(REGISTRY["dtypes"])
    if isinstance(spec, str):
        return list(REGISTRY["dtype_sets"].get(spec, [spec]))
    return [d for s in spec for d in _dtypes(s)]


def _arg_dtypes(op: str, arg: str) -> list[str]:
    return _dtypes((REGISTRY["storage"][op].get("dtypes") or {}).get(arg))


def required_entry_points() -> dict[str, list[str]]:
    """Storage op (or elementwise family) -> the entry points its GPU arm launches.
    Naming: <kernel>_<dtype>; ops over an index dtype and a value dtype are
    <kernel>_<index dtype>_<value dtype>; to_dtype is cast_<src>_<dst>. Not kernels:
    try_clone / dtype / device (driver calls), matmul (vendor BLAS), the custom-op hooks."""
    every = _dtypes(None)
    need: dict[str, list[str]] = {}
    for op, kernel in (("affine", "affine"), ("powf", "powf"), ("elu", "elu"), ("const_set", "const_set"),
                       ("copy_strided_src", "copy_strided"), ("copy2d", "copy2d"), ("conv1d", "conv1d"),
                       ("conv2d", "conv2d"), ("conv_transpose1d", "conv_transpose1d"),
                       ("conv_transpose2d", "conv_transpose2d"), ("avg_pool2d", "avg_pool2d"),
                       ("max_pool2d", "max_pool2d"), ("upsample_nearest1d", "upsample_nearest1d"),
                       ("upsample_nearest2d", "upsample_nearest2d")):  # fmt: skip
        need[op] = [f"{kernel}_{d}" for d in _arg_dtypes(op, "self")]
    need["where_cond"] = [f"where_cond_{c}_{v}" for c in _arg_dtypes("where_cond", "self") for v in every]
    need["to_dtype"] = [f"cast_{s}_{t}" for s in every for t in every]
    need["reduce_op"] = [f"fast_{op}_{d}" for op, spec in REGISTRY["reduce"].items() for d in _dtypes(spec["dtypes"])]
    for op in ("index_select", "gather", "scatter_set", "scatter_add", "index_add"):
        need[op] = [f"{op}_{i}_{v}" for i in _arg_dtypes(op, "ids") for v in _arg_dtypes(op, "self")]
    for family in ("unary", "binary", "cmp"):
        need[family] = [f"{family}_{op}_{d}" for op, spec in REGISTRY[family].items() for d in _dtypes(spec["dtypes"])]
    return need


REQUIRED = required_entry_points()
ELEMENTWISE = ("unary", "binary", "cmp")


def _declared(paths) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in paths:
        for name in entry_names(path):
            assert name not in found, f"entry point {name} defined in {found[name]} and {path.name}"
            found[name] = path.name
    return found


@pytest.mark.parametrize("op", list(REQUIRED))
def test_registry_entry_points_exist(op):
    if op in ELEMENTWISE:
        if not GENERATED:
            pytest.skip("generated/*.hip not written yet: `gen` generates the elementwise kernels from ops.yaml")
        declared = _declared(GENERATED)
    else:
        declared = _declared(sorted(HIP.glob("*.hip")))
    missing = [name for name in REQUIRED[op] if name not in declared]
    assert not missing, f"{op}: {len(missing)} entry points missing from the HIP sources, e.g. {missing[:6]}"


# --------------------------------------------------------------------------- errors

BROKEN = '#include "compat.h"\nextern "C" __global__ void broken(float* x) { x[0] = no_such_name; }\n'


@pytest.mark.parametrize("backend, target", [("cuda", "sm_90"), ("rocm", "gfx90a")], ids=["cuda", "rocm"])
def test_broken_source_raises_compile_error_with_the_log(backend, target):
    missing = gpu_compile.nvrtc_unavailable() if backend == "cuda" else gpu_compile.rocm_target_unavailable(target)
    if missing:
        pytest.skip(f"{backend}: {missing}")
    with pytest.raises(CompileError) as info:
        gpu_compile.compile_for(backend, BROKEN, "broken.hip", target)
    err = info.value
    assert (err.file, err.backend, err.target) == ("broken.hip", backend, target)
    assert "no_such_name" in err.log
    assert str(err).startswith(f"{backend}: broken.hip does not compile for {target}:")


def test_unknown_backend_is_a_value_error():
    with pytest.raises(ValueError, match="no runtime compiler for backend 'metal'"):
        gpu_compile.compile_for("metal", BROKEN, "broken.hip", "apple9")


def test_missing_cuda_headers_say_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_compile, "_cuda_include_candidates", lambda: [tmp_path])
    gpu_compile.cuda_include_dir.cache_clear()
    try:
        with pytest.raises(CompilerUnavailable) as info:
            gpu_compile.cuda_include_dir()
    finally:
        monkeypatch.undo()
        gpu_compile.cuda_include_dir.cache_clear()
    assert info.value.backend == "cuda"
    assert "cuda_fp16.h" in info.value.reason and "pip install nvidia-cuda-runtime-cu12" in info.value.reason
    assert str(tmp_path) in info.value.reason


def test_import_loads_no_vendor_package():
    # (cuda-bindings' .pth file registers a bare `cuda` namespace at start-up: not a load.)
    vendor = ("cuda.bindings.nvrtc", "cuda.nvrtc", "hip.hiprtc", "hip.chiprtc")
    code = f"import sys, runtime.gpu.compile; print([m for m in {vendor!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_clean_compile_leaves_shared_bytes_alone():
    """NVRTC writes its one-NUL log into the buffer it is given: a `b" " * 1` buffer is
    CPython's shared one-byte b" ", and every later b" " in the process read b"\\0" (an audit
    of macro tokens failed after this file's compiles)."""
    missing = gpu_compile.nvrtc_unavailable()
    if missing:
        pytest.skip(f"cuda: {missing}")
    gpu_compile.compile_cuda('extern "C" __global__ void k_one(float* x) { x[0] = 1.0f; }', "k.hip", "sm_90")
    assert bytes([32]) == b" " * 1
    assert b"a$b".replace(b"$", b" ") == b"a b"


def test_code_symbols_reads_an_elf_symbol_table():
    missing = gpu_compile.nvrtc_unavailable()
    if missing:
        missing = gpu_compile.rocm_target_unavailable("gfx90a")
        if missing:
            pytest.skip(f"no GPU compiler: {missing}")
        image = gpu_compile.compile_rocm(
            'extern "C" __global__ void k_one(float* x) { x[0] = 1.0f; }', "k.hip", "gfx90a"
        )
    else:
        image = gpu_compile.compile_cuda(
            'extern "C" __global__ void k_one(float* x) { x[0] = 1.0f; }', "k.hip", "sm_90"
        )
    assert "k_one" in gpu_compile.code_symbols(image)
    assert gpu_compile.code_symbols(b"not an ELF image") == set()


def _compile_error(source: str, name: str, headers: dict[str, str] | None = None) -> str:
    """The log of compiling `source`, which must fail (NVRTC for sm_80, else hiprtc for gfx90a)."""
    backend, target = "cuda", "sm_80"
    if gpu_compile.nvrtc_unavailable():
        backend, target = "rocm", "gfx90a"
        if missing := gpu_compile.rocm_target_unavailable(target):
            pytest.skip(f"no GPU compiler: {missing}")
    with pytest.raises(CompileError) as info:
        gpu_compile.compile_for(backend, source, name, target, headers=headers)
    return info.value.log


def test_a_flash_geometry_the_kernel_cannot_take_fails_to_compile():
    """hip/attention.hip derives its warps and row tiles from ops.yaml's FLASH_THREADS_D<hd> and
    FLASH_ROWS_D<hd> (the runtime's launch geometry): rows that are not warps * tiles * 16 fail."""
    headers = gpu_compile.kernel_headers()
    facts = headers["kernel_facts.h"]
    assert "#define OPGEN_FLASH_ROWS_D64 64\n" in facts
    headers["kernel_facts.h"] = facts.replace("#define OPGEN_FLASH_ROWS_D64 64\n", "#define OPGEN_FLASH_ROWS_D64 48\n")
    log = _compile_error((HIP / "attention.hip").read_text(encoding="utf-8"), "attention.hip", headers)
    assert "FLASH_ROWS_D<hd> = warps * row tiles * 16" in log


def test_row_bytes_is_a_default_a_define_overrides():
    """ROW_BYTES is overridable (bench/gpu.py --explore nn-rows defines OPGEN_ROW_BYTES before the
    source): the kernel takes the define, and checks it (whole 16-byte packs)."""
    source = "#define OPGEN_ROW_BYTES 24\n" + (HIP / "nn.hip").read_text(encoding="utf-8")
    assert "ROW_BYTES: a thread holds whole 16-byte packs" in _compile_error(source, "nn.hip")

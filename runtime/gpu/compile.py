"""Compile the HIP kernel sources in hip/ for NVIDIA (NVRTC) and AMD (hiprtc) targets.

No GPU is needed: NVRTC (cuda-python's `cuda.bindings.nvrtc` + the
`nvidia-cuda-nvrtc-cu12` wheel) produces CUBIN for `sm_XX`, hiprtc (hip-python's
`hip.hiprtc` + a ROCm runtime library) produces AMD code objects for `gfxXXXX`. Both
packages are imported lazily: this module imports without them, and a missing
compiler raises `CompilerUnavailable` with what is missing.

The project's headers (hip/*.h: compat.h, elementwise.h) are handed to the compilers
as named in-memory headers, so `#include "compat.h"` works whatever the compiler's
working directory; the CUDA headers that compat.h includes (cuda_fp16.h,
cuda_bf16.h) come from a CUDA include directory (see `cuda_include_dir`).

Environment:
  OPGEN_CUDA_INCLUDE   a directory holding cuda_fp16.h (default: the
                       nvidia-cuda-runtime-cu12 wheel's include/, then $CUDA_HOME/include,
                       $CUDA_PATH/include, /usr/local/cuda/include)
  OPGEN_HIPRTC_LIB     the library exporting hiprtc (default: the first loadable of
                       libhiprtc.so[.6|.5], libamdhip64.so[.6|.5]; ROCm 5.2 ships hiprtc
                       inside libamdhip64.so.5)
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import hashlib
import os
import re
import stat
import struct
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from runtime.gpu.errors import CompileError, CompilerUnavailable, KernelCacheWarning

HIP_DIR = Path(__file__).resolve().parents[2] / "hip"
#: gen's headers: kernel_facts.h and each hip/<name>.hip's <name>_entries.h (its entry points)
GENERATED_DIR = Path(__file__).resolve().parents[2] / "generated"

#: The targets CI compiles every kernel source for. AMD: CDNA2 (MI200, wave64), CDNA3
#: (MI300, wave64), RDNA2 and RDNA3 (wave32). Where the installed ROCm's comgr lacks a
#: target, its compile is a skip saying so (ROCM_TARGETS_MISSING_WHY).
CUDA_TARGETS = ("sm_80", "sm_90")
ROCM_TARGETS = ("gfx90a", "gfx942", "gfx1030", "gfx1100")

#: Why a target may be missing: what the project's set-up can install. Looked at on
#: 2026-11-24: Debian bookworm has only ROCm 5.2.3 (libamdhip64-5, libamd-comgr2 5.2.3-2,
#: whose comgr knows gfx600..gfx90c and gfx1010..gfx1036); PyPI's `rocm`, `rocm-sdk-core`
#: and `rocm-sdk-device-*` are empty placeholder packages (AMD ships the real ROCm wheels
#: from its own index, not PyPI), and hip-python / rocm-llvm-python bind the libraries
#: without shipping them.
ROCM_TARGETS_MISSING_WHY = (
    "no ROCm with a newer comgr can be installed from the reachable registries: Debian bookworm ships "
    "ROCm 5.2.3 only, and PyPI's rocm / rocm-sdk-core packages are empty placeholders"
)

#: Options passed on every compile. FP contraction is off so that `x * m + a` rounds
#: twice, as the numpy reference does (a fused multiply-add would differ in the last bit).
CUDA_OPTIONS = ("-std=c++17", "--fmad=false")
ROCM_OPTIONS = ("-std=c++17", "-O3", "-ffp-contract=off")

_ENTRY = re.compile(r'extern\s+"C"\s+__global__\s+void\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(')
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def kernel_names(source: str) -> list[str]:
    """The `extern "C" __global__ void NAME(` entry points of a source, in order
    (comments ignored)."""
    return _ENTRY.findall(_COMMENT.sub("", source))


def kernel_headers(hip_dir: Path = HIP_DIR, generated_dir: Path = GENERATED_DIR) -> dict[str, str]:
    """The project's headers by include name: hip/*.h, and generated/*.h (gen's)."""
    paths = [*sorted(Path(hip_dir).glob("*.h")), *sorted(Path(generated_dir).glob("*.h"))]
    return {p.name: p.read_text() for p in paths}


# --------------------------------------------------------------------------- NVRTC


@functools.cache
def _nvrtc():
    try:
        from cuda.bindings import nvrtc  # cuda-python >= 12.6
    except ImportError:
        try:
            from cuda import nvrtc  # older cuda-python layout
        except ImportError:
            raise CompilerUnavailable(
                "cuda", "NVRTC not found: the Python package cuda-python is not installed (pip install cuda-python)"
            ) from None
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception as e:  # the binding raises when libnvrtc cannot be loaded
        raise CompilerUnavailable(
            "cuda", f"NVRTC library not loadable ({e}); pip install nvidia-cuda-nvrtc-cu12"
        ) from None
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompilerUnavailable("cuda", f"nvrtcVersion failed: {err}")
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    _, major, minor = _nvrtc().nvrtcVersion()
    return int(major), int(minor)


def _nvidia_wheel_includes() -> list[Path]:
    try:
        import nvidia  # namespace package of the nvidia-*-cu12 wheels
    except ImportError:
        return []
    return [Path(p) / "cuda_runtime" / "include" for p in getattr(nvidia, "__path__", [])]


def _cuda_include_candidates() -> list[Path]:
    candidates = []
    if os.environ.get("OPGEN_CUDA_INCLUDE"):
        candidates.append(Path(os.environ["OPGEN_CUDA_INCLUDE"]))
    candidates += _nvidia_wheel_includes()
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    return candidates


@functools.cache
def cuda_include_dir() -> Path:
    """A directory holding cuda_fp16.h and cuda_bf16.h (NVRTC 12 has no built-in copy)."""
    candidates = _cuda_include_candidates()
    for c in candidates:
        if (c / "cuda_fp16.h").is_file() and (c / "cuda_bf16.h").is_file():
            return c
    raise CompilerUnavailable(
        "cuda",
        "CUDA headers cuda_fp16.h / cuda_bf16.h not found (pip install nvidia-cuda-runtime-cu12, "
        "or set OPGEN_CUDA_INCLUDE or CUDA_HOME); looked in " + ", ".join(str(c) for c in candidates),
    )


def nvrtc_unavailable() -> str | None:
    """None when compile_cuda can run here, else what is missing."""
    try:
        _nvrtc()
        cuda_include_dir()
    except CompilerUnavailable as e:
        return e.reason
    return None


def compile_options(backend: str, arch: str, options: Iterable[str] = ()) -> list[str]:
    """Every option compile_cuda / compile_rocm pass for `arch`, include directories too:
    the one list the compilers get and the kernel cache keys on."""
    if backend == "cuda":
        return [f"--gpu-architecture={arch}", *CUDA_OPTIONS, f"-I{cuda_include_dir()}", *options]
    if backend == "rocm":
        return [f"--offload-arch={arch}", *ROCM_OPTIONS, *options]
    raise ValueError(f"no runtime compiler for backend {backend!r}")


def _compile_error(
    name: str, backend: str, arch: str, log: str, opts: list[str], source: str, headers: Mapping[str, str] | None
) -> CompileError:
    hs = kernel_headers() if headers is None else dict(headers)
    return CompileError(name, backend, arch, log, options=tuple(opts), excerpt=source_excerpt(log, name, source, hs))


# `name(12): error` (NVRTC) or `name:12:5: error` (hiprtc / clang)
_LOG_ERROR = re.compile(r"^(?P<file>[^\s:()]+)(?:\((?P<l1>\d+)\):|:(?P<l2>\d+):\d+:)\s*(?:fatal\s+)?error", re.M)
_HIPRTC_SOURCE = "CompileSource"  # the name hiprtc (comgr) gives the source in its log


def source_excerpt(log: str, name: str, source: str, headers: Mapping[str, str], context: int = 3) -> str:
    """The numbered lines around the first error the compiler's log names, in the file it
    names (the source `name`, or one of the in-memory headers); "" when it names none."""
    for m in _LOG_ERROR.finditer(log):
        file = Path(m["file"]).name
        if file in (name, _HIPRTC_SOURCE):
            file, text = name, source
        elif file in headers:
            text = headers[file]
        else:
            continue
        lines = text.splitlines()
        at = int(m["l1"] or m["l2"])
        if not 1 <= at <= len(lines):
            continue
        last = min(len(lines), at + context)
        shown = [
            f"{'>' if n == at else ' '} {n:>{len(str(last))}} | {lines[n - 1]}"
            for n in range(max(1, at - context), last + 1)
        ]
        return f"{file}:\n" + "\n".join(shown)
    return ""


def _headers(headers: Mapping[str, str] | None) -> tuple[list[bytes], list[bytes]]:
    hs = kernel_headers() if headers is None else dict(headers)
    return [v.encode() for v in hs.values()], [k.encode() for k in hs]


def compile_cuda(
    source: str,
    name: str,
    arch: str,
    *,
    headers: Mapping[str, str] | None = None,
    options: Iterable[str] = (),
    log: list[str] | None = None,
) -> bytes:
    """Compile `source` (file name `name`, for messages) with NVRTC for `arch`:
    `sm_XX` gives a CUBIN, `compute_XX` PTX. `headers` (default: hip/*.h) are
    in-memory include files; the compiler's log (warnings) is appended to `log` when
    given. Raises CompileError with the log."""
    nvrtc = _nvrtc()
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    contents, names = _headers(headers)
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), len(names), contents, names)
    if err != ok:
        raise CompileError(name, "cuda", arch, f"nvrtcCreateProgram: {err}")
    try:
        opts = compile_options("cuda", arch, options)
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        # Output buffers are bytearrays: NVRTC writes into what it is given, and `b" " * 1`
        # (the log of a clean compile is one NUL) is CPython's shared one-byte b" ", which
        # would then read as b"\0" everywhere in the process.
        raw = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, raw)
        text = bytes(raw).rstrip(b"\0").strip().decode(errors="replace")
        if err != ok:
            raise _compile_error(name, "cuda", arch, text or str(err), opts, source, headers)
        if log is not None and text:
            log.append(text)
        if arch.startswith("sm_"):
            _, size = nvrtc.nvrtcGetCUBINSize(prog)
            image = bytearray(size)
            (err,) = nvrtc.nvrtcGetCUBIN(prog, image)
        else:
            _, size = nvrtc.nvrtcGetPTXSize(prog)
            image = bytearray(size)
            (err,) = nvrtc.nvrtcGetPTX(prog, image)
        if err != ok or not size:
            raise CompileError(name, "cuda", arch, f"no code produced ({err})")
        return bytes(image)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)  # cuda.bindings takes the program itself


# --------------------------------------------------------------------------- hiprtc

_hiprtc_lib = ""  # the library hip-python's hiprtc was pointed at

_HIPRTC_LIBS = (
    "libhiprtc.so",
    "libhiprtc.so.6",
    "libhiprtc.so.5",
    "libamdhip64.so",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
)


def _hiprtc_library() -> str:
    if os.environ.get("OPGEN_HIPRTC_LIB"):
        return os.environ["OPGEN_HIPRTC_LIB"]
    tried = []
    for lib in _HIPRTC_LIBS:
        try:
            handle = ctypes.CDLL(lib)
        except OSError as e:
            tried.append(f"{lib} ({str(e).split(':')[-1].strip()})")
            continue
        if hasattr(handle, "hiprtcCompileProgram"):
            return lib
        tried.append(f"{lib} (no hiprtcCompileProgram)")
    raise CompilerUnavailable(
        "rocm",
        "hiprtc library not found (apt-get install libamdhip64-5 libhiprtc-builtins5 rocm-device-libs, "
        "or set OPGEN_HIPRTC_LIB); tried " + ", ".join(tried),
    )


@functools.cache
def _hiprtc():
    try:
        from hip import chiprtc
    except ImportError:
        raise CompilerUnavailable(
            "rocm", "hiprtc not found: the Python package hip-python is not installed (pip install hip-python)"
        ) from None
    global _hiprtc_lib
    lib = _hiprtc_lib = _hiprtc_library()
    # hip-python opens chiprtc.DLL at the first hiprtc call (default libhiprtc.so, which
    # ROCm 5.2 lacks): point it at the library found.
    chiprtc.DLL = lib.encode()
    from hip import hiprtc

    try:
        err, major, minor = hiprtc.hiprtcVersion()
    except Exception as e:
        raise CompilerUnavailable("rocm", f"hiprtc library {lib} not usable ({e})") from None
    if err != hiprtc.hiprtcResult.HIPRTC_SUCCESS:
        raise CompilerUnavailable("rocm", f"hiprtcVersion failed: {err}")
    return hiprtc


_COMGR_LIBS = ("libamd_comgr.so.3", "libamd_comgr.so.2", "libamd_comgr.so")
_comgr_lib = "(not found)"  # the one rocm_supported_targets asked, for messages


@functools.cache
def rocm_supported_targets() -> frozenset[str] | None:
    """The gfx targets the installed ROCm code object manager (comgr, which hiprtc
    compiles through) knows, or None if comgr cannot be asked. ROCm 5.2's hiprtc
    crashes the process (SIGSEGV) on a target its comgr lacks (gfx942), so
    compile_rocm checks first."""
    for lib in _COMGR_LIBS:
        try:
            comgr = ctypes.CDLL(lib)
        except OSError:
            continue
        global _comgr_lib
        _comgr_lib = lib
        count = ctypes.c_size_t()
        if comgr.amd_comgr_get_isa_count(ctypes.byref(count)) != 0:
            return None
        names = set()
        for i in range(count.value):
            name = ctypes.c_char_p()
            if comgr.amd_comgr_get_isa_name(ctypes.c_size_t(i), ctypes.byref(name)) == 0 and name.value:
                isa = name.value.decode()  # e.g. amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-
                names.add(isa.rsplit("--", 1)[-1].split(":", 1)[0])
        return frozenset(names)
    return None


def rocm_target_unavailable(arch: str) -> str | None:
    """None when hiprtc can compile for `arch` here, else why not."""
    missing = hiprtc_unavailable()
    if missing:
        return missing
    targets = rocm_supported_targets()
    if targets is not None and arch.split(":", 1)[0] not in targets:
        return (
            f"target {arch} is not supported by the installed ROCm's code object manager "
            f"(hiprtc from {_hiprtc_lib}, comgr {_comgr_lib}); {ROCM_TARGETS_MISSING_WHY}; "
            f"this comgr knows: {' '.join(sorted(targets, key=_gfx_key))}"
        )
    return None


def _gfx_key(name: str) -> tuple[int, str]:
    return len(name), name


def hiprtc_version() -> tuple[int, int]:
    _, major, minor = _hiprtc().hiprtcVersion()
    return int(major), int(minor)


def hiprtc_unavailable() -> str | None:
    """None when compile_rocm can run here, else what is missing."""
    try:
        _hiprtc()
    except CompilerUnavailable as e:
        return e.reason
    return None


def compile_rocm(
    source: str,
    name: str,
    arch: str,
    *,
    headers: Mapping[str, str] | None = None,
    options: Iterable[str] = (),
    log: list[str] | None = None,
) -> bytes:
    """Compile `source` with hiprtc for the AMD target `arch` (gfx90a, ...): the code
    object. `headers` (default: hip/*.h) are in-memory include files; the compiler's
    log (warnings) is appended to `log` when given. Raises CompileError with the log."""
    hiprtc = _hiprtc()
    missing = rocm_target_unavailable(arch)
    if missing:
        raise CompilerUnavailable("rocm", missing)
    ok = hiprtc.hiprtcResult.HIPRTC_SUCCESS
    contents, names = _headers(headers)
    err, prog = hiprtc.hiprtcCreateProgram(source.encode(), name.encode(), len(names), contents, names)
    if err != ok:
        raise CompileError(name, "rocm", arch, f"hiprtcCreateProgram: {err}")
    try:
        opts = compile_options("rocm", arch, options)
        (err,) = hiprtc.hiprtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        _, size = hiprtc.hiprtcGetProgramLogSize(prog)
        raw = bytearray(size)
        if size:
            hiprtc.hiprtcGetProgramLog(prog, raw)
        text = bytes(raw).rstrip(b"\0").strip().decode(errors="replace")
        if err != ok:
            raise _compile_error(name, "rocm", arch, text or str(err), opts, source, headers)
        if log is not None and text:
            log.append(text)
        _, size = hiprtc.hiprtcGetCodeSize(prog)
        if not size:
            raise CompileError(name, "rocm", arch, text or "no code produced")
        image = bytearray(size)
        (err,) = hiprtc.hiprtcGetCode(prog, image)
        if err != ok:
            raise CompileError(name, "rocm", arch, f"hiprtcGetCode: {err}")
        return bytes(image)
    finally:
        hiprtc.hiprtcDestroyProgram(prog.createRef())  # takes hiprtcProgram*


# --------------------------------------------------------------------------- code objects


def code_symbols(image: bytes) -> set[str]:
    """Names of the defined symbols of an ELF code object (CUBIN or AMD code object;
    a clang offload bundle is searched for its ELF entries)."""
    if image[:4] != b"\x7fELF":
        found: set[str] = set()
        at = image.find(b"\x7fELF")
        while at >= 0:
            try:
                found |= code_symbols(image[at:])
            except (ValueError, struct.error):
                pass
            at = image.find(b"\x7fELF", at + 4)
        return found
    if image[4] != 2:
        raise ValueError("not a 64-bit ELF")
    (shoff,) = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", image, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", image, shoff + i * shentsize) for i in range(shnum)]
    names: set[str] = set()
    for _, sh_type, _, _, off, size, link, _, _, entsize in sections:
        if sh_type not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        stroff = sections[link][4]
        for k in range(size // (entsize or 24)):
            st_name, _, _, st_shndx = struct.unpack_from("<IBBH", image, off + k * (entsize or 24))
            if st_name and st_shndx:
                end = image.index(b"\0", stroff + st_name)
                names.add(image[stroff + st_name : end].decode(errors="replace"))
    return names


# --------------------------------------------------------------------------- kernel cache

CACHE_DIR = Path(os.environ.get("OPGEN_CACHE_DIR", Path.home() / ".cache" / "opgen" / "kernels"))


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


@functools.cache
def _directory_listing(directory: str) -> bytes:
    """Name, size and mtime of every file in an include directory: a changed header there
    (a new CUDA wheel) changes the key even where the compiler's version does not."""
    try:
        entries = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(directory) if e.is_file())
    except OSError:
        return b"(unreadable)"
    return repr(entries).encode()


def cache_key(
    backend: str,
    source: str,
    arch: str,
    compiler_version: str,
    *,
    headers: Mapping[str, str] | None = None,
    options: Iterable[str] = (),
) -> str:
    """The kernel cache key of one compile: everything that changes the binary. The
    source, the in-memory headers (hip/*.h by default) by name, the compiler's version,
    the target, every option the compiler gets (compile_options) and the listing of each
    include directory those options name."""
    opts = compile_options(backend, arch, options)
    hs = kernel_headers() if headers is None else dict(headers)
    includes = [_directory_listing(o[2:]) for o in opts if o.startswith("-I")]
    return _digest(
        backend.encode(),
        source.encode(),
        *(f"{k}\0{v}".encode() for k, v in sorted(hs.items())),
        compiler_version.encode(),
        arch.encode(),
        "\0".join(opts).encode(),
        *includes,
    )


ENTRY_MAGIC = b"opgen kernel cache entry 2\n"
_TMP = ".tmp-"  # a store's temp file: .tmp-KEY-XXXXXXXX, written and renamed under KEY's lock
_STALE_UNKEYED = 3600.0  # seconds: a temp file naming no key (written before keys were) is stale by then


def entry_blob(key: str, image: bytes) -> bytes:
    """An entry: the magic line, sha256 of its key, sha256 of its image (or payload), the image.
    The kernel cache's and the plan cache's (runtime/gpu/plan_cache.py)."""
    key_hash = hashlib.sha256(key.encode()).hexdigest().encode("ascii")
    return ENTRY_MAGIC + key_hash + b"\n" + hashlib.sha256(image).hexdigest().encode("ascii") + b"\n" + image


class KernelCache:
    """Compiled kernels on disk under `directory`/`backend`/KEY.bin (see cache_key), each
    entry naming the sha256 of its key and of its image. Damage never costs a result:

    - a truncated, corrupt, unreadable or non-file entry, a link, or one holding another
      key's kernel (a copied or renamed file) is compiled again and replaced,
    - a cache directory that cannot be written to, or a backend folder that is a symbolic
      link (never written through), means compiling in every process,
    - two processes wanting the same missing kernel take turns (a lock file per key, never
      opened through a link): one compiles, the other reads what it stored,
    - a store killed half-way leaves a temp file that the next store of the cache removes
      (the key it names is not locked: nobody is writing it).

    Each such fault gives one KernelCacheWarning (an unusable directory one per cache). An
    entry in the format before keys were kept in it is replaced without a warning."""

    def __init__(self, backend: str, directory: Path | None = None) -> None:
        self.directory = Path(CACHE_DIR if directory is None else directory) / backend
        self._warned_unwritable = False
        self._swept = False

    def get_or_compile(self, key: str, compile_: Callable[[], bytes]) -> bytes:
        if self.directory.is_symlink():
            return self._compile_unstored(compile_, f"{self.directory} is a symbolic link, not followed")
        path = self.directory / f"{key}.bin"
        image, damage = read_entry(path, key)
        if image is not None:
            return image
        with self._turn(key) as locked:
            again, _ = read_entry(path, key)  # stored by another process while this one waited
            if again is not None:
                return again
            image = compile_()
            if locked:
                self._sweep(key)
            failure = self._store(path, key, entry_blob(key, image))
        if damage:
            replaced = f" and could not replace it ({failure})" if failure else " and replaced it"
            _warn(f"kernel cache: {path} {damage}; compiled the kernel again{replaced}")
        elif failure:
            self._warn_unwritable(failure)
        return image

    def _compile_unstored(self, compile_: Callable[[], bytes], why: str) -> bytes:
        self._warn_unwritable(why)
        return compile_()

    def _warn_unwritable(self, why: str) -> None:
        if not self._warned_unwritable:
            self._warned_unwritable = True
            _warn(
                f"kernel cache: cannot write to {self.directory} ({why}); kernels are compiled "
                "in every process (set OPGEN_CACHE_DIR to a writable directory)"
            )

    @contextlib.contextmanager
    def _turn(self, key: str) -> Iterator[bool]:
        """Hold the key's lock, where the directory allows one; else go on without (False).
        The lock file is never opened through a link: one would create or lock a file
        wherever it leads."""
        lock = self.directory / f"{key}.lock"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            if os.path.islink(lock):
                _warn(f"kernel cache: {lock} is a symbolic link, not followed; compiling without the lock")
            elif exc.errno not in (errno.EACCES, errno.EROFS, errno.ENOENT, errno.ENOTDIR, errno.EEXIST):
                _warn(f"kernel cache: {lock} cannot be opened ({exc.strerror}); compiling without the lock")
            yield False
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield True
        finally:
            os.close(fd)  # releases the lock

    def _sweep(self, key: str) -> None:
        """Remove the temp files of killed stores: this key's (its lock is held here, so no
        store of it is under way), and, once per cache, every other key's whose lock is free
        and those naming no key that are an hour old."""
        first, self._swept = not self._swept, True
        for tmp in self.directory.glob(f"{_TMP}*"):
            owner = tmp.name[len(_TMP) :].rpartition("-")[0]  # KEY of .tmp-KEY-XXXXXXXX; keys hold no "-"
            if owner == key or (first and self._abandoned(tmp, owner)):
                _remove_plain(tmp)

    def _abandoned(self, tmp: Path, owner: str) -> bool:
        """Whether no store is writing `tmp`: its key's lock is free; one naming no key is old."""
        if owner:
            return _lock_is_free(self.directory / f"{owner}.lock")
        return _older_than(tmp, _STALE_UNKEYED)

    def _store(self, path: Path, key: str, blob: bytes) -> str | None:
        return store_entry(path, key, blob)


def store_entry(path: Path, key: str, blob: bytes) -> str | None:
    """Store atomically (a temp file .tmp-KEY-XXXXXXXX renamed over the entry, removed on any
    failure); None, or why the entry could not be written. The kernel cache's and the plan
    cache's (runtime/gpu/plan_cache.py)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{_TMP}{key}-")
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if not isinstance(exc, OSError):
            raise
        return exc.strerror or str(exc)
    return None


def sweep_old_temps(directory: Path, seconds: float = _STALE_UNKEYED) -> None:
    """Remove the temp files of stores killed more than `seconds` ago (a store takes
    milliseconds): for a cache without a lock per key to tell a store under way (the plan cache)."""
    for tmp in directory.glob(f"{_TMP}*"):
        if _older_than(tmp, seconds):
            _remove_plain(tmp)


def _remove_plain(path: Path) -> None:
    """Remove a file that is a plain file (a link or anything else stays)."""
    with contextlib.suppress(OSError):
        if stat.S_ISREG(os.lstat(path).st_mode):
            path.unlink()


def _older_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - os.lstat(path).st_mtime > seconds
    except OSError:
        return False


def _lock_is_free(lock: Path) -> bool:
    """Whether no process holds the key lock (taken and released at once to find out)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def read_entry(path: Path, key: str) -> tuple[bytes | None, str]:
    """(image, "") from an intact entry of `key`; (None, "") when there is none, or one in
    the format before entries named their key; else (None, what is wrong with it). Opened
    without following a link or blocking, and read only when a regular file: a FIFO or
    device put there cannot hang the process."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):  # no entry (a missing directory: _store says so)
        return None, ""
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "is a symbolic link, not followed"
        return None, f"cannot be read ({exc.strerror})"
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None, "is not a regular file"
            blob = f.read()
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"
    if not blob.startswith(ENTRY_MAGIC):
        old = blob[64:]
        if old and blob[:64] == hashlib.sha256(old).hexdigest().encode("ascii"):
            return None, ""  # intact, in the format before entries named their key: replaced quietly
        return None, f"is damaged ({len(blob)} bytes, truncated or corrupt)"
    head = len(ENTRY_MAGIC)
    key_hash, checksum, image = blob[head : head + 64], blob[head + 65 : head + 129], blob[head + 130 :]
    if key_hash != hashlib.sha256(key.encode()).hexdigest().encode("ascii"):
        if len(blob) > head + 130 and checksum == hashlib.sha256(image).hexdigest().encode("ascii"):
            return None, "holds the kernel of another key (copied or renamed there?)"
        return None, f"is damaged ({len(blob)} bytes, truncated or corrupt)"
    if not image or checksum != hashlib.sha256(image).hexdigest().encode("ascii"):
        return None, f"is damaged ({len(blob)} bytes, truncated or corrupt)"
    return image, ""


def _warn(message: str) -> None:
    warnings.warn(KernelCacheWarning(message), stacklevel=3)


# --------------------------------------------------------------------------- batch use


def compile_for(backend: str, source: str, name: str, arch: str, **kwargs) -> bytes:
    """compile_cuda for backend "cuda", compile_rocm for "rocm"."""
    if backend == "cuda":
        return compile_cuda(source, name, arch, **kwargs)
    if backend == "rocm":
        return compile_rocm(source, name, arch, **kwargs)
    raise ValueError(f"no runtime compiler for backend {backend!r}")


def compile_job(path: str, backend: str, arch: str) -> dict:
    """Compile one file, for process pools (CI compiles files in parallel, and a
    compiler crash then takes down a worker, not the whole test run). Returns plain data:
    {"seconds", "size", "symbols", "log"} on success, {"unavailable": reason} when the
    compiler or target is missing, {"error": message} on a CompileError."""
    import time

    start = time.perf_counter()
    log: list[str] = []
    try:
        image = compile_for(backend, Path(path).read_text(encoding="utf-8"), Path(path).name, arch, log=log)
    except CompilerUnavailable as e:
        return {"unavailable": e.reason}
    except CompileError as e:
        return {"error": str(e)}
    return {
        "seconds": time.perf_counter() - start,
        "size": len(image),
        "symbols": sorted(code_symbols(image)),
        "log": "\n".join(log),
    }

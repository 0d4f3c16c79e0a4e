"""The on-disk kernel cache (runtime.gpu.compile.KernelCache, cache_key).

Keys: every input that changes the binary changes the key (source, headers, compiler
version, target, compile options, include directories), and the options keyed on are the
options the compiler gets. Damage: a truncated, corrupt, unreadable or non-file entry, an
unwritable cache directory, an entry holding another key's kernel, a link where an entry, a
lock or a backend folder goes, and two processes wanting the same kernel at once each end with
the right image and exactly one KernelCacheWarning (none for the two processes: nothing is
wrong there); the temp file of a store killed half-way is swept by a later store. The NVRTC
tests compile for real (no GPU needed) and skip, saying why, where
NVRTC is missing."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from runtime.gpu import compile as gpu_compile
from runtime.gpu.compile import KernelCache, _digest, cache_key
from runtime.gpu.errors import CompileError, KernelCacheWarning

ROOT = Path(__file__).resolve().parents[2]
KERNEL = (
    '#include "compat.h"\n#ifndef SCALE\n#define SCALE 1.0f\n#endif\n'
    'extern "C" __global__ void k_scale(float* x) { x[threadIdx.x] *= SCALE; }\n'
)


def needs_nvrtc():
    missing = gpu_compile.nvrtc_unavailable()
    if missing:
        pytest.skip(f"cuda: {missing}")


def cache_warnings(fn):
    """fn()'s result and the KernelCacheWarning messages it gave (others fail the test)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    assert all(issubclass(w.category, KernelCacheWarning) for w in caught), [str(w.message) for w in caught]
    return result, [str(w.message) for w in caught]


# ----------------------------------------------------------------------------- keys


def test_entries_are_reused_and_keys_separate_inputs(tmp_path):
    cache = KernelCache("cuda", tmp_path)
    calls = []

    def compile_(image):
        def run():
            calls.append(image)
            return image

        return run

    key = _digest(b"source", b"header", b"nvrtc 12.9", b"sm_90")
    assert cache.get_or_compile(key, compile_(b"cubin-1")) == b"cubin-1"
    assert cache.get_or_compile(key, compile_(b"never")) == b"cubin-1"  # from disk
    other = _digest(b"source", b"header", b"nvrtc 12.9", b"sm_80")
    assert other != key and cache.get_or_compile(other, compile_(b"cubin-2")) == b"cubin-2"
    assert calls == [b"cubin-1", b"cubin-2"]
    assert _digest(b"ab", b"c") != _digest(b"a", b"bc")  # parts are length-delimited


def test_every_input_of_a_compile_changes_the_key(monkeypatch):
    base = dict(backend="rocm", source=KERNEL, arch="gfx90a", compiler_version="hiprtc (5, 2)")
    headers = {"compat.h": "// compat\n"}
    key = cache_key(**base, headers=headers)
    assert key == cache_key(**base, headers=dict(headers))  # deterministic
    variants = [
        cache_key(**{**base, "source": KERNEL + "\n"}, headers=headers),
        cache_key(**{**base, "arch": "gfx1030"}, headers=headers),
        cache_key(**{**base, "compiler_version": "hiprtc (6, 0)"}, headers=headers),
        cache_key(**{**base, "backend": "cuda"}, headers=headers) if not gpu_compile.nvrtc_unavailable() else None,
        cache_key(**base, headers={"compat.h": "// compat, edited\n"}),
        cache_key(**base, headers={"compat2.h": "// compat\n"}),  # a header renamed
        cache_key(**base, headers=headers, options=["-DSCALE=2.0f"]),
    ]
    monkeypatch.setattr(gpu_compile, "ROCM_OPTIONS", (*gpu_compile.ROCM_OPTIONS, "-ffast-math"))
    variants.append(cache_key(**base, headers=headers))
    variants = [v for v in variants if v is not None]
    assert len({key, *variants}) == len(variants) + 1


def test_the_cuda_include_directory_is_part_of_the_key(monkeypatch, tmp_path):
    """Its path and its files: a changed cuda_fp16.h (a new CUDA wheel) is a new key."""
    one, two = tmp_path / "one", tmp_path / "two"
    for d in (one, two):
        d.mkdir()
        (d / "cuda_fp16.h").write_text("// fp16\n")
        (d / "cuda_bf16.h").write_text("// bf16\n")
    monkeypatch.setattr(gpu_compile, "cuda_include_dir", lambda: one)
    key = lambda: cache_key("cuda", KERNEL, "sm_90", "nvrtc (12, 9)", headers={})  # noqa: E731
    first = key()
    monkeypatch.setattr(gpu_compile, "cuda_include_dir", lambda: two)
    assert key() != first
    monkeypatch.setattr(gpu_compile, "cuda_include_dir", lambda: one)
    assert key() == first
    (one / "cuda_fp16.h").write_text("// fp16, a newer release\n")
    gpu_compile._directory_listing.cache_clear()
    try:
        assert key() != first
    finally:
        gpu_compile._directory_listing.cache_clear()


def test_keyed_options_are_the_options_the_compiler_gets():
    needs_nvrtc()
    with pytest.raises(CompileError) as info:
        gpu_compile.compile_cuda("this is not C++\n", "bad.hip", "sm_90", options=["-DX=1"])
    assert list(info.value.options) == gpu_compile.compile_options("cuda", "sm_90", ["-DX=1"])
    assert f"-I{gpu_compile.cuda_include_dir()}" in info.value.options


def test_changing_an_option_recompiles_instead_of_serving_the_old_binary(monkeypatch, tmp_path):
    needs_nvrtc()
    cache = KernelCache("cuda", tmp_path)
    version = str(gpu_compile.nvrtc_version())

    def get():
        key = cache_key("cuda", KERNEL, "sm_90", version)
        compiled = []

        def compile_():
            compiled.append(1)
            return gpu_compile.compile_cuda(KERNEL, "k.hip", "sm_90")

        return cache.get_or_compile(key, compile_), bool(compiled)

    plain, compiled = get()
    assert compiled and get() == (plain, False)
    monkeypatch.setattr(gpu_compile, "CUDA_OPTIONS", (*gpu_compile.CUDA_OPTIONS, "-DSCALE=2.0f"))
    scaled, compiled = get()
    assert compiled, "a new option must not be served the binary compiled without it"
    assert scaled != plain and "k_scale" in gpu_compile.code_symbols(scaled)
    assert get() == (scaled, False)


# ----------------------------------------------------------------------------- CompileError


@pytest.mark.parametrize("backend, target", [("cuda", "sm_90"), ("rocm", "gfx90a")], ids=["cuda", "rocm"])
def test_compile_error_carries_options_and_the_numbered_lines(backend, target):
    missing = gpu_compile.nvrtc_unavailable() if backend == "cuda" else gpu_compile.rocm_target_unavailable(target)
    if missing:
        pytest.skip(f"{backend}: {missing}")
    lines = [
        '#include "compat.h"',
        "// two",
        "// three",
        "// four",
        'extern "C" __global__ void broken(float* x) {',
        "  x[0] = no_such_name;",
        "}",
        "// eight",
        "// nine",
        "// ten",
    ]
    with pytest.raises(CompileError) as info:
        gpu_compile.compile_for(backend, "\n".join(lines) + "\n", "broken.hip", target, options=["-DFOO=1"])
    err = info.value
    assert err.options == tuple(gpu_compile.compile_options(backend, target, ["-DFOO=1"]))
    want = ["broken.hip:"] + [f"{'>' if n == 6 else ' '} {n:>1} | {lines[n - 1]}" for n in range(3, 10)]
    assert err.excerpt.splitlines() == want
    text = str(err)
    assert text.startswith(f"{backend}: broken.hip does not compile for {target}:\n")
    assert f"options: {' '.join(err.options)}" in text and err.excerpt in text and "no_such_name" in err.log


def test_an_error_in_a_header_shows_the_header():
    needs_nvrtc()
    headers = {"mine.h": "// mine\n#pragma once\ninline int f() { return oops; }\n"}
    with pytest.raises(CompileError) as info:
        gpu_compile.compile_cuda(
            '#include "mine.h"\nextern "C" __global__ void k(int* x) { x[0] = f(); }\n',
            "k.hip",
            "sm_90",
            headers=headers,
        )
    assert info.value.excerpt.splitlines()[0] == "mine.h:"
    assert "> 3 | inline int f() { return oops; }" in info.value.excerpt


def test_source_excerpt_of_a_log_naming_no_line_is_empty():
    assert gpu_compile.source_excerpt("internal compiler error\n", "k.hip", "x\n", {}) == ""
    assert gpu_compile.source_excerpt("k.hip(99): error: past the end\n", "k.hip", "x\n", {}) == ""


# ----------------------------------------------------------------------------- damage


def _stored(tmp_path, backend="rocm"):
    cache = KernelCache(backend, tmp_path)
    key = _digest(b"k")
    assert cache_warnings(lambda: cache.get_or_compile(key, lambda: b"good image"))[1] == []
    return cache, key, tmp_path / backend / f"{key}.bin"


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[:-3], id="truncated"),
        pytest.param(lambda b: b[:40], id="truncated-in-checksum"),
        pytest.param(lambda b: b"", id="empty"),
        pytest.param(lambda b: b[:64] + b"evil image", id="wrong-image"),
        pytest.param(lambda b: b"\xff" * 80, id="garbage"),
        pytest.param(lambda b: b[:64], id="checksum-only"),
    ],
)
def test_a_damaged_entry_is_compiled_again_with_one_warning(tmp_path, damage):
    cache, key, path = _stored(tmp_path)
    path.write_bytes(damage(path.read_bytes()))
    rebuilt = []
    image, said = cache_warnings(lambda: cache.get_or_compile(key, lambda: rebuilt.append(1) or b"good image"))
    assert image == b"good image" and rebuilt == [1], "a damaged entry must be recompiled, never loaded"
    assert len(said) == 1 and f"{path} is damaged" in said[0] and "compiled the kernel again and replaced it" in said[0]
    assert cache_warnings(lambda: cache.get_or_compile(key, lambda: b"not again")) == (b"good image", [])


def test_an_entry_that_is_a_fifo_does_not_hang(tmp_path):
    cache, key, path = _stored(tmp_path)
    path.unlink()
    os.mkfifo(path)
    image, said = cache_warnings(lambda: cache.get_or_compile(key, lambda: b"good image"))
    assert image == b"good image" and len(said) == 1 and "is not a regular file" in said[0]
    assert path.is_file() and cache.get_or_compile(key, lambda: b"not again") == b"good image"


def test_an_entry_that_is_a_directory_is_compiled_around(tmp_path):
    cache, key, path = _stored(tmp_path)
    path.unlink()
    path.mkdir()
    (path / "x").write_text("keeps the directory from being replaced")
    image, said = cache_warnings(lambda: cache.get_or_compile(key, lambda: b"good image"))
    assert image == b"good image" and len(said) == 1
    assert "cannot be read" in said[0] or "is not a regular file" in said[0]
    assert "could not replace it" in said[0]


def test_an_unreadable_entry_is_compiled_again(tmp_path, monkeypatch):
    """Simulated: an entry another user wrote with mode 0600 (the tests may run as root,
    who reads it anyway; test_unreadable_entry_for_real checks the real thing otherwise)."""
    cache, key, path = _stored(tmp_path)
    real_open = os.open

    def open_(file, flags, *args):
        if str(file) == str(path) and not flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, flags, *args)

    monkeypatch.setattr(gpu_compile.os, "open", open_)
    image, said = cache_warnings(lambda: cache.get_or_compile(key, lambda: b"fresh image"))
    assert image == b"fresh image"
    assert len(said) == 1 and "cannot be read (Permission denied)" in said[0] and "replaced it" in said[0]


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="runs as root, who can read any file (test_an_unreadable_entry_is_compiled_again simulates it)",
)
def test_unreadable_entry_for_real(tmp_path):
    cache, key, path = _stored(tmp_path)
    path.chmod(0)
    image, said = cache_warnings(lambda: cache.get_or_compile(key, lambda: b"fresh image"))
    assert image == b"fresh image" and len(said) == 1 and "cannot be read (Permission denied)" in said[0]


def test_an_unwritable_cache_directory_warns_once_and_compiles(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    cache = KernelCache("cuda", blocked)
    results, said = cache_warnings(
        lambda: [cache.get_or_compile(_digest(k), lambda k=k: k) for k in (b"a", b"b", b"a")]
    )
    assert results == [b"a", b"b", b"a"]
    assert len(said) == 1 and f"cannot write to {blocked / 'cuda'}" in said[0] and "OPGEN_CACHE_DIR" in said[0]
    assert blocked.read_text() == "not a directory"


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="runs as root, whom directory permissions do not stop "
    "(test_an_unwritable_cache_directory_warns_once_and_compiles "
    "uses a file in the directory's place)",
)
def test_a_read_only_cache_directory(tmp_path):
    (tmp_path / "cuda").mkdir()
    (tmp_path / "cuda").chmod(0o555)
    cache = KernelCache("cuda", tmp_path)
    try:
        image, said = cache_warnings(lambda: cache.get_or_compile(_digest(b"k"), lambda: b"image"))
    finally:
        (tmp_path / "cuda").chmod(0o755)
    assert image == b"image" and len(said) == 1 and "cannot write to" in said[0]


# ----------------------------------------------------------------------------- two processes

RACER = """
import hashlib, os, sys, time, warnings
from pathlib import Path
warnings.simplefilter("error")  # any cache warning fails this process
from runtime.gpu.compile import KernelCache, cache_key, compile_cuda, nvrtc_version
cache_dir, log, gate, mode = sys.argv[1:5]
Path(gate + "." + str(os.getpid())).touch()
while not os.path.exists(gate):
    time.sleep(0.005)
def compile_():
    with open(log, "a") as f:
        f.write(f"{os.getpid()}\\n")
    if mode == "fake":
        time.sleep(0.5)  # long enough for the other process to want the same kernel meanwhile
        return b"image of " + b"k" * 100
    return compile_cuda(SOURCE, "k.hip", "sm_90")
SOURCE = 'extern "C" __global__ void k_one(float* x) { x[0] = 1.0f; }'
key = cache_key("rocm", SOURCE, "gfx90a", "v", headers={}) if mode == "fake" else \\
    cache_key("cuda", SOURCE, "sm_90", str(nvrtc_version()), headers={})
image = KernelCache("rocm" if mode == "fake" else "cuda", Path(cache_dir)).get_or_compile(key, compile_)
print(hashlib.sha256(image).hexdigest())
"""


@pytest.mark.parametrize("mode", ["fake", "nvrtc"])
def test_two_processes_wanting_one_kernel_compile_it_once(tmp_path, mode):
    if mode == "nvrtc":
        needs_nvrtc()
    log, gate = tmp_path / "compiles.log", tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(tmp_path / "cache"), str(log), str(gate), mode],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    while len(list(tmp_path.glob("go.*"))) < 2:  # both started and waiting at the gate
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
    gate.touch()
    outs = [p.communicate(timeout=300) for p in procs]  # a guard against a hang
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    digests = {out.strip() for out, _ in outs}
    assert len(digests) == 1, "both processes must get the same image"
    assert len(log.read_text().split()) == 1, "the second process waits for the first and reads its entry"
    entries = list((tmp_path / "cache").glob("*/*.bin"))
    assert len(entries) == 1 and gpu_compile.read_entry(entries[0], entries[0].stem)[1] == ""


# ------------------------------------------------------------------------ other keys' entries, links, killed stores


def test_an_entry_copied_from_another_key_is_not_served(tmp_path):
    """Each entry names its key: KEY2.bin holding KEY1's kernel (copied, renamed) is
    compiled again for KEY2, with one warning, and replaced."""
    cache = KernelCache("cuda", tmp_path)
    one, two = _digest(b"one"), _digest(b"two")
    assert cache.get_or_compile(one, lambda: b"image one") == b"image one"
    assert cache.get_or_compile(two, lambda: b"image two") == b"image two"
    (tmp_path / "cuda" / f"{two}.bin").write_bytes((tmp_path / "cuda" / f"{one}.bin").read_bytes())
    image, said = cache_warnings(lambda: KernelCache("cuda", tmp_path).get_or_compile(two, lambda: b"image two"))
    assert image == b"image two"
    assert len(said) == 1 and "holds the kernel of another key" in said[0] and "replaced it" in said[0]
    assert KernelCache("cuda", tmp_path).get_or_compile(two, lambda: b"not again") == b"image two"
    assert KernelCache("cuda", tmp_path).get_or_compile(one, lambda: b"not again") == b"image one"


def test_an_entry_of_the_format_before_keys_is_replaced_quietly(tmp_path):
    import hashlib

    key = _digest(b"k")
    (tmp_path / "cuda").mkdir()
    (tmp_path / "cuda" / f"{key}.bin").write_bytes(hashlib.sha256(b"old").hexdigest().encode() + b"old")
    assert cache_warnings(lambda: KernelCache("cuda", tmp_path).get_or_compile(key, lambda: b"new")) == (b"new", [])
    assert KernelCache("cuda", tmp_path).get_or_compile(key, lambda: b"not again") == b"new"


def test_links_in_the_cache_are_never_followed(tmp_path):
    """A KEY.lock or KEY.bin that is a link, or a backend folder that is one: nothing is
    created, read or written where they lead; the kernel is compiled, with one warning each."""
    outside = tmp_path / "outside"
    outside.mkdir()
    cache_dir = tmp_path / "cache"
    (cache_dir / "cuda").mkdir(parents=True)
    key = _digest(b"k")
    (cache_dir / "cuda" / f"{key}.lock").symlink_to(outside / "created.lock")
    image, said = cache_warnings(lambda: KernelCache("cuda", cache_dir).get_or_compile(key, lambda: b"image"))
    assert image == b"image" and len(said) == 1 and "is a symbolic link, not followed" in said[0], said
    assert list(outside.iterdir()) == []

    other = _digest(b"other")
    planted = outside / "entry.bin"
    planted.write_bytes(gpu_compile.entry_blob(other, b"planted image"))
    (cache_dir / "cuda" / f"{other}.bin").symlink_to(planted)
    image, said = cache_warnings(lambda: KernelCache("cuda", cache_dir).get_or_compile(other, lambda: b"compiled"))
    assert image == b"compiled" and len(said) == 1 and "is a symbolic link, not followed" in said[0], said
    assert planted.read_bytes() == gpu_compile.entry_blob(other, b"planted image")
    assert not (cache_dir / "cuda" / f"{other}.bin").is_symlink()  # the link itself was replaced

    (outside / "rocm").mkdir()
    (cache_dir / "rocm").symlink_to(outside / "rocm", target_is_directory=True)
    cache = KernelCache("rocm", cache_dir)
    results, said = cache_warnings(lambda: [cache.get_or_compile(_digest(k), lambda k=k: k) for k in (b"a", b"b")])
    assert results == [b"a", b"b"] and len(said) == 1 and "is a symbolic link, not followed" in said[0], said
    assert list((outside / "rocm").iterdir()) == []


KILLED_STORE = """
import os, signal, sys
from pathlib import Path
from runtime.gpu import compile as gpu_compile
def replace(src, dst):  # killed after its temp file is written, before the rename
    os.kill(os.getpid(), signal.SIGKILL)
gpu_compile.os.replace = replace
gpu_compile.KernelCache("cuda", Path(sys.argv[1])).get_or_compile(sys.argv[2], lambda: b"x" * 6_000_000)
"""


def _killed_store(cache_dir: Path, key: str) -> Path:
    proc = subprocess.run([sys.executable, "-c", KILLED_STORE, str(cache_dir), key], cwd=ROOT, capture_output=True)
    assert proc.returncode == -9, proc.stderr
    [tmp] = (cache_dir / "cuda").glob(".tmp-*")
    assert tmp.stat().st_size == 6_000_000 + len(gpu_compile.entry_blob(key, b""))
    return tmp


def test_the_temp_file_of_a_killed_store_is_swept(tmp_path):
    """By the next store of its key, and by the first store of any other key in another
    process (its lock is free: no store of it is under way)."""
    key = _digest(b"big")
    _killed_store(tmp_path, key)
    assert KernelCache("cuda", tmp_path).get_or_compile(key, lambda: b"small") == b"small"
    assert list((tmp_path / "cuda").glob(".tmp-*")) == []
    _killed_store(tmp_path, _digest(b"big, again"))
    assert KernelCache("cuda", tmp_path).get_or_compile(_digest(b"another"), lambda: b"another") == b"another"
    assert list((tmp_path / "cuda").glob(".tmp-*")) == []


def test_the_temp_file_of_a_store_under_way_is_kept(tmp_path):
    """A temp file whose key's lock another process holds is being written: the sweep
    leaves it (and a link named like a temp file, whatever its age)."""
    busy = _digest(b"busy")
    (tmp_path / "cuda").mkdir()
    writing = tmp_path / "cuda" / f".tmp-{busy}-abcd1234"
    writing.write_bytes(b"half an entry")
    fd = os.open(tmp_path / "cuda" / f"{busy}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    link = tmp_path / "cuda" / ".tmp-oldlink"
    link.symlink_to(tmp_path / "elsewhere")
    os.utime(link, (0, 0), follow_symlinks=False)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time; fcntl.flock(0, fcntl.LOCK_EX); print(1, flush=True); time.sleep(60)",
        ],
        stdin=fd,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"1"  # it holds the lock
        assert KernelCache("cuda", tmp_path).get_or_compile(_digest(b"other"), lambda: b"x") == b"x"
        assert writing.read_bytes() == b"half an entry" and link.is_symlink()
    finally:
        holder.kill()
        holder.wait()
        os.close(fd)


def test_a_compile_error_crosses_processes_whole():
    """A compile in a worker process (bench/ggml.py's parallel warm-up) reports its CompileError
    with the file, backend, target, log, options and excerpt it had."""
    import pickle

    from runtime.gpu.errors import CompileError

    error = CompileError("qmatvec_q8.hip", "cuda", "sm_90", "error: x", options=("-DA=1",), excerpt="12 | int x")
    back = pickle.loads(pickle.dumps(error))
    assert isinstance(back, CompileError) and str(back) == str(error)
    assert (back.file, back.backend, back.target, back.log) == ("qmatvec_q8.hip", "cuda", "sm_90", "error: x")
    assert (back.options, back.excerpt) == (("-DA=1",), "12 | int x")

"""The on-disk kernel cache: keyed on everything that changes the binary, and a corrupt or
truncated entry is rebuilt, never loaded."""

from __future__ import annotations

from runtime.gpu import KernelCache, _digest


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


def test_a_corrupt_or_truncated_entry_is_rebuilt(tmp_path):
    cache = KernelCache("rocm", tmp_path)
    key = _digest(b"k")
    cache.get_or_compile(key, lambda: b"good image")
    path = tmp_path / "rocm" / f"{key}.bin"
    for damage in (lambda b: b[:-3], lambda b: b[:64] + b"evil image", lambda b: b"", lambda b: b"\xff" * 80):
        path.write_bytes(damage(path.read_bytes()))
        rebuilt = []
        assert cache.get_or_compile(key, lambda: rebuilt.append(1) or b"good image") == b"good image"
        assert rebuilt == [1], "a damaged entry must be recompiled"
        assert cache.get_or_compile(key, lambda: b"not again") == b"good image"  # and stored anew


def test_an_unwritable_cache_only_costs_a_compile(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    cache = KernelCache("cuda", blocked)
    assert cache.get_or_compile(_digest(b"k"), lambda: b"image") == b"image"

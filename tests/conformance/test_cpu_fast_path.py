"""The cpu whole-buffer fast path of Storage.unary / binary (generator/dispatch.py), one `if`
in front of the method's `match`.

Whole contiguous buffers of one dtype go the fast way (the runtime function is not called);
strided, offset, narrowed and broadcast layouts, buffers larger than their layout, mismatched
dtypes and shapes, dtypes without a whole-buffer kernel and storages of other backends go the
general way (the `match`). Both give numpy's bits, and every error is the general path's own."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import generated.storage
import runtime.cpu
from generated import (
    Backend,
    BinaryOp,
    DeviceMismatch,
    DTypeMismatch,
    Layout,
    ShapeMismatch,
    Storage,
    UnaryOp,
    kernels_numpy,
)

from .refs import CPU, NP

FLOATS = ["f32", "f64", "f16", "bf16"]


@pytest.fixture
def calls(monkeypatch):
    """Counts of the runtime's unary / binary calls: 0 where the fast path ran."""
    counts = {"unary": 0, "binary": 0}
    for name in counts:
        real = getattr(runtime.cpu, name)

        def spy(*args, _real=real, _name=name):
            counts[_name] += 1
            return _real(*args)

        monkeypatch.setattr(runtime.cpu, name, spy)
    return counts


def _values(name: str, n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, n).astype(NP[name])


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("name", FLOATS)
def test_unary_whole_buffer_is_fast_and_numpy_exact(name, calls):
    x = _values(name, 16)
    s = CPU.storage_from_slice(x)
    for shape in [(16,), (4, 4), (2, 2, 4)]:
        out = s.unary(UnaryOp.EXP, Layout.contiguous(shape))
        assert type(out) is Storage and out.backend is CPU.backend
        want = kernels_numpy.UNARY[UnaryOp.EXP].by_dtype[NP[name]](x)
        if name == "f32":
            want = np.exp(x)
        assert out.inner.dtype == NP[name] and out.inner.shape == (16,)
        assert np.array_equal(_bits(out.inner), _bits(want))
        assert out.inner is not s.inner and not np.shares_memory(out.inner, s.inner)
    assert calls["unary"] == 0
    assert np.array_equal(_bits(s.inner), _bits(x)), "input modified"


@pytest.mark.parametrize("name", FLOATS)
def test_binary_whole_buffers_are_fast_and_numpy_exact(name, calls):
    x, y = _values(name, 12, 1), _values(name, 12, 2)
    a, b = CPU.storage_from_slice(x), CPU.storage_from_slice(y)
    for shape in [(12,), (3, 4)]:
        lay = Layout.contiguous(shape)
        out = a.binary(BinaryOp.ADD, b, lay, Layout.contiguous(shape))
        want = kernels_numpy.BINARY[BinaryOp.ADD].by_dtype[NP[name]](x, y)
        if name == "f32":
            want = np.add(x, y)
        assert type(out) is Storage and np.array_equal(_bits(out.inner), _bits(want))
        same = a.binary(BinaryOp.MUL, a, lay, lay)  # one storage on both sides
        assert same.inner is not a.inner
        assert np.array_equal(_bits(same.inner), _bits(kernels_numpy.BINARY[BinaryOp.MUL].by_dtype[NP[name]](x, x)))
    assert calls["binary"] == 0


def _general_layouts(n: int):
    """(layout, numpy view of a flat buffer of n elements) pairs the fast path must leave alone."""
    yield Layout.contiguous((3, 4), start_offset=2), lambda f: f[2:14].reshape(3, 4)
    yield Layout.contiguous((3, 4)).transpose(0, 1), lambda f: f[:12].reshape(3, 4).T
    yield Layout.contiguous((3, 5)).narrow(1, 1, 4), lambda f: f[:15].reshape(3, 5)[:, 1:5]
    yield Layout.contiguous((1, 4)).broadcast_as((3, 4)), lambda f: np.broadcast_to(f[:4].reshape(1, 4), (3, 4))
    yield Layout.contiguous((2, 4)), lambda f: f[:8].reshape(2, 4)  # a buffer larger than its layout


def test_unary_other_layouts_go_the_general_way(calls):
    x = _values("f32", 16)
    s = CPU.storage_from_slice(x)
    for n, (layout, view) in enumerate(_general_layouts(16), start=1):
        out = s.unary(UnaryOp.EXP, layout)
        assert calls["unary"] == n, layout
        assert np.array_equal(_bits(out.inner), _bits(np.exp(view(x)).reshape(-1)))


def test_binary_other_layouts_go_the_general_way(calls):
    x, y = _values("f32", 16, 1), _values("f32", 16, 2)
    a, b = CPU.storage_from_slice(x), CPU.storage_from_slice(y)
    n = 0
    for layout, view in _general_layouts(16):
        shape = layout.shape
        dense = Layout.contiguous(shape)
        count = int(np.prod(shape))

        def dense_view(f, count=count, shape=shape):
            return f[:count].reshape(shape)

        for lhs, rhs, want in [
            (layout, dense, np.add(view(x), dense_view(y))),
            (dense, layout, np.add(dense_view(x), view(y))),
        ]:
            out = a.binary(BinaryOp.ADD, b, lhs, rhs)
            n += 1
            assert calls["binary"] == n, (lhs, rhs)
            assert np.array_equal(_bits(out.inner), _bits(want.reshape(-1)))


def test_errors_are_the_general_paths():
    x = _values("f32", 16)
    s32, s64 = CPU.storage_from_slice(x), CPU.storage_from_slice(x.astype(np.float64))
    lay = Layout.contiguous((16,))
    with pytest.raises(DTypeMismatch) as e:
        s32.binary(BinaryOp.ADD, s64, lay, lay)
    assert (e.value.op, e.value.backend) == ("binary", "cpu")
    with pytest.raises(ShapeMismatch) as e:  # same element count, other shape: not fast either
        s32.binary(BinaryOp.ADD, s32, lay, Layout.contiguous((4, 4)))
    assert (e.value.op, e.value.backend) == ("binary", "cpu")
    ints = CPU.storage_from_slice(np.arange(16, dtype=np.int64))
    with pytest.raises(DTypeMismatch) as e:  # exp has no integer kernel
        ints.unary(UnaryOp.EXP, lay)
    assert e.value.backend == "cpu"


def test_a_kernel_returning_its_input_still_gives_a_new_buffer(monkeypatch):
    """The fast path only returns a fresh result; the general path copies one that is an input."""
    identity = {np.dtype(np.float32): lambda a: a}
    kernel = kernels_numpy.UNARY[UnaryOp.NEG]
    monkeypatch.setitem(kernels_numpy.UNARY_WHOLE, UnaryOp.NEG, identity)
    monkeypatch.setitem(kernels_numpy.UNARY, UnaryOp.NEG, kernel._replace(by_dtype=identity))
    x = _values("f32", 8)
    s = CPU.storage_from_slice(x)
    out = s.unary(UnaryOp.NEG, Layout.contiguous((8,)))
    assert out.inner is not s.inner and np.array_equal(out.inner, x)


@pytest.mark.parametrize("kind", ["unary", "binary"])
def test_a_dtype_without_a_whole_buffer_kernel_goes_the_general_way(kind, calls, monkeypatch):
    """The fast path's kernel lookup misses (its KeyError is caught): the runtime runs the op."""
    table = kernels_numpy.UNARY_WHOLE if kind == "unary" else kernels_numpy.BINARY_WHOLE
    op = UnaryOp.EXP if kind == "unary" else BinaryOp.ADD
    monkeypatch.setitem(table, op, {})
    x, y = _values("f32", 16, 1), _values("f32", 16, 2)
    a, b = CPU.storage_from_slice(x), CPU.storage_from_slice(y)
    lay = Layout.contiguous((16,))
    out = a.unary(op, lay) if kind == "unary" else a.binary(op, b, lay, lay)
    want = np.exp(x) if kind == "unary" else np.add(x, y)
    assert calls[kind] == 1 and type(out) is Storage and out.backend is Backend.CPU
    assert np.array_equal(_bits(out.inner), _bits(want))


def test_other_backends_run_their_own_arm(monkeypatch):
    """A storage of another backend never takes the cpu fast path, even holding a numpy buffer
    (here a stand-in cuda runtime that records its calls), and a cpu storage with a foreign
    operand raises the general path's DeviceMismatch, whichever side is foreign."""
    ran = []

    def unary(inner, kernel, layout):
        ran.append("unary")
        return inner

    def binary(inner, kernel, rhs, lhs_layout, rhs_layout):
        ran.append("binary")
        return inner

    fake = SimpleNamespace(unary=unary, binary=binary, dtype=lambda inner: inner.dtype)
    monkeypatch.setattr(generated.storage, "_rt_cuda", fake)
    monkeypatch.setattr(
        generated.storage, "_kernels_hip", SimpleNamespace(UNARY={UnaryOp.EXP: 0}, BINARY={BinaryOp.ADD: 0})
    )
    x = _values("f32", 16)
    lay = Layout.contiguous((16,))
    gpu, cpu = Storage(Backend.CUDA, x), CPU.storage_from_slice(x)
    out = gpu.unary(UnaryOp.EXP, lay)
    assert ran == ["unary"] and out.backend is Backend.CUDA and out.inner is x
    out = gpu.binary(BinaryOp.ADD, Storage(Backend.CUDA, x), lay, lay)
    assert ran == ["unary", "binary"] and out.backend is Backend.CUDA and out.inner is x
    for lhs, rhs, where in [(cpu, gpu, "cpu"), (gpu, cpu, "cuda")]:
        with pytest.raises(DeviceMismatch) as e:
            lhs.binary(BinaryOp.ADD, rhs, lay, lay)
        assert (e.value.op, e.value.backend) == ("binary", where)
    assert ran == ["unary", "binary"]

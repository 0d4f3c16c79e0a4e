"""CPU Device methods and host conversions."""

from __future__ import annotations

import numpy as np
import pytest

from generated import DType, DTypeMismatch, Layout
from generated.conversions import to_device, to_numpy, to_scalar, to_vec1, to_vec2, to_vec3

from . import refs
from .conftest import ALL_DTYPES, FLOAT_DTYPES
from .refs import CPU, NP, as_py

SHAPES = [(2, 3), (), (0, 4), (5,)]
SHAPE_IDS = ["2x3", "scalar", "empty", "5"]


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("method,fill", [("zeros", 0), ("ones", 1)])
def test_zeros_ones(method, fill, name, shape):
    s = getattr(CPU, method)(shape, DType(name))
    assert s.dtype() is DType(name) and s.device() == CPU
    got = to_numpy(s, Layout.contiguous(shape))
    assert got.shape == shape and got.dtype == NP[name]
    assert as_py(got) == [fill] * int(np.prod(shape))


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_alloc_uninit(name):
    s = CPU.alloc_uninit((3, 5), DType(name))
    assert s.dtype() is DType(name)
    assert to_numpy(s, Layout.contiguous((3, 5))).shape == (3, 5)
    s.const_set(2, Layout.contiguous((3, 5)))  # writable, of the right size
    assert as_py(to_numpy(s, Layout.contiguous((15,)))) == [2] * 15


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_storage_from_slice_copies(name):
    host = np.arange(12).reshape(3, 4).T.astype(NP[name])  # non-contiguous source
    s = CPU.storage_from_slice(host)
    assert s.dtype() is DType(name)
    expect = as_py(np.ascontiguousarray(host))
    assert as_py(to_numpy(s, Layout.contiguous((4, 3)))) == expect
    host[...] = 0  # the storage owns a copy
    assert as_py(to_numpy(s, Layout.contiguous((12,)))) == expect


@pytest.mark.parametrize("bad", [np.bool_, np.int32, np.float128 if hasattr(np, "float128") else np.complex64])
def test_storage_from_slice_rejects_other_dtypes(bad):
    with pytest.raises(DTypeMismatch) as e:
        CPU.storage_from_slice(np.zeros(3, bad))
    assert e.value.op == "storage_from_slice"


def test_to_numpy_is_a_copy():
    s = CPU.storage_from_slice(np.arange(6, dtype=np.float32))
    a = to_numpy(s, Layout.contiguous((2, 3)))
    a[...] = -1
    assert as_py(to_numpy(s, Layout.contiguous((6,)))) == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("name", FLOAT_DTYPES)
def test_rand_uniform(name):
    CPU.set_seed(1234)
    s = CPU.rand_uniform((40, 50), DType(name), -2.0, 3.0)
    assert s.dtype() is DType(name)
    v = to_numpy(s, Layout.contiguous((2000,))).astype(np.float64)
    assert v.min() >= -2.0 and v.max() <= 3.0
    assert abs(v.mean() - 0.5) < 0.15 and abs(v.std() - 5 / 12**0.5) < 0.1
    assert len(np.unique(v)) > 50


@pytest.mark.parametrize("name", FLOAT_DTYPES)
def test_rand_normal(name):
    CPU.set_seed(99)
    s = CPU.rand_normal((2000,), DType(name), 1.5, 0.5)
    assert s.dtype() is DType(name)
    v = to_numpy(s, Layout.contiguous((2000,))).astype(np.float64)
    assert abs(v.mean() - 1.5) < 0.05 and abs(v.std() - 0.5) < 0.05


@pytest.mark.parametrize("method,args", [("rand_uniform", (0.0, 1.0)), ("rand_normal", (0.0, 1.0))])
def test_set_seed_reproducible(method, args):
    draws = []
    for seed in (7, 7, 8):
        CPU.set_seed(seed)
        s = getattr(CPU, method)((64,), DType.F32, *args)
        draws.append(to_numpy(s, Layout.contiguous((64,))))
    assert np.array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])


@pytest.mark.parametrize("name", [d for d in ALL_DTYPES if d not in FLOAT_DTYPES])
@pytest.mark.parametrize("method,args", [("rand_uniform", (0.0, 1.0)), ("rand_normal", (0.0, 1.0))])
def test_rand_rejects_integer_dtypes(method, args, name):
    with pytest.raises(DTypeMismatch) as e:
        getattr(CPU, method)((4,), DType(name), *args)
    assert e.value.op == method


def test_device_queries():
    assert CPU.synchronize() is None
    assert CPU.location() == "cpu"
    assert CPU.supports_bf16() is True
    assert CPU.is_cpu() and str(CPU) == "cpu"


@pytest.mark.parametrize("kind", ["contig", "narrowed", "transposed", "broadcast"])
@pytest.mark.parametrize("name", ALL_DTYPES)
def test_to_device_cpu_to_cpu(name, kind, rng):
    s, _, layout, vals = refs.operand(name, kind, (3, 4), rng)
    c = to_device(s, layout, CPU)
    assert c.dtype() is DType(name) and c.device() == CPU
    assert not np.shares_memory(c.inner, s.inner)
    assert as_py(refs.result(c, (3, 4))) == as_py(vals)


def test_to_scalar_and_vecs():
    host = np.arange(24, dtype=np.float32)
    s = CPU.storage_from_slice(host)
    assert float(to_scalar(s, Layout.contiguous((), start_offset=5))) == 5.0
    assert as_py(to_vec1(s, Layout((4,), (3,), 1))) == [1, 4, 7, 10]
    assert as_py(to_vec2(s, Layout.contiguous((4, 6)).transpose(0, 1))) == as_py(host.reshape(4, 6).T)
    assert to_vec3(s, Layout.contiguous((2, 3, 4))).shape == (2, 3, 4)

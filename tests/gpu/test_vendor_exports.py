"""The runtime functions of runtime/gpu/exports.py, bound once per vendor module: no GPU needed."""

from __future__ import annotations

import functools
import importlib
import sys

import pytest

import runtime.cuda
import runtime.rocm
from runtime.gpu.runtime import GpuRuntime, export


def _bound(namespace: dict, rt: GpuRuntime) -> dict[str, object]:
    """The names bound to `rt`: its methods (static ones too), partials over it."""
    return {
        n: v
        for n, v in namespace.items()
        if not n.startswith("_")
        and (
            getattr(v, "__self__", None) is rt
            or isinstance(v, functools.partial)
            and v.args[:1] == (rt,)
            or callable(v)
            and getattr(type(rt), n, None) is v
        )
    }


class _Driver:
    name = "fake"


def test_each_vendor_binds_the_same_functions_to_its_own_runtime():
    cuda, rocm = _bound(vars(runtime.cuda), runtime.cuda._rt), _bound(vars(runtime.rocm), runtime.rocm._rt)
    assert isinstance(runtime.cuda._rt, GpuRuntime) and runtime.cuda._rt is not runtime.rocm._rt
    assert runtime.cuda._rt.name == "cuda" and runtime.rocm._rt.name == "rocm"
    assert set(cuda) - set(rocm) == {"cuda_array_interface", "from_cuda_array_interface"}  # CUDA's alone
    assert set(rocm) <= set(cuda) and {"affine", "reduce_op", "sigmoid", "q_matmul", "to_dlpack"} <= set(rocm)


def test_every_public_name_of_the_exports_is_bound_to_the_runtime_exported():
    rt = GpuRuntime(_Driver())
    export(rt)
    exports = importlib.import_module("runtime.gpu.exports")
    public = {n for n in vars(exports) if not n.startswith("_")}
    assert public == set(_bound(vars(exports), rt)) and "affine" in public
    assert public == set(_bound(vars(runtime.rocm), runtime.rocm._rt))


def test_importing_the_exports_outside_a_vendor_module_says_how():
    sys.modules.pop("runtime.gpu.exports", None)
    with pytest.raises(ImportError, match=r"after export\(runtime\)"):
        importlib.import_module("runtime.gpu.exports")

"""Registries the validator accepts must generate packages that work. Each test here is a
small registry at an edge the fixture does not reach: an optional section left out, text
that needs quoting in Python, names that meet in the generated code. (Registries that
should be *rejected* instead live in tests/fixtures/broken/.)"""

from __future__ import annotations

import importlib
import itertools
import re

import numpy as np
import pytest
from gen_harness import model_of_text, render_text, undefined_globals, unused_imports, write_package

from generator.registry.diagnostics import RegistryError
from runtime.layout import Layout

HEAD = """version: 1
dtypes:
  u8:  {numpy: uint8, kind: uint}
  f32: {numpy: float32, kind: float}
backends:
  cpu: {runtime: mini_rt.cpu, kernels: numpy}
"""
TRAIT = "custom_ops:\n  C1: {inputs: 1, inplace: false}\n"
FROM_SLICE = "device:\n  storage_from_slice: {params: {array: Array}, returns: Storage}\n"
L3 = Layout.contiguous((3,))
_n = itertools.count()


@pytest.fixture
def build(tmp_path, importer):
    """registry text -> the imported package (fails the test on a RegistryError or RenderError)."""

    def build(text):
        rendered = render_text(text, "edge.yaml")
        for name, source in rendered.items():
            if name.endswith(".py"):
                assert not undefined_globals(source, name), f"{name} reads undefined names"
                assert not unused_imports(source), f"{name} imports names it never uses"
        return importer(write_package(rendered, tmp_path / f"edgepkg{next(_n)}"))

    return build


def test_custom_ops_section_is_optional(build):
    """`custom_ops` is not a required key, but without it __init__.py and storage.py render
    `from .custom_ops import` with nothing after it."""
    m = build(HEAD + FROM_SLICE)
    s = m.Device(m.Backend.CPU).storage_from_slice(np.arange(3, dtype=np.float32))
    assert m.to_numpy(s, L3).tolist() == [0, 1, 2]


def test_every_optional_section_can_be_left_out(build):
    m = build(HEAD + TRAIT)
    assert list(m.UnaryOp) == [] and list(m.ReduceOp) == []
    # no op uses the kernel tables, so no generated module imports them: import them here
    assert importlib.import_module(f"{m.__name__}.kernels_numpy").UNARY == {}


@pytest.mark.parametrize("doc", ['the "fast" path', 'ends with a quote"', "C:\\xdir", 'three """ quotes', "tab\\t"])
def test_op_docs_are_quoted(build, doc):
    yaml_doc = "'" + doc.replace("'", "''") + "'"
    m = build(
        HEAD + TRAIT + f"storage:\n  dtype: {{params: {{}}, returns: DType, doc: {yaml_doc}}}\n"
        f"device:\n  location: {{params: {{}}, returns: str, doc: {yaml_doc}}}\n"
    )
    assert m.Storage.dtype.__doc__ == doc
    assert m.Device.location.__doc__ == doc


def test_backend_doc_is_quoted(build):
    m = build(HEAD.replace("kernels: numpy}", "kernels: numpy, doc: 'it''s \"quoted\" \\\\ here'}") + TRAIT)
    assert m.Backend.CPU.doc == 'it\'s "quoted" \\\\ here'


def test_dtype_hip_name_is_quoted(build):
    m = build(HEAD.replace("kind: float}", "kind: float, hip: 'float /* \"f\" */'}") + TRAIT)
    assert m.DType.F32.hip == 'float /* "f" */'


def test_device_method_with_an_op_enum_parameter(build):
    """Device arms pass op enums as kernel tables, as Storage arms do, but device.py does not
    import the kernel module: the arm raises NameError instead of calling the runtime."""
    try:
        m = build(
            HEAD + TRAIT + 'unary:\n  neg: {numpy: "-x", dtypes: all}\n'
            "device:\n  location: {params: {op: UnaryOp}, returns: str}\n"
        )
    except RegistryError as exc:  # rejecting op-enum parameters of device methods is a fix too
        assert "device.location.params.op" in str(exc)
        return
    with pytest.raises(TypeError):  # the fixture's location() takes no kernel: the call reached it
        m.Device(m.Backend.CPU).location(m.UnaryOp.NEG)


def test_fallback_with_impl(build):
    """`impl` renames the runtime function; the fallback check must look for that name, not the op's."""
    text = (
        HEAD
        + "  gpu: {runtime: mini_rt.gpu, ordinal: true}\n"
        + TRAIT
        + FROM_SLICE
        + "storage:\n  scale: {params: {layout: Layout, mul: float, add: float}, returns: Storage,"
        " impl: {cpu: affine}, fallback: cpu}\n"
    )
    try:
        m = build(text)
    except RegistryError as exc:
        pytest.fail(f"rejected: {exc}")
    g = m.Device(m.Backend.GPU).storage_from_slice(np.array([1, 2, 3], np.float32))
    out = g.scale(L3, 2.0, 1.0)
    assert out.backend is m.Backend.GPU and m.to_numpy(out, L3).tolist() == [3, 5, 7]


def test_kernel_names_of_per_kind_expressions_do_not_collide(build):
    """`exp` with one expression per kind gets functions unary_exp_float, ...; an op named
    `exp_float` gets unary_exp_float too, and the later definition wins."""
    text = (
        HEAD + TRAIT + FROM_SLICE + 'unary:\n  exp: {numpy: {float: "np.exp(x)", uint: "x"}, dtypes: all}\n'
        '  exp_float: {numpy: "-x", dtypes: all}\n'
        "storage:\n  unary: {params: {op: UnaryOp, layout: Layout}, returns: Storage}\n"
    )
    try:
        m = build(text)
    except RegistryError:
        return  # rejecting the pair is a fix too
    s = m.Device(m.Backend.CPU).storage_from_slice(np.ones(3, np.float32))
    np.testing.assert_allclose(m.to_numpy(s.unary(m.UnaryOp.EXP, L3), L3), np.exp(np.ones(3)), rtol=1e-6)
    np.testing.assert_array_equal(m.to_numpy(s.unary(m.UnaryOp.EXP_FLOAT, L3), L3), -np.ones(3))


def test_dtype_checks_without_a_dtype_op(build):
    """same_dtype and `dtypes:` checks call Storage.dtype(), and __repr__ does too; a registry
    without a `dtype` storage op must be rejected, or these must work without it."""
    text = (
        HEAD + TRAIT + FROM_SLICE + 'binary:\n  div: {numpy: "x / y", dtypes: all}\n'
        "storage:\n  binary:\n    params: {op: BinaryOp, rhs: Storage, lhs_layout: Layout, rhs_layout: Layout}\n"
        "    returns: Storage\n    same_dtype: [self, rhs]\n"
    )
    try:
        m = build(text)
    except RegistryError as exc:
        assert "dtype" in str(exc)
        return
    s = m.Device(m.Backend.CPU).storage_from_slice(np.ones(3, np.float32))
    assert m.to_numpy(s.binary(m.BinaryOp.DIV, s, L3, L3), L3).tolist() == [1, 1, 1]
    assert repr(s).startswith("Storage(cpu")


def test_validation_is_repeatable():
    """Validating the same text twice gives equal models (no state kept between runs)."""
    text = HEAD + TRAIT + 'unary:\n  neg: {numpy: "-x", dtypes: all}\n'
    assert model_of_text(text) == model_of_text(text)


@pytest.mark.parametrize("name", ["missing", "kernels_numpy", "same_device", "storage"])
def test_backend_named_like_a_generated_helper(build, name):
    """Runtime modules are imported under a prefix no generated name uses (_rt_<backend>),
    so a backend may be called like a helper of the generated code and still dispatch."""
    text = (
        HEAD.replace(
            "  cpu: {runtime: mini_rt.cpu, kernels: numpy}", f"  {name}: {{runtime: mini_rt.cpu, kernels: numpy}}"
        )
        + TRAIT
        + FROM_SLICE
        + "storage:\n  affine: {params: {layout: Layout, mul: float, add: float}, returns: Storage}\n"
    )
    m = build(text)
    s = m.Device(m.Backend(name)).storage_from_slice(np.array([1, 2, 3], np.float32))
    assert m.to_numpy(s.affine(L3, 2.0, 1.0), L3).tolist() == [3, 5, 7]


def test_a_kernel_item_naming_no_hip_entry_point_is_an_error():
    """The shipped registry, with QMatMul's copy kernel misspelled (a renamed pattern): no
    package; a diagnostic at the op's `kernel:` naming the entry point no kernel source
    provides, one saying the kernels instantiate a pattern (the old spelling) no op declares,
    and one at each line of the runtime naming the old pattern's KernelPattern member."""
    from gen_harness import REPO

    text = (REPO / "ops.yaml").read_text(encoding="utf-8")
    assert text.count('"copy_strided_{x}"') == 1
    with pytest.raises(RegistryError) as info:
        model_of_text(text.replace('"copy_strided_{x}"', '"copy_stridd_{x}"'), "ops.yaml", REPO)
    messages = sorted(str(d) for d in info.value.diagnostics)
    assert all("copy_stridd_{x}" in m or "copy_strided_{x}" in m or "COPY_STRIDED_X" in m for m in messages), messages
    assert any(
        "qstorage.matmul.kernel" in m
        and "kernel pattern 'copy_stridd_{x}': no entry-point template "
        "(templates/hip/*.h.j2) instantiates it, and hip/*.hip does not define copy_stridd_f32"
        in m
        for m in messages
    ), messages
    assert any(
        "templates/hip/fill_copy.h.j2 instantiates kernel pattern 'copy_strided_{x}', which no op's "
        "`kernel:` declares" in m
        for m in messages
    ), messages
    renamed = (
        r"runtime/gpu/quant\.py:\d+ names KernelPattern\.COPY_STRIDED_X, which no `kernel:` pattern of the "
        r"registry gives; did you mean 'COPY_STRIDD_X'\?"
    )
    assert any(re.search(renamed, m) for m in messages), messages

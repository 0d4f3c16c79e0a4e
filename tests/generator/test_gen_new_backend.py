"""Adding a backend is one registry entry (Candle's case: a new device next to cpu/cuda).

A copy of the fixture registry gets `rocm2`, whose runtime module defines only
availability(). Every dispatch point of the generated package must grow a rocm2 arm, every
custom-op trait a rocm2_fwd hook, `gen parity` a rocm2 column, and the new arms must raise
typed errors naming rocm2 and the op."""

from __future__ import annotations

import ast
import json
import re

import pytest
from gen_harness import MINI, class_methods, match_cases, module_functions, run_cli, workspace

from runtime.errors import BackendUnavailable, NotImplementedForBackend
from runtime.layout import Layout

ENTRY = '  rocm2: {runtime: mini_rt.rocm2, ordinal: true, doc: "a backend being added"}\n'


def _with_rocm2(text: str) -> str:
    anchor = "  gpu: {runtime: mini_rt.gpu"
    i = text.index(anchor)
    j = text.index("\n", i) + 1
    return text[:j] + ENTRY + text[j:]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """(registry path, package dir before, package dir after) for the fixture with rocm2 added."""
    root = workspace(tmp_path_factory.mktemp("rocm2"))
    registry = root / "ops.yaml"
    original = MINI.read_text(encoding="utf-8")
    registry.write_text(_with_rocm2(original), encoding="utf-8")
    diff = set(registry.read_text().splitlines()) ^ set(original.splitlines())
    assert diff == {ENTRY.rstrip("\n")}, "the change is one line"
    before, after = root / "before", root / "rocm2pkg"
    assert run_cli("--registry", MINI, "--out", before).exit_code == 0
    result = run_cli("--registry", registry, "--out", after)
    assert result.exit_code == 0, result.output
    return registry, before, after


def _tree(pkg, name) -> ast.Module:
    return ast.parse((pkg / name).read_text(encoding="utf-8"))


def _members(pattern: str) -> str:
    """`Backend.CPU` / `On.CPU` -> `CPU`; `(On.CPU, On.GPU)` -> `[CPU, GPU]` (as ast.unparse
    writes it): the templates may name the members through any class."""
    return re.sub(r"\b[A-Za-z_]\w*\.", "", pattern)


def _matches(pkg):
    """(where, [case patterns]) for every match statement of Storage, Device and conversions."""
    out = []
    for fname, cls in (("storage.py", "Storage"), ("device.py", "Device"), ("quantized.py", "QStorage")):
        for name, fn in class_methods(_tree(pkg, fname), cls).items():
            out += [(f"{cls}.{name}", [_members(c) for c in cases]) for cases in match_cases(fn)]
    for name, fn in module_functions(_tree(pkg, "conversions.py")).items():
        out += [(name, [_members(c) for c in cases]) for cases in match_cases(fn)]
    return out


def test_every_match_gets_a_rocm2_arm(generated):
    _, before, after = generated
    old, new = dict(_matches(before)), dict(_matches(after))
    assert set(old) == set(new)
    storage_ops = {"dtype", "device", "unary", "binary", "affine", "fill", "apply_scale"}
    device_ops = {"zeros", "storage_from_slice", "location", "quantize"}
    qstorage_ops = {"dtype", "dequantize", "matmul"}
    assert {f"Storage.{op}" for op in storage_ops} | {f"Device.{op}" for op in device_ops} | {
        f"QStorage.{op}" for op in qstorage_ops
    } | {"to_numpy", "to_device", "from_dlpack"} == set(new)
    for where, cases in new.items():
        if where == "to_device":
            assert len(cases) == 9 and len(old[where]) == 4
            backends = ("CPU", "GPU", "ROCM2")
            assert sorted(cases) == sorted(f"[{s}, {d}]" for s in backends for d in backends), (
                "to_device needs one arm per (source, destination) pair"
            )
        else:
            assert cases == [*old[where], "ROCM2"], where


def test_backend_enum_device_and_traits(generated):
    _, _, after = generated
    backends = _tree(after, "backends.py")
    enum = next(n for n in backends.body if isinstance(n, ast.ClassDef) and n.name == "Backend")
    members = [t.id for n in enum.body if isinstance(n, ast.Assign) for t in n.targets]
    assert members == ["CPU", "GPU", "ROCM2"]
    assert "is_rocm2" in class_methods(_tree(after, "device.py"), "Device")
    traits = [n for n in _tree(after, "custom_ops.py").body if isinstance(n, ast.ClassDef)]
    assert [t.name for t in traits] == ["Scale1", "Bump2"]
    for trait in traits:
        hooks = [f.name for f in trait.body if isinstance(f, ast.FunctionDef)]
        assert hooks == ["cpu_fwd", "gpu_fwd", "rocm2_fwd"], trait.name


def test_parity_lists_the_new_backend(generated):
    registry, _, _ = generated
    table = run_cli("--registry", registry, "parity")
    assert table.exit_code == 0
    header = table.stdout.splitlines()[0].split()
    assert header == ["op", "cpu", "gpu", "rocm2"]
    assert "rocm2: 0 implemented, 0 fall back, 1 custom-op hooks, 14 missing" in table.stdout
    rows = json.loads(run_cli("--registry", registry, "parity", "--format", "json").stdout)
    ops = [r for r in rows if not r["op"].startswith("to_device")]
    assert len(ops) == 15
    for row in ops:
        assert row["rocm2"] == ("hook" if row["op"] == "storage.apply_scale" else "MISSING"), row
    transfers = {r["op"]: r for r in rows if r["op"].startswith("to_device")}
    for other in ("cpu", "gpu"):
        assert transfers[f"to_device {other}->rocm2"]["rocm2"] == "MISSING"
        assert transfers[f"to_device rocm2->{other}"][other] == "MISSING"


@pytest.fixture(scope="module")
def pkg(generated, package_importer):
    return package_importer(generated[2])


@pytest.fixture
def reason(monkeypatch):
    import mini_rt.rocm2

    def set_reason(value):
        monkeypatch.setattr(mini_rt.rocm2, "_reason", value)

    set_reason(None)
    return set_reason


L = Layout.contiguous((2,))


def _storage_calls(m, s):
    class Noop(m.Scale1):
        name = "noop"

    return {
        "dtype": lambda: s.dtype(),
        "device": lambda: s.device(),
        "unary": lambda: s.unary(m.UnaryOp.NEG, L),
        "binary": lambda: s.binary(m.BinaryOp.DIV, s, L, L),
        "affine": lambda: s.affine(L, 1.0, 0.0),
        "fill": lambda: s.fill(0.0),
        "apply_scale": lambda: s.apply_scale(L, Noop()),
    }


def _device_calls(m, d):
    return {
        "zeros": lambda: d.zeros((2,), m.DType.F32),
        "storage_from_slice": lambda: d.storage_from_slice([1.0, 2.0]),
        "location": lambda: d.location(),
    }


STORAGE_OPS = ["dtype", "device", "unary", "binary", "affine", "fill", "apply_scale"]
DEVICE_OPS = ["zeros", "storage_from_slice", "location"]


@pytest.mark.parametrize("op", STORAGE_OPS)
def test_storage_arms_raise_not_implemented(pkg, reason, op):
    m = pkg
    s = m.Storage(m.Backend.ROCM2, object())
    with pytest.raises(NotImplementedForBackend) as exc:
        _storage_calls(m, s)[op]()
    expected_op = "noop" if op == "apply_scale" else op  # a custom op's hook names the custom op
    assert (exc.value.backend, exc.value.op) == ("rocm2", expected_op), str(exc.value)
    assert str(exc.value) == f"no rocm2 implementation for {expected_op}"


@pytest.mark.parametrize("op", DEVICE_OPS)
def test_device_arms_raise_not_implemented(pkg, reason, op):
    m = pkg
    d = m.Device.parse("rocm2:1")
    assert d.is_rocm2() and str(d) == "rocm2:1"
    with pytest.raises(NotImplementedForBackend, match=f"^no rocm2 implementation for {op}$"):
        _device_calls(m, d)[op]()


def test_conversion_arms(pkg, reason):
    m = pkg
    s = m.Storage(m.Backend.ROCM2, object())
    with pytest.raises(NotImplementedForBackend, match="^no rocm2 implementation for to_numpy$"):
        m.to_numpy(s, L)
    cpu = m.Device(m.Backend.CPU)
    with pytest.raises(NotImplementedForBackend, match="^no rocm2 implementation for to_device$"):
        m.to_device(s, L, cpu)
    with pytest.raises(NotImplementedForBackend, match="^no rocm2 implementation for to_device$"):
        m.to_device(cpu.storage_from_slice([1.0, 2.0]), L, m.Device(m.Backend.ROCM2))


def test_unavailable_backend_says_why(pkg, reason):
    m = pkg
    reason("libamdhip64 not found")
    assert m.Device.available()[m.Backend.ROCM2] == "libamdhip64 not found"
    assert m.Device.available()[m.Backend.CPU] is None
    s = m.Storage(m.Backend.ROCM2, object())
    d = m.Device(m.Backend.ROCM2)
    calls = [*_storage_calls(m, s).items(), *_device_calls(m, d).items(), ("to_numpy", lambda: m.to_numpy(s, L))]
    for op, call in calls:
        if op == "apply_scale":
            continue  # the hook is the custom op's own code: it raises what the custom op raises
        with pytest.raises(BackendUnavailable) as exc:
            call()
        assert str(exc.value) == "rocm2: unavailable: libamdhip64 not found", op
        assert exc.value.backend == "rocm2"
    assert repr(s) == "Storage(rocm2)"

"""`gen new-backend NAME`: one registry line in the style of its neighbours, a runtime module
of stubs that count as missing, both checked before either is written."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from tools_harness import REPO, mini_copy, python, run_cli

from generator.registry.declared import key_lines
from generator.registry.loader import load_file
from generator.registry.validate import validate
from generator.tools.scaffold import runtime_module

ALIGNED = """\
# A registry whose entries are aligned, with comments to keep.
version: 1
dtypes:
  f32: {numpy: float32, kind: float}

# Each backend is one entry plus one runtime module.
backends:
  cpu:  {runtime: rt.cpu,  ordinal: false, doc: "host"}
  cuda: {runtime: rt.cuda, ordinal: true,  doc: "NVIDIA"}   # trailing comment
  # rocm: next quarter

custom_ops:
  CustomOp1: {inputs: 1, inplace: false}
"""


def runtimes(root: Path, *names: str) -> None:
    (root / "rt").mkdir(parents=True, exist_ok=True)
    (root / "rt" / "__init__.py").write_text("")
    for name in names:
        (root / "rt" / f"{name}.py").write_text("def availability():\n    return None\n")


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def new_backend(registry: Path, *args):
    return run_cli("--registry", registry, "new-backend", *args)


def test_one_line_after_the_last_backend(tmp_path):
    registry = mini_copy(tmp_path)
    before = registry.read_text()
    result = new_backend(registry, "toy")
    assert result.exit_code == 0, result.output
    after = registry.read_text().splitlines(keepends=True)
    lines = before.splitlines(keepends=True)
    gpu = next(i for i, ln in enumerate(lines) if ln.startswith("  gpu:"))
    assert after == [*lines[: gpu + 1], "  toy: {runtime: mini_rt.toy, ordinal: true}\n", *lines[gpu + 1 :]]
    module = tmp_path / "mini_rt" / "toy.py"
    tree = load_file(str(mini_copy(tmp_path / "orig")))
    expected = runtime_module(validate(tree, tmp_path / "orig"), "toy", "mini_rt/toy.py", key_lines(tree))
    assert module.read_text() == expected
    assert '"""Storage.binary(op, rhs, lhs_layout, rhs_layout) -> Storage on toy (ops.yaml:37).' in expected
    assert result.stdout.splitlines()[:2] == [
        f"added     {registry}:{gpu + 2}: toy: {{runtime: mini_rt.toy, ordinal: true}}",
        f"wrote     {module}: availability() and 17 stubs raising NotImplementedForBackend",
    ]


def test_aligned_columns_and_comments_are_kept(tmp_path):
    runtimes(tmp_path, "cpu", "cuda")
    registry = tmp_path / "ops.yaml"
    registry.write_text(ALIGNED)
    result = new_backend(registry, "toy", "--doc", 'a "toy"')
    assert result.exit_code == 0, result.output
    assert registry.read_text() == ALIGNED.replace(
        "  # rocm", '  toy:  {runtime: rt.toy,  ordinal: true,  doc: "a \\"toy\\""}\n  # rocm'
    )
    assert load_file(str(registry)).get("backends").get("toy").get("doc").value == 'a "toy"'


def test_block_style_and_crlf(tmp_path):
    runtimes(tmp_path, "cpu")
    registry = tmp_path / "ops.yaml"
    text = (
        "version: 1\r\ndtypes:\r\n  f32: {numpy: float32, kind: float}\r\nbackends:\r\n  cpu:\r\n"
        "      runtime: rt.cpu   # six spaces\r\n      ordinal: false\r\n\r\n# end\r\n"
    )
    registry.write_bytes(text.encode())
    result = new_backend(registry, "my_npu", "--no-ordinal", "--runtime", "rt.npu")
    assert result.exit_code == 0, result.output
    assert registry.read_bytes().decode() == text.replace(
        "false\r\n\r\n", "false\r\n  my_npu:\r\n      runtime: rt.npu\r\n      ordinal: false\r\n\r\n"
    )
    assert (tmp_path / "rt" / "npu.py").is_file()


@pytest.mark.parametrize(
    "args, setup, expected",
    [
        (["gpu"], None, ["{registry}:15:3: backend 'gpu' is already declared"]),
        (
            ["toy"],
            "mini_rt/toy.py",
            ["{root}/mini_rt/toy.py:1:1: runtime module 'mini_rt.toy' exists; refusing to overwrite it"],
        ),
        (
            ["Toy"],
            None,
            ["error: 'Toy' is not a backend name: a lower-case letter, then lower-case letters, digits and _"],
        ),
        (
            ["../x"],
            None,
            ["error: '../x' is not a backend name: a lower-case letter, then lower-case letters, digits and _"],
        ),
        (
            ["match"],
            None,
            [
                "{registry}:16:3: 'match' is a Python keyword (at backends.match)",
                "{registry}: the entry would make the registry invalid; nothing changed",
            ],
        ),
        (
            ["toy", "--runtime", "nowhere.toy"],
            None,
            ["error: {root}/nowhere does not exist: create the package of 'nowhere.toy' first"],
        ),
        (["toy", "--runtime", "bad-name"], None, ["error: --runtime 'bad-name' is not a dotted module name"]),
    ],
)
def test_refusals_change_nothing(tmp_path, args, setup, expected):
    registry = mini_copy(tmp_path)
    if setup:
        (tmp_path / setup).write_text("def availability():\n    return None\n")
    before = files(tmp_path)
    result = new_backend(registry, *args)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [e.format(registry=registry, root=tmp_path) for e in expected]
    assert files(tmp_path) == before


def test_a_broken_registry_is_refused_first(tmp_path):
    registry = mini_copy(tmp_path)
    registry.write_text(registry.read_text().replace("dtypes: all", "dtypes: al"))
    before = files(tmp_path)
    result = new_backend(registry, "toy")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"{registry}: fix the registry first; nothing changed"
    assert re.match(rf"{re.escape(str(registry))}:\d+:\d+: unknown dtype set 'al'", result.stderr)
    assert files(tmp_path) == before


def test_flow_style_backends_are_refused(tmp_path):
    runtimes(tmp_path, "cpu")
    registry = tmp_path / "ops.yaml"
    registry.write_text(
        "version: 1\ndtypes: {f32: {numpy: float32, kind: float}}\nbackends: {cpu: {runtime: rt.cpu}}\n"
    )
    result = new_backend(registry, "toy")
    assert result.exit_code == 2
    assert result.stderr == f"{registry}:3:1: `backends:` is one flow mapping ({{...}}); add 'toy' to it by hand\n"


# -- after `gen`: the backend exists, at 0%, and each arm raises the generated missing error ------

ARMS = """
import sys, numpy as np
import pkg as g, mini_rt.toy as rt
from runtime.errors import BackendUnavailable, NotImplementedForBackend
from runtime.layout import Layout

def calls():
    d = g.Device.parse("toy:0")
    s = g.Storage(g.Backend.TOY, object())
    L = Layout.contiguous((2,))
    return {
        "dtype": s.dtype, "device": s.device, "fill": lambda: s.fill(0.0),
        "unary": lambda: s.unary(g.UnaryOp.NEG, L), "binary": lambda: s.binary(g.BinaryOp.DIV, s, L, L),
        "affine": lambda: s.affine(L, 1.0, 0.0), "zeros": lambda: d.zeros((2,), g.DType.F32),
        "storage_from_slice": lambda: d.storage_from_slice(np.zeros(2, np.float32)),
        "location": d.location, "to_numpy": lambda: g.to_numpy(s, L),
    }

def raised(call):
    try:
        call()
    except Exception as exc:
        return exc
    return None

for op, call in calls().items():
    exc = raised(call)
    assert isinstance(exc, BackendUnavailable), (op, exc)
    assert str(exc) == "toy: unavailable: the toy runtime is a scaffold: implement availability() in mini_rt/toy.py"
rt.availability = lambda: None
def stub_called(*args):
    raise AssertionError("an arm called a stub")
for name in dir(rt):
    if not name.startswith("_") and name not in ("availability", "NotImplementedForBackend"):
        setattr(rt, name, stub_called)
for op, call in calls().items():
    exc = raised(call)
    assert type(exc) is NotImplementedForBackend and str(exc) == f"no toy implementation for {op}", (op, exc)
print("ok")
"""


def test_after_gen_every_arm_raises_the_generated_error(tmp_path):
    registry = mini_copy(tmp_path)
    assert new_backend(registry, "toy").exit_code == 0
    result = run_cli("--registry", registry, "--out", tmp_path / "pkg")
    assert result.exit_code == 0, result.output
    storage = (tmp_path / "pkg" / "storage.py").read_text()
    assert "_rt_toy." not in storage.replace("import mini_rt.toy as _rt_toy", ""), "no arm calls a stub"
    parity = run_cli("--registry", registry, "parity")
    assert "toy: 0 implemented, 0 fall back, 1 custom-op hooks, 14 missing (0% runnable)" in parity.stdout
    rows = {ln.split()[0]: ln.split()[-1] for ln in parity.stdout.splitlines()[1:11]}
    assert rows == {**{op: "MISSING" for op in rows}, "storage.apply_scale": "hook"}
    run = python(ARMS, tmp_path)
    assert run.stdout == "ok\n", run.stderr


def test_implementing_stubs_moves_the_table(tmp_path):
    registry = mini_copy(tmp_path)
    assert new_backend(registry, "toy").exit_code == 0
    module = tmp_path / "mini_rt" / "toy.py"
    text = module.read_text()
    for name, body in (
        ("to_host", "return inner"),
        ("from_host", "return array"),
        ("device", "return 0"),
        ("location", 'return "toy memory"'),
    ):
        text = text.replace(f'    raise NotImplementedForBackend(_BACKEND, "{name}")', f"    {body}")
    module.write_text(text)
    parity = run_cli("--registry", registry, "parity").stdout
    row = {ln.split()[0]: ln.split()[-1] for ln in parity.splitlines()[1:11]}
    assert (row["storage.device"], row["storage.affine"], row["device.location"], row["storage.fill"]) == (
        "yes",
        "fallback",
        "yes",
        "MISSING",
    )
    assert "toy: 2 implemented, 1 fall back, 1 custom-op hooks, 11 missing (21% runnable)" in parity


def test_walkthrough_on_the_shipped_registry(tmp_path):
    """The README's walkthrough: `gen new-backend toy` on ops.yaml, then `gen`, then `gen parity`."""
    shutil.copy(REPO / "ops.yaml", tmp_path / "ops.yaml")
    shutil.copy(REPO / "candle.yaml", tmp_path / "candle.yaml")  # the rust target's profile, named by ops.yaml
    shutil.copytree(REPO / "runtime", tmp_path / "runtime", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "hip", tmp_path / "hip")  # the GPU backends' kernels are part of the registry's world
    registry = tmp_path / "ops.yaml"
    result = new_backend(registry, "toy", "--doc", "a toy backend")
    assert result.exit_code == 0, result.output
    added = [ln for ln in registry.read_text().splitlines() if ln.startswith("  toy:")]
    assert added == ['  toy:  {runtime: runtime.toy,  ordinal: true,                 doc: "a toy backend"}']
    assert run_cli("--registry", registry, "--out", tmp_path / "generated").exit_code == 0
    parity = run_cli("--registry", registry, "parity").stdout
    summary = parity.splitlines()[-1]
    assert re.fullmatch(r"toy: 0 implemented, 0 fall back, 6 custom-op hooks, \d+ missing \(0% runnable\)", summary)

"""A target's API profile (candle.yaml): loaded into the model, or every error at once with
file:line:col and the key; its features leave the Python output alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

from generator.registry import profile

REPO = Path(__file__).resolve().parents[2]
OPS = {"Storage": {"unary", "binary"}, "Device": {"zeros"}, "QStorage": set()}


def _load(tmp_path, text: str):
    path = tmp_path / "lib.yaml"
    path.write_text(textwrap.dedent(text))
    return profile.load(path, ("cpu", "cuda"), OPS)


def test_the_shipped_candle_profile_loads():
    from generator.registry.loader import load_file
    from generator.registry.validate import validate

    registry = validate(load_file(str(REPO / "ops.yaml")), REPO)
    ops = {"Storage": registry.storage, "Device": registry.device, "QStorage": registry.qstorage, "nn": registry.nn}
    backends = tuple(b.name for b in registry.backends)
    found, errors = profile.load(REPO / "candle.yaml", backends, {o: {op.name for op in v} for o, v in ops.items()})
    assert errors == [] and found is not None
    assert [b.name for b in found.backends] == ["metal"]
    unary = found.spelling("Storage", "unary")
    assert unary is not None and (unary.name, unary.call) == ("unary_impl", "unary_impl::<B>")
    assert {m.name for m in found.additions("Device")} >= {"new_{backend}", "as_{backend}_device", "get_current_seed"}
    assert (found.crate, found.thiserror) == ("candle", True)
    assert dict(found.nn_names)["rope_i"] == "RotaryEmbI"
    assert {op for op, _ in found.nn_names} == {op.name for op in registry.nn}
    assert (found.qtensor.type, found.qtensor.name) == ("QTensor", "qmatmul")
    assert (found.ug_op.type, found.ug_op.backends) == ("UgIOp1", ("cuda", "metal"))
    every = next(m for m in found.additions("Storage") if m.name == "as_{backend}_storage")
    assert every.each == (*backends, "metal")  # `each: all`: the host's backend too


def test_every_error_at_once_with_its_position(tmp_path):
    found, errors = _load(
        tmp_path,
        """\
        library: x
        commit: y
        backends:
          cuda: {ordinal: true}
        Storage:
          unary_impl: {op: unary_op, params: [layout]}
          extra: {params: {a: usize}}
          each_one: {each: [vulkan], returns: "()", body: "()"}
          arms_one: {returns: "()", arms: {tpu: "()"}}
        nn:
          softmax: Softmax
        qtensor: {type: QTensor, name: qmatmul}
        ug_op: {type: UgIOp1, backends: [cuda, vulkan]}
        """,
    )
    assert found is None
    text = "\n".join(str(e) for e in errors)
    assert "lib.yaml:4:3: backend 'cuda' is the registry's already (at backends.cuda)" in text
    assert "lib.yaml:6:20: Storage has no registry op 'unary_op' (at Storage.unary_impl.op)" in text
    assert "lib.yaml:7:3: a method of the library alone needs `returns` (at Storage.extra)" in text
    assert "no backend 'vulkan' (at Storage.each_one.each)" in text
    assert "no backend 'tpu' (at Storage.arms_one.arms.tpu)" in text
    assert "lib.yaml:11:3: the registry has no nn op 'softmax' (at nn.softmax)" in text
    assert "lib.yaml:12:10: the registry has no qstorage op 'matmul' for the quantized tensor to apply" in text
    assert "lib.yaml:13:40: no backend 'vulkan' (at ug_op.backends)" in text


def test_each_takes_true_all_or_backends(tmp_path):
    _, errors = _load(
        tmp_path, 'library: x\ncommit: y\nStorage:\n  f_{backend}: {each: some, returns: "()", body: "()"}\n'
    )
    assert len(errors) == 1 and "lib.yaml:4:23:" in str(errors[0]) and "all, the host's too" in str(errors[0])
    found, errors = _load(
        tmp_path, 'library: x\ncommit: y\nStorage:\n  f_{backend}: {each: all, returns: "()", body: "()"}\n'
    )
    assert errors == [] and found is not None and found.methods[0].each == ("cpu", "cuda")


def test_an_unknown_key_is_named_with_a_suggestion(tmp_path):
    _, errors = _load(tmp_path, "library: x\ncommit: y\nStorage:\n  unary_impl: {op: unary, generic: B}\n")
    assert any("unknown key 'generic'; did you mean 'generics'?" in str(e) for e in errors)


def test_the_profile_leaves_the_python_package_byte_identical():
    """ops.yaml with and without the rust profile: the same generated/ files, byte for byte,
    and those are the shipped ones; the rust output is what changes."""
    import dataclasses

    from generator.registry.loader import load_file
    from generator.registry.validate import validate
    from generator.targets.python import render as render_python
    from generator.targets.rust import render as render_rust

    with_profile = validate(load_file(str(REPO / "ops.yaml")), REPO)
    assert any(t.profile for t in with_profile.targets)
    bare = dataclasses.replace(
        with_profile, targets=tuple(dataclasses.replace(t, profile=None) for t in with_profile.targets)
    )
    python = render_python(with_profile, out=REPO / "generated")
    assert python == render_python(bare, out=REPO / "generated")
    for name, text in python.items():
        assert (REPO / "generated" / name).read_text() == text, name
    assert render_rust(with_profile)["device.rs"] != render_rust(bare)["device.rs"]

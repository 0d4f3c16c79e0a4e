"""The registry's `switches:` (process-wide switches of some backends, ops.yaml): validated (names,
backends, each runtime's getter and setter), and emitted for both targets: generated/switches.py
over the runtime modules, generated/rust/switches.rs (a module per backend; tests/rust compiles and
runs it)."""

from __future__ import annotations

import pytest
from gen_harness import REPO

import generated as g
import runtime.cuda
import runtime.rocm
from generator.registry.diagnostics import RegistryError
from generator.registry.loader import load_text
from generator.registry.validate import validate
from generator.targets import python as python_target, rust as rust_target

OPS = (REPO / "ops.yaml").read_text(encoding="utf-8")
SWITCHES = ("gemm_reduced_precision_f32", "gemm_reduced_precision_f16", "gemm_reduced_precision_bf16")


def _registry(text: str = OPS):
    return validate(load_text(text, str(REPO / "ops.yaml")), REPO)


def _errors(text: str) -> list[str]:
    with pytest.raises(RegistryError) as info:
        _registry(text)
    return [str(d) for d in info.value.diagnostics]


def test_the_shipped_registry_declares_candles_gemm_switches_for_the_gpu_backends():
    switches = {s.name: s.backends for s in _registry().switches}
    assert set(SWITCHES) <= set(switches) and {"conv_reduced_precision_f32", "autotune"} <= set(switches)
    assert all(backends == ("cuda", "rocm") for backends in switches.values())


def test_a_switch_of_an_unknown_backend_or_a_runtime_without_it_is_an_error():
    text = OPS.replace(
        "  autotune: {backends: [cuda, rocm],",
        "  autotune: {backends: [cuda, tpu],",
    ).replace("switches:\n", "switches:\n  Warp_Speed: {backends: [cpu]}\n")
    errors = _errors(text)
    assert any("switches.autotune.backends[1]" in e and "unknown backend 'tpu'" in e for e in errors), errors
    assert any("switch 'Warp_Speed' must be a lower_case identifier" in e for e in errors), errors
    assert any(
        "switches.Warp_Speed.backends[0]" in e and "'runtime.cpu' does not define Warp_Speed()" in e for e in errors
    ), errors
    assert all(":" in e.split(" ")[0] for e in errors)  # each with file:line:col


def test_both_targets_emit_each_switch():
    registry = _registry()
    python = python_target.render(registry)["switches.py"]
    rust = rust_target.render(registry)["switches.rs"]
    for name in SWITCHES:
        assert f"def set_{name}(backend: Backend, enabled: bool) -> None:" in python
        assert f"pub fn set_{name}(b: bool) {{" in rust and f"pub fn {name}() -> bool {{" in rust
    # The Candle profile compiles every backend's variant (its dummies answer when a feature is
    # off), so each backend's switch module is there whatever the features.
    assert "\npub mod cuda {" in rust and "\npub mod rocm {" in rust and "#[cfg(" not in rust


def test_a_registry_without_switches_emits_no_switch_files():
    start = OPS.index("switches:\n")
    end = OPS.index("\n\n", start)
    registry = _registry(OPS[:start] + OPS[end + 2 :])
    assert not registry.switches
    assert "switches.py" not in python_target.render(registry)
    assert "switches.rs" not in rust_target.render(registry)


@pytest.mark.parametrize("backend, module", [(g.Backend.CUDA, runtime.cuda), (g.Backend.ROCM, runtime.rocm)])
def test_the_generated_switches_reach_the_runtime_of_their_backend(backend, module):
    other = runtime.rocm if module is runtime.cuda else runtime.cuda
    kept = module._rt.switches.autotune, other._rt.switches.autotune
    try:
        g.switches.set_autotune(backend, True)
        assert g.switches.autotune(backend) is True and module.autotune() is True
        assert other.autotune() is kept[1]  # each backend its own
        g.switches.set_autotune(backend, 0)
        assert module.autotune() is False
    finally:
        module.set_autotune(kept[0])


def test_a_backend_without_the_switch_says_so():
    with pytest.raises(g.NotImplementedForBackend, match="no cpu implementation for the switch autotune"):
        g.switches.set_autotune(g.Backend.CPU, True)

"""`make bench` times `gen` on bench/synthetic.py's registry. Run that registry through `gen`
at a small size, with and without HIP outputs, so a registry change that the synthetic one
does not follow breaks here and not only in the benchmark."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import yaml
from gen_harness import REPO, run_cli

sys.path.insert(0, str(REPO))
from bench import synthetic  # noqa: E402

N_OPS = 300  # every section present, a few hundred ops: well under a second of `gen`
FAMILIES = ("unary", "binary", "cmp", "reduce", "storage", "device", "nn", "qstorage")


def test_registry_has_the_requested_number_of_ops():
    for hip in (True, False):
        registry = synthetic.registry(N_OPS, hip=hip)
        assert sum(len(registry[f]) for f in FAMILIES) == N_OPS
    assert sum(len(synthetic.registry()[f]) for f in FAMILIES) == synthetic.N_OPS


@pytest.mark.parametrize("hip", [True, False], ids=["cuda-rocm-hip", "cpu-only"])
def test_synthetic_registry_generates_and_runs(hip, tmp_path, importer):
    registry = synthetic.write(tmp_path / "bench", N_OPS, hip=hip)
    out = tmp_path / "bench" / f"synth_{'hip' if hip else 'cpu'}"
    result = run_cli("--registry", registry, "--out", out)
    assert result.exit_code == 0, result.output
    assert (out / "elementwise.hip").exists() == hip
    check = run_cli("--registry", registry, "--out", out, "--check")
    assert check.exit_code == 0, check.output

    # The generated package computes what the registry says, for every synthetic
    # elementwise op, on random f32 input against the expression evaluated by numpy.
    spec = yaml.safe_load(registry.read_text())
    g = importer(out)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(17).astype(np.float32)
    y = rng.standard_normal(17).astype(np.float32)
    layout = g.Layout.contiguous((17,))
    cpu = g.Device.parse("cpu")
    sx, sy = cpu.storage_from_slice(x), cpu.storage_from_slice(y)
    for name, op in spec["unary"].items():
        got = g.to_numpy(sx.unary(g.UnaryOp(name), layout), layout)
        want = eval(op["numpy"], {"np": np}, {"x": x})  # noqa: S307 (the registry's own expression)
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
    for name, op in spec["binary"].items():
        got = g.to_numpy(sx.binary(g.BinaryOp(name), sy, layout, layout), layout)
        want = eval(op["numpy"], {"np": np}, {"x": x, "y": y})  # noqa: S307
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)


def test_synthetic_registry_with_the_rust_target(tmp_path):
    """The bench's row with both targets: the Rust dispatch lands beside the package, one
    launch wrapper per generated kernel entry point, and --check agrees."""
    registry = synthetic.write(tmp_path / "bench", N_OPS, rust=True)
    out = tmp_path / "bench" / "generated"
    result = run_cli("--registry", registry)
    assert result.exit_code == 0, result.output
    rust = out / "rust"
    assert {p.name for p in rust.glob("*.rs")} >= {"storage.rs", "device.rs", "custom_op.rs", "launch.rs"}
    spec = yaml.safe_load(registry.read_text())
    methods = (rust / "storage.rs").read_text() + (rust / "custom_op.rs").read_text()  # apply_op* are there
    for name in spec["storage"]:
        assert f"pub fn {name}(" in methods, name
    check = run_cli("--registry", registry, "--check")
    assert check.exit_code == 0, check.output

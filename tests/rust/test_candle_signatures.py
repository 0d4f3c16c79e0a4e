"""The Candle profile's output against candle-core's own signatures: every method of
`Storage`, `Device` and `QStorage` in candle-core at the pinned commit (a table kept as data,
candle_core_signatures.yaml) has, in generated/rust, candle's name, parameter types in order
and return type, but the exceptions the table lists (and templates/rust/README.md explains)."""

from __future__ import annotations

from pathlib import Path

import yaml

from generator.audit.signatures import normalize, signatures

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OWNERS = ("Storage", "Device", "QStorage")
TABLE = yaml.safe_load((HERE / "candle_core_signatures.yaml").read_text())


def _generated() -> dict[str, dict[str, str]]:
    files = sorted((REPO / "generated" / "rust").glob("*.rs"))
    return signatures([f.read_bytes() for f in files], OWNERS)


def test_the_table_holds_candle_cores_78_methods():
    assert {o: len(TABLE[o]) for o in OWNERS} == {"Storage": 38, "Device": 27, "QStorage": 13}
    assert TABLE["commit"] in (REPO / "candle.yaml").read_text()


def test_every_candle_core_method_is_generated_with_candles_signature():
    got = _generated()
    exceptions = set(TABLE["exceptions"])
    differ = [
        f"{o}::{name}: candle {want}, generated {got[o].get(name)}"
        for o in OWNERS
        for name, want in TABLE[o].items()
        if f"{o}.{name}" not in exceptions and got[o].get(name) != want
    ]
    assert not differ, "\n".join(differ)


def test_the_exceptions_are_explained_in_the_templates_readme():
    readme = (REPO / "templates" / "rust" / "README.md").read_text()
    for name in TABLE["exceptions"]:
        assert f"`{name.split('.')[1]}`" in readme, name


def test_every_backend_has_its_methods():
    """Methods generated once per backend: Metal's and ROCm's beside CUDA's."""
    device = _generated()["Device"]
    for backend in ("cuda", "metal", "rocm"):
        for name in (f"new_{backend}", f"as_{backend}_device", f"{backend}_if_available", f"is_{backend}"):
            assert name in device, name


def test_normalize_ignores_layout_and_paths():
    assert (
        normalize("(\n    &self,\n    p: &crate::conv::ParamsConv1D,\n) -> Result<Self>")
        == "(&self, p: &ParamsConv1D) -> Result<Self>"
    )

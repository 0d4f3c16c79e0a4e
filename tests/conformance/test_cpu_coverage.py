"""The conformance suite keeps up with the registry: a new storage op or device method
without a CPU test, or a new elementwise op without an independent reference, fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from . import refs
from .conftest import REGISTRY

HERE = Path(__file__).parent
SOURCES = "\n".join(p.read_text() for p in sorted(HERE.glob("test_cpu_*.py")) if p.name != Path(__file__).name)


def _exercised(name: str) -> bool:
    """Called as a method (`.name(`) or named as a string for getattr (`"name"`)."""
    return re.search(rf"\.{name}\(|[\"']{name}[\"']", SOURCES) is not None


@pytest.mark.parametrize("op", [op for op, spec in REGISTRY["storage"].items() if "hook" not in spec])
def test_storage_op_has_cpu_test(op):
    assert _exercised(op), f"storage op {op!r} has no CPU conformance test in {HERE}"


@pytest.mark.parametrize("method", list(REGISTRY.get("device") or {}))
def test_device_method_has_cpu_test(method):
    assert _exercised(method), f"device method {method!r} has no CPU conformance test in {HERE}"


@pytest.mark.parametrize("method", list(REGISTRY.get("qstorage") or {}))
def test_qstorage_method_has_cpu_test(method):
    assert _exercised(method), f"QStorage method {method!r} has no CPU conformance test in {HERE}"


@pytest.mark.parametrize("op", list(REGISTRY.get("nn") or {}))
def test_nn_op_has_cpu_test(op):
    cls = "".join(part[:1].upper() + part[1:] for part in op.split("_"))
    assert re.search(rf"nn\.{cls}\(", SOURCES), f"nn op {op!r} (nn.{cls}) has no CPU conformance test in {HERE}"


@pytest.mark.parametrize(
    "family,table",
    [("unary", refs.UNARY), ("binary", refs.BINARY), ("cmp", refs.CMP)],
    ids=["unary", "binary", "cmp"],
)
def test_elementwise_ops_have_references(family, table):
    missing = sorted(set(REGISTRY.get(family) or {}) - set(table))
    assert not missing, f"{family} ops without a reference in refs.py: {missing}"


def test_reduce_ops_have_references():
    missing = sorted(set(REGISTRY.get("reduce") or {}) - set(refs.REDUCE_OPS))
    assert not missing, f"reduce ops without a reference in refs.reduce_ref: {missing}"


def test_registry_dtypes_are_the_tested_ones():
    assert set(REGISTRY["dtypes"]) == set(refs.NP), "refs.NP must map every registry dtype"
    for name, spec in REGISTRY["dtypes"].items():
        assert refs.NP[name].name == spec["numpy"], name

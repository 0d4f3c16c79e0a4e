"""CPU conformance: the registry drives the parametrisation.

Every elementwise / comparison / reduction op in ops.yaml is tested for every dtype the
registry declares for it (and must fail with DTypeMismatch for the others); storage ops
take their dtype sets from the registry's `dtypes:` where it has one. A new op in
ops.yaml is picked up here without touching the tests; `test_cpu_coverage.py` fails
when a storage op or device method has no test, or an elementwise op no reference.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
REGISTRY_PATH = ROOT / "ops.yaml"


def load_registry() -> dict:
    return yaml.safe_load(REGISTRY_PATH.read_text())


REGISTRY = load_registry()
ALL_DTYPES: list[str] = list(REGISTRY["dtypes"])
FLOAT_DTYPES: list[str] = [d for d, spec in REGISTRY["dtypes"].items() if spec["kind"] == "float"]

#: Layouts of a single operand (see refs.make_layout).
LAYOUT_KINDS = ["contig", "offset", "transposed", "narrowed", "broadcast"]
#: (lhs, rhs) layout pairs of binary ops.
PAIR_KINDS = [
    ("contig", "contig"),
    ("offset", "transposed"),
    ("narrowed", "broadcast"),
    ("broadcast", "offset"),
    ("transposed", "narrowed"),
]


def expand(spec, registry: dict = REGISTRY) -> list[str]:
    """A registry dtype spec (a dtype, a set name, or a list of either) as dtype names,
    in registry order."""
    if spec is None:
        return list(registry["dtypes"])
    items = [spec] if isinstance(spec, str) else list(spec)
    names: set[str] = set()
    for item in items:
        names.update(registry.get("dtype_sets", {}).get(item, [item]))
    unknown = names - set(registry["dtypes"])
    if unknown:
        raise ValueError(f"ops.yaml: unknown dtypes {sorted(unknown)} in {spec!r}")
    return [d for d in registry["dtypes"] if d in names]


def family_dtypes(family: str, op: str, registry: dict = REGISTRY) -> list[str]:
    return expand(registry[family][op].get("dtypes"), registry)


def storage_dtypes(op: str, arg: str = "self", default=None, registry: dict = REGISTRY) -> list[str]:
    """The dtypes the registry allows for argument `arg` of storage op `op`
    (`default`, else every dtype, where it declares none)."""
    spec = (registry["storage"][op].get("dtypes") or {}).get(arg)
    if spec is None:
        return list(default) if default is not None else list(registry["dtypes"])
    return expand(spec, registry)


def seed_of(text: str) -> int:
    return zlib.crc32(text.encode())


@pytest.fixture(scope="session")
def registry() -> dict:
    return load_registry()


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A Generator seeded from the test id: reproducible, different per case."""
    return np.random.default_rng(seed_of(request.node.nodeid))


def _cases(family: str, kinds, registry: dict):
    out = []
    for op in registry.get(family) or {}:
        for dt in family_dtypes(family, op, registry):
            for kind in kinds:
                label = kind if isinstance(kind, str) else "-".join(kind)
                out.append(pytest.param((op, dt, kind), id=f"{op}-{dt}-{label}"))
    return out


def _unsupported(family: str, registry: dict):
    cases = [
        pytest.param((op, dt), id=f"{op}-{dt}")
        for op in registry.get(family) or {}
        for dt in ALL_DTYPES
        if dt not in family_dtypes(family, op, registry)
    ]
    reason = f"ops.yaml declares every dtype for every {family} op"
    return cases or [pytest.param(None, id="none", marks=pytest.mark.skip(reason=reason))]


REDUCE_DIMS = [(1,), (0, 2), (2, 0), (0, 1, 2)]
REDUCE_KINDS = ["contig", "transposed", "broadcast"]


def pytest_generate_tests(metafunc):
    reg = REGISTRY
    names = metafunc.fixturenames
    if "unary_case" in names:
        metafunc.parametrize("unary_case", _cases("unary", LAYOUT_KINDS, reg))
    if "unary_unsupported" in names:
        metafunc.parametrize("unary_unsupported", _unsupported("unary", reg))
    if "binary_case" in names:
        metafunc.parametrize("binary_case", _cases("binary", PAIR_KINDS, reg))
    if "binary_unsupported" in names:
        metafunc.parametrize("binary_unsupported", _unsupported("binary", reg))
    if "cmp_case" in names:
        metafunc.parametrize("cmp_case", _cases("cmp", PAIR_KINDS, reg))
    if "cmp_unsupported" in names:
        metafunc.parametrize("cmp_unsupported", _unsupported("cmp", reg))
    if "reduce_case" in names:
        cases = []
        for op in reg.get("reduce") or {}:
            for dt in family_dtypes("reduce", op, reg):
                for dims in REDUCE_DIMS:
                    for kind in REDUCE_KINDS:
                        label = "d" + "".join(map(str, dims))
                        cases.append(pytest.param((op, dt, dims, kind), id=f"{op}-{dt}-{label}-{kind}"))
        metafunc.parametrize("reduce_case", cases)
    if "reduce_unsupported" in names:
        metafunc.parametrize("reduce_unsupported", _unsupported("reduce", reg))

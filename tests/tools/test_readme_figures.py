"""The figures README.md quotes from gen's own output are today's: every README line in the form
of one of these outputs must carry the numbers the command prints now.

- `gen new-backend`: "availability() and N stubs raising NotImplementedForBackend";
- `gen parity`'s summary: "NAME: I implemented, F fall back, H custom-op hooks, M missing (P%
  runnable)": a backend just scaffolded (I and F 0, whatever its name), a shipped backend's
  (cpu, cuda, rocm), or one keeping its buffers in host memory (the README's six functions and
  availability);
- `gen audit --lang rust generated/rust`: "M missing, W wildcard, in D dispatch points";
- "each at I of T": the shipped backends' implemented ops of all (parity, hooks aside).
Each form must appear at least once: the README states these figures."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from tools_harness import HOST_MEMORY_BACKEND, REPO, implement, run_cli

README = REPO / "README.md"
SUMMARY = re.compile(
    r"\b(\w+): (\d+) implemented, (\d+) fall back, (\d+) custom-op hooks, (\d+) missing \((\d+)% runnable\)"
)
STUBS = re.compile(r"availability\(\) and (\d+) stubs raising NotImplementedForBackend")
AUDIT = re.compile(r"(\d+) missing, (\d+) wildcard, in (\d+) dispatch points")
EACH_AT = re.compile(r"each at (\d+) of\s+(\d+)")


def _summaries(registry: Path) -> dict[str, tuple[int, ...]]:
    result = run_cli("--registry", registry, "parity")
    assert result.exit_code == 0, result.output
    return {m[1]: tuple(int(g) for g in m.groups()[1:]) for m in SUMMARY.finditer(result.stdout)}


@pytest.fixture(scope="module")
def figures(tmp_path_factory) -> dict:
    """Today's figures, from a copy of the registry and what it reads (profiles, runtime/, hip/)."""
    root = tmp_path_factory.mktemp("figures")
    for registry_file in REPO.glob("*.yaml"):  # ops.yaml and the profiles its targets name
        shutil.copy(registry_file, root / registry_file.name)
    for folder in ("runtime", "hip"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shipped = _summaries(root / "ops.yaml")
    added = run_cli("--registry", root / "ops.yaml", "new-backend", "toy")
    assert added.exit_code == 0, added.output
    scaffold = _summaries(root / "ops.yaml")["toy"]
    implement(root / "runtime" / "toy.py", HOST_MEMORY_BACKEND)
    host = _summaries(root / "ops.yaml")["toy"]
    audit = run_cli("audit", "--lang", "rust", REPO / "generated" / "rust")
    assert audit.exit_code == 0, audit.output
    points, missing, wildcard = re.search(
        r"(\d+) dispatch points, (\d+) missing, (\d+) wildcard", audit.stdout
    ).groups()
    return {
        "stubs": int(STUBS.search(added.stdout)[1]),
        "shipped": shipped,
        "scaffold": scaffold,
        "host": host,
        "audit": (int(missing), int(wildcard), int(points)),
    }


def _lines(pattern: re.Pattern) -> list[re.Match]:
    text = README.read_text()
    found = list(pattern.finditer(text))
    assert found, f"README.md states no figure of the form {pattern.pattern!r}"
    return found


def _where(m: re.Match) -> str:
    return f"README.md:{README.read_text().count(chr(10), 0, m.start()) + 1}"


def test_new_backend_stub_count(figures):
    for m in _lines(STUBS):
        assert int(m[1]) == figures["stubs"], f"{_where(m)}: {m[0]!r}; gen new-backend writes {figures['stubs']}"


def test_parity_summaries(figures):
    for m in _lines(SUMMARY):
        name, numbers = m[1], tuple(int(g) for g in m.groups()[1:])
        if numbers[0] == numbers[1] == 0:  # a backend at its start (rocm's, too, as it began)
            expected = figures["scaffold"]
        elif name in figures["shipped"]:
            expected = figures["shipped"][name]
        else:
            expected = figures["host"]
        assert numbers == expected, f"{_where(m)}: {m[0]!r}; gen parity says {expected}"


def test_audit_of_the_generated_rust(figures):
    for m in _lines(AUDIT):
        line = README.read_text()[: m.end()].rsplit("\n", 1)[-1]
        if "generated/rust" not in line:
            continue  # another folder's audit (the fixtures')
        expected = figures["audit"]
        assert (int(m[1]), int(m[2]), int(m[3])) == expected, (
            f"{_where(m)}: {m[0]!r}; gen audit says {expected[0]} missing, {expected[1]} wildcard, "
            f"in {expected[2]} dispatch points"
        )


def test_shipped_backends_each_at(figures):
    for m in _lines(EACH_AT):
        for name, (implemented, fallback, _hooks, missing, _) in figures["shipped"].items():
            assert (int(m[1]), int(m[2])) == (implemented, implemented + fallback + missing), (
                f"{_where(m)}: {m[0]!r}; gen parity: {name} {implemented} of {implemented + fallback + missing}"
            )

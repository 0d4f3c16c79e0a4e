"""`gen docs`: the op reference in Markdown. Every op of the registry is there with the line it
is declared on, and the per-backend status agrees with `gen parity` (both read the arms)."""

from __future__ import annotations

import json
import re

import pytest
from tools_harness import MINI_DIR, mini_copy, run_cli

MINI = MINI_DIR / "ops.yaml"
WORDS = {"yes": "implemented", "fallback": "fallback", "hook": "hook", "MISSING": "**missing**"}


@pytest.fixture(scope="module")
def page() -> str:
    result = run_cli("--registry", MINI, "docs")
    assert result.exit_code == 0, result.output
    return result.stdout


def rows(page: str) -> dict[str, list[str]]:
    """First cell -> cells, for every table row (header and rule rows included)."""
    out = {}
    for line in page.splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            out.setdefault(cells[0], cells)
    return out


def declared_line(name: str, section: str) -> int:
    """The line of `name:` inside `section:` of the fixture registry, found by reading the text."""
    lines = MINI.read_text().splitlines()
    start = lines.index(f"{section}:")
    return next(i + 1 for i in range(start, len(lines)) if re.match(rf"\s+{name}:", lines[i]))


def test_deterministic(page):
    assert run_cli("--registry", MINI, "docs").stdout == page


@pytest.mark.parametrize(
    "section, names",
    [
        ("backends", ["cpu", "gpu"]),
        ("unary", ["neg", "exp"]),
        ("binary", ["div"]),
        ("cmp", ["lt"]),
        ("reduce", ["sum"]),
        ("storage", ["dtype", "device", "unary", "binary", "affine", "fill", "apply_scale"]),
        ("device", ["zeros", "storage_from_slice", "location"]),
        ("custom_ops", ["Scale1", "Bump2"]),
    ],
)
def test_every_entry_with_its_registry_line(page, section, names):
    table = rows(page)
    for name in names:
        row = (
            table[f"`{name}`"]
            if section != "storage" or name not in ("unary", "binary")
            else [r for r in (line for line in page.splitlines() if line.startswith(f"| `{name}` | `Storage."))][
                0
            ].split(" | ")
        )
        assert row[-1].rstrip(" |") == f"`{MINI}:{declared_line(name, section)}`", (section, name)


def test_status_agrees_with_parity(page):
    parity = json.loads(run_cli("--registry", MINI, "parity", "--format", "json").stdout)
    ops = [r for r in parity if not r["op"].startswith("to_device")]
    lines = page.splitlines()
    header = lines[lines.index("## Storage ops") + 2]
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert columns == ["op", "signature", "dtypes", "notes", "cpu", "gpu", "declared"]
    for row in ops:
        kind, name = row["op"].split(".")
        section = {
            "storage": "## Storage ops",
            "device": "## Device methods",
            "nn": "## NN ops",
            "qstorage": "## QStorage methods",
        }[kind]
        line = next(ln for ln in lines[lines.index(section) :] if ln.startswith(f"| `{name}` |"))
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        assert cells[4:6] == [WORDS[row["cpu"]], WORDS[row["gpu"]]], row


def test_signatures_dtypes_and_notes(page):
    table = rows(page)
    assert table["`affine`"][1:4] == [
        "`Storage.affine(layout: Layout, mul: float, add: float) -> Storage`",
        "self: f32, bf16",
        "falls back to cpu; x * mul + add",
    ]
    assert table["`apply_scale`"][3:6] == ["runs `op.<backend>_fwd`", "hook", "hook"]
    assert table["`div`"][1] == "`float: x / y; uint: x // y`"
    assert table["`Scale1`"][1:5] == ["1", "(storage, shape)", "`cpu_fwd(s1, l1)`, `gpu_fwd(s1, l1)`", "`apply_scale`"]
    assert table["`to_device` from gpu"] == ["`to_device` from gpu", "implemented", "implemented"]


def test_pipes_in_expressions_stay_inside_their_cell(tmp_path):
    registry = mini_copy(tmp_path)
    registry.write_text(registry.read_text().replace('neg: {numpy: "-x", hip: "-x"', 'neg: {numpy: "-x", hip: "x | 0"'))
    page = run_cli("--registry", registry, "docs").stdout
    assert "| `neg` | `-x` | `x \\| 0` |" in page


def test_out_writes_the_same_bytes(tmp_path, page):
    out = tmp_path / "ops.md"
    result = run_cli("--registry", MINI, "docs", "--out", out)
    assert result.exit_code == 0 and result.stdout == f"wrote     {out}\n"
    assert out.read_text() == page
    missing = run_cli("--registry", MINI, "docs", "--out", tmp_path / "no" / "ops.md")
    assert missing.exit_code == 2
    assert missing.stderr == f"error: {tmp_path / 'no'} is not a directory; nothing written\n"

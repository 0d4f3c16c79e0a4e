"""Hostile registries end quickly, in bounded memory, with one FILE:LINE:COL diagnostic, exit 2
and nothing written: alias bombs ("billion laughs"), aliases that contain themselves, deep
nesting and a 10 MB value. Each `gen` runs in a subprocess with an address-space limit (a bomb
expanded in memory would fail there) and a generous timeout that only guards against a hang."""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys

import pytest
from gen_harness import DIAGNOSTIC, MINI_RT, REPO

MEMORY = 1 << 30  # bytes of address space for the whole `gen` process
HANG = 60  # seconds; the runs take a fraction of one


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def laughs(levels: int, width: int) -> str:
    lines = ["version: 1", 'l0: &l0 "lol"']
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


HOSTILE = {
    # 9^9 = 387 million values from 600 bytes; 2^40 values from one alias pair per level.
    "billion_laughs": (laughs(9, 9), "alias *l"),
    "binary_laughs": (laughs(40, 2), "alias *l"),
    # Mappings of aliases expand like lists do.
    "mapping_laughs": (
        "a: &a {x: 1, y: 2}\n"
        + "".join(
            f"b{i}: &b{i} {{p: *{'a' if i == 0 else f'b{i - 1}'}, q: *{'a' if i == 0 else f'b{i - 1}'}}}\n"
            for i in range(40)
        ),
        "alias *b",
    ),
    "alias_contains_itself": ("x: &x [1, *x]\n", "alias contains itself"),
    "deep_flow": ("x: " + "[" * 900 + "]" * 900 + "\n", "nest more than"),
    "deep_block": ("".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v\n", "nest more than"),
    "huge_scalar": ("version: 1\ndoc: " + "a" * 10_000_000 + "\n", "a value of 10,000,000 characters"),
    "huge_key": ("version: 1\n? " + "k" * 10_000_000 + "\n: 1\n", "a value of 10,000,000 characters"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_registry_is_rejected_in_bounded_memory(tmp_path, name):
    text, fragment = HOSTILE[name]
    registry = tmp_path / "ops.yaml"
    registry.write_text(text, encoding="utf-8")
    out = tmp_path / "generated"
    proc = subprocess.run(
        [sys.executable, "-m", "generator.cli", "--registry", str(registry), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=HANG,
        preexec_fn=_limit_memory,
    )
    assert proc.returncode == 2, f"exit {proc.returncode}:\n{proc.stderr[-3000:]}"
    lines = proc.stderr.splitlines()
    assert len(lines) == 2, proc.stderr[:3000]
    m = DIAGNOSTIC.match(lines[0])
    assert m and m["path"] == str(registry) and fragment in m["message"], lines[0][:500]
    assert lines[1] == f"{registry}: 1 error; nothing written"
    assert not out.exists()


def test_aliases_within_the_cap_load_as_their_values(tmp_path):
    """The cap is on expansion, not on aliases: a dtype list shared by a thousand ops loads."""
    from generator.registry.loader import MAX_ALIAS_VALUES, load_text

    shared = "d: &d [f32, bf16]\n" + "".join(f"o{i}: *d\n" for i in range(1000))
    tree = load_text(shared, "r.yaml")
    assert all([n.value for n in tree.get(f"o{i}").value] == ["f32", "bf16"] for i in range(1000))
    assert MAX_ALIAS_VALUES > 1000 * 3


def test_a_diagnostic_is_one_line_whatever_the_value():
    from generator.registry.diagnostics import Diagnostic, Position

    breaks = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
    text = str(Diagnostic(Position("r.yaml", 3, 4), f"k{breaks}", f"unknown kind u{breaks}int"))
    assert text.splitlines() == [text]
    assert text == (
        "r.yaml:3:4: unknown kind u\\n\\r\\x0b\\x0c\\x1c\\x1d\\x1e\\x85\\u2028\\u2029int "
        "(at k\\n\\r\\x0b\\x0c\\x1c\\x1d\\x1e\\x85\\u2028\\u2029)"
    )


@pytest.mark.parametrize("space", ["\u2028", "\u0085", "\u3000", "\n", " \t"])
def test_an_expression_is_generated_as_it_was_checked(space):
    """The check parses the expression without the whitespace around it (str.strip, which
    knows Unicode's); the generated code must hold that same text, not the raw value, or a
    U+2028 before it is a SyntaxError in the package (found by OPGEN_FUZZ=40)."""
    from gen_harness import MINI, render_text

    text = MINI.read_text(encoding="utf-8").replace('uint: "x // y"', f'uint: "{space}x // y{space}"', 1)
    assert text != MINI.read_text(encoding="utf-8")
    source = render_text(text, str(MINI))["kernels_numpy.py"]
    compile(source, "kernels_numpy.py", "exec")
    assert "    return x // y\n" in source


# ----------------------------------------------------------------------------- numbers

# Every numeric field of the schema, as an edit of the fixture registry: (key, text before
# the number, text after it). kernel_facts is appended (the fixture declares none).
NUMBERS = {
    "version": ("version: ", "\n"),
    "custom_ops.Scale1.inputs": ("  Scale1: {inputs: ", ", inplace: false"),
    "quantized.q8.block": ("  q8: {block: ", ", bytes: 8"),
    "quantized.q8.bytes": ("bytes: ", ", ggml_type: 99"),
    "quantized.q8.ggml_type": ("ggml_type: ", ', doc: "a toy format'),
    "kernel_facts.ROWS.value": ("  ROWS: {value: ", "}"),
}
FIXTURE_NUMBERS = {"version": "1", "custom_ops.Scale1.inputs": "1", "quantized.q8.block": "4"}
FIXTURE_NUMBERS |= {"quantized.q8.bytes": "8", "quantized.q8.ggml_type": "99", "kernel_facts.ROWS.value": "64"}


def _int_specs(spec, key: str = ""):
    """(key, Int) of every integer the schema declares, through records, maps, lists, any-ofs."""
    from generator.registry import spec as s

    if isinstance(spec, s.Int):
        yield key, spec
    elif isinstance(spec, s.Record):
        for name, field in spec.fields.items():
            yield from _int_specs(field, f"{key}.{name}" if key else name)
    elif isinstance(spec, (s.Map, s.List)):
        yield from _int_specs(spec.value if isinstance(spec, s.Map) else spec.item, f"{key}.*")
    elif isinstance(spec, s.AnyOf):
        for option in spec.options:
            yield from _int_specs(option, key)


def test_every_number_of_the_schema_has_both_bounds():
    from generator.registry.spec import REGISTRY

    found = dict(_int_specs(REGISTRY))
    assert len(found) == len(NUMBERS), sorted(found)  # NUMBERS names each one
    for key, spec in found.items():
        assert spec.minimum is not None and spec.maximum is not None, key
        assert spec.maximum < 2**31, key  # what a C int holds: kernel_facts.h #defines them


def _registry_with(key: str, number: str) -> tuple[str, int, int]:
    """The fixture registry with `number` at `key`: (text, line, column) of the number."""
    from gen_harness import MINI

    text = MINI.read_text(encoding="utf-8") + "\nkernel_facts:\n  ROWS: {value: 64}\n"
    before, after = NUMBERS[key]
    old = f"{before}{FIXTURE_NUMBERS[key]}{after}"
    assert text.count(old) == 1, old
    at = text.index(old) + len(before)
    text = text.replace(old, f"{before}{number}{after}")
    line = text.count("\n", 0, at) + 1
    return text, line, at - text.rfind("\n", 0, at)


def _bound(key: str) -> int:
    """The schema's maximum of the field at `key` (the names the registry chose read as *)."""
    from generator.registry.spec import REGISTRY

    parts = key.split(".")
    schema_key = ".".join(p if i in (0, len(parts) - 1) else "*" for i, p in enumerate(parts))
    return dict(_int_specs(REGISTRY))[schema_key].maximum


@pytest.mark.parametrize("number", ["above", "9" * 400, "1" * 4301, "-1", "0x" + "f" * 20])
@pytest.mark.parametrize("key", sorted(NUMBERS))
def test_a_number_out_of_bounds_is_one_diagnostic(tmp_path, key, number):
    """No traceback for any number (Python refuses to make an int of more than 4,300 digits),
    nothing written, and one FILE:LINE:COL diagnostic at the number naming its key (a custom
    op's inputs out of bounds also meets the ops that use it: their own diagnostics)."""
    from gen_harness import crashed, diagnostics, run_cli

    if number == "above":
        number = str(_bound(key) + 1)
    text, line, col = _registry_with(key, number)
    registry = tmp_path / "ops.yaml"
    registry.write_text(text, encoding="utf-8")
    shutil.copytree(MINI_RT, tmp_path / "mini_rt")
    result = run_cli("--registry", registry, "--out", tmp_path / "out")
    assert result.exit_code == 2 and not crashed(result), result.output[-2000:]
    found = diagnostics(result, registry)
    assert len(found) == len(result.stderr.splitlines()) - 1, result.stderr[-2000:]  # and the summary line
    [message] = [m for at_line, at_col, m in found if (at_line, at_col) == (line, col)]
    assert message.endswith(f"(at {key})") and len(message) < 300, message
    assert not (tmp_path / "out").exists()


def test_the_bounds_themselves_are_accepted(tmp_path):
    from gen_harness import model_of_text

    for key in ("quantized.q8.block", "kernel_facts.ROWS.value", "quantized.q8.ggml_type"):
        text, _, _ = _registry_with(key, str(_bound(key)))
        model_of_text(text)


@pytest.mark.parametrize("brk", ["\u2028", "\u2029", "\x85", "\r"])
def test_positions_count_newlines_whatever_other_breaks_yaml_sees(brk):
    """YAML 1.1 breaks lines at \\r, NEL and the Unicode separators too; a diagnostic's
    FILE:LINE:COL counts the "\\n" lines an editor and grep show."""
    from generator.registry.loader import load_text

    text = f"{brk}{brk}version: 1\na: {{b: [x, y]}}\nc: 2\n"
    tree = load_text(text, "r.yaml")
    assert (tree.get("version").position.line, tree.get("version").position.col) == (1, 12)
    y = tree.get("a").get("b").value[1]
    assert (y.value, y.position.line, y.position.col) == ("y", 2, 12)
    assert tree.get("c").position.line == 3


def _same_nodes(ours, theirs) -> None:
    assert (type(ours), ours.tag, ours.start_mark.index) == (type(theirs), theirs.tag, theirs.start_mark.index)
    if isinstance(ours.value, list):
        assert len(ours.value) == len(theirs.value)
        for mine, other in zip(ours.value, theirs.value):
            pairs = zip(mine, other) if isinstance(mine, tuple) else [(mine, other)]
            for a, b in pairs:
                _same_nodes(a, b)
    else:
        assert ours.value == theirs.value


def test_the_loader_composes_what_the_safe_loader_composes():
    """The loader skips the path-resolver steps safe loading never uses, and remembers scalar
    tags: the nodes, their tags and positions are PyYAML's SafeLoader's, on the shipped
    registry and on one with explicit tags, aliases, flow collections and every scalar kind."""
    import yaml

    from generator.registry.loader import _LOADER

    assert not _LOADER.yaml_path_resolvers
    odd = (
        "a: &x {b: [1, 2.5, true, null, ~, '3', 0x1f, 1e3, .inf, yes]}\n"
        "c: *x\n"
        "d: !!str 12\n"
        "e: !custom [1]\n"
        "f: !!map {g: h}\n"
        "i:\n  - - j\n    - {k: l}\n  - !!seq []\n"
    )
    for text in ((REPO / "ops.yaml").read_text(encoding="utf-8"), odd):
        _same_nodes(yaml.compose(text, Loader=_LOADER), yaml.compose(text, Loader=yaml.SafeLoader))

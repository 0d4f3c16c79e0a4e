"""Property tests (hypothesis).

(a) Random valid registries (random dtype subsets and names, backends drawn from the fixture
    runtimes, elementwise ops from a pool of expressions, storage ops with random parameter
    lists) generate packages that import, and ops dispatched through Storage on the cpu
    backend compute what the registry's numpy expressions say.
(b) Random mutations of a valid registry's text (numbers made huge among them) never end in
    a traceback: `gen` exits 0, or exits 2 with every problem as FILE:LINE:COL: message.
    Random symbolic links among the output's folders and files are never written through.

Examples are few and derandomized: the suite stays fast on two cores and a failure
reproduces on every run. OPGEN_FUZZ=N runs N times as many, random ones (a new draw each
run; hypothesis keeps a failure in .hypothesis/ and replays it first next time):
    OPGEN_FUZZ=20 .venv/bin/python -m pytest -q tests/generator/test_gen_properties.py"""

from __future__ import annotations

import itertools
import keyword
import os
import re
import shutil

import ml_dtypes
import numpy as np
import pytest
import yaml
from gen_harness import (
    DIAGNOSTIC,
    MINI,
    crashed,
    render_text,
    run_cli,
    undefined_globals,
    unused_imports,
    write_package,
)
from hypothesis import HealthCheck, assume, event, given, settings, strategies as st

from generator.model import PARAM_TYPES, QUANTIZED_TYPES, RETURN_TYPES
from generator.registry.diagnostics import RegistryError
from runtime.errors import NotImplementedForBackend
from runtime.layout import Layout

FUZZ = int(os.environ.get("OPGEN_FUZZ") or 0)


def examples(n: int) -> int:
    return n * FUZZ if FUZZ else n


PROPERTY = settings(
    max_examples=examples(30),
    deadline=None,
    derandomize=not FUZZ,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# ----------------------------------------------------------------------------- (a) valid registries

# Every top-level name of the fixture runtimes (an op of that name would be implemented, and
# called with made-up arguments), names the generated classes reserve, and `missing`, a
# backend name that the generator does not reject although it breaks the package (see
# tests/fixtures/broken/backend_name_shadows_generated_name.yaml).
TAKEN = {
    "all",
    "backend",
    "inner",
    "ordinal",
    "parse",
    "available",
    "missing",
    "view",
    "availability",
    "to_numpy",
    "to_host",
    "from_host",
    "device",
    "to_device",
    "dtype",
    "unary",
    "binary",
    "cmp",
    "affine",
    "fill",
    "zeros",
    "storage_from_slice",
    "location",
    "self",
    "np",
    "special",
    "reduce",
    "apply",
}

# Lower-case names without underscores: they cannot collide with generated helper names
# (`_lowp1`, `unary_<op>_<kind>`, ...).
NAME = st.from_regex(r"[a-z][a-z0-9]{1,6}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and not keyword.issoftkeyword(n) and n not in TAKEN
)

# numpy name -> kind; half types compute in the registry's float32 dtype when there is one.
NUMPY_DTYPES = {
    "uint8": "uint",
    "uint32": "uint",
    "int32": "int",
    "int64": "int",
    "float32": "float",
    "float64": "float",
    "float16": "float",
    "bfloat16": "float",
}
HALF = {"float16", "bfloat16"}

UNARY = [
    "-x",
    "x * x",
    "np.abs(x)",
    "x + 1",
    "np.maximum(x, 0)",
    {"float": "np.exp(x)", "int": "x * 2", "uint": "x + 1"},
    {"float": "np.sqrt(x)", "int": "-x", "uint": "x"},
]
BINARY = [
    "x + y",
    "x * y",
    "np.maximum(x, y)",
    "np.minimum(x, y)",
    {"float": "x / y", "int": "x // y", "uint": "x // y"},
]
CMP = ["x < y", "x == y", "x >= y", "x != y"]
REDUCE = ["np.sum(x, axis=-1, dtype=x.dtype)", "np.max(x, axis=-1)"]
POOLS = {"unary": UNARY, "binary": BINARY, "cmp": CMP, "reduce": REDUCE}

SIMPLE_PARAM_TYPES = sorted(set(PARAM_TYPES) - QUANTIZED_TYPES)  # quantized types need formats


@st.composite
def registries(draw):
    """A valid registry as a dict (dumped to YAML by the test)."""
    names = iter(draw(st.lists(NAME, min_size=40, max_size=40, unique=True)))
    numpy_names = draw(st.lists(st.sampled_from(sorted(NUMPY_DTYPES)), min_size=1, max_size=5, unique=True))
    dtypes = {}
    by_numpy = {n: next(names) for n in numpy_names}
    for n in numpy_names:
        spec = {"numpy": n, "kind": NUMPY_DTYPES[n]}
        if n in HALF and "float32" in by_numpy:
            spec["compute"] = by_numpy["float32"]
        dtypes[by_numpy[n]] = spec
    dnames = list(dtypes)

    reg: dict = {"version": 1, "dtypes": dtypes}
    sets = {}
    if draw(st.booleans()):
        sets[next(names)] = draw(st.lists(st.sampled_from(dnames), min_size=1, unique=True))
        reg["dtype_sets"] = sets

    cpu = next(names)
    backends = {cpu: {"runtime": "mini_rt.cpu", "kernels": "numpy", "ordinal": draw(st.booleans())}}
    for runtime in draw(st.lists(st.sampled_from(["mini_rt.cpu", "mini_rt.gpu", "mini_rt.rocm2"]), max_size=2)):
        spec = {"runtime": runtime, "ordinal": draw(st.booleans())}
        if runtime == "mini_rt.cpu":
            spec["kernels"] = "numpy"
        backends[next(names)] = spec
    reg["backends"] = backends

    def dtype_list():
        if sets and draw(st.booleans()):
            return next(iter(sets))
        if draw(st.booleans()):
            return "all"
        return draw(st.lists(st.sampled_from(dnames), min_size=1, unique=True))

    for family, pool in POOLS.items():
        ops = {}
        for _ in range(draw(st.integers(0, 2))):
            ops[next(names)] = {"numpy": draw(st.sampled_from(pool)), "dtypes": dtype_list()}
        if ops:
            reg[family] = ops

    storage: dict = {"dtype": {"params": {}, "returns": "DType"}}
    if "unary" in reg:
        storage["unary"] = {"params": {"op": "UnaryOp", "layout": "Layout"}, "returns": "Storage"}
    for family, enum in (("binary", "BinaryOp"), ("cmp", "CmpOp")):
        if family in reg:
            storage[family] = {
                "params": {"op": enum, "rhs": "Storage", "lhs_layout": "Layout", "rhs_layout": "Layout"},
                "returns": "Storage",
                "same_dtype": ["self", "rhs"],
                "same_shape": ["lhs_layout", "rhs_layout"],
            }
    storage["affine"] = {
        "params": {"layout": "Layout", "mul": "float", "add": "float"},
        "returns": "Storage",
        "fallback": cpu,
    }
    enums = [
        t
        for t, fam in (("UnaryOp", "unary"), ("BinaryOp", "binary"), ("CmpOp", "cmp"), ("ReduceOp", "reduce"))
        if fam in reg
    ]
    trait = next(names).capitalize() + "Op"
    for _ in range(draw(st.integers(0, 3))):
        pnames = draw(st.lists(NAME, max_size=4, unique=True))
        params = {p: draw(st.sampled_from([*SIMPLE_PARAM_TYPES, *enums, trait])) for p in pnames}
        storage[next(names)] = {
            "params": params,
            "returns": draw(st.sampled_from(sorted(set(RETURN_TYPES) - QUANTIZED_TYPES))),
        }
    storage["apply"] = {"params": {"layout": "Layout", "op": trait}, "returns": "StorageShape", "hook": "op"}
    reg["storage"] = storage
    reg["device"] = {
        "storage_from_slice": {"params": {"array": "Array"}, "returns": "Storage"},
        "location": {"params": {}, "returns": "str"},
    }
    reg["custom_ops"] = {trait: {"inputs": 1, "inplace": False}}
    return reg


def _np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _expected(reg, family, expr, dname, x, y=None):
    """What the registry says the op computes: the expression for the dtype's kind, in its
    compute dtype, cast to the result dtype (u8 for comparisons where the registry has u8)."""
    spec = reg["dtypes"][dname]
    if isinstance(expr, dict):
        expr = expr[spec["kind"]]
    compute = _np_dtype(reg["dtypes"][spec["compute"]]["numpy"]) if "compute" in spec else x.dtype
    env = {"np": np, "x": x.astype(compute), "y": None if y is None else y.astype(compute)}
    out = np.asarray(eval(expr, {"__builtins__": {}}, env))
    result = x.dtype
    if family == "cmp" and "u8" in reg["dtypes"]:  # the dtype *named* u8, whatever it is
        result = _np_dtype(reg["dtypes"]["u8"]["numpy"])
    return out.astype(result)


def _dtypes_of(reg, op_spec):
    listed = op_spec["dtypes"]
    if isinstance(listed, list):
        return listed
    if listed == "all":
        return list(reg["dtypes"])
    return reg["dtype_sets"][listed]


_counter = itertools.count()


@PROPERTY
@given(reg=registries())
def test_random_valid_registries_generate_working_packages(reg, tmp_path_factory, package_importer):
    text = yaml.safe_dump(reg, sort_keys=False)
    try:
        rendered = render_text(text, "random.yaml")
    except RegistryError as exc:
        pytest.fail(f"a valid registry was rejected:\n{exc}\n---\n{text}")
    for name, source in rendered.items():
        if name.endswith(".py"):
            assert not undefined_globals(source, name), f"{name} reads undefined names\n---\n{text}"
            assert not unused_imports(source), f"{name} imports names it never uses\n---\n{text}"
    out = write_package(rendered, tmp_path_factory.getbasetemp() / f"randpkg{next(_counter)}")
    m = package_importer(out)

    assert [b.value for b in m.Backend] == list(reg["backends"])
    assert [d.value for d in m.DType] == list(reg["dtypes"])
    for family, enum in (("unary", m.UnaryOp), ("binary", m.BinaryOp), ("cmp", m.CmpOp), ("reduce", m.ReduceOp)):
        assert [o.value for o in enum] == list(reg.get(family, {}))

    cpu_name = next(iter(reg["backends"]))
    cpu = m.Device(m.Backend(cpu_name))
    layout = Layout.contiguous((4,))
    for dname, spec in reg["dtypes"].items():
        x = np.array([1, 2, 3, 4]).astype(_np_dtype(spec["numpy"]))
        y = np.array([2, 1, 3, 1]).astype(x.dtype)
        s, t = cpu.storage_from_slice(x), cpu.storage_from_slice(y)
        assert s.dtype() is m.DType(dname)
        for op, op_spec in reg.get("unary", {}).items():
            if dname in _dtypes_of(reg, op_spec):
                got = m.to_numpy(s.unary(m.UnaryOp(op), layout), layout)
                want = _expected(reg, "unary", op_spec["numpy"], dname, x)
                np.testing.assert_array_equal(got, want, err_msg=f"unary {op} on {dname}")
                assert got.dtype == want.dtype
        for family, enum in (("binary", m.BinaryOp), ("cmp", m.CmpOp)):
            for op, op_spec in reg.get(family, {}).items():
                if dname in _dtypes_of(reg, op_spec):
                    got = m.to_numpy(getattr(s, family)(enum(op), t, layout, layout), layout)
                    want = _expected(reg, family, op_spec["numpy"], dname, x, y)
                    np.testing.assert_array_equal(got, want, err_msg=f"{family} {op} on {dname}")
                    assert got.dtype == want.dtype
        got = m.to_numpy(s.affine(layout, 2.0, 1.0), layout)
        np.testing.assert_array_equal(got, (x.astype(np.float64) * 2 + 1).astype(x.dtype))

    for name, backend in reg["backends"].items():  # `affine` falls back to cpu where a runtime lacks it
        if backend["runtime"] == "mini_rt.gpu":
            g = m.Device(m.Backend(name)).storage_from_slice(np.array([1.0, 2.0, 3.0, 4.0], np.float64))
            moved = g.affine(layout, 2.0, 1.0)
            assert moved.backend is m.Backend(name)
            assert m.to_numpy(moved, layout).tolist() == [3.0, 5.0, 7.0, 9.0]

    s = cpu.storage_from_slice(np.array([1, 2, 3, 4], np.uint8))
    for op, op_spec in reg["storage"].items():  # the random ops: no runtime has them
        if op in ("dtype", "unary", "binary", "cmp", "affine", "apply"):
            continue
        args = [s if t == "Storage" else None for t in op_spec["params"].values()]
        with pytest.raises(NotImplementedForBackend) as exc:
            getattr(s, op)(*args)
        assert (exc.value.backend, exc.value.op) == (cpu_name, op)


# ----------------------------------------------------------------------------- (b) mutations

BASE = MINI.read_text(encoding="utf-8")
BASE_LINES = BASE.splitlines(keepends=True)
SCALARS = [
    "1",
    "0",
    "-1",
    "2",
    "1.5",
    "true",
    "false",
    "null",
    "~",
    "[]",
    "{}",
    "x",
    "f32",
    "u8",
    "all",
    "float",
    "Storage",
    "Layout",
    "None",
    "cpu",
    "gpu",
    "'a b'",
    '"x +"',
    '"np.exp(x)"',
    "[f32, nope]",
    "{a: 1}",
    "mini_rt.nope",
    "mini_rt.gpu",
    "class",
    "Scale1",
    "op",
    "!!str 3",
    "&a 1",
    "*a",
    "|",
    ">",
    "'",
    '"',
    """'the "fast" path'""",
    "'C:\\xdir'",
] + ["a" * 40]
GARBAGE = st.one_of(
    st.text(alphabet=" \t\n:-{}[],#&*!|>'\"%@`?=.xyz019\u00e9", min_size=1, max_size=12),
    st.sampled_from(["\x07", "\x00", "\x1b[0m", "\ufeff", "\u2028", "\U0001f600", "\\", "\\x"]),  # pasted junk
)
KEY = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)(\s*:)", re.M)
# Numbers at every bound and far past them: Python makes no int of more than 4,300 digits,
# and a number the schema left unbounded went into kernel_facts.h as it was.
HUGE = st.sampled_from(
    ["1" * 4301, "9" * 400, "2147483648", "65537", "0x" + "f" * 40, "-2147483649", "2147483647", "65536"]
    + ["1_000_000_000_000", "0o777777777777", "1:00:00:00:00", "1e400", "-0", "+7", "4"]
)
NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")


@st.composite
def mutants(draw):
    lines = list(BASE_LINES)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["number", "delete", "duplicate", "scalar", "garbage", "indent", "rename"]))
        line = lines[i]
        if kind == "number":  # a number of the registry (version, inputs, block, bytes, ...), made huge
            numbers = [(m.start(), m.end()) for m in NUMBER.finditer(BASE)]
            start, end = draw(st.sampled_from(numbers))
            at = BASE.count("\n", 0, start)
            if at < len(lines) and lines[at] == BASE_LINES[at]:
                col = start - (BASE.rfind("\n", 0, start) + 1)
                lines[at] = lines[at][:col] + draw(HUGE) + lines[at][col + end - start :]
        elif kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, line)
        elif kind == "scalar":
            tokens = list(re.finditer(r"[A-Za-z0-9_.\-\"']+", line))
            if tokens:
                t = draw(st.sampled_from(tokens))
                lines[i] = line[: t.start()] + draw(st.sampled_from(SCALARS)) + line[t.end() :]
        elif kind == "garbage":
            col = draw(st.integers(0, len(line)))
            lines[i] = line[:col] + draw(GARBAGE) + line[col:]
        elif kind == "indent":
            stripped = line.lstrip(" ")
            width = draw(st.sampled_from([0, 1, 2, 3, 4, 6]))
            lines[i] = draw(st.sampled_from([" " * width, "\t"])) + stripped
        else:
            m = KEY.match(line)
            if m:
                new = draw(
                    st.sampled_from(
                        [
                            m[2] + "s",
                            m[2][:-1] or "x",
                            m[2].upper(),
                            "version",
                            "storage",
                            "dtypes",
                            "params",
                            "returns",
                            "x-y",
                            "1",
                            "self",
                            "doc",
                        ]
                    )
                )
                lines[i] = line[: m.start(2)] + new + line[m.end(2) :]
        if not lines:
            lines = ["\n"]
    return "".join(lines)


@settings(PROPERTY, max_examples=examples(200))
@given(text=mutants())
def test_mutated_registries_never_crash(text, ws, package_importer):
    assume(text != BASE)
    n = next(_counter)
    registry = ws / f"mutant{n}.yaml"
    registry.write_text(text, encoding="utf-8")
    out = ws / f"mutant_out{n}"
    result = run_cli("--registry", registry, "--out", out)
    assert not crashed(result), f"traceback: {result.exception!r}\n---\n{text}"
    assert result.exit_code in (0, 2), f"exit {result.exit_code}\n{result.output}\n---\n{text}"
    if result.exit_code == 0:
        package_importer(out)  # a registry gen accepts generates a package that imports
        return
    assert not out.exists()
    lines = result.stderr.splitlines()
    assert lines[-1].startswith(f"{registry}: ") and lines[-1].endswith("; nothing written"), (
        f"not a registry diagnostic:\n{result.stderr}\n---\n{text}"
    )
    assert len(lines) >= 2
    n_lines = text.count("\n") + 1
    for line in lines[:-1]:
        m = DIAGNOSTIC.match(line)
        assert m and m["path"] == str(registry), f"not FILE:LINE:COL: message: {line!r}\n---\n{text}"
        assert 1 <= int(m["line"]) <= n_lines and int(m["col"]) >= 1, line


LINKABLE = [
    "generated",
    "generated/rust",
    "generated/__pycache__",
    "generated/storage.py",
    "generated/rust/storage.rs",
    "generated/rust/nope.rs",
]


@pytest.fixture(scope="module")
def rust_workspace(tmp_path_factory):
    """The rust fixture (a python and a rust target folder), generated."""
    from test_gen_rust import fixture_copy

    registry = fixture_copy(tmp_path_factory.mktemp("linked"))
    assert run_cli("--registry", registry).exit_code == 0
    return registry.parent


@settings(PROPERTY, max_examples=examples(12))
@given(
    links=st.sets(st.sampled_from(LINKABLE), min_size=1, max_size=3),
    edit=st.booleans(),
    check=st.booleans(),
)
def test_linked_output_paths_are_never_written_through(links, edit, check, rust_workspace, tmp_path_factory):
    """Any of the output's folders or files replaced by a link to a copy elsewhere: gen and
    gen --check exit 0 or 2, never with a traceback, and what the links lead to is unchanged."""
    from gen_harness import snapshot

    root = tmp_path_factory.mktemp("links")
    ws, elsewhere = root / "ws", root / "elsewhere"
    shutil.copytree(rust_workspace, ws)
    elsewhere.mkdir()
    for n, rel in enumerate(sorted(links, key=len)):
        path = ws / rel
        if not path.parent.is_dir() or path.parent.is_symlink():
            continue  # inside a folder already linked
        target = elsewhere / str(n)
        if path.exists():
            shutil.move(path, target)
        else:
            target.write_text("// not generated\n")
        path.symlink_to(target, target_is_directory=target.is_dir())
    if edit:
        registry = ws / "rust.yaml"
        old = "  gpu: {runtime: mini_rt.gpu, ordinal: true}\n"
        registry.write_text(
            registry.read_text().replace(old, old + "  rocm2: {runtime: mini_rt.rocm2, ordinal: true}\n")
        )
    before = snapshot(elsewhere)
    result = run_cli("--registry", ws / "rust.yaml", *(["--check"] if check else []))
    assert not crashed(result), f"traceback: {result.exception!r}"
    assert result.exit_code in (0, 1, 2) and (result.exit_code != 1 or check), result.output
    assert snapshot(elsewhere) == before, f"written through a link: {sorted(links)}"
    event(f"exit {result.exit_code}")


# ----------------------------------------------------------------------------- (c) aliases


@st.composite
def alias_documents(draw):
    """Definitions a0..aN, each a list or mapping of scalars and aliases of earlier ones:
    from a few values to alias bombs of 12^12."""
    defs = []
    bomb = draw(st.booleans())  # each level aliases the one before several times
    for i in range(draw(st.integers(8, 12) if bomb else st.integers(1, 12))):
        item = st.just("x") if i == 0 else st.one_of(st.just("x"), st.integers(0, i - 1))
        chain = [i - 1] * draw(st.integers(4, 12)) if bomb and i else []
        defs.append(
            (draw(st.sampled_from(["seq", "map"])), draw(st.permutations(chain + draw(st.lists(item, max_size=4)))))
        )
    return defs


def _alias_text(defs) -> str:
    lines = []
    for i, (kind, items) in enumerate(defs):
        words = ["x" if it == "x" else f"*a{it}" for it in items]
        body = (
            f"[{', '.join(words)}]"
            if kind == "seq"
            else "{" + ", ".join(f"k{n}: {w}" for n, w in enumerate(words)) + "}"
        )
        lines.append(f"a{i}: &a{i} {body}\n")
    return "".join(lines)


def _plain(node):
    if node.tag == "map":
        return {k: _plain(v) for k, (_, v) in node.value.items()}
    if node.tag == "seq":
        return [_plain(v) for v in node.value]
    return node.value


@PROPERTY
@given(defs=alias_documents())
def test_aliases_load_as_their_values_or_stop_at_the_cap(defs):
    from generator.registry.loader import MAX_ALIAS_VALUES, load_text

    sizes: list[int] = []  # values each definition expands to, computed from the definitions
    repeated, crossing = 0, None
    for i, (kind, items) in enumerate(defs):
        size = 1
        for it in items:
            value = 1 if it == "x" else sizes[it]
            size += value + (kind == "map")  # a mapping's key is a value too
            if it != "x":
                repeated += value
                if repeated > MAX_ALIAS_VALUES and crossing is None:
                    crossing = (i, it)
        sizes.append(size)
    text = _alias_text(defs)
    event("loaded" if crossing is None else "refused at the cap")
    if crossing is None:
        assert _plain(load_text(text, "a.yaml")) == yaml.safe_load(text)
        return
    with pytest.raises(RegistryError) as info:
        load_text(text, "a.yaml")
    [diagnostic] = info.value.diagnostics
    assert diagnostic.position.line == crossing[0] + 1
    assert diagnostic.message.startswith(f"alias *a{crossing[1]} expands to {sizes[crossing[1]]:,} values")

"""`gen audit`: backend dispatch in hand-written Python and Rust that lacks a registry backend.

The fixtures (tests/fixtures/audit/) mirror real code: a Candle-like storage.rs with matches
complete, missing Rocm and sending it to `_ =>`; custom-op impls; a Python tensor module.
Every finding is pinned to its line and column; the readers are also checked one construct
at a time, and against Python's own parser for positions."""

from __future__ import annotations

import ast
import shutil
import textwrap

import pytest

from generator import audit_python, audit_rust
from generator.dispatch_coverage import normalize
from tools_helpers import AUDIT, AUDIT_REGISTRY, REPO, run_cli

BACKENDS = frozenset({"cpu", "cuda", "rocm"})
TRAITS = frozenset({"CustomOp1", "CustomOp2", "CustomOp3", "InplaceOp1", "InplaceOp2", "InplaceOp3"})

EXPECTED = [
    "candle/custom_ops.rs:8:1: impl CustomOp1 for SoftmaxLastDim defines cpu_fwd, cuda_fwd but not rocm_fwd",
    "candle/custom_ops.rs:52:1: impl CustomOp3 for LayerNorm defines cpu_fwd, cuda_fwd but not rocm_fwd",
    "candle/custom_ops.rs:68:1: impl InplaceOp1 for Sigmoid defines cpu_fwd but not cuda_fwd, rocm_fwd",
    "candle/quantized.rs:15:9: match on self has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/quantized.rs:45:9: match on self has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/quantized.rs:75:5: note: match on device sends Rocm to its wildcard arm (line 78)",
    "candle/storage.rs:40:9: match on self has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/storage.rs:61:27: note: match on (self, rhs) sends Rocm to its wildcard arm (line 65)",
    "candle/storage.rs:84:9: match on self has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/storage.rs:129:9: note: match on (self, rhs) sends Rocm to its wildcard arm (line 142)",
    "candle/storage.rs:177:9: match on self has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/storage.rs:244:9: match on (self, &kernel) has no arm for Rocm (arms for: Cpu, Cuda)",
    "pytensor/tensor.py:29:9: match on self.device.backend has no case for rocm (cases for: cpu, cuda)",
    "pytensor/tensor.py:36:9: if/elif chain over self.device.is_<backend>() has no branch for rocm "
    "(branches for: cpu, cuda)",
    "pytensor/tensor.py:51:9: note: match on self.device.backend sends cuda, rocm to its wildcard case (line 54)",
    "pytensor/tensor.py:58:9: match on (self.device.backend, src.device.backend) has no case for rocm "
    "(cases for: cpu, cuda)",
    "pytensor/tensor.py:66:9: note: if/elif chain over self.device.backend sends cpu to its wildcard branch (line 70)",
    "pytensor/tensor.py:90:1: class Softmax(CustomOp1) overrides cpu_fwd, cuda_fwd but not rocm_fwd",
    "pytensor/tensor.py:114:1: class ScaleInplace(InplaceOp1) overrides cpu_fwd but not cuda_fwd, rocm_fwd",
]
SUMMARY = [
    "candle/custom_ops.rs: 3 missing, 0 wildcard, in 4 dispatch points",
    "candle/quantized.rs: 2 missing, 1 wildcard, in 7 dispatch points",
    "candle/storage.rs: 4 missing, 2 wildcard, in 13 dispatch points",
    "pytensor/tensor.py: 5 missing, 2 wildcard, in 11 dispatch points",
    "audit: 10 files, 40 dispatch points, 14 missing, 5 wildcard, 6 files clean (backends: cpu, cuda, rocm)",
]


def audit(*args):
    return run_cli("--registry", AUDIT_REGISTRY, "audit", *args)


def relative(output: str) -> list[str]:
    return [line.replace(f"{AUDIT}/", "") for line in output.splitlines()]


def test_fixture_findings_and_summary():
    result = audit(AUDIT)
    assert result.exit_code == 1, result.output
    assert relative(result.stdout) == [*EXPECTED, *SUMMARY]
    assert result.stderr == ""


def test_one_language_at_a_time():
    rust = audit("--lang", "rust", AUDIT)
    assert [ln for ln in relative(rust.stdout) if ".py:" in ln] == []
    assert [ln for ln in relative(rust.stdout) if ln.startswith("candle/")][:12] == EXPECTED[:12]
    python = audit("--lang", "python", AUDIT / "pytensor")
    assert relative(python.stdout)[:7] == EXPECTED[12:]
    assert python.exit_code == rust.exit_code == 1


def test_complete_code_is_clean():
    result = audit(AUDIT / "complete")
    assert result.exit_code == 0, result.output
    assert relative(result.stdout) == [
        "audit: 2 files, 5 dispatch points, 0 missing, 0 wildcard, 2 files clean (backends: cpu, cuda, rocm)"]


def test_a_wildcard_is_a_note_not_a_failure(tmp_path):
    source = tmp_path / "w.py"
    source.write_text("def f(d):\n    match d.backend:\n        case Backend.CPU:\n            pass\n"
                      "        case _:\n            pass\n")
    result = audit(source)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        f"{source}:2:5: note: match on d.backend sends cuda, rocm to its wildcard case (line 5)")


def test_explicit_files_and_lang_override(tmp_path):
    source = tmp_path / "storage.txt"
    source.write_text("fn f(s: &Storage) { match s { Storage::Cpu(_) => 1, Storage::Cuda(_) => 2 } }\n")
    unknown = audit(source)
    assert unknown.exit_code == 2
    assert unknown.stderr == (f"{source}:1:1: cannot tell the language of this file (not .py or .rs); "
                              "pass --lang python or --lang rust\n")
    as_rust = audit("--lang", "rust", source)
    assert as_rust.exit_code == 1
    assert as_rust.stdout.splitlines()[0] == f"{source}:1:21: match on s has no arm for Rocm (arms for: Cpu, Cuda)"


@pytest.mark.parametrize("name, text, expected", [
    ("bad.py", "def f(d):\n    if d.is_cuda(:\n        pass\n", ":2:18: cannot parse as Python: invalid syntax\n"),
    ("bad.rs", "fn f() {\n    match x { Storage::Cpu(_) => 1,\n",
     ":3:1: cannot parse as Rust: unexpected end of file (unclosed brace?)\n"),
    ("arm.rs", "fn f() { match x { Storage::Cpu(_) => 1 Storage::Cuda(_) => 2 } }\n",
     ":1:40: cannot parse as Rust: expected ','\n"),
    ("latin1.py", b"# caf\xe9\n", ":1:1: not UTF-8: invalid continuation byte"),
])
def test_unreadable_sources_exit_2(tmp_path, name, text, expected):
    source = tmp_path / name
    source.write_bytes(text if isinstance(text, bytes) else text.encode())
    good = tmp_path / "good.py"
    good.write_text("class A(CustomOp1):\n    def cpu_fwd(self, s1, l1): ...\n")
    result = audit(tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{source}{expected}"), result.stderr
    assert f"{good}:1:1: class A(CustomOp1) overrides cpu_fwd but not cuda_fwd, rocm_fwd" in result.stdout, (
        "the other files are still audited")


def test_files_naming_no_backend_are_not_parsed(tmp_path):
    """They cannot hold a finding; most files of a tree are like that, and parsing dominates."""
    (tmp_path / "unrelated.py").write_text("def f(:\n")
    result = audit(tmp_path)
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("0 missing, 0 wildcard, 1 files clean (backends: cpu, cuda, rocm)\n")


def test_missing_path_and_broken_registry(tmp_path):
    result = audit(tmp_path / "nope")
    assert result.exit_code == 2
    assert result.stderr == f"{tmp_path / 'nope'}:1:1: no such file or directory\n"
    broken = tmp_path / "ops.yaml"
    broken.write_text("version: 2\ndtypes: {}\nbackends: {}\n")
    result = run_cli("--registry", broken, "audit", AUDIT)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{broken}:1:10: expected 1, got 2")


def test_parallel_equals_serial(tmp_path):
    for i in range(15):
        shutil.copytree(AUDIT / "candle", tmp_path / f"c{i:02}")
        shutil.copytree(AUDIT / "pytensor", tmp_path / f"p{i:02}")
    serial, parallel = audit("-j", "1", tmp_path), audit("-j", "2", tmp_path)
    assert serial.exit_code == parallel.exit_code == 1
    assert serial.stdout == parallel.stdout
    assert serial.stdout.splitlines()[-1].startswith("audit: 60 files, 525 dispatch points, 210 missing, 75 wildcard")


def test_python_positions_agree_with_cpython():
    """The statement locator (no PositionProvider) against the interpreter's own parser."""
    text = (AUDIT / "pytensor" / "tensor.py").read_text()
    found = audit_python.read(text, BACKENDS, TRAITS)
    tree = ast.parse(text)
    starts = {(n.lineno, n.col_offset + 1) for n in ast.walk(tree) if isinstance(n, (ast.Match, ast.If, ast.ClassDef))}
    points = [(d.line, d.col) for d in found.dispatches] + [(t.line, t.col) for t in found.impls]
    assert len(points) == 11
    assert set(points) <= starts


# -- the Python reader, construct by construct ------------------------------------------------


def py(source: str):
    found = audit_python.read(textwrap.dedent(source), BACKENDS, TRAITS)
    return [(d.line, [s.backends for s in d.slots], [s.wildcard_line for s in d.slots]) for d in found.dispatches]


@pytest.mark.parametrize("source, expected", [
    # a guarded wildcard takes nothing for sure
    ("match b:\n case On.CPU: pass\n case _ if x: pass\n", [(1, [frozenset({"cpu"})], [None])]),
    # a capture pattern is a wildcard
    ("match b:\n case On.CPU: pass\n case other: pass\n", [(1, [frozenset({"cpu"})], [3])]),
    # or-patterns, string values, nested attribute paths
    ("match b:\n case g.Backend.CPU | 'cuda': pass\n case 'rocm': pass\n",
     [(1, [frozenset({"cpu", "cuda", "rocm"})], [None])]),
    # each position of a tuple on its own; a non-backend position is ignored
    ("match (a, b, n):\n case (On.CPU, On.CUDA, 1): pass\n case (On.ROCM, _, 2): pass\n",
     [(1, [frozenset({"cpu", "rocm"}), frozenset({"cuda"})], [None, 3])]),
    # one backend named by a string alone is not a dispatch; by an enum member it is
    ("match mode:\n case 'cpu': pass\n case 'fast': pass\n", []),
    ("match b:\n case On.CPU: pass\n", [(1, [frozenset({"cpu"})], [None])]),
    # no backend at all
    ("match op:\n case UnaryOp.EXP: pass\n case _: pass\n", []),
])
def test_python_match(source, expected):
    assert py(source) == expected


@pytest.mark.parametrize("source, expected", [
    ("if d.is_cpu(): pass\nelif d.is_cuda(): pass\nelif d.is_rocm(): pass\n",
     [(1, [frozenset({"cpu", "cuda", "rocm"})], [None])]),
    # a lone test is a special case, not a dispatch
    ("if d.is_cuda(): pass\nelse: pass\n", []),
    # `in`, `==` both ways round, `or`; the else is the wildcard
    ("if x.kind in ('cpu', 'cuda'): pass\nelif 'rocm' == x.kind or x.kind == 'cpu': pass\nelse:\n    pass\n",
     [(1, [frozenset({"cpu", "cuda", "rocm"})], [3])]),
    # an elif chain is one dispatch, reported at its `if`; a nested chain is its own
    ("if d.is_cpu(): pass\nelif d.is_cuda():\n    if e.kind == 'cpu': pass\n    elif e.kind == 'cuda': pass\n",
     [(1, [frozenset({"cpu", "cuda"})], [None]), (3, [frozenset({"cpu", "cuda"})], [None])]),
    # tests on different subjects do not add up
    ("if a.is_cpu(): pass\nelif b.kind == 'cuda': pass\n", []),
])
def test_python_if_chains(source, expected):
    assert py(source) == expected


def test_python_custom_op_subclasses():
    found = audit_python.read(textwrap.dedent("""\
        @register
        class A(ops.CustomOp2):
            rocm_fwd = cuda_fwd = None
            def cpu_fwd(self): ...
        class B(CustomOp1[int]):
            def cpu_fwd(self): ...
        class C(Base):
            def cpu_fwd(self): ...
        """), BACKENDS, TRAITS)
    assert [(t.line, t.what, sorted(t.hooks)) for t in found.impls] == [
        (2, "class A(CustomOp2)", ["cpu", "cuda", "rocm"]), (5, "class B(CustomOp1)", ["cpu"])]


# -- the Rust reader, construct by construct --------------------------------------------------


def rs(source: str):
    found = audit_rust.read(textwrap.dedent(source).encode(), BACKENDS, TRAITS)
    return [(d.line, [s.backends for s in d.slots], [s.wildcard_line for s in d.slots]) for d in found.dispatches]


@pytest.mark.parametrize("source, expected", [
    # unit variants in scope (`use Device::*`), references, `ref`, `@` bindings, struct patterns
    ("fn f() { match d {\n Cpu => 1,\n &Self::Cuda(ref s) => 2,\n x @ Device::Rocm { .. } => 3,\n } }\n",
     [(1, [frozenset({"cpu", "cuda", "rocm"})], [None])]),
    # or-patterns inside a tuple position, and a binding that takes the rest
    ("fn f() { match (a, b) {\n (Self::Cpu(_) | Self::Cuda(_), Self::Cpu(_)) => 1,\n (lhs, _) => 2,\n } }\n",
     [(1, [frozenset({"cpu", "cuda"}), frozenset({"cpu"})], [3, 3])]),
    # a guarded `_` is not a wildcard
    ("fn f() { match s {\n Storage::Cpu(_) => 1,\n _ if flag => 2,\n } }\n", [(1, [frozenset({"cpu"})], [None])]),
    # strings: one backend's name alone is not a dispatch
    ('fn f() { match s { "cpu" => 1, _ => 2 } }\n', []),
    ('fn f() { match s { "cpu" => 1, "cuda" => 2, _ => 3 } }\n', [(1, [frozenset({"cpu", "cuda"})], [1])]),
    # Metal is not a registry backend; a match naming only it is not audited
    ("fn f() { match s { Storage::Metal(_) => 1, _ => 2 } }\n", []),
])
def test_rust_match(source, expected):
    assert rs(source) == expected


def test_rust_custom_op_impls():
    found = audit_rust.read(textwrap.dedent("""\
        impl<T: WithDType> candle::CustomOp1 for Cast<T> {
            fn cpu_fwd(&self) {}
            fn rocm_fwd(&self) {}
        }
        impl CustomOp2<'a> for X { fn name(&self) {} }
        impl Display for Y { fn cuda_fwd(&self) {} }
        """).encode(), BACKENDS, TRAITS)
    assert [(t.line, t.what, sorted(t.hooks)) for t in found.impls] == [
        (1, "impl CustomOp1 for Cast<T>", ["cpu", "rocm"]), (5, "impl CustomOp2 for X", [])]


def test_backend_names_normalize():
    assert {normalize(n) for n in ("CPU", "Cpu", "cpu")} == {"cpu"}
    assert normalize("MyGpu") == normalize("MY_GPU") == normalize("my_gpu")


def test_statement_locator_on_this_repository():
    """Every if, match and class of the repository's Python, located without libcst's
    PositionProvider, where CPython's parser puts it (elifs are part of their if)."""
    import libcst as cst

    checked = 0
    for path in sorted(p for d in ("generator", "runtime", "bench", "tests/fixtures") for p in (REPO / d).rglob("*.py")):
        text = path.read_text()
        module = cst.parse_module(text)
        locator = audit_python._Locator(module, text)
        elifs = set()
        got = []
        for stmt in audit_python.statements(module.body):
            if isinstance(stmt, cst.If) and isinstance(stmt.orelse, cst.If):
                elifs.add(id(stmt.orelse))
            if isinstance(stmt, (cst.If, cst.Match, cst.ClassDef)) and id(stmt) not in elifs:
                got.append(locator.locate(stmt))
        tree = ast.parse(text)
        elif_nodes = {id(n.orelse[0]) for n in ast.walk(tree)
                      if isinstance(n, ast.If) and len(n.orelse) == 1 and isinstance(n.orelse[0], ast.If)
                      and text.splitlines()[n.orelse[0].lineno - 1].lstrip().startswith("elif")}
        expected = sorted((n.lineno, n.col_offset + 1) for n in ast.walk(tree)
                          if isinstance(n, (ast.If, ast.Match, ast.ClassDef)) and id(n) not in elif_nodes)
        assert got == expected, path
        checked += len(got)
    assert checked > 400

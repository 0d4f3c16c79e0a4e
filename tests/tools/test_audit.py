"""`gen audit`: backend dispatch in hand-written Python and Rust that lacks a registry backend.

The fixtures (tests/fixtures/audit/) mirror real code: a Candle-like storage.rs with matches
complete, missing Rocm and sending it to `_ =>`; custom-op impls; a Python tensor module.
Every finding is pinned to its line and column; the readers are also checked one construct
at a time, and against Python's own parser for positions."""

from __future__ import annotations

import ast
import json
import shutil
import textwrap

import pytest
from tools_harness import AUDIT, AUDIT_REGISTRY, REPO, run_cli

from generator.audit import python as audit_python, rust as audit_rust
from generator.audit.coverage import normalize

BACKENDS = frozenset({"cpu", "cuda", "rocm"})

EXPECTED = [
    "candle/custom_ops.rs:8:1: impl CustomOp1 for SoftmaxLastDim defines cpu_fwd, cuda_fwd but not rocm_fwd",
    "candle/custom_ops.rs:52:1: impl CustomOp3 for LayerNorm defines cpu_fwd, cuda_fwd but not rocm_fwd",
    "candle/custom_ops.rs:68:1: impl InplaceOp1 for Sigmoid defines cpu_fwd but not cuda_fwd, rocm_fwd",
    "candle/dispatch_idioms.rs:6:1: trait CustomOp1 declares cpu_fwd, cuda_fwd but not rocm_fwd",
    "candle/dispatch_idioms.rs:24:5: if let chain over device has no branch for Rocm (branches for: Cpu, Cuda); "
    "its wildcard branch (line 28) only fails",
    "candle/dispatch_idioms.rs:47:9: match on storage has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/dispatch_idioms.rs:57:9: match on device has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/dispatch_idioms.rs:84:33: match on ids has no arm for Rocm (arms for: Cuda); "
    "its wildcard arm (line 86) only fails",
    "candle/error_arms.rs:7:9: match on self has no arm for Rocm (arms for: Cpu, Cuda); "
    "its wildcard arm (line 10) only fails",
    "candle/error_arms.rs:15:9: match on self has no arm for Rocm (arms for: Cpu, Cuda); "
    "its wildcard arm (line 18) only fails",
    "candle/error_arms.rs:23:9: match on self has no arm for Rocm (arms for: Cpu, Cuda); "
    "its wildcard arm (line 27) only fails",
    "candle/error_arms.rs:35:9: match on self has no arm for Cuda, Rocm (arms for: Cpu); "
    "its wildcard arm (line 37) only fails",
    "candle/error_arms.rs:42:9: match on self has no arm for Cuda (arms for: Cpu, Rocm); "
    "its wildcard arm (line 45) only fails",
    "candle/error_arms.rs:66:9: match on (self, src) has no arm for Rocm in position 2 (src) "
    "(arms for: Cpu, Cuda, Rocm); its wildcard arm (line 70) only fails",
    "candle/error_arms.rs:76:9: note: match on self sends Cuda, Rocm to its wildcard arm (line 78)",
    "candle/quantized.rs:15:9: match on self has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/quantized.rs:45:9: match on self has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/quantized.rs:75:5: note: match on device sends Rocm to its wildcard arm (line 78)",
    "candle/storage.rs:40:9: match on self has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/storage.rs:61:27: note: match on (self, rhs) sends Rocm in positions 1 (self), 2 (rhs) "
    "to its wildcard arm (line 65)",
    "candle/storage.rs:84:9: match on self has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/storage.rs:129:9: match on (self, rhs) has no arm for Rocm in positions 1 (self), 2 (rhs) "
    "(arms for: Cpu, Cuda); its wildcard arm (line 142) only fails",
    "candle/storage.rs:177:9: match on self has no arm for Rocm (arms for: Cpu, Cuda)",
    "candle/storage.rs:244:9: match on (self, &kernel) has no arm for Rocm in positions 1 (self), 2 (&kernel) "
    "(arms for: Cpu, Cuda)",
    "pytensor/idioms.py:11:5: if/elif chain over is_<backend>_available() has no branch for cpu "
    "(branches for: cuda, rocm)",
    "pytensor/idioms.py:26:5: if/elif chain over device.type has no branch for rocm (branches for: cpu, cuda); "
    "its wildcard branch (line 30) only fails",
    "pytensor/idioms.py:44:5: note: if/elif chain over str(device).startswith(...) sends cpu to its wildcard "
    "branch (line 48)",
    "pytensor/idioms.py:54:5: if/elif chain over device.type has no branch for rocm (branches for: cpu, cuda); "
    "its wildcard branch (line 58) only fails",
    "pytensor/idioms.py:70:5: match on device.type has no case for cuda, rocm (cases for: cpu); "
    "its wildcard case (line 75) only fails",
    "pytensor/tensor.py:29:9: match on self.device.backend has no case for rocm (cases for: cpu, cuda)",
    "pytensor/tensor.py:36:9: if/elif chain over self.device.is_<backend>() has no branch for rocm "
    "(branches for: cpu, cuda)",
    "pytensor/tensor.py:51:9: note: match on self.device.backend sends cuda, rocm to its wildcard case (line 54)",
    "pytensor/tensor.py:58:9: match on (self.device.backend, src.device.backend) has no case for rocm "
    "in positions 1 (self.device.backend), 2 (src.device.backend) (cases for: cpu, cuda)",
    "pytensor/tensor.py:66:9: note: if/elif chain over self.device.backend sends cpu to its wildcard branch (line 70)",
    "pytensor/tensor.py:90:1: class Softmax(CustomOp1) overrides cpu_fwd, cuda_fwd but not rocm_fwd",
    "pytensor/tensor.py:114:1: class ScaleInplace(InplaceOp1) overrides cpu_fwd but not cuda_fwd, rocm_fwd",
]
SUMMARY = [
    "candle/custom_ops.rs: 3 missing, 0 wildcard, in 4 dispatch points",
    "candle/dispatch_idioms.rs: 5 missing, 0 wildcard, in 10 dispatch points",
    "candle/error_arms.rs: 6 missing, 1 wildcard, in 9 dispatch points",
    "candle/quantized.rs: 2 missing, 1 wildcard, in 6 dispatch points",
    "candle/storage.rs: 5 missing, 1 wildcard, in 13 dispatch points",
    "pytensor/idioms.py: 4 missing, 1 wildcard, in 6 dispatch points",
    "pytensor/tensor.py: 5 missing, 2 wildcard, in 10 dispatch points",
    "audit: 13 files, 63 dispatch points, 30 missing, 6 wildcard, 6 files clean (backends: cpu, cuda, rocm)",
]
RUST = [e for e in EXPECTED if e.startswith("candle/")]
PYTHON = [e for e in EXPECTED if e.startswith("pytensor/")]


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
    assert relative(rust.stdout)[: len(RUST)] == RUST
    python = audit("--lang", "python", AUDIT / "pytensor")
    assert relative(python.stdout)[: len(PYTHON)] == PYTHON
    assert python.exit_code == rust.exit_code == 1


def test_complete_code_is_clean():
    result = audit(AUDIT / "complete")
    assert result.exit_code == 0, result.output
    assert relative(result.stdout) == [
        "audit: 2 files, 5 dispatch points, 0 missing, 0 wildcard, 2 files clean (backends: cpu, cuda, rocm)"
    ]


def test_a_wildcard_is_a_note_not_a_failure_unless_strict(tmp_path):
    source = tmp_path / "w.py"
    source.write_text(
        "def f(d):\n    match d.backend:\n        case Backend.CPU:\n            pass\n"
        "        case _:\n            pass\n"
    )
    result = audit(source)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        f"{source}:2:5: note: match on d.backend sends cuda, rocm to its wildcard case (line 5)"
    )
    strict = audit("--strict", source)
    assert strict.exit_code == 1
    assert strict.stdout == result.stdout


def test_explicit_files_and_lang_override(tmp_path):
    source = tmp_path / "storage.txt"
    source.write_text("fn f(s: &Storage) { match s { Storage::Cpu(_) => 1, Storage::Cuda(_) => 2 } }\n")
    unknown = audit(source)
    assert unknown.exit_code == 2
    assert unknown.stderr == (
        f"{source}:1:1: cannot tell the language of this file (not .py or .rs); pass --lang python or --lang rust\n"
    )
    as_rust = audit("--lang", "rust", source)
    assert as_rust.exit_code == 1
    assert as_rust.stdout.splitlines()[0] == f"{source}:1:21: match on s has no arm for Rocm (arms for: Cpu, Cuda)"


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("bad.py", "def f(d):\n    if d.is_cuda(:\n        pass\n", ":2:18: cannot parse as Python: invalid syntax\n"),
        (
            "bad.rs",
            "fn f() {\n    match x { Storage::Cpu(_) => 1,\n",
            ":3:1: cannot parse as Rust: unexpected end of file (unclosed brace?)\n",
        ),
        (
            "arm.rs",
            "fn f() { match x { Storage::Cpu(_) => 1 Storage::Cuda(_) => 2 } }\n",
            ":1:40: cannot parse as Rust: expected ','\n",
        ),
        ("latin1.py", b"# caf\xe9\n", ":1:1: not UTF-8: invalid continuation byte"),
    ],
)
def test_unreadable_sources_exit_2(tmp_path, name, text, expected):
    source = tmp_path / name
    source.write_bytes(text if isinstance(text, bytes) else text.encode())
    good = tmp_path / "good.py"
    good.write_text("class A(CustomOp1):\n    def cpu_fwd(self, s1, l1): ...\n")
    result = audit(tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{source}{expected}"), result.stderr
    assert f"{good}:1:1: class A(CustomOp1) overrides cpu_fwd but not cuda_fwd, rocm_fwd" in result.stdout, (
        "the other files are still audited"
    )


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
    assert "nothing written" not in result.output, "audit writes nothing anyway"


# -- without a registry ---------------------------------------------------------------------


def test_backends_without_a_registry(tmp_path, monkeypatch):
    """`--backends` alone: no ops.yaml, runtime modules, dtypes or custom-op declarations."""
    monkeypatch.chdir(tmp_path)
    result = run_cli("audit", "--backends", "cpu,cuda,metal,rocm", AUDIT / "candle" / "dispatch_idioms.rs")
    assert result.exit_code == 1, result.output
    assert relative(result.stdout) == [
        "candle/dispatch_idioms.rs:6:1: trait CustomOp1 declares cpu_fwd, cuda_fwd but not metal_fwd, rocm_fwd",
        "candle/dispatch_idioms.rs:17:1: trait CustomOp2 declares cpu_fwd, cuda_fwd, rocm_fwd but not metal_fwd",
        "candle/dispatch_idioms.rs:24:5: if let chain over device has no branch for Metal, Rocm "
        "(branches for: Cpu, Cuda); its wildcard branch (line 28) only fails",
        "candle/dispatch_idioms.rs:34:5: note: if chain over device.is_<backend>() sends Metal to its wildcard "
        "branch (line 40)",
        "candle/dispatch_idioms.rs:47:9: match on storage has no arm for Metal, Rocm (arms for: Cpu, Cuda)",
        "candle/dispatch_idioms.rs:57:9: match on device has no arm for Metal, Rocm (arms for: Cpu, Cuda)",
        "candle/dispatch_idioms.rs:78:9: match on src has no arm for Metal (arms for: Cpu, Cuda, Rocm)",
        "candle/dispatch_idioms.rs:84:33: match on ids has no arm for Rocm (arms for: Cuda); "
        "its wildcard arm (line 86) only fails",
        "candle/dispatch_idioms.rs: 7 missing, 1 wildcard, in 10 dispatch points",
        "audit: 1 files, 10 dispatch points, 7 missing, 1 wildcard, 0 files clean (backends: cpu, cuda, metal, rocm)",
    ]
    # the custom-op check needs no declared traits: an impl with some <backend>_fwd is one
    impls = run_cli("audit", "--backends", "cpu,cuda,rocm", AUDIT / "candle" / "custom_ops.rs")
    assert relative(impls.stdout)[:3] == EXPECTED[:3]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--backends", ""], "--backends '': expected backend names separated by commas, like cpu,cuda,rocm\n"),
        (
            ["--backends", "cpu,cu-da"],
            "--backends 'cpu,cu-da': expected backend names separated by commas, like cpu,cuda,rocm\n",
        ),
        (
            [],
            "ops.yaml: no registry here; name the backends to require with --backends cpu,cuda,... "
            "or a registry with --registry\n",
        ),
    ],
)
def test_backends_bad_or_absent(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = run_cli("audit", *args, AUDIT / "candle")
    assert result.exit_code == 2
    assert result.stderr == message
    assert result.stdout == ""


def test_require_fwd_none_leaves_impls_to_their_trait():
    """Candle leaves many custom ops on the trait's erroring default on purpose: the impl rule
    is a choice; the trait definition itself is still checked."""
    files = (AUDIT / "candle" / "custom_ops.rs", AUDIT / "candle" / "dispatch_idioms.rs")
    every = audit(*files)
    none = audit("--require-fwd", "none", *files)
    assert relative(every.stdout)[:4] == EXPECTED[:4]
    assert relative(none.stdout)[0] == EXPECTED[3]
    assert not any(" impl " in ln or ln.startswith("candle/custom_ops.rs:") for ln in relative(none.stdout))
    assert none.stdout.splitlines()[-1].startswith("audit: 2 files, 10 dispatch points, 5 missing")
    python = audit("--require-fwd", "none", AUDIT / "pytensor" / "tensor.py")
    assert "overrides" not in python.stdout
    assert "overrides" in audit(AUDIT / "pytensor" / "tensor.py").stdout


# -- error arms -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arm, fails",
    [
        ("_ => unreachable!()", True),
        ('_ => bail!("no {}", x)', True),
        ('_ => crate::bail!("no")', True),
        ('_ => panic!("no")', True),
        ("_ => todo!()", True),
        ("_ => unimplemented!()", True),
        ("other => Err(Error::NotImplemented(other.location()))", True),
        ('other => return Err(Error::Msg("no".into())),', True),
        ("other => { return Err(e) }", True),
        ("_ => Err(e)?", True),
        ('_ => {\n // only fails\n bail!("no")\n }', True),
        ("_ => false", False),
        ('_ => { log(); bail!("no") }', False),  # does something first
        ("_ => Ok(fallback(x)?)", False),
        ("_ => dbg!(x)", False),
    ],
)
def test_rust_error_arms(arm, fails):
    found = rs_found(f"fn f() {{ match s {{\n Storage::Cpu(_) => 1,\n {arm}\n }} }}\n")
    assert [(s.wildcard_line, s.wildcard_fails) for s in found[0].slots] == [(3, fails)]


def test_a_failing_arm_that_receives_no_backend_is_not_reported(tmp_path):
    """The generated Rust's binary ops name every backend in every position and end in an
    error arm for mismatched devices: that arm receives no backend, so nothing is missing."""
    source = tmp_path / "binary.rs"
    source.write_text(
        textwrap.dedent("""\
        fn add(lhs: &Storage, rhs: &Storage) -> Result<Storage> {
            match (lhs, rhs) {
                (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(a.add(b)?)),
                (Storage::Cuda(a), Storage::Cuda(b)) => Ok(Storage::Cuda(a.add(b)?)),
                (Storage::Rocm(a), Storage::Rocm(b)) => Ok(Storage::Rocm(a.add(b)?)),
                (lhs, rhs) => Err(Error::DeviceMismatch { lhs: lhs.device(), rhs: rhs.device(), op: "add" }),
            }
        }
        """)
    )
    result = audit("--strict", source)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "audit: 1 files, 1 dispatch points, 0 missing, 0 wildcard, 1 files clean (backends: cpu, cuda, rocm)\n"
    )
    # the same match without the Rocm pair: now the error arm receives Rocm in both positions
    source.write_text(source.read_text().replace("Rocm", "Npu"))
    missing = audit(source)
    assert missing.exit_code == 1
    assert missing.stdout.splitlines()[0] == (
        f"{source}:2:5: match on (lhs, rhs) has no arm for Rocm in positions 1 (lhs), 2 (rhs) "
        "(arms for: Cpu, Cuda); its wildcard arm (line 6) only fails"
    )


@pytest.mark.parametrize(
    "orelse, fails",
    [
        ("raise NotImplementedError(d)", True),
        ('"no other device"\n    raise ValueError(d)', True),
        ("return None", False),
        ("log(d)\n    raise ValueError(d)", False),
    ],
)
def test_python_failing_else_and_case(orelse, fails):
    chain = py_found(f"if d.is_cpu(): pass\nelif d.is_cuda(): pass\nelse:\n    {orelse}\n")
    assert [(s.wildcard_line, s.wildcard_fails) for s in chain[0].slots] == [(3, fails)]
    match = py_found(f"match d.backend:\n case On.CPU: pass\n case _:\n    {orelse}\n")
    assert [(s.wildcard_line, s.wildcard_fails) for s in match[0].slots] == [(3, fails)]


# -- suppressions -----------------------------------------------------------------------------


def test_suppression_on_the_dispatch_line(tmp_path):
    rust = tmp_path / "s.rs"
    template = (
        "fn f() {{\n    match d {{ {comment}\n        Device::Cpu => 1,\n        _ => unreachable!(),\n    }}\n}}\n"
    )
    rust.write_text(template.format(comment=""))
    assert audit(rust).stdout.splitlines()[0] == (
        f"{rust}:2:5: match on d has no arm for Cuda, Rocm (arms for: Cpu); its wildcard arm (line 4) only fails"
    )
    rust.write_text(template.format(comment="// opgen: allow(rocm)"))
    assert audit(rust).stdout.splitlines()[0] == (
        f"{rust}:2:5: match on d has no arm for Cuda (arms for: Cpu); its wildcard arm (line 4) only fails"
    )
    rust.write_text(template.format(comment="// opgen: allow(rocm, cuda)"))
    assert audit(rust).exit_code == 0
    rust.write_text(template.format(comment="\n        // opgen: allow(rocm, cuda)"))  # where rustfmt moves it
    assert audit(rust).exit_code == 0
    python = tmp_path / "s.py"
    template = "def f(d):\n    if d.is_cpu():{comment}\n        pass\n    elif d.kind == 'cuda':\n        pass\n"
    python.write_text(template.format(comment=""))
    assert audit(python).exit_code == 0  # two subjects: not one chain
    template = template.replace("d.kind == 'cuda'", "d.is_cuda()")
    python.write_text(template.format(comment=""))
    assert audit(python).exit_code == 1
    python.write_text(template.format(comment="  # opgen: allow(rocm)"))
    ok = audit(python)
    assert ok.exit_code == 0 and ok.stdout.startswith("audit: 1 files, 1 dispatch points, 0 missing")
    # on another line it suppresses nothing
    python.write_text("# opgen: allow(rocm)\n" + template.format(comment=""))
    assert audit(python).exit_code == 1


# -- output formats -----------------------------------------------------------------------------


def test_json_format_carries_the_text_findings():
    text = audit(AUDIT)
    result = audit("--format", "json", AUDIT)
    assert result.exit_code == text.exit_code == 1
    doc = json.loads(result.stdout)
    assert [f"{f['path']}:{f['line']}:{f['col']}: {f['message']}" for f in doc["findings"]] == text.stdout.splitlines()[
        : len(EXPECTED)
    ]
    assert doc["summary"] == text.stdout.splitlines()[-1]
    assert doc["errors"] == []
    assert {f["kind"] for f in doc["findings"]} == {"missing", "wildcard"}
    assert {tuple(f["backends"]) for f in doc["findings"] if f["path"].endswith("idioms.py")} == {
        ("cpu",),
        ("rocm",),
        ("cuda", "rocm"),
    }


def test_sarif_output_is_valid_sarif_2_1_0(tmp_path):
    """Validated against the OASIS SARIF 2.1.0 JSON schema (vendored, see the fixtures README)."""
    import jsonschema

    schema = json.loads((AUDIT / "sarif-schema-2.1.0.json").read_text())
    bad = tmp_path / "bad.rs"
    bad.write_text("fn f() { match x { Storage::Cpu(_) => 1,\n")
    result = audit("--format", "sarif", AUDIT, bad)
    assert result.exit_code == 2  # the broken file: still a valid log, with the error as a notification
    doc = json.loads(result.stdout)
    jsonschema.Draft4Validator(schema).validate(doc)
    run = doc["runs"][0]
    assert len(run["results"]) == len(EXPECTED)
    first = run["results"][0]
    assert first["ruleId"] == "missing-backend" and first["level"] == "error"
    assert first["message"]["text"] == EXPECTED[0].split(": ", 1)[1]
    assert first["locations"][0]["physicalLocation"]["region"] == {"startLine": 8, "startColumn": 1}
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("candle/custom_ops.rs")
    assert sum(r["level"] == "note" for r in run["results"]) == sum(": note: " in e for e in EXPECTED)
    assert run["invocations"][0]["executionSuccessful"] is False
    assert run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"].startswith(str(bad))
    # the validator has teeth: a region at line 0 is not SARIF
    first["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(doc)


def test_parallel_equals_serial(tmp_path):
    for i in range(15):
        shutil.copytree(AUDIT / "candle", tmp_path / f"c{i:02}")
        shutil.copytree(AUDIT / "pytensor", tmp_path / f"p{i:02}")
    serial, parallel = audit("-j", "1", tmp_path), audit("-j", "2", tmp_path)
    assert serial.exit_code == parallel.exit_code == 1
    assert serial.stdout == parallel.stdout
    one = SUMMARY[-1]  # 13 files of which 6 clean (complete/, rt/): 7 files copied
    assert serial.stdout.splitlines()[-1].startswith(
        f"audit: 105 files, {15 * (63 - 5)} dispatch points, {15 * 30} missing, {15 * 6} wildcard"
    ), one


# -- positions ----------------------------------------------------------------------------------


def test_python_positions_are_the_parsers():
    """Chains with the same text at several places are each reported at their own line (a
    text-search locator once put a chain at line 954 at an earlier `if` of the same text)."""
    chain = "    if device.type == 'cuda':\n        a()\n    elif device.type == 'cpu':\n        b()\n"
    text = "".join(f"def f{i}(device):\n    'x'\n{chain}" for i in range(40))
    found = audit_python.read(text, BACKENDS)
    assert [(d.line, d.col) for d in found.dispatches] == [(3 + 6 * i, 5) for i in range(40)]
    tree = ast.parse(text)
    outer = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert [(f.body[1].lineno, f.body[1].col_offset + 1) for f in outer] == [(d.line, d.col) for d in found.dispatches]


def test_python_positions_agree_with_cpython():
    text = (AUDIT / "pytensor" / "tensor.py").read_text()
    found = audit_python.read(text, BACKENDS)
    tree = ast.parse(text)
    starts = {(n.lineno, n.col_offset + 1) for n in ast.walk(tree) if isinstance(n, (ast.Match, ast.If, ast.ClassDef))}
    points = [(d.line, d.col) for d in found.dispatches] + [(t.line, t.col) for t in found.impls]
    assert len(points) == 10
    assert set(points) <= starts


def test_rust_columns_count_characters():
    found = rs_found('fn f() { let s = "é→"; match d { Device::Cpu => 1, Device::Cuda(_) => 2 } }\n')
    assert [(d.line, d.col) for d in found] == [(1, 24)]


# -- the Python reader, construct by construct ------------------------------------------------


def py_found(source: str):
    return audit_python.read(textwrap.dedent(source), BACKENDS).dispatches


def py(source: str):
    return [(d.line, [s.backends for s in d.slots], [s.wildcard_line for s in d.slots]) for d in py_found(source)]


@pytest.mark.parametrize(
    "source, expected",
    [
        # a guarded case covers nothing for sure, a guarded wildcard takes nothing
        (
            "match b:\n case On.CPU: pass\n case On.CUDA if x: pass\n case _ if x: pass\n",
            [(1, [frozenset({"cpu"})], [None])],
        ),
        # a capture pattern is a wildcard
        ("match b:\n case On.CPU: pass\n case other: pass\n", [(1, [frozenset({"cpu"})], [3])]),
        # or-patterns, string values, nested attribute paths
        (
            "match b:\n case g.Backend.CPU | 'cuda': pass\n case 'rocm': pass\n",
            [(1, [frozenset({"cpu", "cuda", "rocm"})], [None])],
        ),
        # each position of a tuple on its own; a non-backend position is ignored
        (
            "match (a, b, n):\n case (On.CPU, On.CUDA, 1): pass\n case (On.ROCM, _, 2): pass\n",
            [(1, [frozenset({"cpu", "rocm"}), frozenset({"cuda"})], [None, 3])],
        ),
        # strings over a value that is not a device or backend are not a dispatch
        ("match mode:\n case 'cpu': pass\n case 'cuda': pass\n", []),
        ("match fmt.name:\n case 'cuda': pass\n case 'rocm': pass\n", []),
        # ... over one that is, they are; and an enum member always names a backend
        ("match dev_type:\n case 'cpu': pass\n case 'cuda': pass\n", [(1, [frozenset({"cpu", "cuda"})], [None])]),
        ("match b:\n case On.CPU: pass\n", [(1, [frozenset({"cpu"})], [None])]),
        # no backend at all
        ("match op:\n case UnaryOp.EXP: pass\n case _: pass\n", []),
    ],
)
def test_python_match(source, expected):
    assert py(source) == expected


@pytest.mark.parametrize(
    "source, expected",
    [
        (
            "if d.is_cpu(): pass\nelif d.is_cuda(): pass\nelif d.is_rocm(): pass\n",
            [(1, [frozenset({"cpu", "cuda", "rocm"})], [None])],
        ),
        # a lone test is a special case, not a dispatch
        ("if d.is_cuda(): pass\nelse: pass\n", []),
        # `in`, `==` both ways round, `or`; the else is the wildcard
        (
            "if x.kind in ('cpu', 'cuda'): pass\nelif 'rocm' == x.kind or x.kind == 'cpu': pass\nelse:\n    pass\n",
            [(1, [frozenset({"cpu", "cuda", "rocm"})], [3])],
        ),
        # an elif chain is one dispatch, reported at its `if`; a nested chain is its own
        (
            "if d.is_cpu(): pass\nelif d.is_cuda():\n    if e.kind == 'cpu': pass\n    elif e.kind == 'cuda': pass\n",
            [(1, [frozenset({"cpu", "cuda"})], [None]), (3, [frozenset({"cpu", "cuda"})], [None])],
        ),
        # `else:` then an `if` inside it is not an elif: the outer chain ends at the else
        (
            "if d.is_cpu(): pass\nelif d.is_cuda(): pass\nelse:\n    if d.is_rocm(): pass\n",
            [(1, [frozenset({"cpu", "cuda"})], [3])],
        ),
        # tests on different subjects do not add up
        ("if a.is_cpu(): pass\nelif b.kind == 'cuda': pass\n", []),
        # availability probes, torch style and function style
        (
            "if torch.cuda.is_available(): pass\nelif torch.rocm.is_available(): pass\n",
            [(1, [frozenset({"cuda", "rocm"})], [None])],
        ),
        (
            "if is_cuda_available(): pass\nelif utils.is_rocm_available(): pass\nelse: pass\n",
            [(1, [frozenset({"cuda", "rocm"})], [3])],
        ),
        # device.type strings, str(device).startswith, a tuple of prefixes
        (
            "if device.type == 'cuda': pass\nelif device.type == 'cpu': pass\n",
            [(1, [frozenset({"cuda", "cpu"})], [None])],
        ),
        (
            "if str(device).startswith(('cuda', 'rocm')): pass\nelif str(device).startswith('cpu'): pass\n",
            [(1, [frozenset({"cuda", "rocm", "cpu"})], [None])],
        ),
        # a string that merely equals a backend's name is not a dispatch
        ("if format == 'cuda': pass\nelif format == 'cpu': pass\n", []),
        ("if name.startswith('cuda'): pass\nelif name.startswith('cpu'): pass\n", []),
    ],
)
def test_python_if_chains(source, expected):
    assert py(source) == expected


def test_python_dispatch_scope():
    """A case's body is reached by the backends the case names, a `def <backend>_fwd` by its
    backend; a case naming no backend and any other function do not narrow."""
    found = py_found("""\
        def cuda_fwd(x):
            if x.device.type == 'cuda': pass
            elif x.device.type == 'cpu': pass
        def f(d):
            match d.backend:
                case Backend.CUDA | 'rocm':
                    match e.backend:
                        case Backend.CUDA: pass
                        case _: raise ValueError(e)
                case 'fast':
                    if d.is_cpu(): pass
                    elif d.is_cuda(): pass
                case _:
                    def helper():
                        if d.is_cpu(): pass
                        elif d.is_cuda(): pass
        """)
    assert [(d.line, d.scope) for d in found] == [
        (2, frozenset({"cuda"})),
        (5, None),
        (7, frozenset({"cuda", "rocm"})),
        (11, None),
        (15, None),
    ]


def test_python_custom_op_subclasses():
    found = audit_python.read(
        textwrap.dedent("""\
        @register
        class A(ops.CustomOp2):
            rocm_fwd = cuda_fwd = None
            def cpu_fwd(self): ...
        class B(CustomOp1[int]):
            def cpu_fwd(self): ...
        class C(Base):
            def name(self): ...
        class D:
            def cpu_fwd(self): ...
        """),
        BACKENDS,
    )
    assert [(t.line, t.what, sorted(t.hooks)) for t in found.impls] == [
        (2, "class A(CustomOp2)", ["cpu", "cuda", "rocm"]),
        (5, "class B(CustomOp1)", ["cpu"]),
    ]


# -- the Rust reader, construct by construct --------------------------------------------------


def rs_found(source: str):
    return audit_rust.read(textwrap.dedent(source).encode(), BACKENDS).dispatches


def rs(source: str):
    return [(d.line, [s.backends for s in d.slots], [s.wildcard_line for s in d.slots]) for d in rs_found(source)]


@pytest.mark.parametrize(
    "source, expected",
    [
        # unit variants in scope (`use Device::*`), references, `ref`, `@` bindings, struct patterns
        (
            "fn f() { match d {\n Cpu => 1,\n &Self::Cuda(ref s) => 2,\n x @ Device::Rocm { .. } => 3,\n } }\n",
            [(1, [frozenset({"cpu", "cuda", "rocm"})], [None])],
        ),
        # or-patterns inside a tuple position, and a binding that takes the rest
        (
            "fn f() { match (a, b) {\n (Self::Cpu(_) | Self::Cuda(_), Self::Cpu(_)) => 1,\n (lhs, _) => 2,\n } }\n",
            [(1, [frozenset({"cpu", "cuda"}), frozenset({"cpu"})], [3, 3])],
        ),
        # a guarded `_` is not a wildcard; a guarded backend arm does not cover its backend
        (
            "fn f() { match s {\n Storage::Cpu(_) => 1,\n Storage::Cuda(c) if c.ok() => 2,\n _ if flag => 2,\n } }\n",
            [(1, [frozenset({"cpu"})], [None])],
        ),
        # strings: over a value that is not a device, not a dispatch; over a device, one
        ('fn f() { match s { "cpu" => 1, "cuda" => 2, _ => 3 } }\n', []),
        (
            'fn f() { match self.device_name() { "cpu" => 1, "cuda" => 2, _ => 3 } }\n',
            [(1, [frozenset({"cpu", "cuda"})], [1])],
        ),
        # Metal is not one of these backends; a match naming only it is not audited
        ("fn f() { match s { Storage::Metal(_) => 1, _ => 2 } }\n", []),
        # if-let chains and is_<backend>() chains; a lone `if let` is a special case
        (
            "fn f() {\n if let Device::Cpu = d { 1 }\n else if let Device::Cuda(_) | Device::Rocm(_) = d { 2 }\n"
            " else { 3 }\n}\n",
            [(2, [frozenset({"cpu", "cuda", "rocm"})], [4])],
        ),
        ("fn f() { if let Device::Cuda(c) = d { c.sync() } else { 0 } }\n", []),
        (
            "fn f() {\n if d.is_cpu() { 1 } else if d.is_cuda() && fast { 2 } }\n",
            [(2, [frozenset({"cpu", "cuda"})], [None])],
        ),
        ("fn f() {\n if a.is_cpu() { 1 } else if b.is_cuda() { 2 } }\n", []),
    ],
)
def test_rust_match_and_if(source, expected):
    assert rs(source) == expected


@pytest.mark.parametrize(
    "source, line, col",
    [
        # a macro_rules! body: `$x` is read as a name at its own place
        (
            "macro_rules! m {\n    ($s:expr) => {\n        match $s { Storage::Cpu(s) => 1, Storage::Cuda(s) => 2 }\n"
            "    };\n}\n",
            3,
            9,
        ),
        # a macro argument, and a macro inside a macro argument
        ('fn f() {\n    let s = format!("{}", match d { Device::Cpu => "c", Device::Cuda(_) => "g" });\n}\n', 2, 27),
        (
            'fn f() {\n    println!("{}", vec![1, match d {\n        Device::Cpu => 1,\n        Device::Cuda(_) => 2 }]);\n}\n',
            2,
            28,
        ),
        # an if-let chain in a macro argument
        (
            "fn f() { assert!(if let Device::Cpu = d { true } else if let Device::Cuda(_) = d { true } else { false }); }\n",
            1,
            18,
        ),
    ],
)
def test_rust_dispatch_inside_macros(source, line, col):
    found = rs_found(source)
    assert [(d.line, d.col) for d in found] == [(line, col)]
    assert found[0].slots[0].backends == frozenset({"cpu", "cuda"})


@pytest.mark.parametrize(
    "source, expected",
    [
        # an arm's inner match needs only the arm's backends
        (
            "fn f() { match a {\n Storage::Cpu(x) => 1,\n Storage::Cuda(x) | Storage::Rocm(x) => match b {\n"
            '  Storage::Cuda(y) => 2,\n  _ => bail!("moved"),\n },\n} }\n',
            [None, frozenset({"cuda", "rocm"})],
        ),
        # a wildcard arm does not narrow; the arm of an enclosing match beyond it does
        (
            "fn f() { match a {\n Storage::Cpu(x) => match b { _ => match c { Storage::Cpu(z) => 1, _ => 2 } },\n"
            " _ => 3,\n} }\n",
            [None, frozenset({"cpu"})],
        ),
        # `fn <backend>_fwd` is reached by its backend only; other functions by any
        (
            'fn cuda_fwd() { let s = match x { Storage::Cuda(s) => s, _ => bail!("no") }; }\n'
            'fn fwd() { let s = match x { Storage::Cuda(s) => s, _ => bail!("no") }; }\n',
            [frozenset({"cuda"}), None],
        ),
    ],
)
def test_rust_dispatch_scope(source, expected):
    assert [d.scope for d in rs_found(source)] == expected


def test_rust_macro_tokens_that_do_not_parse_are_skipped():
    assert rs_found("macro_rules! m { ($($t:tt)*) => { match { $($t)* } Storage::Cpu => }; }\n") == ()


def test_rust_custom_op_impls_and_traits():
    found = audit_rust.read(
        textwrap.dedent("""\
        impl<T: WithDType> candle::CustomOp1 for Cast<T> {
            fn cpu_fwd(&self) {}
            fn rocm_fwd(&self) {}
        }
        impl CustomOp2<'a> for X { fn name(&self) {} }
        impl Display for Y { fn cuda_fwd(&self) {} }
        pub trait CustomOp3 {
            fn cpu_fwd(&self) -> Result<()>;
            fn cuda_fwd(&self) -> Result<()> { Err(Error::Msg("no cuda")) }
        }
        trait Plain { fn name(&self); }
        """).encode(),
        BACKENDS,
    )
    assert [(t.line, t.what, sorted(t.hooks), t.definition) for t in found.impls] == [
        (1, "impl CustomOp1 for Cast<T>", ["cpu", "rocm"], False),
        (6, "impl Display for Y", ["cuda"], False),
        (7, "trait CustomOp3", ["cpu", "cuda"], True),
    ]


def test_backend_names_normalize():
    assert {normalize(n) for n in ("CPU", "Cpu", "cpu")} == {"cpu"}
    assert normalize("MyGpu") == normalize("MY_GPU") == normalize("my_gpu")


def test_every_python_dispatch_of_this_repository_is_at_a_statement_start():
    """Every dispatch point found in the repository's own Python lies where CPython puts an
    if, match or class (elifs are part of their if)."""
    checked = 0
    for path in sorted(
        p for d in ("generator", "runtime", "generated", "bench", "tests") for p in (REPO / d).rglob("*.py")
    ):
        text = path.read_text()
        found = audit_python.read(text, BACKENDS)
        tree = ast.parse(text)
        starts = {
            (n.lineno, n.col_offset + 1) for n in ast.walk(tree) if isinstance(n, (ast.If, ast.Match, ast.ClassDef))
        }
        points = {(d.line, d.col) for d in found.dispatches} | {(t.line, t.col) for t in found.impls}
        assert points <= starts, path
        checked += len(points)
    assert checked > 20

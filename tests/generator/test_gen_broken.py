"""The broken-registry corpus (tests/fixtures/broken): every registry is rejected with exit
status 2, nothing written, and exactly the diagnostics its `# expect:` lines name, at their
exact line:col. Also: one registry with many errors reports them all, sorted, in one run."""

from __future__ import annotations

import shutil

import pytest
from gen_harness import BROKEN, MINI, corpus, corpus_header, crashed, diagnostics, run_cli, snapshot

CORPUS = corpus()


def test_corpus_is_large_and_annotated():
    assert len(CORPUS) >= 30
    for path in CORPUS:
        expectations, _ = corpus_header(path)
        assert expectations, f"{path.name} has no '# expect: LINE:COL fragment' line"
        assert expectations == sorted(expectations, key=lambda e: (e.line, e.col)), path.name


def _run(ws, path):
    target = ws / path.name
    shutil.copyfile(path, target)
    out = ws / f"out_{path.stem}"
    return target, out, run_cli("--registry", target, "--out", out)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_broken_registry(ws, path):
    expectations, _ = corpus_header(path)
    target, out, result = _run(ws, path)
    assert not crashed(result), f"traceback instead of diagnostics: {result.exception!r}"
    assert result.exit_code == 2, f"not rejected (exit {result.exit_code}):\n{result.output}"
    got = diagnostics(result, target)
    assert got, f"rejected, but with no FILE:LINE:COL diagnostic of the registry:\n{result.stderr}"
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(got) == len(lines) - 1, f"every line but the summary is FILE:LINE:COL: message:\n{result.stderr}"
    assert lines[-1] == f"{target}: {len(got)} error{'s' if len(got) != 1 else ''}; nothing written"
    report = "\n".join(f"  {line}:{col}: {msg}" for line, col, msg in got)
    assert len(got) == len(expectations), f"expected {len(expectations)} diagnostic(s), got:\n{report}"
    for e, (line, col, msg) in zip(expectations, got):
        assert (line, col) == (e.line, e.col) and e.fragment in msg, (
            f"expected {e.line}:{e.col} ...{e.fragment}..., got:\n{report}"
        )
    assert not out.exists(), "an invalid registry must write nothing"


def test_many_errors_in_one_run(ws, tmp_path):
    path = BROKEN / "many_errors.yaml"
    expectations, _ = corpus_header(path)
    assert len(expectations) >= 10
    target = ws / "many_errors.yaml"
    shutil.copyfile(path, target)

    # --out holds a package generated earlier: a broken registry must leave it as it was.
    out = tmp_path / "pkg"
    assert run_cli("--registry", MINI, "--out", out).exit_code == 0
    (out / "notes.txt").write_text("mine\n")
    before = snapshot(out)

    result = run_cli("--registry", target, "--out", out)
    assert not crashed(result) and result.exit_code == 2
    got = diagnostics(result, target)
    assert [(line, col) for line, col, _ in got] == [(e.line, e.col) for e in expectations]
    assert got == sorted(got), "diagnostics are sorted by position"
    for e, (_, _, msg) in zip(expectations, got):
        assert e.fragment in msg
    assert f"{target}: {len(expectations)} errors; nothing written" in result.stderr
    assert snapshot(out) == before

    fresh = tmp_path / "never"
    result = run_cli("--registry", target, "--out", fresh)
    assert result.exit_code == 2 and not fresh.exists()


def test_check_mode_reports_the_same_errors(ws, tmp_path):
    """--check on a broken registry: exit 2 (invalid), not 1 (stale), with the same diagnostics."""
    path = BROKEN / "many_errors.yaml"
    target = ws / "many_errors_check.yaml"
    shutil.copyfile(path, target)
    result = run_cli("--registry", target, "--out", tmp_path / "out", "--check")
    assert result.exit_code == 2
    assert len(diagnostics(result, target)) == len(corpus_header(path)[0])


def test_parity_on_a_broken_registry(ws):
    target = ws / "unknown_dtype_parity.yaml"
    shutil.copyfile(BROKEN / "unknown_dtype.yaml", target)
    result = run_cli("--registry", target, "parity")
    assert result.exit_code == 2 and diagnostics(result, target)


def test_missing_registry_file(tmp_path):
    path = tmp_path / "nope.yaml"
    result = run_cli("--registry", path, "--out", tmp_path / "out")
    assert result.exit_code == 2 and not crashed(result)
    assert diagnostics(result, path) == [
        (1, 1, f"cannot read registry: No such file or directory ({path}); name the registry with --registry PATH")
    ]


def test_deeply_nested_yaml_is_a_diagnostic(ws):
    """The loader converts YAML nodes recursively; a pathological nesting depth must end in a
    diagnostic (or be accepted and rejected as any wrong value is), never in RecursionError."""
    depth = 2000
    target = ws / "deeply_nested.yaml"
    target.write_text(
        "version: 1\ndtypes:\n  f32: {numpy: float32, kind: float}\n"
        "backends:\n  cpu: {runtime: mini_rt.cpu, kernels: numpy}\n"
        f"dtype_sets:\n  deep: {'[' * depth}{']' * depth}\n",
        encoding="utf-8",
    )
    result = run_cli("--registry", target, "--out", ws / "out_deeply_nested")
    assert not crashed(result), f"traceback instead of diagnostics: {result.exception!r}"
    assert result.exit_code == 2
    assert diagnostics(result, target)

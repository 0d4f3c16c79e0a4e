"""The `gen` command line and the writer: --check, minimal rewrites, orphans, files that are
not ours, help and version, and templates that render invalid Python."""

from __future__ import annotations

import inspect
import os
import shutil

import pytest
from gen_harness import MINI, crashed, model_of_text, run_cli, snapshot, workspace

import generator
import generator.targets.python
from generator.targets.python import MARKER_PREFIX, TEMPLATES, RenderError, render

FILES = [
    "__init__.py",
    "backends.py",
    "contract.py",
    "conversions.py",
    "custom_ops.py",
    "device.py",
    "dtypes.py",
    "kernels_numpy.py",
    "nn.py",
    "quantized.py",
    "storage.py",
]


@pytest.fixture
def setup(tmp_path):
    """(registry, out): a private copy of the fixture registry (with its runtimes), generated."""
    root = workspace(tmp_path / "ws")
    registry = root / "ops.yaml"
    shutil.copyfile(MINI, registry)
    out = tmp_path / "pkg"
    result = run_cli("--registry", registry, "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.glob("*.py")) == FILES
    return registry, out


def _edit(registry, old, new):
    text = registry.read_text(encoding="utf-8")
    assert old in text
    registry.write_text(text.replace(old, new, 1), encoding="utf-8")


def _age(out):
    """Set every file's mtime an hour back, so that a rewrite cannot go unnoticed."""
    for path in out.rglob("*"):
        if path.is_file():
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns - 3600 * 10**9, st.st_mtime_ns - 3600 * 10**9))


def _py_files(out):
    return {k: v for k, v in snapshot(out).items() if "/" not in k}


# ----------------------------------------------------------------------------- --check


def test_check_up_to_date(setup):
    registry, out = setup
    before = _py_files(out)
    result = run_cli("--registry", registry, "--out", out, "--check")
    assert result.exit_code == 0, result.output
    assert f"{len(FILES)} generated files up to date" in result.stdout
    assert _py_files(out) == before


def test_check_stale_lists_files_and_diff_and_writes_nothing(setup):
    registry, out = setup
    _edit(registry, 'doc: "x * mul + add"', 'doc: "mul * x + add"')  # storage.py only
    _age(out)
    before = snapshot(out)  # __pycache__ included: --check writes nothing at all
    result = run_cli("--registry", registry, "--out", out, "--check")
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [f"stale generated files in {out} (run `gen`):", f"  {out / 'storage.py'}"]
    diff = result.stdout
    assert diff.startswith("--- a/storage.py\n+++ b/storage.py\n@@ ")
    removed = [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert len(removed) == len(added) == 1
    assert "x * mul + add" in removed[0] and "mul * x + add" in added[0]
    assert snapshot(out) == before


def test_check_on_a_missing_directory(tmp_path):
    out = tmp_path / "absent"
    result = run_cli("--registry", MINI, "--out", out, "--check")
    assert result.exit_code == 1
    for name in FILES:
        assert f"  {out / name}" in result.stderr
        assert f"--- /dev/null\n+++ b/{name}\n" in result.stdout
    assert not out.exists()


def test_check_reports_an_orphan_without_removing_it(setup):
    registry, out = setup
    orphan = out / "old_op.py"
    orphan.write_text(f"{MARKER_PREFIX}ops.yaml; DO NOT EDIT.\nx = 1\n")
    result = run_cli("--registry", registry, "--out", out, "--check")
    assert result.exit_code == 1
    assert f"  {orphan}" in result.stderr and "--- a/old_op.py\n+++ /dev/null\n" in result.stdout
    assert orphan.exists()


# ----------------------------------------------------------------------------- writing


def test_only_changed_files_are_rewritten(setup):
    registry, out = setup
    _age(out)
    before = _py_files(out)
    _edit(registry, 'doc: "x * mul + add"', 'doc: "mul * x + add"')
    result = run_cli("--registry", registry, "--out", out)
    assert result.exit_code == 0, result.output
    assert f"wrote     {out / 'storage.py'}" in result.stdout
    assert "1 written, 10 unchanged, 0 removed" in result.stdout
    after = _py_files(out)
    for name in FILES:
        if name == "storage.py":
            assert after[name][0] != before[name][0] and after[name][2] != before[name][2]
        else:
            assert after[name] == before[name], f"{name} was rewritten although unchanged"


def test_rerun_touches_nothing(setup):
    registry, out = setup
    _age(out)
    before = _py_files(out)
    for _ in range(2):  # a full run, then whatever shortcut the generator takes
        result = run_cli("--registry", registry, "--out", out)
        assert result.exit_code == 0
        assert _py_files(out) == before
    assert "wrote" not in result.stdout


def test_edited_generated_file_is_restored(setup):
    registry, out = setup
    pristine = (out / "device.py").read_bytes()
    with open(out / "device.py", "a", encoding="utf-8") as f:
        f.write("# hand edit\n")
    result = run_cli("--registry", registry, "--out", out)
    assert result.exit_code == 0 and f"wrote     {out / 'device.py'}" in result.stdout
    assert (out / "device.py").read_bytes() == pristine


def test_deleted_generated_file_is_recreated(setup):
    registry, out = setup
    pristine = (out / "dtypes.py").read_bytes()
    (out / "dtypes.py").unlink()
    assert run_cli("--registry", registry, "--out", out).exit_code == 0
    assert (out / "dtypes.py").read_bytes() == pristine


def test_orphan_generated_file_is_removed(setup):
    registry, out = setup
    orphan = out / "kernels_hip.py"
    orphan.write_text(f"{MARKER_PREFIX}ops.yaml; DO NOT EDIT.\n")
    result = run_cli("--registry", registry, "--out", out)
    assert result.exit_code == 0
    assert f"removed   {orphan}" in result.stdout and "0 written, 11 unchanged, 1 removed" in result.stdout
    assert not orphan.exists()


def test_dropping_the_kernels_removes_their_module(setup):
    registry, out = setup
    _edit(registry, "kernels: numpy, ", "")
    _edit(registry, "  unary:  {params: {op: UnaryOp, layout: Layout}, returns: Storage}\n", "")
    text = registry.read_text(encoding="utf-8")
    start = text.index("  binary:\n    params")
    end = text.index("  affine:")
    registry.write_text(text[:start] + text[end:], encoding="utf-8")
    result = run_cli("--registry", registry, "--out", out)
    assert result.exit_code == 0, result.output
    assert f"removed   {out / 'kernels_numpy.py'}" in result.stdout
    assert not (out / "kernels_numpy.py").exists()


def test_files_that_are_not_ours_are_never_touched(setup):
    registry, out = setup
    (out / "helpers.py").write_text("def mine():\n    return 1\n")
    (out / "README.md").write_text(f"{MARKER_PREFIX}looks generated but is not a .py file\n")
    (out / "sub").mkdir()
    (out / "sub" / "deep.py").write_text(f"{MARKER_PREFIX}ops.yaml; in a subdirectory\n")
    _age(out)
    theirs = {k: v for k, v in snapshot(out).items() if k in ("helpers.py", "README.md", "sub/deep.py")}
    _edit(registry, 'doc: "x * mul + add"', 'doc: "changed"')
    assert run_cli("--registry", registry, "--out", out).exit_code == 0
    after = snapshot(out)
    for k, v in theirs.items():
        assert after[k] == v, k


def test_refuses_to_overwrite_a_file_that_is_not_generated(tmp_path):
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "storage.py").write_text("# my own storage module\n")
    before = snapshot(out)
    result = run_cli("--registry", MINI, "--out", out)
    assert result.exit_code == 2 and not crashed(result)
    assert f"{out / 'storage.py'}: exists and lacks the generated marker" in result.stderr
    assert "nothing written" in result.stderr
    assert snapshot(out) == before  # not even the other seven files


def test_refusal_in_check_mode(tmp_path):
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "device.py").write_text("x = 1\n")
    result = run_cli("--registry", MINI, "--out", out, "--check")
    assert result.exit_code == 2 and "lacks the generated marker" in result.stderr


def test_out_is_a_file(tmp_path):
    out = tmp_path / "pkg"
    out.write_text("not a directory\n")
    result = run_cli("--registry", MINI, "--out", out)
    assert result.exit_code == 2 and not crashed(result)
    assert out.read_text() == "not a directory\n"


def test_no_temporary_files_are_left_behind(setup):
    registry, out = setup
    _edit(registry, 'doc: "x * mul + add"', 'doc: "changed"')
    assert run_cli("--registry", registry, "--out", out).exit_code == 0
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == FILES


def test_generated_files_are_world_readable(setup):
    _, out = setup
    for name in FILES:
        assert (out / name).stat().st_mode & 0o777 == 0o644, name


# ----------------------------------------------------------------------------- help, version, parity


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["parity", "--help"], ["schema", "--help"]])
def test_help(args):
    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage: ")
    assert "--help" in result.stdout


def test_main_help_documents_exit_status_and_commands():
    text = run_cli("--help").stdout
    for needed in (
        "--registry",
        "--out",
        "--check",
        "--version",
        "parity",
        "schema",
        "Exit status",
        "1 stale",
        "2 invalid",
    ):
        assert needed in text, needed


def test_version():
    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"gen, version {generator.__version__}"


def test_unknown_option_is_a_usage_error():
    result = run_cli("--frobnicate")
    assert result.exit_code == 2 and "No such option" in result.stderr


def test_parity_table_of_the_fixture():
    result = run_cli("--registry", MINI, "parity")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["op", "cpu", "gpu"]
    ops = {
        ln.split()[0]: ln.split()[1:] for ln in lines[1:] if ln.startswith(("storage.", "device.", "qstorage.", "nn."))
    }
    assert ops == {
        "storage.dtype": ["yes", "yes"],
        "storage.device": ["yes", "yes"],
        "storage.unary": ["yes", "MISSING"],
        "storage.binary": ["yes", "MISSING"],
        "storage.affine": ["yes", "fallback"],
        "storage.fill": ["yes", "yes"],
        "storage.apply_scale": ["hook", "hook"],
        "device.zeros": ["yes", "MISSING"],
        "device.storage_from_slice": ["yes", "yes"],
        "device.location": ["yes", "yes"],
        "device.quantize": ["yes", "MISSING"],
        "qstorage.dtype": ["yes", "MISSING"],
        "qstorage.dequantize": ["yes", "MISSING"],
        "qstorage.matmul": ["MISSING", "MISSING"],
        "nn.scale_rows": ["yes", "MISSING"],
    }
    transfers = [ln.split() for ln in lines if ln.startswith("to_device")]
    assert [t[1:] for t in transfers] == [
        ["cpu->cpu", "yes"],
        ["cpu->gpu", "yes"],
        ["gpu->cpu", "yes"],
        ["gpu->gpu", "yes"],
    ]
    assert "cpu: 13 implemented, 0 fall back, 1 custom-op hooks, 1 missing" in result.stdout
    assert "gpu: 5 implemented, 1 fall back, 1 custom-op hooks, 8 missing" in result.stdout


def test_parity_json_of_the_fixture():
    import json

    rows = json.loads(run_cli("--registry", MINI, "parity", "--format", "json").stdout)
    assert {"op": "storage.affine", "cpu": "yes", "gpu": "fallback"} in rows
    assert {"op": "to_device gpu->cpu", "cpu": "yes"} in rows


# ----------------------------------------------------------------------------- broken templates


def _broken_templates(tmp_path):
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates)
    storage = templates / "storage.py.j2"
    storage.write_text(storage.read_text() + "\n\ndef broken_{{ registry.backends[0].name }}(:\n    pass\n")
    return templates


def test_render_reports_template_and_generated_line(tmp_path):
    templates = _broken_templates(tmp_path)
    model = model_of_text(MINI.read_text(encoding="utf-8"), "ops.yaml")
    good = render(model)["storage.py"]
    assert good.endswith("\n")
    line = good.count("\n") + 3  # the template's own text, two empty lines, then the broken def
    with pytest.raises(RenderError) as exc:
        render(model, templates=templates)
    err = exc.value
    assert (err.template, err.output, err.line) == ("storage.py.j2", "storage.py", line)
    assert str(err).startswith(f"storage.py.j2: renders invalid Python at storage.py:{line}:")
    assert "def broken_cpu(:" in str(err)


def _use_templates(monkeypatch, templates):
    """Point the generator at other templates: the module constant, and render()'s default
    (bound when render.py was imported)."""
    monkeypatch.setattr(generator.targets.python, "TEMPLATES", templates)
    params = inspect.signature(generator.targets.python.render).parameters
    if "templates" in params and params["templates"].default is not inspect.Parameter.empty:
        defaults = tuple(templates if d == TEMPLATES else d for d in generator.targets.python.render.__defaults__)
        monkeypatch.setattr(generator.targets.python.render, "__defaults__", defaults)


def test_cli_reports_a_broken_template_and_writes_nothing(tmp_path, monkeypatch):
    _use_templates(monkeypatch, _broken_templates(tmp_path))
    out = tmp_path / "pkg"
    result = run_cli("--registry", MINI, "--out", out)
    assert result.exit_code == 2 and not crashed(result), result.output
    assert "storage.py.j2: renders invalid Python at storage.py:" in result.stderr
    assert "def broken_cpu(:" in result.stderr and "nothing written" in result.stderr
    assert not out.exists()


def test_template_naming_an_unknown_attribute_fails_loudly(tmp_path):
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates)
    (templates / "device.py.j2").write_text((templates / "device.py.j2").read_text() + "{{ registry.no_such }}\n")
    import jinja2

    with pytest.raises(jinja2.UndefinedError):
        render(model_of_text(MINI.read_text(encoding="utf-8"), "ops.yaml"), templates=templates)


def test_render_error_can_travel_through_context_managers(tmp_path):
    """Python sets __traceback__ on an exception each time it passes a frame boundary such as
    a @contextmanager's yield; a frozen dataclass exception refuses that assignment and turns
    into FrozenInstanceError."""
    import contextlib

    @contextlib.contextmanager
    def step():
        yield

    model = model_of_text(MINI.read_text(encoding="utf-8"), "ops.yaml")
    with pytest.raises(RenderError):
        with step():
            render(model, templates=_broken_templates(tmp_path))

"""`gen` without --registry finds ops.yaml as git finds .git: in the working directory, else in
the nearest folder above; where there is none it says where it looked and how to name one."""

from __future__ import annotations

from tools_harness import gen, mini_copy


def test_gen_in_a_subfolder_uses_the_registry_above(tmp_path):
    project = tmp_path / "project"
    mini_copy(project)
    assert gen(cwd=project).returncode == 0
    deeper = project / "mini_rt" / "notes"
    deeper.mkdir()
    result = gen("--check", cwd=deeper)
    assert result.returncode == 0, result.stderr
    assert "generated files up to date" in result.stdout
    parity = gen("parity", cwd=deeper)
    assert parity.returncode == 0 and "gpu" in parity.stdout, parity.stderr


def test_no_registry_here_or_above_says_where_it_looked(tmp_path):
    result = gen("--check", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"ops.yaml:1:1: cannot read registry: no ops.yaml in {tmp_path} or any folder above it; "
        "run gen in the registry's folder (or below it), or name the registry with --registry PATH",
        "ops.yaml: 1 error; nothing written",
    ]


def test_a_named_registry_is_not_searched_for(tmp_path):
    mini_copy(tmp_path)
    (tmp_path / "sub").mkdir()
    result = gen("--registry", "ops.yaml", "--check", cwd=tmp_path / "sub")
    assert result.returncode == 2
    assert f"({tmp_path / 'sub' / 'ops.yaml'}); name the registry with --registry PATH" in result.stderr

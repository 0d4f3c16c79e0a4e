"""Editor and CI integration: the pre-commit hook other repositories use, the attributes that
mark generated/ as generated, the schema reference on ops.yaml's first line, and the CI
workflow the README shows."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib

import jsonschema
import pytest
import yaml
from tools_harness import REPO, run_cli


@pytest.fixture(scope="module")
def hook() -> dict:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(hooks, list) and len(hooks) == 1
    return hooks[0]


def test_pre_commit_hook(hook):
    assert {k: hook[k] for k in ("id", "entry", "language", "pass_filenames")} == {
        "id": "opgen-check",
        "entry": "gen --check",
        "language": "python",
        "pass_filenames": False,
    }
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert hook["entry"].split()[0] in scripts, "the entry is a console script the package installs"


@pytest.mark.parametrize(
    "path, runs",
    [
        ("ops.yaml", True),
        ("templates/storage.py.j2", True),
        ("runtime/cpu/__init__.py", True),
        ("generated/storage.py", True),
        ("hip/unary.hip", True),  # kernel sources: their entry points shape the launch wrappers
        ("README.md", False),
        ("tests/tools/test_ci_files.py", False),
        ("generator/cli.py", False),
        ("docs/ops.yaml", False),
    ],
)
def test_pre_commit_hook_files(hook, path, runs):
    assert bool(re.search(hook["files"], path)) is runs


def test_generated_is_marked_generated_and_diffable():
    lines = [ln for ln in (REPO / ".gitattributes").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines == ["generated/** linguist-generated=true"]
    if shutil.which("git") and (REPO / ".git").exists():
        out = subprocess.run(
            ["git", "check-attr", "linguist-generated", "diff", "--", "generated/storage.py"],
            cwd=REPO,
            capture_output=True,
            text=True,
        ).stdout
        assert out == ("generated/storage.py: linguist-generated: true\ngenerated/storage.py: diff: unspecified\n")


def test_schema_reference_on_the_first_line():
    first = (REPO / "ops.yaml").read_text().splitlines()[0]
    m = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
    assert m, first
    schema_file = (REPO / m[1]).resolve()
    assert schema_file == REPO / "generator" / "ops.schema.json"
    schema = json.loads(schema_file.read_text())
    assert schema == json.loads(run_cli("schema").stdout)
    jsonschema.Draft202012Validator(schema).validate(yaml.safe_load((REPO / "ops.yaml").read_text()))


def test_readme_ci_workflow():
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Continuous integration") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)[1]
    workflow = yaml.safe_load(block)
    steps = [s.get("run", "") for job in workflow["jobs"].values() for s in job["steps"]]
    assert any("gen --check --patch" in s for s in steps)
    assert any("gen audit" in s for s in steps)

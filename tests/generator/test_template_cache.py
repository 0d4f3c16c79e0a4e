"""Compiled templates are kept in templates/__pycache__ (jinja's bytecode cache): a changed
template is never served from it, and a directory that cannot hold it only costs time."""

from __future__ import annotations

import shutil

from gen_harness import MINI, model_of_text

from generator.targets.python import TEMPLATES, render


def model():
    return model_of_text(MINI.read_text(encoding="utf-8"), "ops.yaml")


def test_a_changed_template_is_compiled_again(tmp_path):
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates, ignore=shutil.ignore_patterns("__pycache__"))
    before = render(model(), templates=templates)
    assert any((templates / "__pycache__").iterdir())  # the first render filled the cache
    device = templates / "device.py.j2"
    device.write_text(device.read_text() + "\nCACHE_PROBE = {{ registry.backends | length }}\n")
    after = render(model(), templates=templates)
    assert after["device.py"] == before["device.py"] + f"\nCACHE_PROBE = {len(model().backends)}\n"
    assert {k: v for k, v in after.items() if k != "device.py"} == {k: v for k, v in before.items() if k != "device.py"}


def test_an_unwritable_cache_directory_still_renders(tmp_path):
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates, ignore=shutil.ignore_patterns("__pycache__"))
    (templates / "__pycache__").write_text("a file where the cache directory would be\n")
    assert render(model(), templates=templates) == render(model())

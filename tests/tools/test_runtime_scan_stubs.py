"""A runtime function whose body only raises NotImplementedForBackend (what `gen new-backend`
writes) is not an implementation: runtime_scan leaves it out, so its op stays missing."""

from __future__ import annotations

import textwrap

import pytest
from tools_harness import MINI_DIR

from generator.registry.loader import load_file
from generator.registry.runtime_scan import pending, scan
from generator.registry.validate import validate
from generator.tools.scaffold import runtime_module


def defined(tmp_path, source: str) -> set[str]:
    (tmp_path / "rt_mod.py").write_text(textwrap.dedent(source))
    return set(scan(tmp_path, "rt_mod").functions)


@pytest.mark.parametrize(
    "body",
    [
        'raise NotImplementedForBackend("toy", "f")',
        '"""Docstring."""\n    raise NotImplementedForBackend("toy", "f")',
        "raise errors.NotImplementedForBackend(BACKEND, 'f')",
        "raise NotImplementedForBackend",
    ],
)
def test_stubs_are_not_counted(tmp_path, body):
    assert defined(tmp_path, f"def f(inner, layout):\n    {body}\n\n\ndef g():\n    return 1\n") == {"g"}


def test_one_line_stub(tmp_path):
    assert defined(tmp_path, 'def f(): raise NotImplementedForBackend("toy", "f")\n') == set()


@pytest.mark.parametrize(
    "body",
    [
        "raise NotImplementedError('f')",  # another error: a deliberate implementation choice
        '"""Only a docstring."""',
        "if x:\n        raise NotImplementedForBackend('toy', 'f')\n    return x",
        "raise NotImplementedForBackend('toy', 'f')\n    return 1",
        "x = 1\n    raise NotImplementedForBackend('toy', 'f')",
        "return NotImplementedForBackend('toy', 'f')",
    ],
)
def test_real_bodies_are_counted(tmp_path, body):
    assert defined(tmp_path, f"def f(x=None):\n    {body}\n") == {"f"}


def test_the_scaffold_defines_only_availability(tmp_path):
    registry = validate(load_file(str(MINI_DIR / "ops.yaml")), MINI_DIR)
    text = runtime_module(registry, "toy", "mini_rt/toy.py")
    imported = {"NotImplementedForBackend"}  # imported names count (a runtime may import its functions)
    assert defined(tmp_path, text) == {"availability", *imported}
    implemented = text.replace('    raise NotImplementedForBackend(_BACKEND, "zeros")', "    return None")
    assert defined(tmp_path, implemented) == {"availability", "zeros", *imported}


def test_pending_files_are_scanned_before_they_exist(tmp_path):
    target = tmp_path / "later.py"
    assert scan(tmp_path, "later").path is None
    with pending({target: "def availability():\n    return None\n"}):
        module = scan(tmp_path, "later")
    assert module.path == target and module.functions == {"availability"} and not target.exists()
    assert scan(tmp_path, "later").path is None

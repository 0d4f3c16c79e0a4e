"""The generator's shape as a reader meets it: a few top-level modules, and one subpackage per
stage whose `__init__` docstring names every module it owns."""

from __future__ import annotations

import ast
from pathlib import Path

GENERATOR = Path(__file__).resolve().parents[2] / "generator"


def owned(package: Path) -> list[str]:
    """The modules and subpackages of `package`, by name (`__init__` aside)."""
    names = [p.stem for p in package.glob("*.py") if p.stem != "__init__"]
    names += [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(names)


def test_the_top_level_stays_small():
    modules = [p.stem for p in GENERATOR.glob("*.py") if p.stem != "__init__"]
    assert 0 < len(modules) <= 12, modules


def test_every_stage_says_what_it_owns():
    packages = [GENERATOR, *(p for p in sorted(GENERATOR.iterdir()) if (p / "__init__.py").is_file())]
    assert {p.name for p in packages} >= {"registry", "targets", "output", "audit", "tools"}
    unnamed = {}
    for package in packages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
        missing = [name for name in owned(package) if name not in doc]
        if missing or not doc:
            unnamed[package.name] = missing or ["(no docstring)"]
    assert unnamed == {}

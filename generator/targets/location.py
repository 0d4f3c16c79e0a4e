"""Where the templates are: inside the installed package (opgen/templates, the wheel's
package data), else at the top of a checkout (templates/ beside generator/)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def _templates() -> Path:
    installed = PACKAGE / "templates"
    return installed if installed.is_dir() else PACKAGE.parent / "templates"


TEMPLATES = _templates()

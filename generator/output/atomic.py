"""Write a file whole or not at all: a temp file beside it, then a rename. A reader (an
editor, `gen` in another shell, pre-commit) never sees half a registry or half a module."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Written in an output folder while gen changes several files as one transaction (writer.py),
# removed when it is done: a run killed in between leaves it. Here, so that stamp.py, on gen's
# fast path, can look for it without importing the writer and its templates.
JOURNAL = ".gen-journal"


def write_text(path: Path, text: str) -> None:
    """Write `text` as is (its own line endings); an existing file keeps its permissions."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

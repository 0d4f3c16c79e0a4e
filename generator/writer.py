"""Write: bring an output directory in line with the rendered files.

Only changed files are written, each atomically (temp file + rename); generated files no
longer produced are removed; a file without the generated marker is never touched."""

from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from generator.render import MARKER_PREFIXES


class WriteRefused(Exception):
    """A file the generator would write exists and was not generated: it is not ours."""


@dataclass
class Plan:
    write: dict[str, str] = field(default_factory=dict)  # relative path -> new text
    unchanged: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    current: dict[str, str] = field(default_factory=dict)  # relative path -> text on disk

    @property
    def stale(self) -> list[str]:
        return sorted([*self.write, *self.remove])

    def diff(self, label: str = "") -> str:
        """The unified diff of the stale files, named `a/<label><file>`."""
        chunks = []
        for rel in self.stale:
            old = self.current.get(rel, "")
            new = self.write.get(rel, "")
            lines = difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                f"a/{label}{rel}" if rel in self.current else "/dev/null",
                f"b/{label}{rel}" if rel in self.write else "/dev/null",
            )
            # As git writes it, so that the diff applies as a patch.
            chunks.extend(ln if ln.endswith("\n") else f"{ln}\n\\ No newline at end of file\n" for ln in lines)
        return "".join(chunks)


def is_generated(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().startswith(MARKER_PREFIXES)
    except (OSError, UnicodeDecodeError):
        return False


def plan(out: Path, rendered: dict[str, str], owned: tuple[str, ...] = ("*.py", "*.hip")) -> Plan:
    """What to write and remove in `out`. `owned`: the patterns of the files the target owns
    there (top level only: another target's folder inside `out` is never looked into)."""
    result = Plan()
    for rel, text in sorted(rendered.items()):
        path = out / rel
        if not path.exists():
            result.write[rel] = text
            continue
        if not is_generated(path):
            raise WriteRefused(f"{path}: exists and lacks the generated marker; refusing to overwrite it")
        current = path.read_text(encoding="utf-8")
        result.current[rel] = current
        if current == text:
            result.unchanged.append(rel)
        else:
            result.write[rel] = text
    if out.is_dir():
        for path in sorted(p for pattern in owned for p in out.glob(pattern)):
            rel = path.name
            if rel not in rendered and is_generated(path):
                result.remove.append(rel)
                result.current[rel] = path.read_text(encoding="utf-8")
    return result


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply(out: Path, result: Plan) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for rel, text in result.write.items():
        _atomic_write(out / rel, text)
    for rel in result.remove:
        (out / rel).unlink()

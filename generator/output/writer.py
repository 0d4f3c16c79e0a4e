"""Write: bring an output directory in line with the rendered files.

Only changed files are written; generated files no longer produced are removed; a file
without the generated marker, and any symbolic link, is never written, written through or
removed.

A run is one transaction per output directory. Every new file is first written whole beside
its target (`.gen-tmp.*`); then a journal (`.gen-journal`) naming the files about to change
is written, the renames and removals are made, and the journal is removed. A run killed
before the journal leaves the old package (and temp files, cleared by the next run); one
killed after it leaves the journal, by which the next `gen` and `gen --check` know the
package may be half old, half new and say so. Runs on one directory do not interleave:
each holds an exclusive lock on the directory (flock; `gen --check` a shared one) from plan
to last rename."""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..targets.python import MARKER_PREFIXES
from .atomic import JOURNAL

TMP_PREFIX = ".gen-tmp."


class WriteRefused(Exception):
    """A file the generator would write exists and was not generated: it is not ours."""


class OutputError(Exception):
    """An output directory cannot be locked or written; the message is one line."""


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
        chunks: list[str] = []
        for rel in self.stale:
            old = self.current.get(rel, "")
            new = self.write.get(rel, "")
            lines = difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
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


def plan(out: Path, rendered: dict[str, str], owned: tuple[str, ...] = ("*.py", "*.hip", "*.h")) -> Plan:
    """What to write and remove in `out`. `owned`: the patterns of the files the target owns
    there (top level only: another target's folder inside `out` is never looked into)."""
    result = Plan()
    for rel, text in sorted(rendered.items()):
        path = out / rel
        if path.is_symlink():
            raise WriteRefused(
                f"{path}: is a symbolic link (to {os.readlink(path)}); refusing to write through or replace it"
            )
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
            if rel not in rendered and not path.is_symlink() and is_generated(path):
                result.remove.append(rel)
                result.current[rel] = path.read_text(encoding="utf-8")
    return result


def _write_temp(out: Path, rel: str, text: str) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{rel}.", dir=out)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def interrupted(out: Path) -> list[str] | None:
    """The files a run killed in mid-write was changing in `out` (from its journal), or None."""
    try:
        text = (out / JOURNAL).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return ["(unreadable journal)"]
    return [line.split(" ", 1)[1] for line in text.splitlines() if line.startswith(("write ", "remove "))]


def _fault(point: str) -> None:
    """Test hooks at the named points of a write (never set outside tests):
    OPGEN_FAULT=POINT:N kills the process (SIGKILL) the N+1-th time it passes POINT;
    OPGEN_PAUSE=FILE makes the first pass of any point create FILE.paused, then wait for FILE."""
    spec = os.environ.get("OPGEN_FAULT")
    if spec and spec.split(":")[0] == point:
        left = int(spec.split(":")[1])
        if left <= 0:
            os.kill(os.getpid(), signal.SIGKILL)
        os.environ["OPGEN_FAULT"] = f"{point}:{left - 1}"
    gate = os.environ.pop("OPGEN_PAUSE", None)
    if gate:
        Path(f"{gate}.paused").touch()
        while not os.path.exists(gate):
            time.sleep(0.01)


def apply(out: Path, result: Plan) -> None:
    """Write the plan's files and remove its orphans, as one journaled transaction. An
    OSError before the journal is in place leaves `out` as it was (raised as OutputError)."""
    temps: dict[str, Path] = {}
    try:
        out.mkdir(parents=True, exist_ok=True)
        _clear_temps(out)
        for rel, text in result.write.items():
            temps[rel] = _write_temp(out, rel, text)
            _fault("temp")
        changes = [*(f"write {rel}" for rel in temps), *(f"remove {rel}" for rel in result.remove)]
        if changes:
            journal = _write_temp(
                out,
                JOURNAL,
                "# gen was changing these files: if this file is here, it was "
                "interrupted; run gen\n" + "".join(f"{c}\n" for c in changes),
            )
            os.replace(journal, out / JOURNAL)
    except BaseException as exc:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OutputError(f"{exc.filename or out}: cannot write ({exc.strerror}); nothing written") from None
        raise
    try:
        for rel, tmp in temps.items():
            _fault("rename")
            os.replace(tmp, out / rel)
        for rel in result.remove:
            _fault("rename")
            (out / rel).unlink()
        _fault("done")
        (out / JOURNAL).unlink(missing_ok=True)
    except OSError as exc:
        raise OutputError(
            f"{exc.filename}: cannot write ({exc.strerror}); {out} is half-written "
            f"({JOURNAL} says which files changed): run gen again"
        ) from None


def _clear_temps(out: Path) -> None:
    """Temp files a killed run left: ours when they are plain files, empty, generated or
    a journal's."""
    for path in out.glob(f"{TMP_PREFIX}*"):
        if path.is_symlink() or not path.is_file():
            continue
        if path.stat().st_size == 0 or is_generated(path) or path.name.startswith(f"{TMP_PREFIX}{JOURNAL}."):
            path.unlink()


@contextlib.contextmanager
def locked(
    outs: Iterable[Path], *, exclusive: bool = True, waiting: Callable[[Path], None] = lambda out: None
) -> Iterator[None]:
    """Hold the lock of every output directory of one run (in one order, so that two runs
    cannot deadlock): exclusive to write, creating missing directories; shared to read
    (`gen --check`), skipping directories that do not exist or cannot hold a lock file.
    `waiting(out)` is called before blocking on a lock another run holds."""
    with contextlib.ExitStack() as stack:
        for out in sorted({Path(os.path.abspath(o)) for o in outs}):
            fd = _open_lock(out, exclusive)
            if fd is None:
                continue
            stack.callback(os.close, fd)
            mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                waiting(out)
                fcntl.flock(fd, mode)
        yield


def _open_lock(out: Path, exclusive: bool) -> int | None:
    """The directory itself is locked (flock works on a directory's descriptor): no lock
    file to leave behind, to ignore in git or to find replaced by a symbolic link."""
    try:
        if exclusive:
            out.mkdir(parents=True, exist_ok=True)
        return os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        if exclusive:
            raise OutputError(f"{exc.filename or out}: cannot write ({exc.strerror}); nothing written") from None
        return None  # nothing there to read: --check reports every file as missing

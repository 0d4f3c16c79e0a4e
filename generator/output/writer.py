"""Write: bring the output folders of one run in line with the rendered files.

Only changed files are written; generated files no longer produced are removed; a file
without the generated marker, and any symbolic link (a file, or a target folder itself), is
never written, written through or removed.

A run is one transaction over every target's folder, in three phases:

1. Prepare: every new file is written whole beside its target (`.gen-tmp.*`) in every
   folder, then a journal (`.gen-journal`) in every folder that changes, naming its files
   about to change and the run's other folders. Nothing a reader sees has changed yet: a
   failure here removes what this run wrote and says "nothing written", truthfully.
2. Commit: the renames and removals, folder after folder.
3. Done: the journals are removed, only once every folder is committed.

A journal per folder rather than one for the run: each folder keeps its own marker however
the folders lie (generated/rust inside generated/, or a rust folder elsewhere), and is
complete before the first rename anywhere, so a run killed or failing in phase 2 leaves a
journal in every folder it changes, and one killed in phase 3 leaves journals only over
files that are all new. The next `gen --check` reports a stale folder with a journal as
interrupted and `gen` rewrites it; a journal over current files is cleared by the next `gen`.

Runs on one folder do not interleave: each holds an exclusive lock on every folder of the
run (flock; `gen --check` a shared one) from plan to last rename."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..targets.python import MARKER_PREFIXES
from .atomic import JOURNAL
from .diff import unified

TMP_PREFIX = ".gen-tmp."
DIFF_LINES = 5000  # the most lines of diff --check prints; --patch FILE holds all of it


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

    def file_diff(self, rel: str, label: str = "") -> Iterator[str]:
        """The unified diff of one stale file, named `a/<label><file>`, line by line."""
        lines = unified(
            self.current.get(rel, ""),
            self.write.get(rel, ""),
            f"a/{label}{rel}" if rel in self.current else "/dev/null",
            f"b/{label}{rel}" if rel in self.write else "/dev/null",
        )
        # As git writes it, so that the diff applies as a patch.
        return (ln if ln.endswith("\n") else f"{ln}\n\\ No newline at end of file\n" for ln in lines)

    def diff(self, label: str = "") -> str:
        """The unified diff of every stale file."""
        return "".join(line for rel in self.stale for line in self.file_diff(rel, label))


def capped_diff(plans: Iterable[tuple[Plan, str]], limit: int = DIFF_LINES) -> tuple[str, list[str]]:
    """(the diff of every plan's stale files (plan, label), cut after `limit` lines; the
    files whose diff was cut or not shown). A file past the cut is never diffed: a change to
    every file costs only the part printed."""
    out: list[str] = []
    cut: list[str] = []
    for result, label in plans:
        for rel in result.stale:
            if len(out) >= limit:
                cut.append(f"{label}{rel}")
                continue
            for line in result.file_diff(rel, label):
                if len(out) == limit:
                    cut.append(f"{label}{rel}")
                    break
                out.append(line)
    return "".join(out), cut


def is_generated(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().startswith(MARKER_PREFIXES)
    except (OSError, UnicodeDecodeError):
        return False


def refuse_link(folder: Path) -> None:
    """A target folder that is a symbolic link would have gen write wherever it leads."""
    if folder.is_symlink():
        raise WriteRefused(
            f"{folder}: is a symbolic link (to {os.readlink(folder)}); refusing to write through it "
            "(name the folder it leads to instead)"
        )


def plan(out: Path, rendered: dict[str, str], owned: tuple[str, ...] = ("*.py", "*.hip", "*.h")) -> Plan:
    """What to write and remove in `out`. `owned`: the patterns of the files the target owns
    there (top level only: another target's folder inside `out` is never looked into)."""
    refuse_link(out)
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
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a failed write names no file
            exc.filename = str(out / rel)
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


def _journal_text(out: Path, result: Plan, folders: Sequence[Path]) -> str:
    others = [f"with {folder}\n" for folder in folders if folder != out]
    changes = [*(f"write {rel}\n" for rel in result.write), *(f"remove {rel}\n" for rel in result.remove)]
    return (
        "# gen was changing these files (and those of the folders named `with`, as one run): "
        "if this file is here, it was interrupted; run gen\n" + "".join(others) + "".join(changes)
    )


def apply(folders: Sequence[tuple[Path, Plan]]) -> None:
    """Write every folder's planned files and remove its orphans, as one transaction (the
    module's docstring says how). Raises OutputError, saying whether anything was written."""
    changing = [(out, result) for out, result in folders if result.write or result.remove]
    if changing:
        temps = _prepare(changing)
        _commit(changing, temps)
    _finish([out for out, _ in folders])


def _prepare(changing: list[tuple[Path, Plan]]) -> dict[tuple[Path, str], Path]:
    """Phase 1: the temp files and journals. On any failure, what this run wrote is removed
    (a journal an earlier, interrupted run left stays: it still says something true)."""
    temps: dict[tuple[Path, str], Path] = {}
    placed: list[Path] = []
    folders = [out for out, _ in changing]
    try:
        for out, _ in changing:
            if not out.is_dir():
                out.mkdir(parents=True)
            _clear_temps(out)
        for out, result in changing:
            for rel, text in result.write.items():
                temps[out, rel] = _write_temp(out, rel, text)
                _fault("temp")
        for out, result in changing:
            temps[out, JOURNAL] = _write_temp(out, JOURNAL, _journal_text(out, result, folders))
        for out in folders:
            had = os.path.lexists(out / JOURNAL)
            os.replace(temps[out, JOURNAL], out / JOURNAL)
            del temps[out, JOURNAL]
            if not had:
                placed.append(out / JOURNAL)
            _fault("journal")
    except BaseException as exc:
        for path in [*temps.values(), *placed]:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OutputError(f"{exc.filename or folders[0]}: cannot write ({exc.strerror}); nothing written") from None
        raise
    return temps


def _commit(changing: list[tuple[Path, Plan]], temps: dict[tuple[Path, str], Path]) -> None:
    """Phase 2: the renames and removals. A failure leaves every folder's journal."""
    try:
        for out, result in changing:
            for rel in result.write:
                _fault("rename")
                os.replace(temps[out, rel], out / rel)
                del temps[out, rel]
            for rel in result.remove:
                _fault("rename")
                (out / rel).unlink()
        _fault("done")
    except OSError as exc:
        for tmp in temps.values():
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        journals = ", ".join(str(out / JOURNAL) for out, _ in changing)
        raise OutputError(
            f"{exc.filename}: cannot write ({exc.strerror}); the output is half-written "
            f"({journals} say{'s' if len(changing) == 1 else ''} which files changed): run gen again"
        ) from None


def _finish(folders: list[Path]) -> None:
    """Phase 3: every journal goes, this run's and any an interrupted run left (the folders
    now hold what the registry generates). A folder without one is not touched: a run with
    nothing to change writes nothing, and so works on a read-only tree."""
    for out in folders:
        journal = out / JOURNAL
        if not os.path.lexists(journal):
            continue
        try:
            journal.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise OutputError(
                f"{journal}: cannot remove ({exc.strerror}); every file was written (the next gen removes it)"
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
    file to leave behind, to ignore in git or to find replaced by a symbolic link. A folder
    that is a link is not opened (O_NOFOLLOW): plan refuses it, with the reason."""
    try:
        if exclusive and not out.is_dir() and not out.is_symlink():
            out.mkdir(parents=True)
        return os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        if exclusive and not out.is_symlink():
            raise OutputError(f"{exc.filename or out}: cannot write ({exc.strerror}); nothing written") from None
        return None  # nothing there to read (--check reports every file as missing), or a link

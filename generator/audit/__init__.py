"""`gen audit`: hand-written code that dispatches on the backend but lacks one the registry
declares. The generated package has an arm for every backend by construction; code written
by hand around it (a tensor library's own matches, custom ops) does not, and this finds it.
Owns: python and rust (find the dispatch sites in each language), coverage (judge which
backends a site handles), signatures (Rust impl methods), report (text, JSON, SARIF).

Files are read in parallel (one process per core): parsing dominates, and each file is
independent. Findings come out in path order, then line order, whatever the scheduling."""

from __future__ import annotations

import functools
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..model import camel
from .coverage import MISSING, WILDCARD, Finding, judge_dispatch, judge_trait, normalize

LANGUAGES = {".py": "python", ".rs": "rust"}
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "target"})  # and hidden ones (.git, .venv)
PARALLEL_FROM = 24  # files; below this, starting processes costs more than it saves
ALLOW = re.compile(r"opgen:\s*allow\(([^)]*)\)")  # `# opgen: allow(rocm)` on a dispatch's line


@dataclass(frozen=True)
class Source:
    path: str
    lang: str


@dataclass(frozen=True)
class FileReport:
    path: str
    findings: tuple[Finding, ...] = ()
    checked: int = 0  # dispatch points and custom-op implementations judged
    error: str | None = None


def sources(paths: list[str], lang: str | None) -> tuple[list[Source], list[str]]:
    """The files to read (directories recursed, in sorted order) and the errors of bad paths."""
    found: dict[str, Source] = {}
    errors = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
                for name in sorted(filenames):
                    file_lang = LANGUAGES.get(os.path.splitext(name)[1])
                    if file_lang and lang in (None, file_lang):
                        path = os.path.join(dirpath, name)
                        found.setdefault(path, Source(path, file_lang))
        elif p.is_file():
            file_lang = lang or LANGUAGES.get(p.suffix)
            if file_lang is None:
                errors.append(
                    f"{given}:1:1: cannot tell the language of this file (not .py or .rs); "
                    "pass --lang python or --lang rust"
                )
            else:
                found.setdefault(given, Source(given, file_lang))
        else:
            errors.append(f"{given}:1:1: no such file or directory")
    return list(found.values()), errors


def _mentions(text: str, backends: tuple[str, ...]) -> bool:
    """Whether a file can hold a finding at all: most files of a tree never name a backend."""
    flat = text.lower().replace("_", "")
    return any(normalize(b) in flat for b in backends)


def allowances(text: str) -> dict[int, frozenset[str]]:
    """Line -> the normalized backends an `opgen: allow(a, b)` comment on it lets pass."""
    if "opgen:" not in text:
        return {}
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        found = ALLOW.search(line)
        if found:
            out[n] = frozenset(normalize(b.strip()) for b in found[1].split(",") if b.strip())
    return out


def audit_file(source: Source, backends: tuple[str, ...], require_fwd: bool = True) -> FileReport:
    from .python import ParseError

    try:
        data = Path(source.path).read_bytes()
        text = data.decode("utf-8")
    except OSError as exc:
        return FileReport(source.path, error=f"{source.path}:1:1: cannot read: {exc.strerror}")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return FileReport(source.path, error=f"{source.path}:{line}:1: not UTF-8: {exc.reason}")
    if not _mentions(text, backends):
        return FileReport(source.path)
    known = frozenset(map(normalize, backends))
    try:
        if source.lang == "rust":
            from . import rust as audit_rust

            found = audit_rust.read(data, known)
        else:
            from . import python as audit_python

            found = audit_python.read(text, known)
    except ParseError as exc:
        return FileReport(source.path, error=f"{source.path}:{exc.line}:{exc.col}: {exc.message}")
    allowed = allowances(text)
    none: frozenset[str] = frozenset()
    spelled = tuple(camel(b) for b in backends) if source.lang == "rust" else backends
    impls = [t for t in found.impls if require_fwd or t.definition]
    # An allowance stands on the dispatch's line, or on the next where a formatter moved it
    # (rustfmt puts a comment that follows `match x {` on a line of its own).
    findings = [
        f
        for d in found.dispatches
        for f in judge_dispatch(source.path, d, spelled, allowed.get(d.line, none) | allowed.get(d.line + 1, none))
    ]
    findings += [f for t in impls for f in judge_trait(source.path, t, backends, allowed.get(t.line, none))]
    return FileReport(source.path, tuple(sorted(findings)), len(found.dispatches) + len(impls))


def audit(files: list[Source], backends: tuple[str, ...], jobs: int, require_fwd: bool = True) -> list[FileReport]:
    work = functools.partial(audit_file, backends=backends, require_fwd=require_fwd)
    if jobs <= 1 or len(files) < PARALLEL_FROM:
        return [work(f) for f in files]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(work, files, chunksize=max(1, len(files) // (jobs * 8))))


def summary(reports: list[FileReport], backends: tuple[str, ...]) -> list[str]:
    """A count per file with findings, then the total."""
    lines = []
    for r in reports:
        missing = sum(f.kind == MISSING for f in r.findings)
        wild = sum(f.kind == WILDCARD for f in r.findings)
        if r.findings:
            lines.append(f"{r.path}: {missing} missing, {wild} wildcard, in {r.checked} dispatch points")
    missing = sum(f.kind == MISSING for r in reports for f in r.findings)
    wild = sum(f.kind == WILDCARD for r in reports for f in r.findings)
    checked = sum(r.checked for r in reports)
    clean = sum(not r.findings and not r.error for r in reports)
    lines.append(
        f"audit: {len(reports)} files, {checked} dispatch points, {missing} missing, {wild} wildcard, "
        f"{clean} files clean (backends: {', '.join(backends)})"
    )
    return lines

"""Coverage of hand-written backend dispatch: which registry backends a `match`, an if/elif
chain or a custom-op implementation handles, and what `gen audit` reports about it.

The Python and Rust readers (audit_python, audit_rust) only find the dispatch points and
the backend names each one names; judging them against the registry happens here, once."""

from __future__ import annotations

from dataclasses import dataclass

MISSING = "missing"
WILDCARD = "wildcard"
# What tested values count as a device or a backend (a string that merely equals "cuda",
# like an export format, does not): the last name of the subject, lower-cased, contains one.
DEVICE_WORDS = ("device", "backend", "kind", "type")


def normalize(name: str) -> str:
    """`CUDA`, `Cuda`, `cuda` and `my_gpu` / `MyGpu` name the same backend."""
    return name.replace("_", "").lower()


def device_valued(name: str) -> bool:
    """Whether a subject's last name (`device`, `self.backend`, `d.kind`, `dev_type`) says it
    holds a device or a backend; `is_*` calls (`d.is_cuda()`) are tested by the readers."""
    low = name.lower()
    return low == "dev" or any(word in low for word in DEVICE_WORDS)


@dataclass(frozen=True)
class Slot:
    """One scrutinee position of a dispatch (a tuple `match (a, b)` has two)."""

    backends: frozenset[str]  # normalized names the unguarded cases of this position name
    wildcard_line: int | None = None  # first unguarded case that takes every other value, if any
    wildcard_fails: bool = False  # that case only fails (Err, bail!, panic!, raise ...)
    label: str = ""  # the position's own subject in a tuple (`rhs`); empty for a single one


@dataclass(frozen=True)
class Dispatch:
    """A place in hand-written code that picks code by backend."""

    line: int
    col: int
    what: str  # "match on storage", "if/elif chain over device.is_<backend>()"
    slots: tuple[Slot, ...]
    case_word: str = "case"  # "arm" in Rust, "branch" for if/elif
    # The backends that can reach it, when it sits inside code for some backends only (an arm
    # `Storage::Cuda(s) => match ..`, a `fn cuda_fwd`); None: any backend.
    scope: frozenset[str] | None = None


@dataclass(frozen=True)
class TraitImpl:
    """A custom-op implementation (a Python class, a Rust `impl Trait for Type`) or a Rust
    trait definition, with the backends it has a `<backend>_fwd` for."""

    line: int
    col: int
    what: str  # "class Softmax(CustomOp1)", "impl CustomOp1 for Softmax", "trait CustomOp1"
    hooks: frozenset[str]  # normalized backend names with a <backend>_fwd
    verb: str = "overrides"
    definition: bool = False  # a trait definition: judged whatever --require-fwd says


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    col: int
    kind: str  # MISSING | WILDCARD
    message: str
    backends: tuple[str, ...] = ()  # the registry backends it is about

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"


def _names(backends: list[str]) -> str:
    return ", ".join(backends) if backends else "none"


def _plural(word: str) -> str:
    return f"{word}es" if word.endswith("ch") else f"{word}s"


def _where(d: Dispatch, slot_of: dict[str, list[int]], names: list[str]) -> str:
    """` in position 2 (rhs)`: which positions of a tuple dispatch lack the backends."""
    if len(d.slots) < 2:
        return ""
    positions = sorted({i for b in names for i in slot_of[b]})
    named = [f"{i + 1} ({d.slots[i].label})" if d.slots[i].label else str(i + 1) for i in positions]
    return f" in position{'s' if len(positions) > 1 else ''} " + ", ".join(named)


def judge_dispatch(
    path: str, d: Dispatch, backends: tuple[str, ...], allowed: frozenset[str] = frozenset()
) -> list[Finding]:
    """A missing finding for backends no case names, where no wildcard takes them or the
    wildcard only fails; a note for those a wildcard that does real work takes. Each position
    of a tuple is judged on its own. `allowed`: normalized names suppressed on this line."""
    hard: dict[str, list[int]] = {}
    soft: dict[str, list[int]] = {}
    failing: set[int] = set()
    named = [b for b in backends if any(normalize(b) in s.backends for s in d.slots)]
    if d.scope is not None:
        backends = tuple(b for b in backends if normalize(b) in d.scope)
    for i, slot in enumerate(d.slots):
        for b in backends:
            if normalize(b) in slot.backends or normalize(b) in allowed:
                continue
            if slot.wildcard_line is None or slot.wildcard_fails:
                hard.setdefault(b, []).append(i)
                if slot.wildcard_line is not None:
                    failing.add(slot.wildcard_line)
            else:
                soft.setdefault(b, []).append(i)
    out = []
    if hard:
        names = list(hard)
        why = ""
        if failing:
            where = ", ".join(f"line {n}" for n in sorted(failing))
            why = f"; its wildcard {d.case_word} ({where}) only fails"
        out.append(
            Finding(
                path,
                d.line,
                d.col,
                MISSING,
                f"{d.what} has no {d.case_word} for {_names(names)}{_where(d, hard, names)} "
                f"({_plural(d.case_word)} for: {_names(named)}){why}",
                tuple(names),
            )
        )
    soft_only = [b for b in soft if b not in hard]
    if soft_only:
        lines = sorted({line for b in soft_only for i in soft[b] if (line := d.slots[i].wildcard_line) is not None})
        where = ", ".join(f"line {n}" for n in lines)
        out.append(
            Finding(
                path,
                d.line,
                d.col,
                WILDCARD,
                f"note: {d.what} sends {_names(soft_only)}{_where(d, soft, soft_only)} "
                f"to its wildcard {d.case_word} ({where})",
                tuple(soft_only),
            )
        )
    return out


def judge_trait(
    path: str, t: TraitImpl, backends: tuple[str, ...], allowed: frozenset[str] = frozenset()
) -> list[Finding]:
    """Some <backend>_fwd but not all: the others raise (Python) or error (Rust) at run time."""
    have = [b for b in backends if normalize(b) in t.hooks]
    lacking = [b for b in backends if normalize(b) not in t.hooks and normalize(b) not in allowed]
    if not have or not lacking:
        return []
    fwd = ", ".join(f"{b}_fwd" for b in have)
    missing = ", ".join(f"{b}_fwd" for b in lacking)
    return [Finding(path, t.line, t.col, MISSING, f"{t.what} {t.verb} {fwd} but not {missing}", tuple(lacking))]


def chain_subject(branches: list[list[tuple[str, frozenset[str]]]]) -> tuple[str, list[frozenset[str]]] | None:
    """The value an if/elif chain dispatches on, and the backends each of its branches names:
    the subject tested in most branches (each branch: its (subject, backends) tests). None
    where no branch tests one, or only one does: a lone `if device.is_cuda():` is a special
    case, not a dispatch."""
    by_subject: dict[str, list[frozenset[str]]] = {}
    for tests in branches:
        for subject in dict.fromkeys(s for s, _ in tests):
            by_subject.setdefault(subject, []).append(frozenset().union(*(n for s, n in tests if s == subject)))
    if not by_subject:
        return None
    subject, hits = max(by_subject.items(), key=lambda kv: len(kv[1]))
    return (subject, hits) if len(hits) >= 2 else None

"""Coverage of hand-written backend dispatch: which registry backends a `match`, an if/elif
chain or a custom-op implementation handles, and what `gen audit` reports about it.

The Python and Rust readers (audit_python, audit_rust) only find the dispatch points and
the backend names each one names; judging them against the registry happens here, once."""

from __future__ import annotations

from dataclasses import dataclass

MISSING = "missing"
WILDCARD = "wildcard"


def normalize(name: str) -> str:
    """`CUDA`, `Cuda`, `cuda` and `my_gpu` / `MyGpu` name the same backend."""
    return name.replace("_", "").lower()


def camel(backend: str) -> str:
    """The Rust variant name of a registry backend: cpu -> Cpu, my_gpu -> MyGpu."""
    return "".join(part.capitalize() for part in backend.split("_"))


@dataclass(frozen=True)
class Slot:
    """One scrutinee position of a dispatch (a tuple `match (a, b)` has two)."""

    backends: frozenset[str]  # normalized names the cases of this position name
    wildcard_line: int | None = None  # first case that takes every other value, if any


@dataclass(frozen=True)
class Dispatch:
    """A place in hand-written code that picks code by backend."""

    line: int
    col: int
    what: str  # "match over Storage", "if/elif chain over device.is_<backend>()"
    slots: tuple[Slot, ...]
    case_word: str = "case"  # "arm" in Rust, "branch" for if/elif


@dataclass(frozen=True)
class TraitImpl:
    """A custom-op implementation: a Python subclass or a Rust `impl Trait for Type`."""

    line: int
    col: int
    what: str  # "class Softmax(CustomOp1)", "impl CustomOp1 for Softmax"
    hooks: frozenset[str]  # normalized backend names with a <backend>_fwd
    verb: str = "overrides"


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    col: int
    kind: str  # MISSING | WILDCARD
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"


def _names(backends: list[str]) -> str:
    return ", ".join(backends) if backends else "none"


def _plural(word: str) -> str:
    return f"{word}es" if word.endswith("ch") else f"{word}s"


def judge_dispatch(path: str, d: Dispatch, backends: tuple[str, ...]) -> list[Finding]:
    """A missing finding for backends no case names (and no wildcard takes); a wildcard note
    for those only a wildcard takes. Each position of a tuple is judged on its own."""
    hard: list[str] = []
    soft: dict[str, int] = {}
    named = [b for b in backends if any(normalize(b) in s.backends for s in d.slots)]
    for slot in d.slots:
        for b in backends:
            if normalize(b) in slot.backends:
                continue
            if slot.wildcard_line is None:
                if b not in hard:
                    hard.append(b)
            else:
                soft.setdefault(b, slot.wildcard_line)
    out = []
    if hard:
        out.append(Finding(path, d.line, d.col, MISSING,
                           f"{d.what} has no {d.case_word} for {_names(hard)} ({_plural(d.case_word)} for: {_names(named)})"))
    soft_only = [b for b in soft if b not in hard]
    if soft_only:
        lines = sorted({soft[b] for b in soft_only})
        where = ", ".join(f"line {n}" for n in lines)
        out.append(Finding(path, d.line, d.col, WILDCARD,
                           f"note: {d.what} sends {_names(soft_only)} to its wildcard {d.case_word} ({where})"))
    return out


def judge_trait(path: str, t: TraitImpl, backends: tuple[str, ...]) -> list[Finding]:
    """Some <backend>_fwd but not all: the others raise (Python) or error (Rust) at run time."""
    have = [b for b in backends if normalize(b) in t.hooks]
    lacking = [b for b in backends if normalize(b) not in t.hooks]
    if not have or not lacking:
        return []
    fwd = ", ".join(f"{b}_fwd" for b in have)
    missing = ", ".join(f"{b}_fwd" for b in lacking)
    return [Finding(path, t.line, t.col, MISSING, f"{t.what} {t.verb} {fwd} but not {missing}")]

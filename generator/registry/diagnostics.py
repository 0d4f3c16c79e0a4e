"""Diagnostics: every problem found in a registry, reported at once, as file:line:col."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Position(NamedTuple):  # a tuple: one per YAML node, and tuples are cheap to make
    path: str
    line: int  # 1-based
    col: int  # 1-based


@dataclass(frozen=True, order=True)
class Diagnostic:
    position: Position
    key: str  # dotted path of the key at fault, e.g. "unary.exp.dtypes"
    message: str

    def __str__(self) -> str:
        p = self.position
        where = f" (at {self.key})" if self.key else ""
        return f"{p.path}:{p.line}:{p.col}: {self.message}{where}".translate(_ESCAPED_BREAKS)


# One diagnostic, one line: a registry value quoted in a message may hold any character that
# str.splitlines (and so editors and CI logs) breaks a line at; such a character is escaped.
_ESCAPED_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


class RegistryError(Exception):
    """Raised with every diagnostic of a registry that cannot be generated from."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = sorted(set(diagnostics))
        super().__init__("\n".join(str(d) for d in self.diagnostics))

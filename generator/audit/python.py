"""Find backend dispatch in hand-written Python, read with CPython's own parser (`ast`:
nothing is imported; its positions are exact, and it parses ~10x faster than libcst).

Three kinds: `match` statements whose cases name backends (`case Backend.CPU:`,
`case On.CUDA | On.ROCM:`, `case "cpu":`), if/elif chains whose tests name backends
(`device.is_cuda()`, `is_cuda_available()`, `torch.cuda.is_available()`,
`device.type == "cuda"`, `str(device).startswith("cuda")`), and classes that define some
`<backend>_fwd` (custom-op implementations)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from .coverage import Dispatch, Slot, TraitImpl, chain_subject, device_valued, normalize

FWD = re.compile(r"^(?P<backend>\w+?)_fwd$")
AVAILABLE = re.compile(r"^is_(?P<backend>\w+?)_available$")
ELSE = re.compile(r"^[ \t]*else[ \t]*:")
# A slot of a case: (backend names, whether it takes every value).
Names = tuple[frozenset[str], bool]
ALL = None  # an irrefutable case: every position is a wildcard
BLOCKS = ("body", "orelse", "handlers", "finalbody")
Test = tuple[str, frozenset[str]]  # (the subject as written, the backends a test names)
Scope = frozenset[str] | None


class ParseError(Exception):
    def __init__(self, line: int, col: int, message: str) -> None:
        self.line, self.col, self.message = line, col, message
        super().__init__(message)


@dataclass(frozen=True)
class Found:
    dispatches: tuple[Dispatch, ...]
    impls: tuple[TraitImpl, ...]


def statements(body: list[ast.stmt], backends: frozenset[str], scope: Scope = None) -> Iterator[tuple[ast.stmt, Scope]]:
    """Every statement under `body`, in source order, with the backends that can reach it
    (those a `case` names, a `def <backend>_fwd`; None: any). Matches, ifs and classes are
    statements: walking statements only skips the expressions, most of a module's nodes."""
    for stmt in body:
        yield stmt, scope
        if isinstance(stmt, ast.Match):
            for case in stmt.cases:
                yield from statements(case.body, backends, _case_scope(case, backends, scope))
            continue
        inner = scope
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found = FWD.match(stmt.name)
            name = normalize(found["backend"]) if found else ""
            inner = frozenset({name}) if name in backends else None
        for name in BLOCKS:
            part = getattr(stmt, name, None)
            if part:
                if name == "handlers":
                    for handler in part:
                        yield from statements(handler.body, backends, inner)
                else:
                    yield from statements(part, backends, inner)


def _case_scope(case: ast.match_case, backends: frozenset[str], scope: Scope) -> Scope:
    """A case that names backends (by enum member or string) is reached by those only."""
    values = [p.value for p in ast.walk(case.pattern) if isinstance(p, ast.MatchValue)]
    names = {
        v.attr if isinstance(v, ast.Attribute) else str(v.value)
        for v in values
        if isinstance(v, ast.Attribute) or isinstance(v, ast.Constant) and isinstance(v.value, str)
    }
    return frozenset(map(normalize, names)) & backends or scope


def _fails(body: list[ast.stmt]) -> bool:
    """A case or branch that only raises (a docstring-like string may stand before it)."""
    stmts = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return bool(stmts) and all(isinstance(s, ast.Raise) for s in stmts)


def _last_name(e: ast.expr) -> str:
    """`self.device.kind` -> kind, `device` -> device, `str(device)` -> device, `d.type()` -> type."""
    if isinstance(e, ast.Call):
        if isinstance(e.func, ast.Name) and e.func.id in ("str", "repr") and e.args:
            return _last_name(e.args[0])
        return _last_name(e.func)
    if isinstance(e, ast.Attribute):
        return e.attr
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Subscript):
        return _last_name(e.value)
    return ""


class _Reader:
    def __init__(self, text: str, backends: frozenset[str]) -> None:
        self.lines = text.splitlines()
        self.backends = backends
        self.dispatches: list[Dispatch] = []
        self.impls: list[TraitImpl] = []
        self.elifs: set[int] = set()
        self.scope: Scope = None  # the backends that reach the statement being read

    def col(self, lineno: int, offset: int) -> int:
        """ast's col_offset counts UTF-8 bytes; columns are characters, from 1."""
        line = self.lines[lineno - 1] if lineno <= len(self.lines) else ""
        return (offset if line.isascii() else len(line.encode()[:offset].decode("utf-8", "replace"))) + 1

    def code(self, node: ast.expr | ast.stmt | ast.pattern) -> str:
        if node.lineno == node.end_lineno and node.lineno <= len(self.lines):
            line = self.lines[node.lineno - 1]
            text = (
                line[node.col_offset : node.end_col_offset]
                if line.isascii()
                else line.encode()[node.col_offset : node.end_col_offset].decode("utf-8", "replace")
            )
        else:
            text = ast.unparse(node)
        text = " ".join(text.split())
        return text if len(text) <= 60 else text[:57] + "..."

    def backend_value(self, node: ast.AST) -> str | None:
        """`Backend.CUDA`, `g.On.CUDA`, `"cuda"` -> "cuda" when it names a registry backend."""
        if isinstance(node, ast.Attribute):
            name = normalize(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = normalize(node.value)
        else:
            return None
        return name if name in self.backends else None

    # -- match ----------------------------------------------------------------------------
    def one(self, p: ast.pattern) -> Names:
        if isinstance(p, ast.MatchValue):
            name = self.backend_value(p.value)
            return frozenset({name} if name else ()), False
        if isinstance(p, ast.MatchAs):
            return self.one(p.pattern) if p.pattern is not None else (frozenset(), True)
        if isinstance(p, ast.MatchOr):
            parts = [self.one(e) for e in p.patterns]
            return frozenset().union(*(n for n, _ in parts)), any(w for _, w in parts)
        return frozenset(), False

    def positions(self, p: ast.pattern) -> list[Names] | None:
        if isinstance(p, ast.MatchAs) and p.pattern is None:
            return ALL
        if isinstance(p, ast.MatchSequence):
            return [(frozenset(), True) if isinstance(e, ast.MatchStar) else self.one(e) for e in p.patterns]
        if isinstance(p, ast.MatchOr) and all(isinstance(e, ast.MatchSequence) for e in p.patterns):
            rows = [r for e in p.patterns if (r := self.positions(e)) is not ALL]
            if len(rows) == len(p.patterns) and len({len(r) for r in rows}) == 1:
                return [
                    (frozenset().union(*(r[i][0] for r in rows)), any(r[i][1] for r in rows))
                    for i in range(len(rows[0]))
                ]
        return [self.one(p)]

    def match(self, node: ast.Match) -> None:
        cases = [(self.positions(c.pattern), c.guard is not None, c) for c in node.cases]
        width = max((len(p) for p, _, _ in cases if p is not ALL), default=0)
        labels = [self.code(e) for e in node.subject.elts] if isinstance(node.subject, ast.Tuple) else []
        slots = []
        for i in range(width):
            names: set[str] = set()
            wild = None
            for pos, guarded, case in cases:
                if guarded:  # a guard may refuse: the case covers nothing for sure
                    continue
                names |= set() if pos is ALL or i >= len(pos) else pos[i][0]
                if wild is None and (pos is ALL or (i < len(pos) and pos[i][1])):
                    wild = case
            if names:
                label = labels[i] if len(labels) == width and width > 1 else ""
                slots.append(
                    Slot(
                        frozenset(names),
                        wild.pattern.lineno if wild else None,
                        wild is not None and _fails(wild.body),
                        label,
                    )
                )
        if not slots or not (
            self.names_enum(node)
            or device_valued(_last_name(node.subject))
            or isinstance(node.subject, ast.Tuple)
            and any(device_valued(_last_name(e)) for e in node.subject.elts)
        ):
            return  # `case "cpu":` over a format or a mode is a string, not a backend
        self.dispatches.append(
            Dispatch(
                node.lineno,
                self.col(node.lineno, node.col_offset),
                f"match on {self.code(node.subject)}",
                tuple(slots),
                scope=self.scope,
            )
        )

    def names_enum(self, node: ast.Match) -> bool:
        """Whether some case names a backend as an enum member (`Backend.CPU`), not a string."""
        return any(
            isinstance(p, ast.MatchValue) and isinstance(p.value, ast.Attribute) and self.backend_value(p.value)
            for c in node.cases
            for p in ast.walk(c.pattern)
        )

    # -- if/elif --------------------------------------------------------------------------
    def tests(self, e: ast.expr) -> list[Test]:
        """(subject, backends) for each backend test in a condition."""
        if isinstance(e, ast.BoolOp):
            return [t for v in e.values for t in self.tests(v)]
        if isinstance(e, ast.Call):
            return self.call_test(e)
        if isinstance(e, ast.Compare) and len(e.ops) == 1:
            op, left, right = e.ops[0], e.left, e.comparators[0]
            if isinstance(op, (ast.Eq, ast.Is)):
                for subject, value in ((left, right), (right, left)):
                    name = self.backend_value(value)
                    if name and self.backend_value(subject) is None and device_valued(_last_name(subject)):
                        return [(self.code(subject), frozenset({name}))]
            if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                names = {n for el in right.elts if (n := self.backend_value(el)) is not None}
                if names and device_valued(_last_name(left)):
                    return [(self.code(left), frozenset(names))]
        return []

    def call_test(self, e: ast.Call) -> list[Test]:
        f = e.func
        attr = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        found = AVAILABLE.match(attr)
        if found and normalize(found["backend"]) in self.backends:  # is_cuda_available()
            return [("is_<backend>_available()", frozenset({normalize(found["backend"])}))]
        if not isinstance(f, ast.Attribute):
            return []
        if attr.startswith("is_") and normalize(attr[3:]) in self.backends:  # device.is_cuda()
            return [(f"{self.code(f.value)}.is_<backend>()", frozenset({normalize(attr[3:])}))]
        if attr == "is_available" and isinstance(f.value, ast.Attribute):  # torch.cuda.is_available()
            name = self.backend_value(f.value)
            if name:
                return [(f"{self.code(f.value.value)}.<backend>.is_available()", frozenset({name}))]
        if attr == "startswith" and e.args and device_valued(_last_name(f.value)):  # str(device).startswith("cuda")
            arg = e.args[0]
            values = arg.elts if isinstance(arg, ast.Tuple) else [arg]
            names = {n for v in values if isinstance(v, ast.Constant) and (n := self.backend_value(v)) is not None}
            if names:
                return [(f"{self.code(f.value)}.startswith(...)", frozenset(names))]
        return []

    def is_elif(self, node: ast.If) -> bool:
        line = self.lines[node.lineno - 1] if node.lineno <= len(self.lines) else ""
        return line.encode()[node.col_offset : node.col_offset + 4] == b"elif"

    def if_chain(self, node: ast.If) -> None:
        if id(node) in self.elifs:
            return
        branches, link = [], node
        while True:
            branches.append(self.tests(link.test))
            if len(link.orelse) == 1 and isinstance(link.orelse[0], ast.If) and self.is_elif(link.orelse[0]):
                link = link.orelse[0]
                self.elifs.add(id(link))
            else:
                break
        chain = chain_subject(branches)
        if chain is None:
            return
        subject, hits = chain
        wild = self.else_line(link) if link.orelse else None
        slot = Slot(frozenset().union(*hits), wild, wild is not None and _fails(link.orelse))
        self.dispatches.append(
            Dispatch(
                node.lineno,
                self.col(node.lineno, node.col_offset),
                f"if/elif chain over {subject}",
                (slot,),
                "branch",
                self.scope,
            )
        )

    def else_line(self, link: ast.If) -> int:
        """ast keeps no position for `else:`: it is the last such line before the else body."""
        first = link.orelse[0].lineno
        for n in range(first, link.body[-1].end_lineno or first, -1):
            if ELSE.match(self.lines[n - 1]):
                return n
        return first

    # -- custom-op implementations --------------------------------------------------------
    def class_def(self, node: ast.ClassDef) -> None:
        if not node.bases:
            return  # a custom op implements a trait: a class of its own is something else
        defined = set()
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defined.add(stmt.name)
            elif isinstance(stmt, ast.Assign):
                defined |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        hooks = {normalize(m["backend"]) for m in map(FWD.match, defined) if m} & self.backends
        if not hooks:
            return
        bases = [b for b in map(self.base_name, node.bases) if b] or ["..."]
        what = f"class {node.name}({bases[0]})"
        self.impls.append(TraitImpl(node.lineno, self.col(node.lineno, node.col_offset), what, frozenset(hooks)))

    @staticmethod
    def base_name(e: ast.expr) -> str | None:
        if isinstance(e, ast.Subscript):  # CustomOp1[T]
            e = e.value
        if isinstance(e, ast.Attribute):
            return e.attr
        return e.id if isinstance(e, ast.Name) else None


def read(text: str, backends: frozenset[str]) -> Found:
    """The dispatch points of a Python source; ParseError when it does not parse."""
    try:
        module = ast.parse(text)
    except SyntaxError as exc:
        raise ParseError(exc.lineno or 1, exc.offset or 1, f"cannot parse as Python: {exc.msg}") from None
    except ValueError as exc:  # a NUL byte
        raise ParseError(1, 1, f"cannot parse as Python: {exc}") from None
    reader = _Reader(text, backends)
    for stmt, scope in statements(module.body, backends):
        reader.scope = scope
        if isinstance(stmt, ast.Match):
            reader.match(stmt)
        elif isinstance(stmt, ast.If):
            reader.if_chain(stmt)
        elif isinstance(stmt, ast.ClassDef):
            reader.class_def(stmt)
    return Found(tuple(reader.dispatches), tuple(reader.impls))

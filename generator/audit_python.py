"""Find backend dispatch in hand-written Python, read with libcst (nothing is imported).

Three kinds: `match` statements whose cases name backends (`case Backend.CPU:`,
`case On.CUDA | On.ROCM:`, `case "cpu":`), if/elif chains over `device.is_<backend>()` or
`x.kind == ...` / `x.backend is ...`, and subclasses of the registry's custom-op traits."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from generator.dispatch_coverage import Dispatch, Slot, TraitImpl, normalize

FWD = re.compile(r"^(?P<backend>\w+?)_fwd$")
# A slot of a case: (backend names, whether it takes every value).
Names = tuple[frozenset[str], bool]
ALL = None  # an irrefutable case: every position is a wildcard


class ParseError(Exception):
    def __init__(self, line: int, col: int, message: str) -> None:
        self.line, self.col, self.message = line, col, message
        super().__init__(message)


class _Locator:
    """Line and column of statements, without libcst's PositionProvider (which generates the
    code of the whole module again, 3x the parse time). The first line of a statement, built
    from its keyword and a few small nodes, is searched for at the start of a source line;
    statements are located in source order, so each search starts after the previous one."""

    def __init__(self, module: cst.Module, text: str) -> None:
        self.module, self.text = module, text
        self.cursor, self.line = 0, 1  # the line of `cursor`

    def head(self, node: cst.CSTNode) -> str:
        """A pattern for the statement's first line: keyword, subject or test (up to its first
        newline), then what must follow it (the colon, or the end of a line)."""
        if isinstance(node, cst.ClassDef):
            return re.escape(f"class{node.whitespace_after_class.value}{node.name.value}") + r"(?!\w)"
        if isinstance(node, cst.Match):
            head = f"match{node.whitespace_after_match.value}{self.module.code_for_node(node.subject)}"
        else:
            head = f"if{node.whitespace_before_test.value}{self.module.code_for_node(node.test)}"
        first, *rest = head.split("\n", 1)
        return re.escape(first.rstrip("\r")) + (r"[ \t]*(?:#.*)?\r?$" if rest else r"[ \t]*:")

    def locate(self, node: cst.CSTNode) -> tuple[int, int]:
        found = re.compile(rf"^[ \t]*({self.head(node)})", re.M).search(self.text, self.cursor)
        at = found.start(1) if found else self.cursor
        self.line += self.text.count("\n", self.cursor, at)
        self.cursor = at + 1 if found else at
        return self.line, at - (self.text.rfind("\n", 0, at) + 1) + 1

    def lines(self, node: cst.CSTNode) -> int:
        return self.module.code_for_node(node).count("\n")


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # an odd prefix: not a backend name
            return None
        return value if isinstance(value, str) else None
    return None


def backend_value(node: cst.BaseExpression, backends: frozenset[str]) -> str | None:
    """`Backend.CUDA`, `g.On.CUDA`, `"cuda"` -> "cuda" when it names a registry backend."""
    if isinstance(node, cst.Attribute):
        name = normalize(node.attr.value)
    else:
        text = _string(node)
        name = normalize(text) if text is not None else None
    return name if name in backends else None


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)


BLOCKS = ("body", "handlers", "cases", "orelse", "finalbody")  # in source order
CLAUSES = tuple(getattr(cst, n) for n in ("Else", "Finally", "ExceptHandler", "ExceptStarHandler", "MatchCase")
                if hasattr(cst, n))


def statements(body) -> Iterator[cst.CSTNode]:
    """Every statement under `body`, in source order, elifs included. Matches, ifs and classes
    are statements: walking statements only skips the expressions, most of a module's nodes."""
    for stmt in body:
        yield stmt
        yield from _nested(stmt)


def _nested(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    for name in BLOCKS:
        part = getattr(node, name, None)
        for p in part if isinstance(part, (list, tuple)) else (part,):
            if isinstance(p, cst.IndentedBlock):
                yield from statements(p.body)
            elif isinstance(p, cst.If):  # elif
                yield p
                yield from _nested(p)
            elif isinstance(p, CLAUSES):
                yield from _nested(p)


class _Reader:
    def __init__(self, module: cst.Module, text: str, backends: frozenset[str], traits: frozenset[str]) -> None:
        self.module = module
        self.at = _Locator(module, text)
        self.backends, self.traits = backends, traits
        self.dispatches: list[Dispatch] = []
        self.impls: list[TraitImpl] = []
        self.elifs: set[int] = set()

    def code(self, node: cst.CSTNode) -> str:
        text = " ".join(self.module.code_for_node(node).split())
        return text if len(text) <= 60 else text[:57] + "..."

    # -- match ----------------------------------------------------------------------------
    def one(self, p: cst.MatchPattern) -> Names:
        if isinstance(p, cst.MatchValue):
            name = backend_value(p.value, self.backends)
            return frozenset({name} if name else ()), False
        if isinstance(p, cst.MatchAs):
            return self.one(p.pattern) if p.pattern is not None else (frozenset(), True)
        if isinstance(p, cst.MatchOr):
            parts = [self.one(e.pattern) for e in p.patterns]
            return frozenset().union(*(n for n, _ in parts)), any(w for _, w in parts)
        return frozenset(), False

    def positions(self, p: cst.MatchPattern) -> list[Names] | None:
        if isinstance(p, cst.MatchAs) and p.pattern is None:
            return ALL
        if isinstance(p, cst.MatchSequence):
            return [self.one(e.value) if isinstance(e, cst.MatchSequenceElement) else (frozenset(), True)
                    for e in p.patterns]
        if isinstance(p, cst.MatchOr) and all(isinstance(e.pattern, cst.MatchSequence) for e in p.patterns):
            rows = [self.positions(e.pattern) for e in p.patterns]
            if len({len(r) for r in rows}) == 1:
                return [(frozenset().union(*(r[i][0] for r in rows)), any(r[i][1] for r in rows))
                        for i in range(len(rows[0]))]
        return [self.one(p)]

    def match(self, node: cst.Match) -> None:
        cases = [(self.positions(c.pattern), c.guard is not None) for c in node.cases]
        width = max((len(p) for p, _ in cases if p is not ALL), default=0)
        if width == 0:
            return
        slots = []
        for i in range(width):
            names: set[str] = set()
            wild = None
            for k, (pos, guarded) in enumerate(cases):
                names |= set() if pos is ALL or i >= len(pos) else pos[i][0]
                takes_all = pos is ALL or (i < len(pos) and pos[i][1])
                if takes_all and not guarded and wild is None:
                    wild = k
            slots.append((frozenset(names), wild))
        named = frozenset().union(*(names for names, _ in slots))
        if not named or (len(named) < 2 and not self.names_enum(node)):
            return  # `case "cpu":` alone is a string that happens to be a backend's name
        line, col = self.at.locate(node)
        resolved = [Slot(names, self.case_line(node, line, wild)) for names, wild in slots if names]
        self.dispatches.append(Dispatch(line, col, f"match on {self.code(node.subject)}", tuple(resolved)))

    def names_enum(self, node: cst.Match) -> bool:
        """Whether some case names a backend as an enum member (`Backend.CPU`), not a string."""
        values = [m.value for c in node.cases for m in _walk(c.pattern) if isinstance(m, cst.MatchValue)]
        return any(isinstance(v, cst.Attribute) and backend_value(v, self.backends) for v in values)

    def case_line(self, node: cst.Match, line: int, k: int | None) -> int | None:
        if k is None:
            return None
        before = node.with_changes(leading_lines=(), cases=node.cases[:k], footer=())
        return line + self.at.lines(before) + len(node.cases[k].leading_lines)

    # -- if/elif --------------------------------------------------------------------------
    def tests(self, e: cst.BaseExpression) -> list[tuple[str, frozenset[str]]]:
        """(subject, backends) for each backend test in a condition."""
        if isinstance(e, cst.BooleanOperation):
            return self.tests(e.left) + self.tests(e.right)
        if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value.startswith("is_"):
            name = normalize(e.func.attr.value[3:])
            if name in self.backends:
                return [(f"{self.code(e.func.value)}.is_<backend>()", frozenset({name}))]
        if isinstance(e, cst.Comparison) and len(e.comparisons) == 1:
            op, right = e.comparisons[0].operator, e.comparisons[0].comparator
            if isinstance(op, (cst.Equal, cst.Is)):
                for subject, value in ((e.left, right), (right, e.left)):
                    name = backend_value(value, self.backends)
                    if name and backend_value(subject, self.backends) is None:
                        return [(self.code(subject), frozenset({name}))]
            if isinstance(op, cst.In) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
                names = {backend_value(el.value, self.backends) for el in right.elements}
                if names - {None}:
                    return [(self.code(e.left), frozenset(names - {None}))]
        return []

    def if_chain(self, node: cst.If) -> None:
        if id(node) in self.elifs:
            return
        branches, link = [], node
        while isinstance(link, cst.If):
            branches.append(self.tests(link.test))
            if isinstance(link.orelse, cst.If):
                self.elifs.add(id(link.orelse))
            link = link.orelse
        by_subject: dict[str, list[frozenset[str]]] = {}
        for tests in branches:
            for subject in dict.fromkeys(s for s, _ in tests):
                by_subject.setdefault(subject, []).append(frozenset().union(*(n for s, n in tests if s == subject)))
        if not by_subject:
            return
        subject, hits = max(by_subject.items(), key=lambda kv: len(kv[1]))
        if len(hits) < 2:
            return  # a lone `if device.is_cuda():` is a special case, not a dispatch
        line, col = self.at.locate(node)
        wild = None
        if isinstance(link, cst.Else):
            wild = line + self.at.lines(self.without_else(node).with_changes(leading_lines=())) + len(link.leading_lines)
        self.dispatches.append(Dispatch(line, col, f"if/elif chain over {subject}",
                                        (Slot(frozenset().union(*hits), wild),), "branch"))

    def without_else(self, node: cst.If) -> cst.If:
        if isinstance(node.orelse, cst.If):
            return node.with_changes(orelse=self.without_else(node.orelse))
        return node.with_changes(orelse=None)

    # -- custom-op subclasses -------------------------------------------------------------
    def class_def(self, node: cst.ClassDef) -> None:
        traits = [self.base_name(a.value) for a in node.bases]
        trait = next((t for t in traits if t in self.traits), None)
        if trait is None:
            return
        defined = set()
        for stmt in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.FunctionDef):
                defined.add(stmt.name.value)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign):
                        defined |= {t.target.value for t in small.targets if isinstance(t.target, cst.Name)}
        hooks = {normalize(m["backend"]) for m in map(FWD.match, defined) if m}
        line, col = self.at.locate(node)
        self.impls.append(TraitImpl(line, col, f"class {node.name.value}({trait})", frozenset(hooks & self.backends)))

    @staticmethod
    def base_name(e: cst.BaseExpression) -> str | None:
        if isinstance(e, cst.Subscript):  # CustomOp1[T]
            e = e.value
        if isinstance(e, cst.Attribute):
            return e.attr.value
        return e.value if isinstance(e, cst.Name) else None


@dataclass(frozen=True)
class Found:
    dispatches: tuple[Dispatch, ...]
    impls: tuple[TraitImpl, ...]


def read(text: str, backends: frozenset[str], traits: frozenset[str]) -> Found:
    """The dispatch points of a Python source; ParseError when it does not parse."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        try:  # CPython places most syntax errors better and says them shorter than libcst
            ast.parse(text)
        except SyntaxError as better:
            raise ParseError(better.lineno or 1, better.offset or 1, f"cannot parse as Python: {better.msg}") from None
        raise ParseError(exc.raw_line, exc.raw_column + 1, f"cannot parse as Python: {exc.message}") from None
    reader = _Reader(module, text, backends, traits)
    for stmt in statements(module.body):
        if isinstance(stmt, cst.Match):
            reader.match(stmt)
        elif isinstance(stmt, cst.If):
            reader.if_chain(stmt)
        elif isinstance(stmt, cst.ClassDef):
            reader.class_def(stmt)
    return Found(tuple(reader.dispatches), tuple(reader.impls))

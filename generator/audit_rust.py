"""Find backend dispatch in hand-written Rust, read with tree-sitter (tree-sitter-rust).

Two kinds: `match` expressions whose arms name backend variants (`Storage::Cpu(..)`,
`Self::Cuda(s)`, `Device::Rocm { .. }`, tuples of them), and `impl <custom-op trait> for T`
blocks. A backend's variant is its registry name in CamelCase (cpu -> Cpu, rocm -> Rocm)."""

from __future__ import annotations

import os

from generator.audit_python import ALL, FWD, Found, Names, ParseError
from generator.dispatch_coverage import Dispatch, Slot, TraitImpl, normalize

PUNCTUATION = frozenset({"(", ")", ",", "[", "]"})
# The nodes to judge, found by tree-sitter itself: walking every node in Python costs twice the parse.
QUERY = "(match_expression) @match (impl_item) @impl"
_PARSER: tuple[int, object, object] | None = None  # (pid, parser, query): one per process, made after a fork


def _parser():
    global _PARSER
    if _PARSER is None or _PARSER[0] != os.getpid():
        import tree_sitter
        import tree_sitter_rust

        language = tree_sitter.Language(tree_sitter_rust.language())
        _PARSER = (os.getpid(), tree_sitter.Parser(language), tree_sitter.Query(language, QUERY))
    return _PARSER[1], _PARSER[2]


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


class _Reader:
    def __init__(self, source: bytes, backends: frozenset[str], traits: frozenset[str]) -> None:
        self.source, self.backends, self.traits = source, backends, traits
        self.dispatches: list[Dispatch] = []
        self.impls: list[TraitImpl] = []

    def position(self, node) -> tuple[int, int]:
        row, byte_col = node.start_point
        line_start = node.start_byte - byte_col
        return row + 1, len(self.source[line_start:node.start_byte].decode("utf-8", "replace")) + 1

    def code(self, node) -> str:
        text = " ".join(_text(node).split())
        return text if len(text) <= 60 else text[:57] + "..."

    # -- match ----------------------------------------------------------------------------
    def variant(self, path) -> str | None:
        """The backend a path names: the last segment of `Storage::Cuda`, `Self::Cuda`."""
        last = path.child_by_field_name("name") if path.type.startswith("scoped_") else path
        name = normalize(_text(last)) if last is not None else ""
        return name if name in self.backends else None

    def one(self, p) -> Names:
        t = p.type
        if t == "_":
            return frozenset(), True
        if t in ("tuple_struct_pattern", "struct_pattern"):
            name = self.variant(p.child_by_field_name("type"))
            return frozenset({name} if name else ()), False
        if t == "scoped_identifier":
            name = self.variant(p)
            return frozenset({name} if name else ()), False
        if t == "identifier":  # `Cpu` after `use Device::*`, else a binding that takes everything
            name = normalize(_text(p))
            if name in self.backends:
                return frozenset({name}), False
            return frozenset(), not _text(p)[:1].isupper()
        if t == "string_literal":
            name = normalize(_text(p).strip('"'))
            return frozenset({name} if name in self.backends else ()), False
        if t in ("reference_pattern", "ref_pattern", "mut_pattern", "captured_pattern"):
            inner = p.named_children[-1] if p.named_children else None
            if inner is None or (t == "captured_pattern" and len(p.named_children) < 2):
                return frozenset(), t != "captured_pattern"
            if t in ("ref_pattern", "mut_pattern") and inner.type == "identifier":
                return frozenset(), True  # `ref s`, `mut s`: bindings
            return self.one(inner)
        if t == "or_pattern":
            parts = [self.one(c) for c in p.children if c.type != "|"]
            return frozenset().union(*(n for n, _ in parts)), any(w for _, w in parts)
        return frozenset(), False

    def positions(self, p) -> list[Names] | None:
        if p.type == "_" or (p.type == "identifier" and self.one(p)[1]):
            return ALL
        if p.type == "tuple_pattern":
            return [self.one(c) for c in p.children if c.type not in PUNCTUATION]
        if p.type == "or_pattern":
            rows = [self.positions(c) for c in p.children if c.type != "|"]
            if all(r is not ALL for r in rows) and len({len(r) for r in rows}) == 1 and len(rows[0]) > 1:
                return [(frozenset().union(*(r[i][0] for r in rows)), any(r[i][1] for r in rows))
                        for i in range(len(rows[0]))]
        return [self.one(p)]

    def match(self, node) -> None:
        body = node.child_by_field_name("body")
        arms = [c for c in body.named_children if c.type == "match_arm"] if body is not None else []
        cases = []
        for arm in arms:
            mp = arm.child_by_field_name("pattern")
            pattern = mp.children[0] if mp is not None and mp.children else None
            if pattern is None:
                continue
            guarded = mp.child_by_field_name("condition") is not None
            cases.append((self.positions(pattern), guarded, arm.start_point[0] + 1))
        width = max((len(p) for p, _, _ in cases if p is not ALL), default=0)
        slots = []
        for i in range(width):
            names: set[str] = set()
            wild = None
            for pos, guarded, line in cases:
                names |= set() if pos is ALL or i >= len(pos) else pos[i][0]
                takes_all = pos is ALL or (i < len(pos) and pos[i][1])
                if takes_all and not guarded and wild is None:
                    wild = line
            if names:
                slots.append(Slot(frozenset(names), wild))
        named = frozenset().union(*(s.backends for s in slots))
        strings_only = all(n.type == "string_literal" for n in self.backend_nodes(body))
        if named and (len(named) >= 2 or not strings_only):  # `"cpu" =>` alone is just a string
            line, col = self.position(node)
            subject = node.child_by_field_name("value")
            what = f"match on {self.code(subject)}" if subject is not None else "match"
            self.dispatches.append(Dispatch(line, col, what, tuple(slots), "arm"))

    def backend_nodes(self, body):
        """The patterns of the arms that name a backend (string literals or variant paths)."""
        stack, out = [c.child_by_field_name("pattern") for c in body.named_children if c.type == "match_arm"], []
        while stack:
            n = stack.pop()
            if n is None or n.type in ("match_arm", "match_expression", "block"):
                continue
            if n.type in ("string_literal", "scoped_identifier", "identifier") and self.one(n)[0]:
                out.append(n)
            stack.extend(n.children)
        return out

    # -- impl <trait> for <type> ----------------------------------------------------------
    def impl(self, node) -> None:
        trait = node.child_by_field_name("trait")
        if trait is None:
            return
        if trait.type == "generic_type":
            trait = trait.child_by_field_name("type")
        last = trait.child_by_field_name("name") if trait.type.startswith("scoped_") else trait
        name = _text(last) if last is not None else ""
        if name not in self.traits:
            return
        body = node.child_by_field_name("body")
        fns = [c.child_by_field_name("name") for c in (body.named_children if body else ()) if c.type == "function_item"]
        hooks = {normalize(m["backend"]) for m in (FWD.match(_text(f)) for f in fns if f is not None) if m}
        line, col = self.position(node)
        target = node.child_by_field_name("type")
        what = f"impl {name} for {self.code(target) if target is not None else '?'}"
        self.impls.append(TraitImpl(line, col, what, frozenset(hooks & self.backends), "defines"))

    def walk(self, root, query) -> None:
        import tree_sitter

        found = tree_sitter.QueryCursor(query).captures(root)
        nodes = [(n.start_byte, kind, n) for kind, ns in found.items() for n in ns]
        for _, kind, node in sorted(nodes, key=lambda t: (t[0], t[1])):  # source order: findings come out sorted
            if kind == "match":
                self.match(node)
            else:
                self.impl(node)


def _first_error(node):
    if node.type == "ERROR" or node.is_missing:
        return node
    for child in node.children:
        if child.has_error:
            return _first_error(child)
    return node


def read(source: bytes, backends: frozenset[str], traits: frozenset[str]) -> Found:
    """The dispatch points of a Rust source; ParseError when tree-sitter finds a syntax error."""
    parser, query = _parser()
    tree = parser.parse(source)
    reader = _Reader(source, backends, traits)
    if tree.root_node.has_error:
        bad = _first_error(tree.root_node)
        if bad.is_missing:
            line, col = reader.position(bad)
            raise ParseError(line, col, f"cannot parse as Rust: expected {bad.type!r}")
        if bad.end_byte >= len(source.rstrip()):  # an error running to the end: something unclosed
            row, byte_col = tree.root_node.end_point
            raise ParseError(row + 1, byte_col + 1, "cannot parse as Rust: unexpected end of file (unclosed brace?)")
        line, col = reader.position(bad)
        near = " ".join(_text(bad).split())[:30]
        raise ParseError(line, col, f"cannot parse as Rust: syntax error near {near!r}")
    reader.walk(tree.root_node, query)
    return Found(tuple(reader.dispatches), tuple(reader.impls))

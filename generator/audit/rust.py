"""Find backend dispatch in hand-written Rust, read with tree-sitter (tree-sitter-rust).

What is found: `match` expressions whose arms name backend variants (`Storage::Cpu(..)`,
`Self::Cuda(s)`, `Device::Rocm { .. }`, tuples of them); `if let Device::Cpu = d {..} else
if let ..` and `if d.is_cpu() {..} else if d.is_cuda() ..` chains; both again inside macro
arguments (`format!(.., match s {..})`) and `macro_rules!` bodies, which tree-sitter keeps as
bare tokens and which are parsed once more on their own; `impl Trait for T` blocks and
`trait` definitions with some `<backend>_fwd`. A backend's variant is its registry name in
CamelCase (cpu -> Cpu, rocm -> Rocm)."""

from __future__ import annotations

import bisect
import os
import re

from .coverage import Dispatch, Slot, TraitImpl, chain_subject, device_valued, normalize
from .python import ALL, FWD, Found, Names, ParseError

PUNCTUATION = frozenset({"(", ")", ",", "[", "]"})
FAIL_MACROS = frozenset({"bail", "unreachable", "panic", "todo", "unimplemented"})
# The nodes to judge, found by tree-sitter itself: walking every node in Python costs twice the parse.
QUERY = """(match_expression) @match (impl_item) @impl (trait_item) @trait (if_expression) @if
(macro_invocation (token_tree) @tokens) (macro_rule right: (token_tree) @tokens)"""
MACRO_DEPTH = 3  # macros inside macros inside macros: deeper than real code goes
IS_BACKEND = re.compile(r"^is_(?P<backend>\w+)$")
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


def _last_segment(node) -> str:
    if node is None:
        return ""
    last = node.child_by_field_name("name") if node.type.startswith("scoped_") else node
    return _text(last) if last is not None else ""


def _unwrap(value):
    """The one expression a block, `return`, `?` or statement stands for (None if several)."""
    while value is not None:
        if value.type == "block":
            inner = [c for c in value.named_children if not c.type.endswith("comment")]
            if len(inner) != 1:
                return None
            value = inner[0]
        elif value.type in ("expression_statement", "return_expression", "try_expression", "parenthesized_expression"):
            value = value.named_children[0] if value.named_children else None
        else:
            return value
    return None


def _fails(value) -> bool:
    """An arm or branch that only fails: `Err(..)`, `return Err(..)`, `bail!`, `panic!`, ..."""
    value = _unwrap(value)
    if value is None:
        return False
    if value.type == "macro_invocation":
        return _last_segment(value.child_by_field_name("macro")) in FAIL_MACROS
    if value.type == "call_expression":
        return _last_segment(value.child_by_field_name("function")) == "Err"
    return False


def _subject_name(node) -> str:
    """The last name of a tested value: `self.device` -> device, `s.device()` -> device."""
    while node is not None and node.type in (
        "reference_expression",
        "unary_expression",
        "call_expression",
        "parenthesized_expression",
    ):
        node = node.child_by_field_name("function") if node.type == "call_expression" else node.named_children[-1]
    if node is None:
        return ""
    if node.type == "field_expression":
        return _text(node.child_by_field_name("field"))
    return _last_segment(node) if node.type in ("identifier", "scoped_identifier", "self") else ""


class _Reader:
    def __init__(self, source: bytes, backends: frozenset[str]) -> None:
        self.source, self.backends = source, backends
        self.line_starts = [0] + [m.end() for m in re.finditer(b"\n", source)]
        self.delta = 0  # byte offset of the tree being read in `source` (macro tokens parsed again)
        self.seen: set[int] = set()  # else-if links, by their byte in `source`: part of their chain
        self.dispatches: list[Dispatch] = []
        self.impls: list[TraitImpl] = []

    def line(self, node) -> int:
        return bisect.bisect_right(self.line_starts, node.start_byte + self.delta)

    def position(self, node) -> tuple[int, int]:
        at = node.start_byte + self.delta
        row = bisect.bisect_right(self.line_starts, at)
        return row, len(self.source[self.line_starts[row - 1] : at].decode("utf-8", "replace")) + 1

    def code(self, node) -> str:
        text = " ".join(_text(node).split())
        return text if len(text) <= 60 else text[:57] + "..."

    # -- patterns -------------------------------------------------------------------------
    def variant(self, path) -> str | None:
        """The backend a path names: the last segment of `Storage::Cuda`, `Self::Cuda`."""
        name = normalize(_last_segment(path)) if path is not None else ""
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
            alternatives = [c for c in p.children if c.type != "|"]
            rows = [r for c in alternatives if (r := self.positions(c)) is not ALL]
            if len(rows) == len(alternatives) and len({len(r) for r in rows}) == 1 and len(rows[0]) > 1:
                return [
                    (frozenset().union(*(r[i][0] for r in rows)), any(r[i][1] for r in rows))
                    for i in range(len(rows[0]))
                ]
        return [self.one(p)]

    # -- match ----------------------------------------------------------------------------
    def match(self, node) -> None:
        body = node.child_by_field_name("body")
        subject = node.child_by_field_name("value")
        cases = []
        for arm in (c for c in (body.named_children if body is not None else ()) if c.type == "match_arm"):
            mp = arm.child_by_field_name("pattern")
            pattern = mp.children[0] if mp is not None and mp.children else None
            if pattern is None or mp.child_by_field_name("condition") is not None:
                continue  # a guarded arm may refuse: it covers nothing for sure
            cases.append((self.positions(pattern), arm))
        width = max((len(p) for p, _ in cases if p is not ALL), default=0)
        labels = list(subject.named_children) if subject is not None and subject.type == "tuple_expression" else []
        slots = []
        for i in range(width):
            names: set[str] = set()
            wild = None
            for pos, arm in cases:
                names |= set() if pos is ALL or i >= len(pos) else pos[i][0]
                if wild is None and (pos is ALL or (i < len(pos) and pos[i][1])):
                    wild = arm
            if names:
                label = self.code(labels[i]) if len(labels) == width > 1 else ""
                slots.append(
                    Slot(
                        frozenset(names),
                        self.line(wild) if wild else None,
                        wild is not None and _fails(wild.child_by_field_name("value")),
                        label,
                    )
                )
        if not slots:
            return
        strings_only = all(n.type == "string_literal" for n in self.backend_nodes(body))
        subjects = labels or [subject]
        if strings_only and not any(device_valued(_subject_name(s)) for s in subjects):
            return  # `"cuda" =>` over a format or a file name is a string, not a backend
        line, col = self.position(node)
        what = f"match on {self.code(subject)}" if subject is not None else "match"
        self.dispatches.append(Dispatch(line, col, what, tuple(slots), "arm", self.scope(node)))

    def scope(self, node) -> frozenset[str] | None:
        """The backends that can reach `node`: those of the nearest enclosing arm that names
        some (`Storage::Cuda(s) => match ..`), or of an enclosing `fn <backend>_fwd`."""
        p = node.parent
        while p is not None and p.type not in ("closure_expression",):
            if p.type == "match_arm":
                mp = p.child_by_field_name("pattern")
                rows = self.positions(mp.children[0]) if mp is not None and mp.children else ALL
                names = frozenset().union(*(n for n, _ in rows)) if rows is not ALL else frozenset()
                if names:
                    return names
            elif p.type == "function_item":
                found = FWD.match(_text(p.child_by_field_name("name")))
                name = normalize(found["backend"]) if found else ""
                return frozenset({name}) if name in self.backends else None
            p = p.parent
        return None

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

    # -- if let / if is_<backend>() chains -------------------------------------------------
    def tests(self, cond) -> list[tuple[str, frozenset[str]]]:
        if cond is None:
            return []
        t = cond.type
        if t == "let_condition":
            names = self.one(cond.child_by_field_name("pattern"))[0]
            value = cond.child_by_field_name("value")
            return [(f"let .. = {self.code(value)}", names)] if names and value is not None else []
        if t in ("let_chain", "binary_expression", "parenthesized_expression"):
            return [x for c in cond.named_children for x in self.tests(c)]
        if t == "call_expression":
            f = cond.child_by_field_name("function")
            if f is not None and f.type == "field_expression":
                found = IS_BACKEND.match(_text(f.child_by_field_name("field")))
                if found and normalize(found["backend"]) in self.backends:
                    receiver = f.child_by_field_name("value")
                    return [(f"{self.code(receiver)}.is_<backend>()", frozenset({normalize(found["backend"])}))]
        return []

    def if_chain(self, node) -> None:
        if node.start_byte + self.delta in self.seen:
            return
        branches, link, else_block, else_line = [], node, None, None
        while True:
            branches.append(self.tests(link.child_by_field_name("condition")))
            alt = link.child_by_field_name("alternative")
            inner = alt.named_children[0] if alt is not None and alt.named_children else None
            if inner is not None and inner.type == "if_expression":
                self.seen.add(inner.start_byte + self.delta)
                link = inner
                continue
            if inner is not None:
                else_block, else_line = inner, self.line(alt)
            break
        chain = chain_subject(branches)
        if chain is None:
            return
        subject, hits = chain
        line, col = self.position(node)
        slot = Slot(frozenset().union(*hits), else_line, else_block is not None and _fails(else_block))
        if subject.startswith("let .. = "):
            what = f"if let chain over {subject.removeprefix('let .. = ')}"
        else:
            what = f"if chain over {subject}"
        self.dispatches.append(Dispatch(line, col, what, (slot,), "branch", self.scope(node)))

    # -- impl <trait> for <type>, trait <name> ----------------------------------------------
    def hooks(self, body) -> frozenset[str]:
        fns = [
            c.child_by_field_name("name")
            for c in (body.named_children if body is not None else ())
            if c.type in ("function_item", "function_signature_item")
        ]
        found = {normalize(m["backend"]) for m in (FWD.match(_text(f)) for f in fns if f is not None) if m}
        return frozenset(found & self.backends)

    def impl(self, node) -> None:
        trait = node.child_by_field_name("trait")
        if trait is None:
            return
        if trait.type == "generic_type":
            trait = trait.child_by_field_name("type")
        hooks = self.hooks(node.child_by_field_name("body"))
        if hooks:
            line, col = self.position(node)
            target = node.child_by_field_name("type")
            what = f"impl {_last_segment(trait)} for {self.code(target) if target is not None else '?'}"
            self.impls.append(TraitImpl(line, col, what, hooks, "defines"))

    def trait(self, node) -> None:
        hooks = self.hooks(node.child_by_field_name("body"))
        if hooks:
            line, col = self.position(node)
            what = f"trait {_text(node.child_by_field_name('name'))}"
            self.impls.append(TraitImpl(line, col, what, hooks, "declares", definition=True))

    # -- macro tokens ---------------------------------------------------------------------
    def tokens(self, node, depth: int) -> None:
        """Macro arguments and macro_rules! bodies are bare tokens to tree-sitter: parse them
        again as an array (arguments) or a block (statements), wherever they could hold a
        dispatch, and read what parses cleanly there, at its place in the file."""
        raw = node.text
        if depth >= MACRO_DEPTH or len(raw) < 3 or not (b"match" in raw or b"if" in raw):
            return
        low = raw.lower()
        if not any(b.encode() in low for b in self.backends):
            return
        inner = raw[1:-1].replace(b"$", b" ")  # `$x` -> ` x`: a name, at the same place
        parser, query = _parser()
        for prefix, suffix in ((b"fn _a(){[", b"]}"), (b"fn _a(){", b"}")):
            tree = parser.parse(prefix + inner + suffix)
            if not tree.root_node.has_error:
                break
        saved = self.delta
        self.delta = saved + node.start_byte + 1 - len(prefix)
        try:
            self.walk(tree.root_node, query, depth + 1)
        finally:
            self.delta = saved

    def walk(self, root, query, depth: int = 0) -> None:
        import tree_sitter

        found = tree_sitter.QueryCursor(query).captures(root)
        nodes = [(n.start_byte, kind, n) for kind, ns in found.items() for n in ns]
        for _, kind, node in sorted(nodes, key=lambda t: (t[0], t[1])):  # source order: findings come out sorted
            if depth and node.has_error:
                continue  # tokens that did not parse cleanly: nothing sure to say
            if kind == "match":
                self.match(node)
            elif kind == "if":
                self.if_chain(node)
            elif kind == "impl":
                self.impl(node)
            elif kind == "trait":
                self.trait(node)
            elif node.parent is None or node.parent.type != "token_tree":
                self.tokens(node, depth)


def _first_error(node):
    if node.type == "ERROR" or node.is_missing:
        return node
    for child in node.children:
        if child.has_error:
            return _first_error(child)
    return node


def read(source: bytes, backends: frozenset[str]) -> Found:
    """The dispatch points of a Rust source; ParseError when tree-sitter finds a syntax error."""
    parser, query = _parser()
    tree = parser.parse(source)
    reader = _Reader(source, backends)
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

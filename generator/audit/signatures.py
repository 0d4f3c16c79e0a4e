"""The method signatures of Rust impl blocks, read with tree-sitter: for each method of
`impl Storage` (or any named type), its name, parameter types in order (the receiver first)
and return type, as one normalized string `(&self, &Layout) -> Result<Self>`. Parameter
names are left out and `crate::` / `conv::` paths stripped, so that two spellings of one
signature compare equal. Used to hold the rust target's output against a library's own."""

from __future__ import annotations

import re
from collections.abc import Iterable

_SPACE = re.compile(r"\s+")
_PATHS = re.compile(r"\b(?:crate|conv)::")


def normalize(text: str) -> str:
    text = _PATHS.sub("", _SPACE.sub(" ", text)).strip()
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r",?\s*\)", ")", text)
    return text


def _parser():
    import tree_sitter
    import tree_sitter_rust

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_rust.language()))


def _signature(fn) -> str:
    params = []
    for p in fn.child_by_field_name("parameters").named_children:
        if p.type == "self_parameter":
            params.append(p.text.decode())
        elif p.type == "parameter":
            params.append(p.child_by_field_name("type").text.decode())
    ret = fn.child_by_field_name("return_type")
    returns = ret.text.decode() if ret is not None else "()"
    return normalize(f"({', '.join(params)}) -> {returns}")


def signatures(sources: Iterable[bytes], owners: Iterable[str]) -> dict[str, dict[str, str]]:
    """owner -> method name -> signature, over the inherent impls (no trait impls) of `sources`.
    A name defined twice (behind opposite cfgs) keeps its first signature."""
    wanted = set(owners)
    out: dict[str, dict[str, str]] = {o: {} for o in wanted}
    parser = _parser()
    for source in sources:
        stack = [parser.parse(source).root_node]
        while stack:
            node = stack.pop()
            if node.type == "impl_item" and node.child_by_field_name("trait") is None:
                owner = node.child_by_field_name("type")
                name = owner.text.decode() if owner is not None else ""
                body = node.child_by_field_name("body")
                if name in wanted and body is not None:
                    for fn in body.named_children:
                        if fn.type == "function_item":
                            out[name].setdefault(fn.child_by_field_name("name").text.decode(), _signature(fn))
                continue
            stack.extend(node.named_children)
    return out

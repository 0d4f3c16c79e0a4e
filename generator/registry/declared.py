"""Where each registry entry is declared: the line of its key, for references to the registry
(`gen docs`, the docstrings `gen new-backend` writes). The model keeps the line of an entry's
value, which for a block mapping is the line below its name."""

from __future__ import annotations

from .loader import Node


def key_lines(root: Node) -> dict[tuple[str, str], int]:
    """(section, name) -> line of the entry's key, for every entry of every top-level mapping."""
    out = {}
    for section, (_, node) in root.value.items() if root.tag == "map" else ():
        if node.tag == "map":
            out.update({(section, name): key.position.line for name, (key, _) in node.value.items()})
    return out

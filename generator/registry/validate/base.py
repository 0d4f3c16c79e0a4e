"""The validator's shared state: the node tree, the checker that collects diagnostics, and the
look-ups every section's checks use."""

from __future__ import annotations

from pathlib import Path

from ..loader import Node
from ..spec import Checker


class Checks:
    def __init__(self, root: Node, runtime_root: Path) -> None:
        self.root = root
        self.runtime_root = runtime_root
        self.checker = Checker()
        self.path = root.position.path

    # -- helpers -----------------------------------------------------------------------
    def error(self, node: Node | None, key: str, message: str) -> None:
        """`node` None (a key the spec check lets be absent): the error points at the file's top."""
        self.checker.error(node or self.root, key, message)

    def section(self, name: str) -> list[tuple[str, Node, Node]]:
        node = self.root.get(name)
        if node is None or node.tag != "map":
            return []
        return [(k, kn, vn) for k, (kn, vn) in node.value.items()]

    @staticmethod
    def text(node: Node | None, default: str = "") -> str:
        return str(node.value) if node is not None and node.tag == "str" else default

    def collisions(self, section: str, what: str) -> None:
        """Names that differ only in case become one enum member."""
        seen: dict[str, str] = {}
        for name, knode, _ in self.section(section):
            if name.upper() in seen:
                self.error(
                    knode,
                    f"{section}.{name}",
                    f"{what} {name!r} collides with {seen[name.upper()]!r} (the same upper-case name)",
                )
            seen.setdefault(name.upper(), name)

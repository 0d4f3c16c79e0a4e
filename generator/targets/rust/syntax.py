"""The rendered Rust parsed with tree-sitter: a template that renders invalid Rust fails
the run before anything is written, with the line and column."""

from __future__ import annotations

# launch.rs repeats one wrapper per kernel (4.5 MB for the synthetic registry's ~9,000):
# its preamble and first wrappers are parsed, which a template mistake cannot get past, the
# rest are the same lines with other kernel names (C identifiers; Rust keywords escaped).
LAUNCH_SAMPLE = 64


def check_rust(template: str, output: str, text: str) -> None:
    """Parse the rendered Rust (tree-sitter): a template that renders invalid Rust fails the
    run before anything is written, with the line and column."""
    from ..python import RenderError

    if output == "launch.rs":
        cut = -1
        for _ in range(LAUNCH_SAMPLE + 1):
            cut = text.find("\n/// `", cut + 1)
            if cut < 0:
                break
        text = text if cut < 0 else text[: cut + 1]
    problem = syntax_error(text)
    if problem:
        raise RenderError(template, output, *problem, "Rust") from None


_PARSER = None


def syntax_error(text: str) -> tuple[int, int, str] | None:
    """(line, column, message) of the first syntax error tree-sitter finds, or None."""
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_rust

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_rust.language()))
    node = _PARSER.parse(text.encode("utf-8")).root_node
    if not node.has_error:
        return None
    while node.type != "ERROR" and not node.is_missing:
        node = next(c for c in node.children if c.has_error or c.is_missing or c.type == "ERROR")
    row, col = node.start_point
    near = (node.text or b"").decode()[:30]
    what = f"expected {node.type!r}" if node.is_missing else f"syntax error near {near!r}"
    return row + 1, col + 1, f"cannot parse as Rust: {what}"

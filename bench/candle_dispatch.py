"""Count the hand-written backend dispatch in candle-core that opgen's rust target stands for.

Reads candle-core at one commit of a local clone (`git show`, no checkout needed) with
tree-sitter and counts the lines of:
  - every `match` whose arms name a backend variant (Cpu, Cuda, Metal), outermost only,
    in storage.rs, device.rs, quantized/mod.rs, and tensor.rs's to_device;
  - the backend enums: Storage, Device, DeviceLocation, QStorage;
  - the `<backend>_fwd` methods of the six custom-op traits (custom_op.rs);
  - the backend type exports of lib.rs (`pub use` of *Device/*Storage, with their cfg lines).
Also reports the lines that serve Metal alone (its arms, its metal_fwd methods, its enum
variants and exports), the backend added last: roughly what one more backend (ROCm) costs
by hand in these files. Prints a Markdown table; nothing of Candle's text is kept.

    python bench/candle_dispatch.py /path/to/candle/.git [COMMIT]
"""

from __future__ import annotations

import re
import subprocess
import sys

import tree_sitter
import tree_sitter_rust

BACKENDS = ("Cpu", "Cuda", "Metal")
VARIANT = re.compile(r"\b(?:Self|Storage|Device|QStorage|DeviceLocation)::(Cpu|Cuda|Metal)\b")
FILES = (
    "candle-core/src/storage.rs",
    "candle-core/src/device.rs",
    "candle-core/src/quantized/mod.rs",
    "candle-core/src/tensor.rs",
    "candle-core/src/custom_op.rs",
    "candle-core/src/lib.rs",
)
ENUMS = {"Storage", "Device", "DeviceLocation", "QStorage"}
TRAITS = {"CustomOp1", "CustomOp2", "CustomOp3", "InplaceOp1", "InplaceOp2", "InplaceOp3"}


def show(git_dir: str, commit: str, path: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], check=True, capture_output=True
    ).stdout


def spans(source: bytes, path: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(first line, last line) of each construct counted in one file, and of the parts of
    them that serve Metal alone (its arms, its *_fwd methods, its variants and exports)."""
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_rust.language()))
    root = parser.parse(source).root_node
    out: list[tuple[int, int]] = []
    metal: list[tuple[int, int]] = []

    def lines(n) -> tuple[int, int]:
        return n.start_point[0] + 1, n.end_point[0] + 1

    def walk(n, in_to_device: bool = False) -> None:
        if n.type == "function_item":
            name = n.child_by_field_name("name")
            in_to_device = in_to_device or (name is not None and name.text == b"to_device")
        if n.type == "match_expression" and not path.endswith(("custom_op.rs", "lib.rs")):
            body = n.child_by_field_name("body")
            names = set(
                VARIANT.findall(
                    b"".join(
                        (a.child_by_field_name("pattern").text or b"")
                        for a in body.named_children
                        if a.type == "match_arm" and a.child_by_field_name("pattern") is not None
                    ).decode()
                )
            )
            if names and (not path.endswith("tensor.rs") or in_to_device):
                out.append(lines(n))
                for arm in (a for a in body.named_children if a.type == "match_arm"):
                    pattern = arm.child_by_field_name("pattern")
                    if pattern is not None and set(VARIANT.findall(pattern.text.decode())) == {"Metal"}:
                        metal.append(lines(arm))
                return  # outermost only
        if (
            n.type == "enum_item"
            and n.child_by_field_name("name").text.decode() in ENUMS
            and path.endswith(("storage.rs", "device.rs", "mod.rs"))
        ):
            out.append(lines(n))
            metal.extend(lines(v) for v in n.child_by_field_name("body").named_children if b"Metal" in v.text)
            return
        if n.type == "trait_item" and n.child_by_field_name("name").text.decode() in TRAITS:
            for item in n.child_by_field_name("body").named_children:
                name = (
                    item.child_by_field_name("name")
                    if item.type in ("function_item", "function_signature_item")
                    else None
                )
                if name is not None and name.text.decode().endswith("_fwd"):
                    start = item.prev_named_sibling  # the doc comment above it counts too
                    first = item
                    while (
                        start is not None
                        and start.type == "line_comment"
                        and start.end_point[0] + 1 >= first.start_point[0]
                    ):
                        first, start = start, start.prev_named_sibling
                    out.append((first.start_point[0] + 1, item.end_point[0] + 1))
                    if name.text == b"metal_fwd":
                        metal.append(out[-1])
            return
        if (
            n.type == "use_declaration"
            and path.endswith("lib.rs")
            and re.search(rb"\b(Cuda|Metal|Cpu)(Device|Storage)\b", n.text)
        ):
            first = n.start_point[0] + 1
            prev = n.prev_sibling
            if prev is not None and prev.type == "attribute_item":
                first = prev.start_point[0] + 1
            out.append((first, n.end_point[0] + 1))
            if b"Metal" in n.text:
                metal.append(out[-1])
            return
        for child in n.children:
            walk(child, in_to_device)

    walk(root)
    return out, metal


def main(git_dir: str, commit: str = "HEAD") -> None:
    sha = subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    rows, total, metal_total = [], 0, 0
    for path in FILES:
        source = show(git_dir, sha, path)
        counted, for_metal = spans(source, path)
        covered = {i for a, b in counted for i in range(a, b + 1)}
        metal = len({i for a, b in for_metal for i in range(a, b + 1)} & covered)
        rows.append((path, len(covered), metal))
        total += len(covered)
        metal_total += metal
    print(f"candle-core at {sha}\n")
    print("| file | dispatch lines | of which serve Metal alone |\n|---|---|---|")
    for path, n, metal in rows:
        print(f"| {path.removeprefix('candle-core/src/')} | {n} | {metal} |")
    print(f"| total | {total} | {metal_total} |")


if __name__ == "__main__":
    main(*sys.argv[1:])

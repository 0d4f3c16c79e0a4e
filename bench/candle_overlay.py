"""Put opgen's Rust output in place of candle-core's hand-written dispatch, audit the result.

    python bench/candle_overlay.py /path/to/candle [--out generated/rust]

Takes a candle checkout (a work tree, changed in place: pass a disposable one), and:
  1. audits candle-core's dispatch files as they are (`gen audit`, backends cpu, cuda, metal,
     rocm) and counts their hand-written dispatch lines (bench/candle_dispatch.py's count:
     matches over the backend variants, the backend enums, the custom-op traits' `*_fwd`
     hooks, lib.rs's backend exports);
  2. removes what the generated files stand for: the `Storage`, `Device`, `DeviceLocation`
     and `QStorage` enums and their inherent impls, the six custom-op traits, the backend
     traits of backend.rs, the dummy backends, lib.rs's backend exports, and to_device's match
     in tensor.rs (replaced by a call of the generated `Storage::to_device`); writes the
     generated files under candle-core/src/opgen/;
  3. audits the same files and the generated ones again, and prints both counts;
  4. does the same for the sites around the dispatch (bench/candle_sites.py: candle-nn's NN
     ops, candle-pyo3's PyDevice, test_utils.rs's test_device!, error.rs's backend variants)
     and the backend-specific bodies the profile's methods stand for (bench/candle_bodies.py:
     candle-nn's CPU flash attention, safetensors and GGML loading, QTensor, UgIOp1), and
     audits candle-core/src, candle-nn/src and candle-pyo3/src before and after, listing
     what is still missing, and the backend chains of candle-examples by file:line:col.
The result is read, not compiled: candle's crates are not built here (no network for its
dependencies). Nothing of candle's text is printed or kept."""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import tree_sitter
import tree_sitter_rust

from bench.candle_bodies import overlay_bodies
from bench.candle_dispatch import ENUMS, TRAITS, spans
from bench.candle_sites import backend_chains, overlay_sites, rewrite_test_device_calls
from generator.audit import MISSING, WILDCARD, audit, sources

BACKENDS = ("cpu", "cuda", "metal", "rocm")
ADDED = ("rocm",)  # the backends candle does not have, which the overlay adds
CRATES = ("candle-core", "candle-nn", "candle-pyo3")
FILES = ("storage.rs", "device.rs", "quantized/mod.rs", "tensor.rs", "custom_op.rs", "lib.rs")
REWRITTEN = (*FILES, "backend.rs")  # the files whose replaced items the overlay removes
OWNERS = {"Storage", "Device", "QStorage"}
BACKEND_TRAITS = {"BackendStorage", "BackendDevice"}
# candle-core's dummy backends (a backend whose feature is off), which the generated dummies replace
DUMMIES = ("dummy_cuda_backend.rs", "dummy_metal_backend.rs", "quantized/dummy_cuda.rs", "quantized/dummy_metal.rs")


def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_rust.language()))


def _name(node, field: str) -> str:
    child = node.child_by_field_name(field)
    return child.text.decode() if child is not None and child.text else ""


def replaced_ranges(source: bytes, path: str) -> list[tuple[int, int, bytes]]:
    """(start byte, end byte, replacement) of what the generated files stand for, in one file."""
    root = _parser().parse(source).root_node
    out: list[tuple[int, int, bytes]] = []

    def walk(node, in_to_device: bool = False) -> None:
        kind = node.type
        if kind == "enum_item" and _name(node, "name") in ENUMS:
            out.append((node.start_byte, node.end_byte, b""))
            return
        if kind == "impl_item" and node.child_by_field_name("trait") is None and _name(node, "type") in OWNERS:
            out.append((node.start_byte, node.end_byte, b""))
            return
        if kind == "trait_item" and _name(node, "name") in TRAITS | BACKEND_TRAITS:
            out.append((node.start_byte, node.end_byte, b""))
            return
        if kind == "use_declaration" and path.endswith("lib.rs") and _exports_backend(node.text or b""):
            out.append((node.start_byte, node.end_byte, b""))
            return
        if kind == "function_item":
            in_to_device = in_to_device or _name(node, "name") == "to_device"
        if kind == "match_expression" and in_to_device and path.endswith("tensor.rs"):
            out.append((node.start_byte, node.end_byte, b"self.storage().to_device(device)?"))
            return
        for child in node.children:
            walk(child, in_to_device)

    walk(root)
    return out


def _exports_backend(text: bytes) -> bool:
    return any(f"{v}{t}".encode() in text for v in ("Cpu", "Cuda", "Metal") for t in ("Device", "Storage"))


def boilerplate_lines(src: Path) -> dict[str, int]:
    """Lines of the backend traits (backend.rs) and of the dummy backends the generated files replace."""
    counts = {}
    root = _parser().parse((src / "backend.rs").read_bytes()).root_node
    traits = [n for n in root.named_children if n.type == "trait_item" and _name(n, "name") in BACKEND_TRAITS]
    counts["backend.rs (BackendStorage, BackendDevice)"] = sum(n.end_point[0] - n.start_point[0] + 1 for n in traits)
    for rel in DUMMIES:
        if (src / rel).is_file():
            counts[rel] = len((src / rel).read_text().splitlines())
    return counts


def dispatch_lines(src: Path) -> dict[str, int]:
    """Hand-written dispatch lines per file (bench/candle_dispatch.py's count)."""
    counts = {}
    for rel in FILES:
        counted, _ = spans((src / rel).read_bytes(), f"candle-core/src/{rel}")
        counts[rel] = len({i for a, b in counted for i in range(a, b + 1)})
    return counts


def audit_counts(paths: list[Path]) -> tuple[int, int, int]:
    points, missing, wild = audit_findings(paths)
    return points, len(missing), wild


def audit_findings(paths: list[Path]) -> tuple[int, list[str], int]:
    """(dispatch points, every missing finding as file:line:col: message, wildcard notes)."""
    files, errors = sources([str(p) for p in paths], "rust")
    if errors:
        raise SystemExit("\n".join(errors))
    reports = audit(files, BACKENDS, 1)
    missing = [str(f) for r in reports for f in r.findings if f.kind == MISSING]
    wild = sum(f.kind == WILDCARD for r in reports for f in r.findings)
    return sum(r.checked for r in reports), missing, wild


def overlay(src: Path, generated: Path) -> int:
    """Strip the replaced items from candle-core's files, write the generated ones; their lines."""
    for rel in DUMMIES:
        (src / rel).unlink(missing_ok=True)
    for rel in REWRITTEN:
        path = src / rel
        text = path.read_bytes()
        for start, end, new in sorted(replaced_ranges(text, rel), reverse=True):
            text = text[:start] + new + text[end:]
        path.write_bytes(text)
    dest = src / "opgen"
    dest.mkdir(exist_ok=True)
    written = 0
    for rs in sorted(generated.glob("*.rs")):
        shutil.copyfile(rs, dest / rs.name)
        written += len(rs.read_text().splitlines())
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candle", type=Path, help="a candle checkout (changed in place)")
    parser.add_argument("--out", type=Path, default=Path("generated/rust"), help="the rust target's output")
    args = parser.parse_args(argv)
    src = args.candle / "candle-core" / "src"
    if not (src / "storage.rs").is_file():
        sys.exit(f"{args.candle}: no candle-core/src/storage.rs here")
    crates = [args.candle / c / "src" for c in CRATES]
    crates_before = {c.parent.name: audit_findings([c]) for c in crates}
    chains, single = backend_chains(args.candle / "candle-examples", BACKENDS)
    targets = [src / rel for rel in FILES]
    before_points, before_missing, before_wild = audit_counts(targets)
    whole_before = audit_counts([src])
    lines = dispatch_lines(src)
    boilerplate = boilerplate_lines(src)
    written = overlay(src, args.out)
    sites = overlay_sites(args.candle, args.out, BACKENDS, ADDED)
    bodies = overlay_bodies(args.candle, args.out, BACKENDS)
    # the macro's explicit form (one test name per backend), not its one-name form
    forms = re.findall(r"\(\$fn_name:ident((?:, \$\w+:ident)*)\)", (args.out / "test_device.rs").read_text())
    names = re.findall(r"\$(\w+):ident", max(forms, key=len, default=""))
    calls = rewrite_test_device_calls(args.candle, ADDED, names.index(ADDED[0]) + 1) if ADDED[0] in names else 0
    crates_after = {c.parent.name: audit_findings([c]) for c in crates}
    after_points, after_missing, after_wild = audit_counts([*targets, src / "opgen"])
    generated = audit_counts([src / "opgen"])
    whole_after = audit_counts([src])
    print(f"backends: {', '.join(BACKENDS)}")
    print("| | dispatch points | missing | wildcard |\n|---|---|---|---|")
    print(f"| dispatch files, hand-written | {before_points} | {before_missing} | {before_wild} |")
    print(f"| dispatch files + generated | {after_points} | {after_missing} | {after_wild} |")
    print(f"| generated files alone | {generated[0]} | {generated[1]} | {generated[2]} |")
    print(f"| all of candle-core/src, before | {whole_before[0]} | {whole_before[1]} | {whole_before[2]} |")
    print(f"| all of candle-core/src, after | {whole_after[0]} | {whole_after[1]} | {whole_after[2]} |")
    print("\n| file | hand-written dispatch lines replaced |\n|---|---|")
    for rel, n in lines.items():
        print(f"| {rel} | {n} |")
    print(f"| total | {sum(lines.values())} |")
    print("\n| backend traits and dummy backends | lines replaced |\n|---|---|")
    for rel, n in boilerplate.items():
        print(f"| {rel} | {n} |")
    print(f"| total | {sum(boilerplate.values())} |")
    print(f"\ngenerated lines written (candle-core/src/opgen/, launch.rs included): {written}")
    print("\n| crate (src/) | dispatch points before | missing before | points after | missing after |")
    print("|---|---|---|---|---|")
    for name in crates_before:
        (bp, bm, _), (ap, am, _) = crates_before[name], crates_after[name]
        print(f"| {name} | {bp} | {len(bm)} | {ap} | {len(am)} |")
    total = [sum(len(v[1]) for v in d.values()) for d in (crates_before, crates_after)]
    print(f"| all three | | {total[0]} | | {total[1]} |")
    print("\n| site file | hand-written lines removed |\n|---|---|")
    for rel, n in sites.items():
        print(f"| {rel} | {n} |")
    print("\n| file | backend-specific bodies replaced by a generated method |\n|---|---|")
    for rel, n in bodies.items():
        print(f"| {rel} | {n} |")
    print(f"\ntest_device! calls given a {', '.join(ADDED)} test name (candle-core/tests, candle-nn/tests): {calls}")
    print("\nstill missing after the overlay:")
    for name in crates_after:
        for line in crates_after[name][1]:
            print(f"  {line.removeprefix(str(args.candle) + '/')}")
    print(f"\nbackend chains in candle-examples (a predicate of the profile replaces each): {len(chains)}")
    for at in chains:
        print(f"  {at}")
    print(f"\nother is_<backend>() tests in candle-examples (one backend chosen; a capability names it): {len(single)}")
    for at in single:
        print(f"  {at}")


if __name__ == "__main__":
    main()

"""The sites around candle-core's dispatch that the rust target generates too, put in place
in a candle checkout (bench/candle_overlay.py runs this after the dispatch files):

- candle-nn's ops.rs and rotary_emb.rs, candle-core's sort.rs: the NN ops' structs and
  their `impl CustomOp<N>` (generated: nn_ops.rs, every backend's hook);
- candle-pyo3's lib.rs: `PyDevice`, its conversions and its device cells (python_device.rs);
- candle-core's test_utils.rs: `test_device!` (test_device.rs), whose callers in the crates'
  tests/ get one test name more per added backend;
- candle-core's tensor.rs: to_scalar's and to_vec1/2/3's matches over the storage, one call of
  the profile's `Storage::to_cpu_storage` each;
- candle-core's display.rs: the device suffix's matches over DeviceLocation, the generated
  `Display` of DeviceLocation ("rocm:0") instead;
- candle-core's error.rs: the backends' variants and not-compiled errors, now added by
  `error_with_backends!` (backend_error.rs) around the hand-written enum;
and the backend chains of candle-examples (`device.is_cuda() || device.is_metal()`), which a
capability predicate (`is_accelerator`, `bf16_default_to_f32`) replaces, found by file:line:col."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import tree_sitter
import tree_sitter_rust

NN_FILES = ("candle-nn/src/ops.rs", "candle-nn/src/rotary_emb.rs", "candle-core/src/sort.rs")
CUSTOM_OPS = {"CustomOp1", "CustomOp2", "CustomOp3"}
PY_FILE = "candle-pyo3/src/lib.rs"
PY_ITEMS = {"PyDevice"}
PY_CELLS = re.compile(r"^[A-Z]+_DEVICE$")  # the device cells (CUDA_DEVICE) python_device.rs holds
ERROR_FILE = "candle-core/src/error.rs"
TENSOR_FILE = "candle-core/src/tensor.rs"
DISPLAY_FILE = "candle-core/src/display.rs"
TEST_UTILS = "candle-core/src/test_utils.rs"
TEST_DIRS = ("candle-core/tests", "candle-nn/tests")
# where generated files go: the crate whose code each stands for
PLACES = {"python_device.rs": "candle-pyo3/src/opgen"}
CORE_PLACE = "candle-core/src/opgen"
TEST_DEVICE_CALL = re.compile(r"test_device!\(\s*(\w+),\s*(\w+),\s*(\w+),\s*(\w+)\s*\)")
# the device suffix of a tensor's display, through DeviceLocation's generated Display
DEVICE_SUFFIX = (
    b'if self.device().is_cpu() {\n    String::new()\n} else {\n    format!(", {}", self.device().location())\n}'
)
IS_BACKEND = re.compile(r"\.is_(\w+)\(\)")


def parse_rust(source: bytes):
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_rust.language())).parse(source).root_node


def field_text(node, field: str) -> str:
    child = node.child_by_field_name(field)
    return child.text.decode() if child is not None and child.text else ""


def cut_ranges(path: Path, ranges: list[tuple[int, int, bytes]]) -> int:
    """Replace the byte ranges in the file; the lines removed."""
    text = path.read_bytes()
    before = text.count(b"\n")
    for start, end, new in sorted(ranges, reverse=True):
        text = text[:start] + new + text[end:]
    path.write_bytes(text)
    return before - text.count(b"\n")


def generated_structs(nn_ops: Path) -> set[str]:
    """The NN ops' struct names of the generated nn_ops.rs (the profile's `nn:` names)."""
    return set(re.findall(r"^pub struct (\w+)", nn_ops.read_text(), re.M))


def nn_ranges(source: bytes, structs: set[str]) -> list[tuple[int, int, bytes]]:
    """The structs the generated file defines and their custom-op impls, with their attributes."""
    out = []
    for node in parse_rust(source).named_children:
        if node.type == "struct_item" and field_text(node, "name") in structs:
            out.append(with_attributes(node))
        elif node.type == "impl_item" and field_text(node, "type") in structs:
            trait = node.child_by_field_name("trait")
            if trait is not None and (trait.text or b"").decode().split("::")[-1] in CUSTOM_OPS:
                out.append(with_attributes(node))
    return out


def with_attributes(node) -> tuple[int, int, bytes]:
    start = node.start_byte
    prev = node.prev_named_sibling
    while prev is not None and prev.type in ("attribute_item", "line_comment") and prev.end_point[0] >= 0:
        if prev.type == "line_comment" and not (prev.text or b"").startswith(b"///"):
            break
        start, prev = prev.start_byte, prev.prev_named_sibling
    return start, node.end_byte, b""


def pyo3_ranges(source: bytes) -> list[tuple[int, int, bytes]]:
    """PyDevice, every impl for it, and the device cells."""
    out = []
    for node in parse_rust(source).named_children:
        if node.type in ("enum_item", "impl_item"):
            named = field_text(node, "name") if node.type == "enum_item" else field_text(node, "type")
            if named in PY_ITEMS:
                out.append(with_attributes(node))
        elif node.type == "static_item" and PY_CELLS.match(field_text(node, "name")):
            out.append(with_attributes(node))
    return out


def host_copy_ranges(source: bytes) -> list[tuple[int, int, bytes]]:
    """Tensor's `match &*self.storage() { Storage::Cpu(s) => f(s), Storage::Cuda(s) =>
    f(&s.to_cpu_storage()?), .. }` (to_scalar, to_vec1/2/3): one call of the generated
    `Storage::to_cpu_storage` instead, `f(&self.storage().to_cpu_storage()?)`."""
    out = []
    stack = [parse_rust(source)]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "match_expression" or field_text(node, "value") != "&*self.storage()":
            continue
        body = node.child_by_field_name("body")
        calls = set()
        for arm in (c for c in (body.named_children if body is not None else ()) if c.type == "match_arm"):
            found = re.fullmatch(
                r"Storage::(\w+)\((\w+)\)\s*=>\s*(\w+)\((&?)(\w+)(\.to_cpu_storage\(\)\?)?\),?",
                " ".join((arm.text or b"").decode().split()),
            )
            host = found is not None and found[1] == "Cpu"
            if found is None or found[2] != found[5] or (host == bool(found[6])) or (host == bool(found[4])):
                calls = set()
                break
            calls.add(found[3])
        if len(calls) == 1:
            out.append((node.start_byte, node.end_byte, f"{calls.pop()}(&self.storage().to_cpu_storage()?)".encode()))
    return out


def location_ranges(source: bytes) -> list[tuple[int, int, bytes]]:
    """display.rs's `match self.device().location() { Cpu => "", Cuda { gpu_id } =>
    format!(", cuda:{gpu_id}"), .. }`: the generated `Display` of DeviceLocation instead."""
    out = []
    stack = [parse_rust(source)]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "match_expression" or field_text(node, "value") != "self.device().location()":
            continue
        body = node.child_by_field_name("body")
        arms = [c for c in (body.named_children if body is not None else ()) if c.type == "match_arm"]
        texts = [" ".join((a.text or b"").decode().split()) for a in arms]
        host = [t for t in texts if re.match(r"(crate::)?DeviceLocation::Cpu =>", t)]
        others = [t for t in texts if re.search(r'format!\(", \w+:\{gpu_id\}"\)', t)]
        if len(host) == 1 and '"".to_owned()' in host[0] and len(others) == len(texts) - 1:
            out.append((node.start_byte, node.end_byte, DEVICE_SUFFIX))
    return out


def test_utils_ranges(source: bytes) -> list[tuple[int, int, bytes]]:
    return [
        with_attributes(n)
        for n in parse_rust(source).named_children
        if n.type == "macro_definition" and field_text(n, "name") == "test_device"
    ]


def error_ranges(source: bytes, backends: tuple[str, ...]) -> list[tuple[int, int, bytes]]:
    """The Error enum without the backends' variants, inside `error_with_backends! { .. }`."""
    variants = {v for b in backends for v in (b.capitalize(), f"NotCompiledWith{b.capitalize()}Support")}
    for node in parse_rust(source).named_children:
        if node.type == "enum_item" and field_text(node, "name") == "Error":
            body = node.child_by_field_name("body")
            cuts = [
                with_attributes(v)
                for v in (body.named_children if body is not None else ())
                if v.type == "enum_variant" and field_text(v, "name") in variants
            ]
            start = with_attributes(node)[0]
            text = source[start : node.end_byte]
            for a, b, _ in sorted(cuts, reverse=True):
                text = text[: a - start] + text[b - start :].removeprefix(b",")
            return [(start, node.end_byte, b"crate::error_with_backends! {\n" + text + b"\n}")]
    return []


def rewrite_test_device_calls(candle: Path, added: tuple[str, ...], position: int) -> int:
    """Give every `test_device!(f, cpu, cuda, metal)` of the crates' tests a name per added
    backend (`f_rocm`), at the macro's position for it; the calls rewritten."""
    rewritten = 0
    for d in TEST_DIRS:
        for path in sorted((candle / d).rglob("*.rs")):
            text = path.read_text()

            def add(m: re.Match) -> str:
                names = list(m.groups())
                for b in added:
                    names.insert(position, f"{names[0]}_{b}")
                return f"test_device!({', '.join(names)})"

            new, n = TEST_DEVICE_CALL.subn(add, text)
            if n:
                path.write_text(new)
                rewritten += n
    return rewritten


def backend_chains(root: Path, backends: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(`a.is_x() || a.is_y()` over two backends or more, outermost only; every other
    `.is_<backend>()` test, a choice made for one backend that a capability names), each as
    file:line:col."""
    chains: list[str] = []
    single: list[str] = []
    for path in sorted(root.rglob("*.rs")):
        source = path.read_bytes()
        if b".is_" not in source:
            continue
        stack = [parse_rust(source)]
        while stack:
            node = stack.pop()
            at = f"{path.relative_to(root.parent)}:{node.start_point[0] + 1}:{node.start_point[1] + 1}"
            if node.type == "binary_expression" and node.child_by_field_name("operator").type in ("||", "&&"):
                named = {b for b in IS_BACKEND.findall((node.text or b"").decode()) if b in backends}
                if len(named) >= 2:
                    chains.append(at)
                    continue
            tested = IS_BACKEND.fullmatch("." + _tail(node)) if node.type == "call_expression" else None
            if tested and tested[1] in backends:
                single.append(at)
            stack.extend(reversed(node.children))
    return chains, single


def _tail(call) -> str:
    """`is_cuda()` of `device.is_cuda()`."""
    f = call.child_by_field_name("function")
    field = f.child_by_field_name("field") if f is not None and f.type == "field_expression" else None
    return f"{field.text.decode()}()" if field is not None and field.text else ""


def overlay_sites(candle: Path, generated: Path, backends: tuple[str, ...], added: tuple[str, ...]) -> dict[str, int]:
    """Strip what the generated site files stand for, write them in place; lines removed per file."""
    removed = {}
    structs = generated_structs(generated / "nn_ops.rs")
    for rel in NN_FILES:
        removed[rel] = cut_ranges(candle / rel, nn_ranges((candle / rel).read_bytes(), structs))
    removed[TENSOR_FILE] = cut_ranges(candle / TENSOR_FILE, host_copy_ranges((candle / TENSOR_FILE).read_bytes()))
    removed[DISPLAY_FILE] = cut_ranges(candle / DISPLAY_FILE, location_ranges((candle / DISPLAY_FILE).read_bytes()))
    removed[PY_FILE] = cut_ranges(candle / PY_FILE, pyo3_ranges((candle / PY_FILE).read_bytes()))
    removed[TEST_UTILS] = cut_ranges(candle / TEST_UTILS, test_utils_ranges((candle / TEST_UTILS).read_bytes()))
    numbered = tuple(b for b in backends if b != "cpu")
    removed[ERROR_FILE] = cut_ranges(candle / ERROR_FILE, error_ranges((candle / ERROR_FILE).read_bytes(), numbered))
    for name, place in PLACES.items():
        if (generated / name).is_file():
            (candle / place).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(generated / name, candle / place / name)
            (candle / CORE_PLACE / name).unlink(missing_ok=True)
    return removed

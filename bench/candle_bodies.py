"""Backend-specific bodies of candle-core and candle-nn that methods of the Candle profile
stand for, rewritten in a candle checkout (bench/candle_overlay.py runs this after
bench/candle_sites.py). Each rewrite is found by its shape; a body whose shape differs stays
as it is, and the audit still reports it.

- A match over a storage with one backend's arm and a wildcard that only fails (candle-nn's
  CPU flash attention: `Storage::Cpu(cpu) => .., _ => bail!(..)`): one call of the generated
  `Storage::as_<backend>_storage`, whose arm for every other backend errs naming it.
- safetensors.rs's loading of the formats no host type holds (F4, F6, F8E8M0), a `match device`
  that copies the bytes onto each backend: the generated `Device::storage_from_raw_bytes`.
- ggml_file.rs's `match device` that loads GGML blocks onto each backend: the generated
  `QStorage::from_data`, which does the same for every backend.
- QTensor's matches over its storage in `embedding`, `indexed_moe_forward` and `device_ptr`:
  the generated QStorage methods of those names.
- `impl CustomOp1 for QTensor`: the generated qtensor_op.rs, a child module of quantized/mod.rs
  (its hooks read QTensor's fields); candle's host hook body (the CPU product, its repacked
  path included) is the CPU backend's `QBackendStorage::matmul` there.
- `impl InplaceOp1 for UgIOp1`: the generated ug_op.rs, a child module of custom_op.rs under
  the impl's own cfg; candle's CUDA and Metal hook bodies (the launch of the compiled kernel)
  are those backends' `UgStorage::ug_fwd` there, and every other backend's hook errs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from bench.candle_sites import cut_ranges, field_text, parse_rust, with_attributes

SAFETENSORS = "candle-core/src/safetensors.rs"
GGML_FILE = "candle-core/src/quantized/ggml_file.rs"
QUANTIZED = "candle-core/src/quantized/mod.rs"
QTENSOR_OP = "qtensor_op.rs"
CUSTOM_OP = "candle-core/src/custom_op.rs"
UG_OP = "ug_op.rs"
FAILS = re.compile(r"^(?:(?:\w+::)*(?:bail|unreachable|panic|todo|unimplemented)!|(?:return )?Err\()")
ONE_BACKEND = re.compile(r"(?:\w+::)*Storage::(?P<variant>\w+)\((?P<binding>\w+)\)")
# QTensor's methods whose match over its storage a generated QStorage method of the name replaces
QTENSOR_CALLS = {
    "embedding": "self.storage.embedding(&ids.storage(), ids.layout(), rows, hidden)?",
    "indexed_moe_forward": (
        "{\n    let (storage, out_shape) = self.storage.indexed_moe_forward(\n        self.shape(),\n"
        "        &x.storage(),\n        x.layout(),\n        &ids.storage(),\n        ids.layout(),\n    )?;\n"
        "    let none = crate::op::BackpropOp::none();\n"
        "    Ok(crate::tensor::from_storage(storage, out_shape, none, false))\n}"
    ),
    "device_ptr": "self.storage.device_ptr()",
}


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _arms(match) -> list[tuple[str, object]]:
    """(pattern text, value node) of each arm, attributes left out."""
    body = match.child_by_field_name("body")
    out = []
    for arm in (c for c in (body.named_children if body is not None else ()) if c.type == "match_arm"):
        pattern = " ".join(_text(arm.child_by_field_name("pattern")).split())
        out.append((pattern, arm.child_by_field_name("value")))
    return out


def _text(node) -> str:
    return (node.text or b"").decode() if node is not None else ""


def _scoped(node, backends: tuple[str, ...]) -> bool:
    """Whether `node` is code for some backends only (inside a `fn cuda_fwd`, or an arm that
    names a backend's variant), where a match with that backend's arm alone is whole."""
    named = re.compile(rf"::(?:{'|'.join(b.capitalize() for b in backends)})\b")
    p = node.parent
    while p is not None:
        if p.type == "function_item" and re.fullmatch(rf"(?:{'|'.join(backends)})_fwd", field_text(p, "name")):
            return True
        if p.type == "match_arm" and named.search(_text(p.child_by_field_name("pattern"))):
            return True
        p = p.parent
    return False


def one_backend_ranges(source: bytes, backends: tuple[str, ...]) -> list[tuple[int, int, bytes]]:
    """`match s { Storage::Cpu(b) => e, _ => bail!(..) }` -> `{ let b = s.as_cpu_storage()?; e }`,
    where the match is not inside code for that backend alone."""
    variants = {b.capitalize(): b for b in backends}
    out = []
    for node in _walk(parse_rust(source)):
        if node.type != "match_expression" or _scoped(node, backends):
            continue
        arms = _arms(node)
        if len(arms) != 2 or arms[1][0] != "_" or not FAILS.match(_text(arms[1][1])):
            continue
        found = ONE_BACKEND.fullmatch(arms[0][0])
        if found is None or found["variant"] not in variants:
            continue
        subject = _text(node.child_by_field_name("value")).lstrip("&*")
        backend = variants[found["variant"]]
        new = f"{{\n    let {found['binding']} = {subject}.as_{backend}_storage()?;\n    {_text(arms[0][1])}\n}}"
        out.append((node.start_byte, node.end_byte, new.encode()))
    return out


def _device_match(node) -> list[tuple[str, object]] | None:
    """The arms of a `match device` whose arms name Device's backends, else None."""
    if node.type != "match_expression" or _text(node.child_by_field_name("value")) != "device":
        return None
    arms = _arms(node)
    return arms if arms and all(p.startswith("Device::") for p, _ in arms) else None


def raw_bytes_ranges(source: bytes) -> list[tuple[int, int, bytes]]:
    """safetensors.rs: `match device { Device::Cpu => CpuStorage::F4(data.to_vec()).., Device::Cuda(..)
    => alloc + copy.., .. }` -> `device.storage_from_raw_bytes(data, dtype)?`."""
    out = []
    for node in _walk(parse_rust(source)):
        arms = _device_match(node)
        host = [v for p, v in arms or () if p == "Device::Cpu"]
        if host and "data.to_vec()" in _text(host[0]) and "CpuStorage::" in _text(host[0]):
            out.append((node.start_byte, node.end_byte, b"device.storage_from_raw_bytes(data, dtype)?"))
    return out


def ggml_load_ranges(source: bytes) -> list[tuple[int, int, bytes]]:
    """ggml_file.rs's `from_raw_data::<T>`: `match device { Device::Cpu => QStorage::Cpu(..),
    Device::Cuda(c) => cuda::load_quantized(c, data)?, .. }` over the blocks `data: &[T]` ->
    `QStorage::from_data(<data's bytes>, device, T::DTYPE)?`."""
    out = []
    for node in _walk(parse_rust(source)):
        arms = _device_match(node)
        if arms and all("load_quantized(" in _text(v) or "QStorage::Cpu(" in _text(v) for _, v in arms):
            new = (
                "QStorage::from_data(\n    std::borrow::Cow::Borrowed(&raw_data[..std::mem::size_of_val(data)]),\n"
                "    device,\n    T::DTYPE,\n)?"
            )
            out.append((node.start_byte, node.end_byte, new.encode()))
    return out


def qtensor_ranges(source: bytes) -> list[tuple[int, int, bytes]]:
    """QTensor's matches over `&self.storage` (QTENSOR_CALLS), and `impl CustomOp1 for QTensor`."""
    out = []
    for item in parse_rust(source).named_children:
        if item.type != "impl_item" or field_text(item, "type") != "QTensor":
            continue
        trait = item.child_by_field_name("trait")
        if trait is not None:
            if _text(trait).split("::")[-1] == "CustomOp1":
                out.append(with_attributes(item))
            continue
        for fn in _walk(item):
            call = QTENSOR_CALLS.get(field_text(fn, "name")) if fn.type == "function_item" else None
            matches = [n for n in _walk(fn) if n.type == "match_expression"] if call else []
            if matches and _text(matches[0].child_by_field_name("value")) == "&self.storage":
                out.append((matches[0].start_byte, matches[0].end_byte, call.encode()))
    return out


def impl_ranges(source: bytes, trait: str, type_: str) -> tuple[list[tuple[int, int, bytes]], bytes]:
    """`impl <trait> for <type_>` with its attributes, and those attributes' text."""
    for item in parse_rust(source).named_children:
        named = _text(item.child_by_field_name("trait")).split("::")[-1] if item.type == "impl_item" else ""
        if named == trait and field_text(item, "type") == type_:
            start, end, _ = with_attributes(item)
            return [(start, end, b"")], source[start : item.start_byte]
    return [], b""


def _place(candle: Path, generated: Path, name: str, parent: str, attributes: bytes) -> None:
    """The generated `name` as a child module of the file `parent` (its own folder), declared
    at the parent's end under `attributes`; out of the generated folder."""
    if not (generated / name).is_file():
        return
    folder = candle / parent.removesuffix("mod.rs").removesuffix(".rs")
    folder.mkdir(exist_ok=True)
    shutil.copyfile(generated / name, folder / name)
    (candle / "candle-core/src/opgen" / name).unlink(missing_ok=True)
    module = name.removesuffix(".rs")
    with (candle / parent).open("ab") as f:
        f.write(b"\n// generated by opgen: a child module, it reads the fields of the type above\n")
        f.write(attributes + f"pub mod {module};\n".encode())


def _indented(new: bytes, source: bytes, at: int) -> bytes:
    """`new`'s lines after its first indented as the line `at` stands on."""
    line = source[source.rfind(b"\n", 0, at) + 1 : at]
    indent = line[: len(line) - len(line.lstrip(b" "))]
    return new.replace(b"\n", b"\n" + indent)


def overlay_bodies(candle: Path, generated: Path, backends: tuple[str, ...]) -> dict[str, int]:
    """Rewrite the bodies in place, put qtensor_op.rs beside QTensor; the sites rewritten per file."""
    rewritten: dict[str, int] = {}

    def apply(rel: str, ranges: list[tuple[int, int, bytes]]) -> None:
        if ranges:
            source = (candle / rel).read_bytes()
            cut_ranges(candle / rel, [(a, b, _indented(new, source, a)) for a, b, new in ranges])
            rewritten[rel] = rewritten.get(rel, 0) + len(ranges)

    for crate in ("candle-core/src", "candle-nn/src"):
        for path in sorted((candle / crate).rglob("*.rs")):
            if "opgen" not in path.parts:
                apply(str(path.relative_to(candle)), one_backend_ranges(path.read_bytes(), backends))
    apply(SAFETENSORS, raw_bytes_ranges((candle / SAFETENSORS).read_bytes()))
    apply(GGML_FILE, ggml_load_ranges((candle / GGML_FILE).read_bytes()))
    apply(QUANTIZED, qtensor_ranges((candle / QUANTIZED).read_bytes()))
    _place(candle, generated, QTENSOR_OP, QUANTIZED, b"")
    ranges, attributes = impl_ranges((candle / CUSTOM_OP).read_bytes(), "InplaceOp1", "UgIOp1")
    apply(CUSTOM_OP, ranges)
    if ranges:
        _place(candle, generated, UG_OP, CUSTOM_OP, attributes)
    return rewritten

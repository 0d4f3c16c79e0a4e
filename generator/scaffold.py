"""The runtime module `gen new-backend` writes: availability() and one stub per runtime function
the generated arms of a backend call, each with the arm's parameters and a docstring.

A stub's body is only `raise NotImplementedForBackend(...)`, which generator.runtime_scan
does not count as an implementation: until a body is replaced, the op stays missing (the arm
raises the generated error and `gen parity` lists it), and replacing one is all it takes."""

from __future__ import annotations

import os
import textwrap

from generator.model import OP_ENUM_TYPES, PARAM_TYPES, Operation, Registry

RETURNS = {
    "Storage": "the result's buffer on this backend (the arm wraps it in a Storage)",
    "None": "nothing",
    "DType": "the buffer's dtype (a numpy dtype)",
    "Device": "the ordinal of the device the buffer is on",
    "str": "a str",
    "bool": "a bool",
    "int": "an int",
}

# Runtime functions that are not ops of the registry: numpy out, and host copies (which every
# op declaring `fallback:` and to_device between backends go through).
CONVERSIONS = (
    ("to_numpy", ("inner", "layout"),
     "The elements of the storage that `layout` (a runtime.layout.Layout) selects, as a C-contiguous "
     "numpy array in host memory. to_numpy, to_vec* and to_device out of this backend call it."),
    ("to_host", ("inner",),
     "The whole buffer as a flat numpy array in host memory: ops that fall back run on it."),
    ("from_host", ("ordinal", "array"),
     "A new buffer on device `ordinal` holding the flat numpy array `array` (the result of an op "
     "that fell back, or to_device into this backend)."),
)
DEVICE_OF = ("device", ("inner",), "The ordinal of the device the buffer is on (fallbacks put their result there).")


def _param_doc(op: Operation, p) -> str:
    if p.is_storage:
        return f"{p.name}: the buffer of a Storage on the same device"
    if p.type in OP_ENUM_TYPES:
        return (f"{p.name}: the generated kernel of the {p.type} (only passed where the backend "
                "declares `kernels:` in the registry)")
    annotation = PARAM_TYPES.get(p.type, p.type)
    return f"{p.name}: {p.type}" + (f" ({annotation})" if annotation != p.type else "")


def _docstring(paragraphs: list[str]) -> list[str]:
    lines: list[str] = []
    for paragraph in paragraphs:
        lines += [""] if lines else []
        lines += textwrap.wrap(paragraph, 88)
    lines[0] = f'"""{lines[0]}'
    if len(lines) == 1:
        lines[0] += '"""'
    else:
        lines.append('"""')
    return lines


def _stub(name: str, params: tuple[str, ...], doc: list[str]) -> str:
    body = [*_docstring(doc), f'raise NotImplementedForBackend(_BACKEND, "{name}")']
    return "\n".join([f"def {name}({', '.join(params)}):", *(f"    {ln}" if ln else "" for ln in body)])


def _op_stub(op: Operation, backend: str, registry_name: str, line: int) -> str:
    first = "ordinal" if op.kind == "device" else "inner"
    cls = {"storage": "Storage", "device": "Device", "qstorage": "QStorage"}[op.kind]
    sig = ", ".join(p.name for p in op.params)
    doc = [f"{cls}.{op.name}({sig}) -> {op.returns} on {backend} ({registry_name}:{line})."]
    if op.doc:
        doc.append(op.doc)
    first_doc = "ordinal: the device's ordinal" if op.kind == "device" else f"inner: this backend's buffer of the {cls}"
    params = "; ".join([first_doc, *(_param_doc(op, p) for p in op.params)])
    doc.append(f"{params}. Returns {RETURNS.get(op.returns, op.returns)}.")
    return _stub(op.function(backend), (first, *(p.name for p in op.params)), doc)


def _nn_stub(op: Operation, inputs: int, backend: str, registry_name: str, line: int) -> str:
    storages = [f"{s}{i}" for i in range(1, inputs + 1) for s in ("s", "l")]
    doc = [f"nn.{op.class_name} ({op.trait}) on {backend} ({registry_name}:{line}).", *([op.doc] if op.doc else []),
           f"s<i>, l<i>: this backend's buffer and the Layout of input i; then {', '.join(p.name for p in op.params) or 'no parameters'}. "
           "Returns (buffer, shape)."]
    return _stub(op.name, (*storages, *(p.name for p in op.params)), doc)


def runtime_module(registry: Registry, backend: str, runtime_file: str,
                   lines: dict[tuple[str, str], int] | None = None) -> str:
    """The text of the new backend's runtime module; `lines` (generator.declared) places each
    op at its key's line in the docstrings."""
    lines = lines or {}

    def where(op: Operation) -> int:
        return lines.get((op.kind, op.name), op.line)
    registry_name = os.path.basename(registry.path)
    storage = [op for op in registry.storage if not op.hook]
    hooked = [op.name for op in registry.storage if op.hook]
    functions = {op.function(backend) for op in (*storage, *registry.device)}
    extras = [c for c in CONVERSIONS if c[0] not in functions]
    if DEVICE_OF[0] not in functions:
        extras.append(DEVICE_OF)
    inputs = {t.name: t.inputs for t in registry.custom_ops}
    stubs = len(storage) + len(registry.device) + len(registry.qstorage) + len(registry.nn) + len(extras)
    hook_note = (f" Custom-op ops ({', '.join(hooked)}) need nothing here: they call the custom op's "
                 f"{backend}_fwd.") if hooked else ""
    header = textwrap.fill(
        f"Each function is what one generated {backend} arm calls. Until its body is replaced it "
        f"raises NotImplementedForBackend, and `gen` counts it as missing: the arm raises the "
        f"generated error instead of calling it, and `gen parity` lists it. Replace a body, run "
        f"`gen`, and the arm calls it. Start with availability(), then to_host, from_host and "
        f"device: with those, every op declaring `fallback: cpu` runs on {backend} through host "
        f"memory.{hook_note}", 92)
    parts = [
        f'"""{backend} backend runtime: scaffold written by `gen new-backend {backend}` '
        f"({stubs} stubs).\n\n{header}\n\"\"\"\n\n"
        "from __future__ import annotations\n\n"
        "from runtime.errors import NotImplementedForBackend\n\n"
        f'_BACKEND = "{backend}"',
        "def availability() -> str | None:\n"
        f'    """None when {backend} can run here, else why not (library not found, no device, ...)."""\n'
        f'    return "the {backend} runtime is a scaffold: implement availability() in {runtime_file}"',
        _section("conversions: host memory in and out",
                 [_stub(name, params, [doc]) for name, params, doc in extras]),
    ]
    if storage:
        parts.append(_section("storage ops (methods of Storage), in registry order",
                              [_op_stub(op, backend, registry_name, where(op)) for op in storage]))
    if registry.device:
        parts.append(_section("device methods (methods of Device), in registry order",
                              [_op_stub(op, backend, registry_name, where(op)) for op in registry.device]))
    if registry.qstorage:
        parts.append(_section("quantized storage (methods of QStorage), in registry order",
                              [_op_stub(op, backend, registry_name, where(op)) for op in registry.qstorage]))
    if registry.nn:
        parts.append(_section("nn ops (custom ops of generated/nn.py), in registry order",
                              [_nn_stub(op, inputs.get(op.trait, 1), backend, registry_name, where(op))
                               for op in registry.nn]))
    return "\n\n\n".join(parts) + "\n"


def _section(title: str, functions: list[str]) -> str:
    """A comment line above the section's first function."""
    rule = f"# -- {title} "
    return "\n\n\n".join([f"{rule}{'-' * (92 - len(rule))}\n{functions[0]}", *functions[1:]])

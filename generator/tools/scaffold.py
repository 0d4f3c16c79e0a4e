"""The runtime module `gen new-backend` writes: availability() and one stub per function of the
backend contract (generator.contract: what the generated arms of a backend call), each with
the arm's parameters and a docstring.

A stub's body is only `raise NotImplementedForBackend(...)`, which generator.registry.runtime_scan
does not count as an implementation: until a body is replaced, the op stays missing (the arm
raises the generated error and `gen parity` lists it), and replacing one is all it takes."""

from __future__ import annotations

import os
import textwrap

from .. import contract
from ..model import OP_ENUM_TYPES, PARAM_TYPES, Backend, Operation, OpKind, Param, Registry

RETURNS = {
    "Storage": "the result's buffer on this backend (the arm wraps it in a Storage)",
    "None": "nothing",
    "DType": "the buffer's dtype (a numpy dtype)",
    "Device": "the ordinal of the device the buffer is on",
    "str": "a str",
    "bool": "a bool",
    "int": "an int",
}


def _param_doc(p: Param) -> str:
    if p.is_storage:
        return f"{p.name}: the buffer of a Storage on the same device"
    if p.type in OP_ENUM_TYPES:
        return (
            f"{p.name}: the generated kernel of the {p.type} (only passed where the backend "
            "declares `kernels:` in the registry)"
        )
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


def _op_stub(fn: contract.Function, op: Operation, backend: str, registry_name: str, line: int) -> str:
    sig = ", ".join(p.name for p in op.params)
    doc = [
        f"{op.owner}.{op.name}({sig}) -> {op.returns} on {backend} ({registry_name}:{line}).",
        *([op.doc] if op.doc else []),
    ]
    first = (
        "ordinal: the device's ordinal"
        if op.kind is OpKind.DEVICE
        else f"inner: this backend's buffer of the {op.owner}"
    )
    params = "; ".join([first, *(_param_doc(a.param) for a in fn.arguments if a.param)])
    doc.append(f"{params}. Returns {RETURNS.get(op.returns, op.returns)}.")
    return _stub(fn.name, tuple(a.name for a in fn.arguments), doc)


def _nn_stub(fn: contract.Function, op: Operation, backend: str, registry_name: str, line: int) -> str:
    fields = ", ".join(p.name for p in op.params) or "no parameters"
    doc = [
        f"nn.{op.class_name} ({op.trait}) on {backend} ({registry_name}:{line}).",
        *([op.doc] if op.doc else []),
        f"s<i>, l<i>: this backend's buffer and the Layout of input i; then {fields}. Returns (buffer, shape).",
    ]
    return _stub(fn.name, tuple(a.name for a in fn.arguments), doc)


def _function_stub(fn: contract.Function, backend: str, registry_name: str, where) -> str:
    if fn.op is None:
        return _stub(fn.name, tuple(a.name for a in fn.arguments), [fn.doc])
    if fn.op.kind is OpKind.NN:
        return _nn_stub(fn, fn.op, backend, registry_name, where(fn.op))
    return _op_stub(fn, fn.op, backend, registry_name, where(fn.op))


def runtime_module(
    registry: Registry, backend: str, runtime_file: str, lines: dict[tuple[str, str], int] | None = None
) -> str:
    """The text of the new backend's runtime module; `lines` (generator.registry.declared) places each
    op at its key's line in the docstrings."""
    lines = lines or {}

    def where(op: Operation) -> int:
        return lines.get((op.kind, op.name), op.line)

    registry_name = os.path.basename(registry.path)
    hooked = [op.name for op in registry.storage if op.hook]
    # The new backend declares no `kernels:`, so its arms pass no kernel tables.
    new = Backend(backend, "", True, "", None, frozenset(), 0)
    functions = contract.functions(registry, new, optional=False)
    hook_note = (
        (f" Custom-op ops ({', '.join(hooked)}) need nothing here: they call the custom op's {backend}_fwd.")
        if hooked
        else ""
    )
    header = textwrap.fill(
        f"Each function is what one generated {backend} arm calls. Until its body is replaced it "
        f"raises NotImplementedForBackend, and `gen` counts it as missing: the arm raises the "
        f"generated error instead of calling it, and `gen parity` lists it. Replace a body, run "
        f"`gen`, and the arm calls it. Start with availability(), then to_host, from_host and "
        f"device: with those, every op declaring `fallback: cpu` runs on {backend} through host "
        f"memory.{hook_note}",
        92,
    )
    parts = [
        f'"""{backend} backend runtime: scaffold written by `gen new-backend {backend}` '
        f'({len(functions)} stubs).\n\n{header}\n"""\n\n'
        "from __future__ import annotations\n\n"
        "from runtime.errors import NotImplementedForBackend\n\n"
        f'_BACKEND = "{backend}"',
        "def availability() -> str | None:\n"
        f'    """None when {backend} can run here, else why not (library not found, no device, ...)."""\n'
        f'    return "the {backend} runtime is a scaffold: implement availability() in {runtime_file}"',
    ]
    for section in contract.Section:
        stubs = [_function_stub(fn, backend, registry_name, where) for fn in functions if fn.section is section]
        if stubs:
            parts.append(_section(section.value, stubs))
    return "\n\n\n".join(parts) + "\n"


def _section(title: str, functions: list[str]) -> str:
    """A comment line above the section's first function."""
    rule = f"# -- {title} "
    return "\n\n\n".join([f"{rule}{'-' * (92 - len(rule))}\n{functions[0]}", *functions[1:]])

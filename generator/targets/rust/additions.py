"""Methods of a library's API profile that are no registry op (candle-core's `new_cuda`,
`as_metal_device`, `get_current_seed`, `QStorage::from_data` ...): a dispatch to each backend's
method of the name, a match whose arms the profile writes, or a fixed body; a method with
`each` once per backend.

In the profile's expressions, `{backend}` and `{Variant}` are the method's own backend (of
`each`), `{arm}` and `{ArmVariant}` the arm's, `{device}` the arm's device (the binding `d`,
or the host's unit device), `{Host}` the host backend's variant."""

from __future__ import annotations

import re

from ... import model
from ..rust_layout import MAX_WIDTH
from .types import Arm, Method, Variant, ident, layout_signature, variants

OPERAND_TYPES = {"&Storage", "&mut Storage", "&Self", "&mut Self"}
_BINDING = re.compile(r"\b[ds]\b")
ARM_BLOCK_INDENT = 16  # a statement in a match arm's block, in a method of an impl


def additions(registry: model.Registry, spelled: model.Profile | None, owner: str) -> tuple[Method, ...]:
    if spelled is None:
        return ()
    vs = variants(registry)
    out = []
    for m in spelled.additions(owner):
        if m.each is None:
            out.append(_method(m, vs, None))
            continue
        own = [v for v in vs if (v.backend.name in m.each if m.each else v.backend.ordinal)]
        out += [_method(m, vs, v) for v in own]
    return tuple(out)


def _fill(text: str, own: Variant | None, arm: Variant | None, vs: tuple[Variant, ...]) -> str:
    host = next(v for v in vs if not v.backend.ordinal)
    pairs = {"{Host}": host.name}
    if own is not None:
        pairs |= {"{backend}": own.backend.name, "{Variant}": own.name}
    if arm is not None:
        device = "d" if arm.backend.ordinal else f"&crate::{arm.device}"
        pairs |= {"{arm}": arm.backend.name, "{ArmVariant}": arm.name, "{device}": device}
    for key, value in pairs.items():
        text = text.replace(key, value)
    return text


def safety(m: model.ApiMethod) -> str:
    """The doc section clippy asks of a public unsafe fn."""
    return "\n\n# Safety\n\nThe storage is not initialized: write it before reading it." if m.unsafe else ""


def _signature(m: model.ApiMethod, own: Variant | None, vs: tuple[Variant, ...]) -> tuple[str, ...]:
    receiver = "&self" if m.receiver is None else m.receiver
    params = [
        *([receiver] if receiver else []),
        *(f"{ident(n)}: {_fill(t or '', own, None, vs)}" for n, t in m.params or ()),
    ]
    generics = f"<{m.generics}>" if m.generics else ""
    unsafe = "unsafe " if m.unsafe else ""
    returns = _fill(m.returns or "()", own, None, vs)
    name = _fill(m.name, own, None, vs)
    if m.where:
        head = layout_signature(f"pub {unsafe}fn {name}{generics}", params, f" -> {returns}")
        return (*head, "where", *(f"    {w}," for w in m.where), "{")
    return layout_signature(f"pub {unsafe}fn {name}{generics}", params, f" -> {returns} {{")


def _method(m: model.ApiMethod, vs: tuple[Variant, ...], own: Variant | None) -> Method:
    doc = _fill(m.doc or f"`{m.name}`, as the target's library spells it.", own, None, vs) + safety(m)
    signature = _signature(m, own, vs)
    cfg = own.cfg if own is not None else None
    if m.body:
        return Method(doc, signature, (), "", (), tuple(_fill(m.body, own, None, vs).split("\n")), cfg)
    if m.arms:
        return Method(doc, signature, (), m.subject or "self", _written_arms(m, own, vs), (), cfg)
    return _dispatch(m, doc, signature, vs, cfg)


def written(m: model.ApiMethod, vs: tuple[Variant, ...], signature: tuple[str, ...]) -> Method:
    """A registry op the library spells with its own arms or body (its signature derived)."""
    doc = m.doc or f"`{m.name}`, as the target's library spells it."
    if m.body:
        return Method(doc, signature, (), "", (), tuple(_fill(m.body, None, None, vs).split("\n")))
    return Method(doc, signature, (), m.subject or "self", _written_arms(m, None, vs))


def _pattern(m: model.ApiMethod, v: Variant, binding: str | None) -> str:
    enum = "Device" if m.subject else "Self"
    if (m.owner == "Device" or m.subject) and not v.backend.ordinal:
        return f"{enum}::{v.name}"
    return f"{enum}::{v.name}({binding or '_'})"


def _written_arms(m: model.ApiMethod, own: Variant | None, vs: tuple[Variant, ...]) -> tuple[Arm, ...]:
    written = dict(m.arms)
    arms = []
    for v in vs:
        key = "{backend}" if own is v and "{backend}" in written else v.backend.name
        expr = written.get(key, written.get("*"))
        if expr is None:
            raise ValueError(f"{m.owner}.{m.name}: no arm for {v.backend.name} and no '*'")
        expr = _fill(expr, own, v, vs)
        binding = "d" if m.owner == "Device" or m.subject else "s"
        used = binding if re.search(rf"\b{binding}\b", expr) else None
        arms.append(Arm(v.cfg, _pattern(m, v, used), (expr,)))
    return tuple(arms)


def _dispatch(m: model.ApiMethod, doc: str, signature: tuple[str, ...], vs, cfg: str | None) -> Method:
    """Each arm calls the backend's method of the name with the parameters; Storage parameters
    name the arm's backend (or the host's, for host operands), then the mismatch arm."""
    params = m.params or ()
    operands = [n for n, t in params if t in OPERAND_TYPES]
    other = "Self" if m.owner == "Storage" else "Storage"
    binding = "d" if m.owner == "Device" else "s"
    call_name = m.call or m.name
    args = ", ".join(ident(n) for n, _ in params)
    host = next(v for v in vs if not v.backend.ordinal)
    arms = []
    for v in vs:
        target = f"crate::{v.device}" if m.owner == "Device" and not v.backend.ordinal else binding
        call = f"{target}.{call_name}({args})"
        body = _wrap(m.returns or "", m.owner, v, call)
        used = binding if _BINDING.search("\n".join(body)) and target == binding else None
        first = _pattern(m, v, used)
        rest = [f"{other}::{(host if n in m.host_operands else v).name}({ident(n)})" for n in operands]
        cfgs = [v.cfg, *((host.cfg,) if any(n in m.host_operands for n in operands) else ())]
        gate = next((c for c in cfgs if c), None)
        arms.append(Arm(gate, f"({', '.join([first, *rest])})" if rest else first, body))
    subject = f"({', '.join(['self', *(ident(n) for n in operands)])})" if operands else "self"
    if operands:
        names = ["lhs", *(ident(n) for n in operands)]
        devices = ", ".join(f"{n}.device()" for n in names)
        arms.append(
            Arm(
                None,
                f"({', '.join(names)})",
                (f'Err(Device::mismatch("{m.name}", &[{devices}]))',),
                "unreachable_patterns",
            )
        )
    note = None
    if m.host_operands:
        others = ", ".join(v.backend.name for v in vs if v is not host)
        note = f"opgen: allow({others}): {', '.join(m.host_operands)} is on the host by design"
    return Method(doc, signature, (), subject, tuple(arms), (), cfg, note)


def _wrap(returns: str, owner: str, v: Variant, call: str) -> tuple[str, ...]:
    enum = {
        "Result<Self>": "Self" if owner != "Device" else None,
        "Result<Storage>": "Storage",
        "Result<QStorage>": "QStorage",
    }
    target = enum.get(returns)
    if returns == "Result<(Storage, Shape)>":  # the backend's storage and the shape it computed
        one = f"let (out, out_shape) = {call}?;"
        # in an arm's block (16 columns in), rustfmt keeps `let p = call?;` on one line up to 98
        bind = (one,) if ARM_BLOCK_INDENT + len(one) <= MAX_WIDTH - 2 else ("let (out, out_shape) =", f"    {call}?;")
        return (*bind, f"Ok((Storage::{v.name}(out), out_shape))")
    return (f"Ok({target}::{v.name}({call}?))" if target else call,)

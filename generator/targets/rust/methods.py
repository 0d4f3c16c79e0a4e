"""Storage, QStorage and Device methods: one `match` arm per backend, each calling that
backend's method of the op's name, after candle-core's checks."""

from __future__ import annotations

from ... import model
from .additions import safety, written
from .types import PARAM_TYPES, RETURN_TYPES, Arm, Method, Variant, fresh, ident, layout_signature, profile, variants


class Methods:
    """The methods of one generated enum: storage ops (Storage), QStorage methods or device methods."""

    def __init__(self, registry: model.Registry) -> None:
        self.registry = registry
        self.variants = variants(registry)
        self.traits = {t.name: t for t in registry.custom_ops}
        self.profile = profile(registry)

    def spelling(self, op: model.Operation, owner: str) -> model.ApiMethod | None:
        """The profile's spelling of the op, where the target's profile has one."""
        return self.profile.spelling(owner, op.name) if self.profile else None

    def omits(self, op: model.Operation, owner: str) -> bool:
        return self.profile is not None and self.profile.omits(owner, op.name)

    def kept(self, op: model.Operation, owner: str) -> tuple[model.Param, ...]:
        """The op's parameters the spelling keeps (all, without one), in the registry's order."""
        spelled = self.spelling(op, owner)
        if spelled is None or spelled.params is None:
            return op.params
        names = {n for n, _ in spelled.params}
        return tuple(p for p in op.params if p.name in names)

    def writes(self, op: model.Operation) -> str | None:
        hook = next((p for p in op.params if p.name == op.hook), None)
        if hook is not None and self.traits[hook.type].inplace:
            return "self"
        return op.writes

    def param_type(self, op: model.Operation, p: model.Param, owner: str) -> str:
        if p.is_storage:
            enum = "Self" if owner == "Storage" else "Storage"
            return f"&mut {enum}" if self.writes(op) == p.name else f"&{enum}"
        if p.type in self.traits:
            return f"&dyn {p.type}"
        return PARAM_TYPES[p.type]

    def signature(self, op: model.Operation, owner: str) -> tuple[str, ...]:
        spelled = self.spelling(op, owner)
        receiver = "&mut self" if self.writes(op) == "self" else "&self"
        typed = {p.name: self.param_type(op, p, owner) for p in op.params}
        order = [p.name for p in op.params]
        generic = "<T: WithDType>" if any(p.type == "Array" for p in op.params) else ""
        returns = RETURN_TYPES[op.returns]
        if owner == "Storage":
            returns = returns.replace("Storage", "Self")
        name, unsafe = ident(op.name), ""
        if spelled is not None:
            typed.update(spelled.types)
            order = [n for n, _ in spelled.params] if spelled.params is not None else order
            generic = f"<{spelled.generics}>" if spelled.generics else generic
            returns = spelled.returns or returns
            receiver = spelled.receiver if spelled.receiver is not None else receiver
            name, unsafe = spelled.name, "unsafe " if spelled.unsafe else ""
        params = [*([receiver] if receiver else []), *(f"{ident(n)}: {typed[n]}" for n in order)]
        return layout_signature(f"pub {unsafe}fn {name}{generic}", params, f" -> {returns} {{")

    def checks(self, op: model.Operation, owner: str) -> tuple[str, ...]:
        """Candle's checks before dispatch: devices, then dtypes, shapes, allowed dtypes."""
        if owner == "Storage":
            lines = [f'self.same_device({ident(p.name)}, "{op.label}")?;' for p in op.storage_params]
        else:
            lines = [f'self.device().check_same(&{ident(p.name)}.device(), "{op.label}")?;' for p in op.storage_params]
        if op.same_dtype:
            first, *rest = op.same_dtype
            lines += [f'{ident(first)}.same_dtype({ident(n)}, "{op.label}")?;' for n in rest]
        if op.same_shape:
            first, *rest = op.same_shape
            lines += [f'same_shape({ident(first)}, {ident(n)}, "{op.label}")?;' for n in rest]
        for name, dtypes in op.arg_dtypes:
            allowed = ", ".join(f"DType::{d.upper()}" for d in dtypes)
            lines.append(f'dtype_in({ident(name)}.dtype(), &[{allowed}], "{op.label}")?;')
        return tuple(lines)

    def call(self, op: model.Operation, receiver: str, owner: str) -> str:
        """The backend storage's method call of an arm; storage arguments are the arm's bindings."""
        spelled = self.spelling(op, owner)
        args = ", ".join(ident(p.name) for p in self.kept(op, owner))
        name = spelled.call if spelled is not None and spelled.call else ident(op.name)
        return f"{receiver}.{name}({args})"

    def wrap(self, returns: str, v: Variant, call: str, owner: str) -> tuple[str, bool]:
        """(the arm's expression, whether it uses the storage binding)."""
        enum = "Self" if owner == "Storage" else "Storage"
        match returns:
            case "Storage":
                return f"Ok({enum}::{v.name}({call}?))", True
            case "QStorage":
                return f"Ok(QStorage::{v.name}({call}?))", True
            case "Device":  # the backend hands out its device by reference
                if v.backend.ordinal:
                    return f"Device::{v.name}({call}.clone())", True
                return f"Device::{v.name}", False
            case _:
                return call, True

    def storage_method(self, op: model.Operation, owner: str = "Storage") -> Method:
        """A Storage (or QStorage) method: one arm per backend; with Storage arguments, one arm per
        backend naming every operand's variant, then the mismatch arm."""
        enum = "Self" if owner in ("Storage", "QStorage") else owner
        operands = list(op.storage_params)
        s = fresh("s", op)  # the backend storage of self, in each arm
        arms = []
        for v in self.variants:
            body: tuple[str, ...]
            if op.hook:
                body, used = self.hook_body(op, v, s)
            else:
                line, used = self.wrap(op.returns, v, self.call(op, s, owner), owner)
                body = (line,)
            first = f"{enum}::{v.name}({s if used else '_'})"
            other = "Self" if owner == "Storage" else "Storage"
            rest = [f"{other}::{v.name}({ident(p.name)})" for p in operands]
            pattern = f"({', '.join([first, *rest])})" if rest else first
            arms.append(Arm(v.cfg, pattern, body))
        subject = f"({', '.join(['self', *(ident(p.name) for p in operands)])})" if operands else "self"
        if operands:
            names = [fresh("lhs", op), *(ident(p.name) for p in operands)]
            devices = ", ".join(f"{n}.device()" for n in names)
            arms.append(
                Arm(
                    None,
                    f"({', '.join(names)})",
                    (f'Err(Device::mismatch("{op.label}", &[{devices}]))',),
                    "unreachable_patterns",
                )
            )
        doc = op.doc or f"`{op.label}` on the backend of {'its storages' if operands else 'the storage'}."
        return Method(
            f"{doc} (registry: `{op.kind}.{op.name}`)",
            self.signature(op, owner),
            self.checks(op, owner),
            subject,
            tuple(arms),
        )

    @staticmethod
    def hook_body(op: model.Operation, v: Variant, s: str) -> tuple[tuple[str, ...], bool]:
        """A custom-op dispatch: the op's <backend>_fwd with this backend's storages."""
        args = ", ".join([s, *(ident(p.name) for p in op.params if p.name != op.hook)])
        assert op.hook is not None  # hook_body serves hooked ops only
        call = f"{ident(op.hook)}.{v.backend.name}_fwd({args})"
        if op.returns == "None":
            return (call,), True
        out, shape = fresh("out", op), fresh("shape", op)
        return (f"let ({out}, {shape}) = {call}?;", f"Ok((Self::{v.name}({out}), {shape}))"), True

    def device_method(self, op: model.Operation) -> Method:
        spelled = self.spelling(op, "Device")
        if spelled is not None and (spelled.arms or spelled.body):  # the library's own arms
            return written(spelled, self.variants, self.signature(op, "Device"))
        arms = []
        d = fresh("d", op)
        for v in self.variants:
            target = f"crate::{v.device}" if not v.backend.ordinal else d
            body, _ = self.wrap(op.returns, v, self.call(op, target, "Device"), "Device")
            pattern = f"Self::{v.name}" if not v.backend.ordinal else f"Self::{v.name}({d})"
            arms.append(Arm(v.cfg, pattern, (body,)))
        doc = op.doc or f"`{op.name}` on the device's backend."
        safety_doc = safety(spelled) if spelled else ""
        return Method(
            f"{doc} (registry: `device.{op.name}`){safety_doc}", self.signature(op, "Device"), (), "self", tuple(arms)
        )


def storage_methods(registry: model.Registry) -> tuple[Method, ...]:
    m = Methods(registry)
    return tuple(m.storage_method(op) for op in registry.storage if not op.hook and not m.omits(op, "Storage"))


def hooked_methods(registry: model.Registry) -> tuple[Method, ...]:
    m = Methods(registry)
    return tuple(m.storage_method(op) for op in registry.storage if op.hook)


def qstorage_methods(registry: model.Registry) -> tuple[Method, ...]:
    m = Methods(registry)
    return tuple(m.storage_method(op, "QStorage") for op in registry.qstorage if not m.omits(op, "QStorage"))


# Device methods Rust generates from the backends alone: the registry's `location` is a
# runtime call in Python; in Rust it is the backend device's own `location()`.
OUTRIGHT_DEVICE = frozenset({"location"})


def device_methods(registry: model.Registry, quantized: bool) -> tuple[Method, ...]:
    """Device methods; `quantized`: those that make a QStorage (quantized.rs), else the rest."""
    m = Methods(registry)
    return tuple(
        m.device_method(op)
        for op in registry.device
        if op.name not in OUTRIGHT_DEVICE and (op.returns == "QStorage") == quantized and not m.omits(op, "Device")
    )

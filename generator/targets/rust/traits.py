"""The backend traits (candle-core's backend.rs: BackendStorage, BackendDevice, and
QBackendStorage for quantized storage) from the same facts as the dispatch: every method an
arm of the generated files calls on a backend, with the library's names and types, plus the
profile's `traits:` methods the generated code calls besides the ops' (to_cpu_storage, new ...).
And, where the profile asks for dummies, a dummy backend per non-host backend that answers
every method with the library's not-compiled error (candle-core's dummy_cuda_backend.rs)."""

from __future__ import annotations

from dataclasses import dataclass

from ... import model
from .methods import OUTRIGHT_DEVICE, Methods
from .types import RETURN_TYPES, Variant, ident, layout_signature, variants

OWNER_TRAIT = {"Storage": "BackendStorage", "Device": "BackendDevice", "QStorage": "QBackendStorage"}
# Registry return types as a backend answers them (the enum's variant payload, its device by reference).
BACKEND_RETURNS = {
    "BackendStorage": {"Storage": "Result<Self>", "Device": "&Self::Device"},
    "BackendDevice": {"Storage": "Result<Self::Storage>"},
    "QBackendStorage": {"Storage": "Result<Self::Storage>", "Device": "&Self::Device", "QStorage": "Result<Self>"},
}
# The enum types in a profile method's parameters, as the backend trait takes them.
BACKEND_PARAMS = {
    "BackendStorage": {"&Self": "&Self", "&mut Self": "&mut Self"},
    "QBackendStorage": {"&Storage": "&Self::Storage", "&mut Storage": "&mut Self::Storage"},
}

# A profile method's return types naming the enum, as a backend answers them.
PROFILE_RETURNS = {
    "Result<Storage>": "Result<Self::Storage>",
    "Result<(Storage, Shape)>": "Result<(Self::Storage, Shape)>",
}


@dataclass(frozen=True)
class TraitMethod:
    name: str
    signature: tuple[str, ...]  # its lines, without the `;` or body
    fallible: bool  # returns a Result: a dummy answers with the not-compiled error
    docs: tuple[str, ...] = ()  # doc lines (an unsafe fn's Safety section)


@dataclass(frozen=True)
class Trait:
    name: str
    assoc: tuple[str, ...]  # associated types, e.g. "type Device: BackendDevice;"
    methods: tuple[TraitMethod, ...]


def _method(name: str, generics: str, unsafe: bool, receiver: str, params: list[str], returns: str) -> TraitMethod:
    head = f"{'unsafe ' if unsafe else ''}fn {name}{f'<{generics}>' if generics else ''}"
    lines = layout_signature(head, [*([receiver] if receiver else []), *params], f" -> {returns}")
    docs = ("# Safety", "", "The storage is not initialized: write it before reading it.") if unsafe else ()
    return TraitMethod(name, lines, returns.startswith("Result<"), docs)


def _op_methods(registry: model.Registry, m: Methods, trait: str, ops) -> list[TraitMethod]:
    owner = {v: k for k, v in OWNER_TRAIT.items()}[trait]
    out = []
    for op in ops:
        spelled = m.spelling(op, owner)
        if op.hook or m.omits(op, owner) or (spelled and (spelled.arms or spelled.body)):
            continue
        types = dict(spelled.types) if spelled else {}
        params = []
        for p in m.kept(op, owner):
            rust = types.get(p.name) or m.param_type(op, p, "Storage" if trait == "BackendStorage" else owner)
            if p.is_storage and trait == "QBackendStorage":
                rust = rust.replace("Storage", "Self::Storage")
            params.append(f"_{ident(p.name).removeprefix('r#')}: {rust}")
        generics = (
            spelled.generics if spelled and spelled.generics else ("T: WithDType" if "&[T]" in str(params) else "")
        )
        returns = BACKEND_RETURNS[trait].get(op.returns) or RETURN_TYPES[op.returns]
        name = (spelled.call if spelled and spelled.call else op.name).split("::<")[0]
        receiver = "&mut self" if m.writes(op) == "self" else "&self"
        out.append(_method(name, generics, bool(spelled and spelled.unsafe), receiver, params, returns))
    return out


def _profile_methods(trait: str, methods) -> list[TraitMethod]:
    out = []
    for a in methods:
        if a.body or a.arms or a.each is not None:
            continue
        swap = BACKEND_PARAMS.get(trait, {})
        params = [f"_{n}: {swap.get(t or '', t)}" for n, t in a.params or ()]
        for n in a.host_operands:
            params = [p.replace(f"_{n}: &Self::Storage", f"_{n}: &CpuStorage") for p in params]
        receiver = "&self" if a.receiver is None else a.receiver
        returns = PROFILE_RETURNS.get(a.returns or "", a.returns or "()")
        out.append(_method((a.call or a.name), a.generics, a.unsafe, receiver, params, returns))
    return out


def traits(registry: model.Registry, profile: model.Profile) -> tuple[Trait, ...]:
    m = Methods(registry)
    device_ops = [op for op in registry.device if op.name not in OUTRIGHT_DEVICE]
    found = {
        "BackendStorage": _op_methods(registry, m, "BackendStorage", registry.storage)
        + _profile_methods("BackendStorage", profile.additions("Storage")),
        "BackendDevice": _op_methods(registry, m, "BackendDevice", device_ops)
        + _profile_methods("BackendDevice", profile.additions("Device")),
        "QBackendStorage": _op_methods(registry, m, "QBackendStorage", registry.qstorage)
        + _profile_methods("QBackendStorage", profile.additions("QStorage")),
    }
    for t in found:
        found[t] += _profile_methods(t, [a for a in profile.trait_methods if a.owner == t])
    assoc = {
        "BackendStorage": ("type Device: BackendDevice;",),
        "BackendDevice": ("type Storage: BackendStorage;",),
        "QBackendStorage": ("type Storage: BackendStorage;", "type Device: BackendDevice;"),
    }
    return tuple(Trait(t, assoc[t], tuple(found[t])) for t in found if found[t] or t != "QBackendStorage")


@dataclass(frozen=True)
class Dummy:
    """A backend compiled as a dummy: its types, and the not-compiled error every method returns."""

    variant: Variant
    error: str  # e.g. Error::NotCompiledWithCudaSupport


def dummies(registry: model.Registry, profile: model.Profile | None) -> tuple[Dummy, ...]:
    if profile is None or not profile.dummies:
        return ()
    return tuple(Dummy(v, f"Error::NotCompiledWith{v.name}Support") for v in variants(registry) if v.backend.ordinal)

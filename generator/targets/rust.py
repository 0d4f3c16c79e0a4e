"""The rust target: Candle's dispatch layer from the same model as the Python package.

Candle (candle-core) spells out, by hand, one `match` arm per backend in every method of
`Storage`, `Device` and `QStorage`, a `<backend>_fwd` per backend in every custom-op trait,
every backend pair of `to_device`, the exports of each backend's types and the launch of
every kernel. This module derives those facts from the frozen model: Rust types of the
registry's parameter and return types, the arms of each method, the cfg gate of each arm.
The templates in templates/rust/ only lay them out. No raw YAML, nothing copied from Candle:
the names and shapes follow candle-core (the commit is in templates/rust/README.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import jinja2

from .. import model
from ..audit.coverage import camel
from . import location
from .python import environment as python_environment, generated_kernels

TEMPLATES = location.TEMPLATES / "rust"
LINE_WIDTH = 100  # as rustfmt: a longer signature gets one parameter per line

# Registry parameter types -> Rust parameter types, as candle-core's methods take them.
# "Storage" is the storage enum itself (&Self inside its impl); "Array" a host slice.
PARAM_TYPES = {
    "Layout": "&Layout",
    "float": "f64",
    "int": "usize",
    "bool": "bool",
    "str": "&str",
    "Scalar": "Scalar",
    "Shape": "&Shape",
    "Dims": "&[usize]",
    "Pair": "(usize, usize)",
    "Array": "&[T]",
    "DType": "DType",
    "MatmulDims": "(usize, usize, usize, usize)",
    "ConvParams1D": "&ParamsConv1D",
    "ConvTransposeParams1D": "&ParamsConvTranspose1D",
    "ConvParams2D": "&ParamsConv2D",
    "ConvTransposeParams2D": "&ParamsConvTranspose2D",
    "GgmlDType": "GgmlDType",
    "UnaryOp": "UnaryOp",
    "BinaryOp": "BinaryOp",
    "CmpOp": "CmpOp",
    "ReduceOp": "ReduceOp",
}
# Registry return types -> Rust. Fallible ones are a Result, as in candle-core; the getters
# (dtype, device, size_in_bytes ...) are not.
RETURN_TYPES = {
    "Storage": "Result<Storage>",
    "None": "Result<()>",
    "DType": "DType",
    "Device": "Device",
    "StorageShape": "Result<(Storage, Shape)>",
    "str": "String",
    "bool": "bool",
    "int": "usize",
    "Array": "Result<Cow<'_, [u8]>>",
    "QStorage": "Result<QStorage>",
    "GgmlDType": "GgmlDType",
}
# Where each name the generated files use lives in candle-core.
PATHS = {
    "Layout": "crate::Layout",
    "Shape": "crate::Shape",
    "DType": "crate::DType",
    "Result": "crate::Result",
    "Error": "crate::Error",
    "WithDType": "crate::WithDType",
    "Scalar": "crate::scalar::Scalar",
    "UnaryOp": "crate::op::UnaryOp",
    "BinaryOp": "crate::op::BinaryOp",
    "CmpOp": "crate::op::CmpOp",
    "ReduceOp": "crate::op::ReduceOp",
    "ParamsConv1D": "crate::conv::ParamsConv1D",
    "ParamsConvTranspose1D": "crate::conv::ParamsConvTranspose1D",
    "ParamsConv2D": "crate::conv::ParamsConv2D",
    "ParamsConvTranspose2D": "crate::conv::ParamsConvTranspose2D",
    "GgmlDType": "crate::quantized::GgmlDType",
    "QStorage": "crate::quantized::QStorage",
    "Storage": "crate::Storage",
    "Device": "crate::Device",
    "DeviceLocation": "crate::DeviceLocation",
    "BackendStorage": "crate::backend::BackendStorage",
    "BackendDevice": "crate::backend::BackendDevice",
    "QBackendStorage": "crate::backend::QBackendStorage",
    "Cow": "std::borrow::Cow",
    "dtype_in": "crate::storage::dtype_in",
    "same_shape": "crate::storage::same_shape",
}
# C types of kernel arguments -> Rust: scalars by value, pointers as typed device addresses.
C_SCALARS = {
    "size_t": "usize",
    "int": "i32",
    "unsigned": "u32",
    "unsigned int": "u32",
    "uint8_t": "u8",
    "uint32_t": "u32",
    "int32_t": "i32",
    "int64_t": "i64",
    "uint64_t": "u64",
    "float": "f32",
    "double": "f64",
    "f16_t": "F16",
    "bf16_t": "Bf16",
    "void": "c_void",
}
ARG_VARIANTS = {
    "usize": "Usize",
    "i32": "I32",
    "u32": "U32",
    "u8": "U8",
    "i64": "I64",
    "f32": "F32",
    "f64": "F64",
    "F16": "F16",
    "Bf16": "Bf16",
}
RUST_KEYWORDS = frozenset(
    [
        "as",
        "break",
        "const",
        "continue",
        "crate",
        "else",
        "enum",
        "extern",
        "false",
        "fn",
        "for",
        "if",
        "impl",
        "in",
        "let",
        "loop",
        "match",
        "mod",
        "move",
        "mut",
        "pub",
        "ref",
        "return",
        "self",
        "Self",
        "static",
        "struct",
        "super",
        "trait",
        "true",
        "type",
        "unsafe",
        "use",
        "where",
        "while",
        "async",
        "await",
        "dyn",
        "abstract",
        "become",
        "box",
        "do",
        "final",
        "macro",
        "override",
        "priv",
        "typeof",
        "unsized",
        "virtual",
        "yield",
        "try",
    ]
)


@dataclass(frozen=True)
class Arm:
    cfg: str | None  # the cfg predicate gating the arm, e.g. feature = "cuda"
    pattern: str
    body: tuple[str, ...]  # one expression, or the statements of a block
    lint: str | None = None  # an allowed lint, for the mismatch arm

    @property
    def inline(self) -> bool:
        """One expression that fits on the arm's line (indented by 12), as rustfmt keeps it."""
        return len(self.body) == 1 and 12 + len(self.pattern) + len(self.body[0]) + 5 <= LINE_WIDTH

    @property
    def attrs(self) -> tuple[str, ...]:
        return (*((f"cfg({self.cfg})",) if self.cfg else ()), *((f"allow({self.lint})",) if self.lint else ()))


@dataclass(frozen=True)
class Method:
    doc: str
    signature: tuple[str, ...]  # lines, as rustfmt lays them out
    checks: tuple[str, ...]  # statements before the match
    subject: str
    arms: tuple[Arm, ...]


@dataclass(frozen=True)
class Variant:
    """One backend as the Rust enums spell it."""

    backend: model.Backend
    name: str  # Cpu, Cuda
    cfg: str | None  # None for the host backend, always compiled

    @property
    def device(self) -> str:
        return f"{self.name}Device"

    @property
    def storage(self) -> str:
        return f"{self.name}Storage"

    @property
    def qstorage(self) -> str:
        return f"Q{self.name}Storage"

    @property
    def module(self) -> str:
        return f"{self.backend.name}_backend"


def variants(registry: model.Registry) -> tuple[Variant, ...]:
    host = host_backend(registry)
    return tuple(Variant(b, camel(b.name), None if b is host else f'feature = "{b.name}"') for b in registry.backends)


def host_backend(registry: model.Registry) -> model.Backend:
    """The backend whose storage lives in host memory (the first with unnumbered devices):
    to_device goes through it, as candle-core goes through CpuStorage."""
    return next(b for b in registry.backends if not b.ordinal)


def both(*cfgs: str | None) -> str | None:
    gates = list(dict.fromkeys(c for c in cfgs if c))
    if not gates:
        return None
    return gates[0] if len(gates) == 1 else f"all({', '.join(gates)})"


NOT_RAW = frozenset({"crate", "self", "super", "Self"})  # keywords that cannot be raw identifiers


def ident(name: str) -> str:
    """A registry name as a Rust identifier: keywords raw (r#type), or with a _ where Rust
    allows no raw form; `self` is the receiver."""
    if name == "self" or name not in RUST_KEYWORDS:
        return name
    return f"{name}_" if name in NOT_RAW else f"r#{name}"


def fresh(name: str, op: model.Operation) -> str:
    """A binding of the generated code that no parameter of the op shadows or is shadowed by."""
    taken = {ident(p.name) for p in op.params}
    while name in taken:
        name += "_"
    return name


# clippy's too_many_arguments threshold: a signature past it says, as candle-core does, that
# the count is the op's (or the kernel's), not an accident.
CLIPPY_MAX_ARGS = 7


def layout_signature(head: str, params: list[str], tail: str) -> tuple[str, ...]:
    """`head(params) tail`, on one line when it fits in LINE_WIDTH (indented by 4), else
    one parameter per line, as rustfmt does."""
    return laid_out(head, Parameters.of(params), tail)


@dataclass(frozen=True)
class Parameters:
    """A parameter list as both layouts need it: many signatures share one (the launch
    wrappers of a 2,584-op registry: ~9,500 signatures, a few hundred lists)."""

    allow: tuple[str, ...]  # the clippy allowance a long list carries
    joined: str  # on one line
    lines: tuple[str, ...]  # one per line

    @staticmethod
    def of(params: list[str]) -> Parameters:
        allow = ("#[allow(clippy::too_many_arguments)]",) if len(params) > CLIPPY_MAX_ARGS else ()
        return Parameters(allow, ", ".join(params), tuple(f"    {p}," for p in params))


def laid_out(head: str, params: Parameters, tail: str) -> tuple[str, ...]:
    """layout_signature, for a parameter list laid out already."""
    one = f"{head}({params.joined}){tail}"
    if len(one) + 4 <= LINE_WIDTH:
        return (*params.allow, one)
    return (*params.allow, f"{head}(", *params.lines, f"){tail}")


# -- Storage, QStorage and Device methods -------------------------------------------------------


class Methods:
    """The methods of one generated enum: storage ops (Storage), QStorage methods or device methods."""

    def __init__(self, registry: model.Registry) -> None:
        self.registry = registry
        self.variants = variants(registry)
        self.traits = {t.name: t for t in registry.custom_ops}

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
        receiver = "&mut self" if self.writes(op) == "self" else "&self"
        params = [receiver, *(f"{ident(p.name)}: {self.param_type(op, p, owner)}" for p in op.params)]
        generic = "<T: WithDType>" if any(p.type == "Array" for p in op.params) else ""
        returns = RETURN_TYPES[op.returns]
        if owner == "Storage":
            returns = returns.replace("Storage", "Self")
        return layout_signature(f"pub fn {ident(op.name)}{generic}", params, f" -> {returns} {{")

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

    @staticmethod
    def call(op: model.Operation, receiver: str) -> str:
        """The backend storage's method call of an arm; storage arguments are the arm's bindings."""
        args = ", ".join(ident(p.name) for p in op.params)
        return f"{receiver}.{ident(op.name)}({args})"

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
                line, used = self.wrap(op.returns, v, self.call(op, s), owner)
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
        arms = []
        d = fresh("d", op)
        for v in self.variants:
            target = f"crate::{v.device}" if not v.backend.ordinal else d
            body, _ = self.wrap(op.returns, v, self.call(op, target), "Device")
            pattern = f"Self::{v.name}" if not v.backend.ordinal else f"Self::{v.name}({d})"
            arms.append(Arm(v.cfg, pattern, (body,)))
        doc = op.doc or f"`{op.name}` on the device's backend."
        return Method(f"{doc} (registry: `device.{op.name}`)", self.signature(op, "Device"), (), "self", tuple(arms))


def storage_methods(registry: model.Registry) -> tuple[Method, ...]:
    m = Methods(registry)
    return tuple(m.storage_method(op) for op in registry.storage if not op.hook)


def hooked_methods(registry: model.Registry) -> tuple[Method, ...]:
    m = Methods(registry)
    return tuple(m.storage_method(op) for op in registry.storage if op.hook)


def qstorage_methods(registry: model.Registry) -> tuple[Method, ...]:
    m = Methods(registry)
    return tuple(m.storage_method(op, "QStorage") for op in registry.qstorage)


# Device methods Rust generates from the backends alone: the registry's `location` is a
# runtime call in Python; in Rust it is the backend device's own `location()`.
OUTRIGHT_DEVICE = frozenset({"location"})


def device_methods(registry: model.Registry, quantized: bool) -> tuple[Method, ...]:
    """Device methods; `quantized`: those that make a QStorage (quantized.rs), else the rest."""
    m = Methods(registry)
    return tuple(
        m.device_method(op)
        for op in registry.device
        if op.name not in OUTRIGHT_DEVICE and (op.returns == "QStorage") == quantized
    )


# -- to_device ----------------------------------------------------------------------------------


def transfers(registry: model.Registry) -> tuple[Arm, ...]:
    """Every (source storage, destination device) pair: within a backend the backend's own
    transfer, to and from the host through the host storage, between two other backends
    through host memory."""
    vs = variants(registry)
    host = next(v for v in vs if v.cfg is None)
    to_host = f"to_{host.backend.name}_storage"
    from_host = f"storage_from_{host.backend.name}_storage"
    arms = []
    for src in vs:
        for dst in vs:
            device = f"Device::{dst.name}" if dst is host else f"Device::{dst.name}(d)"
            pattern = f"(Self::{src.name}(s), {device})"
            if dst is host:
                body = f"Ok(Self::{host.name}(s.{to_host}()?))"
            elif src is host:
                body = f"Ok(Self::{dst.name}(d.{from_host}(s)?))"
            elif src is dst:
                body = f"Ok(Self::{dst.name}(s.transfer_to_device(d)?))"
            else:
                body = f"Ok(Self::{dst.name}(d.{from_host}(&s.{to_host}()?)?))"
            arms.append(Arm(both(src.cfg, dst.cfg), pattern, (body,)))
    return tuple(arms)


# -- kernel launch wrappers ---------------------------------------------------------------------


class Launch(NamedTuple):  # ~9,500 for a 2,584-op registry: a tuple is built 3x faster than a frozen dataclass
    name: str
    source: str
    signature: str  # its lines, joined; parameters "numel: usize", "inp: DevicePtr<f32>" in kernel order
    args: str  # "KernelArg::Usize(numel), inp.arg(), ..."


def _rust_c_type(c_type: str) -> str:
    base = c_type.removeprefix("const ").rstrip("*").strip()
    rust = C_SCALARS[base]
    if not c_type.endswith("*"):
        return rust
    return f"DevicePtr<{rust}>" if c_type.startswith("const ") else f"DevicePtrMut<{rust}>"


def launches(kernels) -> tuple[Launch, ...]:
    """One wrapper per kernel entry point: parameters in the kernel's order, with its types."""
    taken = {"launcher", "cfg"}
    types: dict[str, str] = {}  # the same few C types over and over: converted once
    by_params: dict[int, tuple[Parameters, str]] = {}  # kernel_sigs shares one tuple per distinct list
    out = []
    for k in kernels:
        if id(k.params) not in by_params:
            params = ["launcher: &L", "cfg: &LaunchConfig"]
            args: list[str] = []
            for p in k.params:
                name = f"{p.name}_" if p.name in taken or p.name in RUST_KEYWORDS else p.name
                rust = types.get(p.c_type) or types.setdefault(p.c_type, _rust_c_type(p.c_type))
                params.append(f"{name}: {rust}")
                args.append(f"{name}.arg()" if p.is_pointer else f"KernelArg::{ARG_VARIANTS[rust]}({name})")
            by_params[id(k.params)] = (Parameters.of(params), ", ".join(args))
        params_, joined = by_params[id(k.params)]
        head = f"pub fn launch_{k.name}<L: KernelLauncher + ?Sized>"
        out.append(Launch(k.name, k.source, "\n".join(laid_out(head, params_, " -> Result<()> {")), joined))
    return tuple(out)


# -- custom-op traits -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Hook:
    """The `<backend>_fwd` of a custom-op trait: a default that errs, naming op and backend."""

    backend: str
    cfg: str | None
    signature: tuple[str, ...]


def hooks(trait: model.CustomOpTrait, vs: tuple[Variant, ...]) -> tuple[Hook, ...]:
    out = []
    for v in vs:
        params = ["&self"]
        for i in range(1, trait.inputs + 1):
            ref = "&mut " if trait.inplace and i == 1 else "&"
            params += [f"_s{i}: {ref}crate::{v.storage}", f"_l{i}: &Layout"]
        returns = "Result<()>" if trait.inplace else f"Result<(crate::{v.storage}, Shape)>"
        signature = layout_signature(f"fn {v.backend.name}_fwd", params, f" -> {returns} {{")
        out.append(Hook(v.backend.name, v.cfg, signature))
    return tuple(out)


# -- files ----------------------------------------------------------------------------------------


def uses(*names: str) -> tuple[str, ...]:
    """`use` lines for the names a file mentions, grouped by module, sorted."""
    groups: dict[str, list[str]] = {}
    for name in sorted(set(names)):
        module, _, item = PATHS[name].rpartition("::")
        groups.setdefault(module, []).append(item)
    return tuple(
        f"use {m}::{items[0]};" if len(items) == 1 else f"use {m}::{{{', '.join(items)}}};"
        for m, items in sorted(groups.items())
    )


def _mentioned(methods: tuple[Method, ...], candidates) -> set[str]:
    """The candidates (identifiers) that stand as whole words in the methods' lines: the
    words of the text found once, not one search of the whole text per candidate."""
    text = "\n".join("\n".join([*m.signature, *m.checks, *(ln for a in m.arms for ln in a.body)]) for m in methods)
    return set(candidates) & set(_WORD.findall(text))


_WORD = re.compile(r"\w+")


TYPE_NAMES = (
    "Layout",
    "Shape",
    "DType",
    "WithDType",
    "Scalar",
    "UnaryOp",
    "BinaryOp",
    "CmpOp",
    "ReduceOp",
    "ParamsConv1D",
    "ParamsConvTranspose1D",
    "ParamsConv2D",
    "ParamsConvTranspose2D",
    "GgmlDType",
    "QStorage",
    "Cow",
    "Storage",
    "Device",
)


HELPERS = ("dtype_in", "same_shape")  # storage.rs's check functions, which other files may call


def context(registry: model.Registry) -> dict:
    vs = variants(registry)
    storage = storage_methods(registry)
    hooked = hooked_methods(registry)
    qmethods = qstorage_methods(registry)
    device = device_methods(registry, quantized=False)
    qdevice = device_methods(registry, quantized=True)
    traits = [t for t in registry.custom_ops]
    kernels: tuple[Launch, ...] = ()
    if any(b.kernels == "hip" for b in registry.backends):
        kernels = launches(generated_kernels(registry)[1])
    return {
        "registry": registry,
        "registry_name": Path(registry.path).name,
        "variants": vs,
        "host": next(v for v in vs if v.cfg is None),
        "storage_methods": storage,
        "hooked_methods": hooked,
        "qstorage_methods": qmethods,
        "device_methods": device,
        "qdevice_methods": qdevice,
        "transfers": transfers(registry),
        "traits": [(t, hooks(t, vs)) for t in traits],
        "launches": kernels,
        "launch_uses_c_void": any("c_void" in k.signature for k in kernels),
        "checks_text": "\n".join(line for m in (*storage, *hooked, *qmethods) for line in m.checks),
        "dtypes": registry.dtypes,
        "uses_storage": uses(
            "Error",
            "Result",
            "Device",
            "DType",
            "Layout",
            "BackendStorage",
            *(_mentioned(storage, TYPE_NAMES) - {"Storage"}),
        ),
        "uses_device": uses("Result", "Error", "BackendDevice", *(_mentioned(device, TYPE_NAMES) - {"Device"})),
        "uses_custom_op": uses(
            "Error",
            "Result",
            "Layout",
            "Shape",
            *(_mentioned(hooked, (*TYPE_NAMES, *HELPERS)) | ({"Storage"} if hooked else set())),
        ),
        "uses_quantized": uses(
            "Result",
            "Device",
            "GgmlDType",
            "QBackendStorage",
            *(("BackendDevice",) if qdevice else ()),
            *(_mentioned((*qmethods, *qdevice), (*TYPE_NAMES, *HELPERS)) - {"QStorage"}),
        ),
        "uses_to_device": uses("Result", "Device", "Storage", "BackendStorage"),
        # Only arms towards a non-host device call the device (storage_from_<host>_storage).
        "gpu_cfg": _any_cfg(vs),
    }


def _any_cfg(vs: tuple[Variant, ...]) -> str | None:
    gates = [v.cfg for v in vs if v.cfg]
    return None if not gates else gates[0] if len(gates) == 1 else f"any({', '.join(gates)})"


def outputs(registry: model.Registry) -> dict[str, str]:
    """Template -> output file, for this registry."""
    files = ["backends.rs", "device.rs", "storage.rs", "custom_op.rs", "to_device.rs"]
    files += ["quantized.rs"] if registry.qstorage or any(op.returns == "QStorage" for op in registry.device) else []
    files += ["launch.rs"] if any(b.kernels == "hip" for b in registry.backends) else []
    return {f"{f}.j2": f for f in files}


def environment() -> jinja2.Environment:
    """The Python target's Jinja settings (strict, cached), over templates/rust/."""
    return python_environment(TEMPLATES)


def render(registry: model.Registry) -> dict[str, str]:
    """Every generated Rust file's text, by name; each is parsed (tree-sitter) before anything is written."""
    env = environment()
    ctx = context(registry)
    rendered = {}
    for template, output in sorted(outputs(registry).items()):
        text = env.get_template(template).render(ctx)
        check_rust(template, output, text)
        rendered[output] = text
    return rendered


# launch.rs repeats one wrapper per kernel (4.5 MB for the synthetic registry's ~9,000):
# its preamble and first wrappers are parsed, which a template mistake cannot get past, the
# rest are the same lines with other kernel names (C identifiers; Rust keywords escaped).
LAUNCH_SAMPLE = 64


def check_rust(template: str, output: str, text: str) -> None:
    """Parse the rendered Rust (tree-sitter): a template that renders invalid Rust fails the
    run before anything is written, with the line and column."""
    from .python import RenderError

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

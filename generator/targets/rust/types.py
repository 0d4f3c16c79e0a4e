"""Rust names and layout shared by every file of the rust target: the Rust types of the
registry's parameter and return types, where candle-core keeps each name, identifiers,
rustfmt's signature layout, and the backends as the Rust enums spell them."""

from __future__ import annotations

from dataclasses import dataclass

from ... import model
from ...model import camel
from .. import rust_layout

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
    "CpuStorage": "crate::CpuStorage",
    "dtype_in": "crate::storage::dtype_in",
    "same_shape": "crate::storage::same_shape",
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
    body: tuple[str, ...] = ()  # a method that does not dispatch: its statements, no match
    cfg: str | None = None  # the method's own gate (a method of one backend)
    note: str | None = None  # a comment on the match line (an audit allowance, with its reason)

    @property
    def docs(self) -> tuple[str, ...]:
        return tuple(self.doc.split("\n"))


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


def profile(registry: model.Registry) -> model.Profile | None:
    """The rust target's API profile (candle.yaml for Candle), if the registry names one."""
    return next((t.profile for t in registry.targets if t.name == "rust"), None)


def variants(registry: model.Registry) -> tuple[Variant, ...]:
    """The registry's backends, then the profile's backends of this target alone (Metal)."""
    host = host_backend(registry)
    spelled = profile(registry)
    backends = (*registry.backends, *(spelled.backends if spelled else ()))
    gated = not (spelled and spelled.dummies)  # dummies: every variant compiled, as candle-core does
    return tuple(
        Variant(b, camel(b.name), None if b is host or not gated else f'feature = "{b.name}"') for b in backends
    )


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


def laid_out(head: str, params: Parameters, tail: str, indent: int = 4) -> tuple[str, ...]:
    """layout_signature, for a parameter list laid out already; `indent`: the columns before
    `head` (4: a method of an impl or trait, 0: a free function)."""
    one = f"{head}({params.joined}){tail}"
    if len(one) + indent <= LINE_WIDTH:
        return (*params.allow, one)
    return (*params.allow, f"{head}(", *params.lines, f"){tail}")


# -- files ----------------------------------------------------------------------------------------


def uses(*names: str, cfg_uses: tuple[tuple[str, str], ...] = ()) -> tuple[str, ...]:
    """`use` lines for the names a file mentions, grouped by module, in rustfmt's order;
    `cfg_uses`: (cfg, path) of uses under a `#[cfg]`, sorted in among them."""
    groups: dict[str, list[str]] = {}
    for name in sorted(set(names)):
        module, _, item = PATHS[name].rpartition("::")
        groups.setdefault(module, []).append(item)
    lines: list[tuple[tuple[str, ...], str]] = [  # (attributes, the use)
        ((), f"use {m}::{items[0]};" if len(items) == 1 else f"use {m}::{{{', '.join(items)}}};")
        for m, items in groups.items()
    ]
    lines += [((f"#[cfg({cfg})]",), f"use {path};") for cfg, path in cfg_uses]
    return tuple(
        line for attrs, use in sorted(lines, key=lambda u: rust_layout.use_order(u[1])) for line in (*attrs, use)
    )


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

"""NN ops (candle-nn's ops.rs and rotary_emb.rs, candle-core's sort.rs): one struct per op of
the registry's `nn:`, implementing its custom-op trait with a `<backend>_fwd` for every
backend. The host's hook calls the host storage's method of the op's name (`NnStorage`);
a GPU backend's hook launches the op's kernel through launch.rs, its arguments derived from
the kernel's signature, where one launch over contiguous inputs computes the op; where it
takes several (attention, sorting) the hook calls the backend storage's method too."""

from __future__ import annotations

from dataclasses import dataclass

from ... import model
from .launch import _rust_c_type
from .types import Variant, camel, layout_signature

# Scalar kernel parameters, as Rust expressions over the first input's `dims` and `numel`
# (the kernels of nn.hip read a contiguous input: rows of the last dim, or (b, h, t, d)).
SCALARS = {
    "numel": "numel",
    "num_dims": "dims.len()",
    "ncols": "dims[dims.len() - 1]",
    "nrows": "numel / dims[dims.len() - 1]",
    "bh": "dims[0] * dims[1]",
    "td": "dims[2] * dims[3]",
    "b": "dims[0]",
    "t": "dims[1]",
    "h": "dims[2]",
    "d": "dims[3]",
}
# Registry parameter types -> the struct field's Rust type (candle-nn keeps eps as f32).
FIELD_TYPES = {"float": "f32", "bool": "bool", "int": "usize"}


@dataclass(frozen=True)
class NnHook:
    backend: str
    cfg: str | None  # a GPU backend's hook: only where its feature (and its storage) is compiled
    signature: tuple[str, ...]
    body: tuple[str, ...]


@dataclass(frozen=True)
class NnOp:
    name: str  # the registry's
    struct: str  # the library's: SoftmaxLastDim, RotaryEmbI
    trait: str
    doc: str
    fields: tuple[tuple[str, str], ...]  # (name, Rust type)
    method: tuple[str, ...]  # NnStorage's method: its signature lines
    hooks: tuple[NnHook, ...]


def nn_ops(registry: model.Registry, vs: tuple[Variant, ...], kernels) -> tuple[NnOp, ...]:
    """`kernels`: every kernel entry point (name, params), as launch.rs wraps them."""
    spelled = next((t.profile for t in registry.targets if t.name == "rust" and t.profile), None)
    names = dict(spelled.nn_names) if spelled else {}
    traits = {t.name: t for t in registry.custom_ops}
    by_name = {k.name: k for k in kernels}
    out = []
    for op in registry.nn:
        trait = traits[op.trait or ""]
        fields = tuple((p.name, FIELD_TYPES.get(p.type, p.type)) for p in op.params)
        inputs = [(f"s{i}", f"l{i}") for i in range(1, trait.inputs + 1)]
        # the default uses none of them: named with `_`, as an implementation need not
        operands = [p for x, y in inputs[1:] for p in (f"_{x}: &Self", f"_{y}: &Layout")]
        extra = [f"_{n}: {t}" for n, t in fields]
        method = layout_signature(
            f"fn {op.name}", ["&self", "_l1: &Layout", *operands, *extra], " -> Result<(Self, Shape)> {"
        )
        hooks = []
        for v in vs:
            storage = f"crate::{v.storage}"
            params = ["&self", *(p for x, y in inputs for p in (f"{x}: &{storage}", f"{y}: &Layout"))]
            sig = layout_signature(f"fn {v.backend.name}_fwd", params, f" -> Result<({storage}, Shape)> {{")
            launch = _launch_body(op, inputs, fields, by_name) if v.backend.kernels == "hip" else None
            if launch is None:
                args = ", ".join(["l1", *(f"{x}, {y}" for x, y in inputs[1:]), *(f"self.{n}" for n, _ in fields)])
                launch = (f"s1.{op.name}({args})",)
            cfg = f'feature = "{v.backend.name}"' if v.backend.ordinal else None
            hooks.append(NnHook(v.backend.name, cfg, sig, launch))
        doc = op.doc or op.name
        out.append(NnOp(op.name, names.get(op.name, camel(op.name)), trait.name, doc, fields, method, tuple(hooks)))
    return tuple(out)


def _launch_body(op: model.Operation, inputs, fields, kernels: dict) -> tuple[str, ...] | None:
    """The GPU hook's body: one launch of the op's first kernel per dtype, or None where the
    kernel's parameters are not all derived from the inputs (several launches: attention)."""
    dtypes = dict(op.arg_dtypes).get("self", ())
    pattern = op.kernel[0] if op.kernel else ""
    arms = []
    for dtype in dtypes:
        kernel = kernels.get(pattern.replace("{self}", dtype))
        if kernel is None:
            return None
        args = _arguments(kernel, inputs, dict(fields))
        if args is None:
            return None
        head = f"DType::{dtype.upper()} => crate::launch::launch_{kernel.name}("
        arms += _arm(head, ["s1.launcher()", "&cfg", *args])
    if not arms:
        return None
    strided = any("layout_info" in a for a in arms)
    lines = [
        "let dims = l1.shape().dims();",
        "let numel = l1.shape().elem_count();",
    ]
    if not strided:
        contiguous = " || ".join(f"!{y}.is_contiguous()" for _, y in inputs)
        lines += [f"if {contiguous} {{", f'    crate::bail!("{op.name}: the inputs must be contiguous");', "}"]
    lines += [
        "let mut out = s1.alloc(l1.shape(), s1.dtype())?;",
        f'let cfg = s1.launch_config("{op.name}", numel);',
        "match s1.dtype() {",
        *(f"    {a}" for a in arms),
        f'    dtype => return Err(Error::UnsupportedDTypeForOp(dtype, "{op.name}").bt()),',
        "}",
        "Ok((out, l1.shape().clone()))",
    ]
    return tuple(lines)


# rustfmt's widths: a call's arguments over 60 columns, or a line over 100, go one per line.
CALL_WIDTH = 60
LINE_WIDTH = 100
ARM_INDENT = 12  # a match arm inside a hook's body


def _arm(head: str, args: list[str]) -> list[str]:
    """`head(args)?,` on one line, or laid out as rustfmt lays out a long call."""
    joined = ", ".join(args)
    if len(joined) <= CALL_WIDTH and ARM_INDENT + len(head) + len(joined) + 3 <= LINE_WIDTH:
        return [f"{head}{joined})?,"]
    return [head, *(f"    {a}," for a in args), ")?,"]


def _arguments(kernel, inputs, fields: dict[str, str]) -> list[str] | None:
    """The launch wrapper's arguments after (launcher, cfg), from the kernel's parameters."""
    args, pointer = [], 0
    for p in kernel.params:
        rust = _rust_c_type(p.c_type)
        if p.name in SCALARS and not p.is_pointer:
            args.append(SCALARS[p.name])
        elif p.name in fields:
            args.append(_cast(f"self.{p.name}", fields[p.name], rust))
        elif p.name == "info":
            args.append("s1.layout_info(l1)?")
        elif p.name == "out" and rust.startswith("DevicePtrMut<"):
            args.append("out.ptr_mut()")
        elif rust.startswith("DevicePtr<") and pointer < len(inputs):
            x, y = inputs[pointer]
            pointer += 1
            args.append(f"{x}.ptr({y})")
        else:
            return None
    return args


def _cast(value: str, field: str, kernel: str) -> str:
    """A field as the kernel's parameter type: widened losslessly (f32 -> f64, bool -> u32)."""
    return value if field == kernel else f"{kernel}::from({value})"

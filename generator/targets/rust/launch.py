"""Kernel launch wrappers: one per kernel entry point, its parameters the kernel's in order,
with Rust types for its C types."""

from __future__ import annotations

from typing import NamedTuple

from .. import rust_layout
from .types import RUST_KEYWORDS, Parameters, laid_out

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


class Launch(NamedTuple):  # ~9,500 for a 2,584-op registry: a tuple is built 3x faster than a frozen dataclass
    """launch.rs.j2 unpacks each in this order (no attribute lookups in its longest loop)."""

    name: str
    source: str
    signature: str  # its lines, joined; parameters "numel: usize", "inp: DevicePtr<f32>" in kernel order
    entry_point: str  # '    let entry_point = Kernel::new("<name>", "<source>");', laid out as rustfmt lays it
    args: str  # "    let kernel_args = [KernelArg::Usize(numel), inp.arg(), ...];", laid out as rustfmt lays it


def _rust_c_type(c_type: str) -> str:
    base = c_type.removeprefix("const ").rstrip("*").strip()
    rust = C_SCALARS[base]
    if not c_type.endswith("*"):
        return rust
    return f"DevicePtr<{rust}>" if c_type.startswith("const ") else f"DevicePtrMut<{rust}>"


def launches(kernels) -> tuple[Launch, ...]:
    """One wrapper per kernel entry point: parameters in the kernel's order, with its types."""
    taken = {"launcher", "cfg", "entry_point", "kernel_args"}  # the wrapper's own names
    types: dict[str, str] = {}  # the same few C types over and over: converted once
    by_params: dict[int, tuple[Parameters, str]] = {}  # kernel_sigs shares one tuple per distinct list
    shapes: dict[tuple[int, int, str], tuple[str, str, str]] = {}  # (params, name length, source) -> layout
    out = []
    for k in kernels:
        listed, name = id(k.params), k.name
        if listed not in by_params:
            params = ["launcher: &L", "cfg: &LaunchConfig"]
            args: list[str] = []
            for p in k.params:
                arg = f"{p.name}_" if p.name in taken or p.name in RUST_KEYWORDS else p.name
                rust = types.get(p.c_type) or types.setdefault(p.c_type, _rust_c_type(p.c_type))
                params.append(f"{arg}: {rust}")
                args.append(f"{arg}.arg()" if p.is_pointer else f"KernelArg::{ARG_VARIANTS[rust]}({arg})")
            by_params[listed] = (
                Parameters.of(params),
                rust_layout.array_statement("let kernel_args = ", args, ";"),
            )
        params_, statement = by_params[listed]
        key = (listed, len(name), k.source)
        shape = shapes.get(key)
        if shape is None:
            shape = shapes[key] = _shape(len(name), k.source, params_)
        slot, signature, entry_point = shape
        # tuple.__new__: a NamedTuple's own constructor is a Python function, a frame per wrapper
        wrapper = (name, k.source, signature.replace(slot, name), entry_point.replace(slot, name), statement)
        out.append(tuple.__new__(Launch, wrapper))
    return tuple(out)


# Stands for each character of a kernel's name in a wrapper's shape: a letter no generated
# text holds (the layout measures the name, it never reads it).
_NAME_SLOT = "\u01c2"


def _shape(name_length: int, source: str, params: Parameters) -> tuple[str, str, str]:
    """(the name's stand-in, a wrapper's signature and entry-point statement laid out with it):
    the layout depends on the name's length only, and a few hundred shapes stand for the ~9,500
    wrappers of a 2,584-op registry."""
    name = _NAME_SLOT * name_length
    head = f"pub fn launch_{name}<L: KernelLauncher + ?Sized>"
    signature = laid_out(head, params, " -> Result<()> {", indent=0)
    kernel = f'Kernel::new("{name}", "{source}")'
    entry_point = f"    let entry_point = {kernel};"
    if len(entry_point) > rust_layout.MAX_WIDTH or name_length + len(source) + 6 > rust_layout.FN_CALL_WIDTH:
        entry_point = rust_layout.call_statement("let entry_point = ", kernel, ";")
    return name, "\n".join(signature), entry_point

"""The backend contract: what a backend's runtime module must define for every generated arm
of that backend to call it. One function per storage op (without a hook), device method,
QStorage method (`q_<name>`) and nn op, and the host conversions; each with the arguments the
arms pass, in the order they pass them, and the types they pass.

It is the one source of three things: the calls in the arms (generator.dispatch builds their
argument lists from it), the `typing.Protocol` per backend in generated/contract.py (mypy
checks each runtime module against it in `make lint`), and the stubs `gen new-backend` writes
(generator.tools.scaffold)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import assert_never

from .model import OP_ENUM_TYPES, PARAM_TYPES, Backend, Operation, OpKind, Param, Registry

# Registry parameter types -> their annotation in generated/contract.py: the package's own
# annotations, except what the arms pass in place of a Storage or an op enum.
ANNOTATIONS: dict[str, str] = {
    **PARAM_TYPES,
    "Storage": "Buffer",  # the arms pass the Storage's inner buffer
    **{enum_type: "Kernel" for enum_type in OP_ENUM_TYPES},  # the op's entry of a kernel table
}
# Registry return types -> what the runtime function returns (the arm wraps it).
RETURNS: dict[str, str] = {
    "Storage": "Buffer",
    "QStorage": "Buffer",
    "StorageShape": "tuple[Buffer, tuple[int, ...]]",
    "None": "None",
    "DType": "np.dtype",
    "Device": "int",
    "GgmlDType": "str",
    "Array": "np.ndarray",
    "str": "str",
    "bool": "bool",
    "int": "int",
}


class Section(enum.StrEnum):
    """The groups of a contract, in the order generated/contract.py and the scaffold list them."""

    CONVERSIONS = "conversions: host memory in and out"
    STORAGE = "storage ops (methods of Storage), in registry order"
    DEVICE = "device methods (methods of Device), in registry order"
    QSTORAGE = "quantized storage (methods of QStorage), in registry order"
    NN = "nn ops (custom ops of generated/nn.py), in registry order"


@dataclass(frozen=True)
class Argument:
    """One argument an arm passes: the contract's parameter name and type, the expression the
    arm passes, and the registry parameter it comes from (None: the buffer, the ordinal, a
    kernel table)."""

    name: str
    annotation: str
    expression: str
    param: Param | None = None


@dataclass(frozen=True)
class Function:
    """One function of the contract."""

    name: str
    arguments: tuple[Argument, ...]
    returns: str  # annotation
    section: Section
    doc: str  # what it does, for the Protocol and the scaffold's docstring
    op: Operation | None = None  # None: a conversion
    optional: bool = False  # the arms work without it (another route); listed where the runtime has it

    @property
    def signature(self) -> str:
        """The parameters as a Protocol method's: positional-only, since the arms pass them so."""
        params = ", ".join(["self", *(f"{a.name}: {a.annotation}" for a in self.arguments)])
        return f"({params}, /) -> {self.returns}" if self.arguments else f"(self) -> {self.returns}"


def param_argument(p: Param, backend: Backend) -> Argument:
    """What an arm passes `backend`'s runtime for the registry parameter `p`."""
    if p.is_storage:
        return Argument(p.name, "Buffer", f"{p.name}.inner", p)
    if p.type in OP_ENUM_TYPES:
        table = f"_kernels_{backend.kernels}.{OP_ENUM_TYPES[p.type].upper()}"
        return Argument(p.name, "Kernel", f"{table}[{p.name}]", p)
    return Argument(p.name, ANNOTATIONS.get(p.type, "Any"), p.name, p)


def kernel_table(op: Operation, backend: Backend) -> tuple[Argument, ...]:
    """The launch table of the op's hand-written kernels, last, for backends that run HIP
    kernels: runtimes get kernels as arguments and never import generated code."""
    if op.kernel and backend.kernels == "hip":
        return (Argument("table", "KernelTable", f'_kernels_hip.{op.table}["{op.name}"]'),)
    return ()


def op_arguments(op: Operation, backend: Backend) -> tuple[Argument, ...]:
    """What the arm of `op` passes to `backend`'s runtime function, in order."""
    match op.kind:
        case OpKind.STORAGE | OpKind.QSTORAGE:
            first = (Argument("inner", "Buffer", "self.inner"),)
            return (*first, *(param_argument(p, backend) for p in op.params), *kernel_table(op, backend))
        case OpKind.DEVICE:
            return (Argument("ordinal", "int", "self.ordinal"), *(param_argument(p, backend) for p in op.params))
        case OpKind.NN:
            raise ValueError(f"nn op {op.name}: its inputs depend on the trait; use nn_arguments")
        case _:
            assert_never(op.kind)


def nn_arguments(op: Operation, inputs: int, backend: Backend) -> tuple[Argument, ...]:
    """What an nn op's `<backend>_fwd` hook passes: each input's buffer and Layout, the op's
    fields, then the kernel table."""
    storages = [
        a
        for i in range(1, inputs + 1)
        for a in (Argument(f"s{i}", "Buffer", f"s{i}"), Argument(f"l{i}", "Layout", f"l{i}"))
    ]
    fields = [Argument(p.name, ANNOTATIONS.get(p.type, "Any"), f"self.{p.name}", p) for p in op.params]
    return (*storages, *fields, *kernel_table(op, backend))


CONVERSIONS = (
    (
        "to_numpy",
        (("inner", "Buffer"), ("layout", "Layout")),
        "np.ndarray",
        "The elements of the storage that `layout` (a runtime.layout.Layout) selects, as a C-contiguous "
        "numpy array in host memory. to_numpy, to_vec* and to_device out of this backend call it.",
    ),
    (
        "to_host",
        (("inner", "Buffer"),),
        "np.ndarray",
        "The whole buffer as a flat numpy array in host memory: ops that fall back run on it.",
    ),
    (
        "from_host",
        (("ordinal", "int"), ("array", "np.ndarray")),
        "Buffer",
        "A new buffer on device `ordinal` holding the flat numpy array `array` (the result of an op "
        "that fell back, or to_device into this backend).",
    ),
    (
        "device",
        (("inner", "Buffer"),),
        "int",
        "The ordinal of the device the buffer is on (fallbacks put their result there).",
    ),
)
# Interop (DLPack, the CUDA Array Interface): optional, listed where the runtime defines
# them; a backend without one has its View method raise the generated missing error. The
# arguments are generator.dispatch's INTEROP_EXPORTS / INTEROP_IMPORTS, in that order.
INTEROP = (
    (
        "to_dlpack",
        (
            ("inner", "Buffer"),
            ("layout", "Layout"),
            ("stream", "Any"),
            ("max_version", "Any"),
            ("dl_device", "Any"),
            ("copy", "Any"),
        ),
        "Any",
        "A DLPack capsule of the layout's view, ordered after the work queued on the buffer (`stream`).",
    ),
    ("dlpack_device", (("inner", "Buffer"),), "tuple[int, int]", "The DLPack (device type, ordinal) of the buffer."),
    (
        "cuda_array_interface",
        (("inner", "Buffer"), ("layout", "Layout")),
        "dict[str, Any]",
        "The __cuda_array_interface__ (v3) of the layout's view.",
    ),
    (
        "from_dlpack",
        (("obj", "Any"), ("ordinal", "int")),
        "tuple[Buffer, Layout]",
        "(buffer, layout) of a producer's DLPack object, without a copy.",
    ),
    (
        "from_cuda_array_interface",
        (("obj", "Any"),),
        "tuple[Buffer, Layout]",
        "(buffer, layout) of an object with a __cuda_array_interface__, without a copy.",
    ),
)
TO_DEVICE_DOC = (
    "A contiguous copy of the layout's view on device `ordinal` of this backend (optional: "
    "without it, to_device within the backend goes through host memory)."
)


def to_device(backend: Backend, registry: Registry) -> Function:
    """to_device within a backend; backends that run HIP kernels also get the launch table of
    copy_strided_src, to make a strided view dense on the device."""
    copy = next((op for op in registry.storage if op.name == "copy_strided_src"), None)
    args = (
        Argument("inner", "Buffer", "storage.inner"),
        Argument("layout", "Layout", "layout"),
        Argument("ordinal", "int", "device.ordinal"),
        *(kernel_table(copy, backend) if copy else ()),
    )
    return Function("to_device", args, "Buffer", Section.CONVERSIONS, TO_DEVICE_DOC, optional=True)


def _op_function(op: Operation, backend: Backend, inputs: dict[str, int]) -> Function:
    match op.kind:
        case OpKind.STORAGE:
            section, args = Section.STORAGE, op_arguments(op, backend)
        case OpKind.DEVICE:
            section, args = Section.DEVICE, op_arguments(op, backend)
        case OpKind.QSTORAGE:
            section, args = Section.QSTORAGE, op_arguments(op, backend)
        case OpKind.NN:
            section, args = Section.NN, nn_arguments(op, inputs.get(op.trait or "", 1), backend)
        case _:
            assert_never(op.kind)
    return Function(op.function(backend.name), args, RETURNS.get(op.returns, "Any"), section, op.doc, op)


def functions(registry: Registry, backend: Backend, optional: bool = True) -> tuple[Function, ...]:
    """The contract of `backend`: availability() aside, every function its arms call once its
    runtime defines them all, in Section order. `optional` adds to_device where the runtime
    defines it."""
    inputs = {t.name: t.inputs for t in registry.custom_ops}
    ops = [op for op in (*registry.storage, *registry.device, *registry.qstorage, *registry.nn) if not op.hook]
    by_op = [_op_function(op, backend, inputs) for op in ops]
    taken = {f.name for f in by_op}
    conversions = [
        Function(name, tuple(Argument(n, t, n) for n, t in params), returns, Section.CONVERSIONS, doc)
        for name, params, returns, doc in CONVERSIONS
        if name not in taken
    ]
    if optional and backend.implements("to_device") and "to_device" not in taken:
        conversions.append(to_device(backend, registry))
    if optional:
        conversions += [
            Function(
                name, tuple(Argument(n, t, n) for n, t in params), returns, Section.CONVERSIONS, doc, optional=True
            )
            for name, params, returns, doc in INTEROP
            if backend.implements(name) and name not in taken
        ]
    order = list(Section)
    return tuple(sorted([*conversions, *by_op], key=lambda f: order.index(f.section)))


def protocol_name(backend: Backend) -> str:
    """cpu -> CpuRuntime, my_gpu -> MyGpuRuntime."""
    return "".join(part[:1].upper() + part[1:] for part in backend.name.split("_")) + "Runtime"

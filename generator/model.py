"""The registry as frozen, typed dataclasses. Templates read this, never raw YAML.

Everything a template needs that is not a plain field (signatures, dispatch arms, the
implementation status of each op on each backend) is computed here, in Python.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
import re
from dataclasses import dataclass
from typing import assert_never

# Parameter types the generated package knows, with their Python annotations.
PARAM_TYPES: dict[str, str] = {
    "Layout": "Layout",
    "Storage": "Storage",
    "float": "float",
    "int": "int",
    "bool": "bool",
    "str": "str",
    "Scalar": "int | float",
    "Shape": "tuple[int, ...]",
    "Dims": "tuple[int, ...]",
    "Pair": "tuple[int, int]",
    "Array": "np.ndarray",
    "DType": "DType",
    "MatmulDims": "MatmulDims",
    "ConvParams1D": "ConvParams1D",
    "ConvTransposeParams1D": "ConvTransposeParams1D",
    "ConvParams2D": "ConvParams2D",
    "ConvTransposeParams2D": "ConvTransposeParams2D",
    "GgmlDType": "GgmlDType",
}
# Op-enum parameter types -> the elementwise family whose kernel table they select.
OP_ENUM_TYPES: dict[str, str] = {"UnaryOp": "unary", "BinaryOp": "binary", "CmpOp": "cmp", "ReduceOp": "reduce"}
RETURN_TYPES: dict[str, str] = {
    "Storage": "Storage",
    "None": "None",
    "DType": "DType",
    "Device": "Device",
    "StorageShape": "tuple[Storage, tuple[int, ...]]",
    "str": "str",
    "bool": "bool",
    "int": "int",
    "Array": "np.ndarray",
    "QStorage": "QStorage",
    "GgmlDType": "GgmlDType",
}
# Types that need the registry's `quantized` formats.
QUANTIZED_TYPES = frozenset({"QStorage", "GgmlDType"})
# What a custom op's parameters may be: they become fields of its generated class.
NN_PARAM_TYPES = ("float", "int", "bool", "str")
FAMILIES = ("unary", "binary", "cmp", "reduce")
# Runtime functions every backend module must define.
REQUIRED_RUNTIME = ("availability",)


@dataclass(frozen=True)
class DType:
    name: str
    numpy: str
    hip: str | None
    kind: str  # uint | int | float
    compute: str | None  # dtype CPU kernels compute in, where it differs
    line: int

    @property
    def member(self) -> str:
        return self.name.upper()


@dataclass(frozen=True)
class Backend:
    name: str
    runtime: str  # dotted module name
    ordinal: bool
    doc: str
    kernels: str | None  # language of the generated kernel tables it runs (numpy), if any
    functions: frozenset[str]  # top-level names the runtime module defines (read with ast)
    line: int
    runtime_path: str | None = None  # the file read, for the up-to-date stamp
    stubs: frozenset[str] = frozenset()  # functions defined as stubs (gen new-backend's): not implemented
    imports: tuple[str, ...] = ()  # files its `from <runtime module> import *` read, for the stamp too

    @property
    def runtime_paths(self) -> tuple[str, ...]:
        return ((self.runtime_path,) if self.runtime_path else ()) + self.imports

    @property
    def member(self) -> str:
        return self.name.upper()

    @property
    def alias(self) -> str:
        """The runtime module's name in generated code: a prefix no generated name uses."""
        return f"_rt_{self.name}"

    def implements(self, function: str) -> bool:
        return function in self.functions

    def defines(self, function: str) -> bool:
        """Implemented, or a stub: either way the module has it, with a signature to check."""
        return function in self.functions or function in self.stubs


@dataclass(frozen=True)
class KernelFact:
    """A fact the HIP kernels and the GPU runtime share (ops.yaml `kernel_facts`): a number,
    or a set of kernel entry points (the `kernel:` patterns ops.yaml lists there stand for their
    entry points: expanded_facts). generated/kernel_facts.h and kernel_facts.py carry it."""

    name: str
    value: int | tuple[str, ...]
    doc: str
    line: int
    overridable: bool = False  # the header's value is a default (#ifndef): a -D may tune it


@dataclass(frozen=True)
class Switch:
    """A process-wide switch (ops.yaml `switches`), off by default: the runtime module of each
    of its backends defines `<name>()` and `set_<name>(enabled)`."""

    name: str
    backends: tuple[str, ...]
    doc: str
    line: int


@dataclass(frozen=True)
class QFormat:
    """A GGML block format of quantized storage: `block` values in `nbytes` bytes."""

    name: str
    block: int
    nbytes: int
    ggml_type: int  # GGML's enum value, as GGUF files name the format
    line: int

    @property
    def member(self) -> str:
        return self.name.upper()


@dataclass(frozen=True)
class Elementwise:
    name: str
    family: str  # unary | binary | cmp | reduce
    numpy: tuple[tuple[str, str], ...]  # (dtype kind or "*", expression)
    hip: str | None
    dtypes: tuple[str, ...]
    result: str | None
    line: int

    @property
    def member(self) -> str:
        return self.name.upper()

    def numpy_for(self, kind: str) -> str:
        exprs = dict(self.numpy)
        return exprs.get(kind, exprs.get("*", ""))


@dataclass(frozen=True)
class Param:
    name: str
    type: str

    @property
    def annotation(self) -> str:
        return PARAM_TYPES.get(self.type) or self.type

    @property
    def is_storage(self) -> bool:
        return self.type == "Storage"


class ArmStatus(enum.StrEnum):
    """How a backend runs an op."""

    IMPLEMENTED = "implemented"  # the arm calls the backend's runtime function
    FALLBACK = "fallback"  # through host memory, on the op's `fallback:` backend
    HOOK = "hook"  # the custom op's <backend>_fwd
    MISSING = "missing"  # the arm raises the generated error


class OpKind(enum.StrEnum):
    """Where an op of the registry lives: a method of Storage, Device or QStorage, or an nn op."""

    STORAGE = "storage"
    DEVICE = "device"
    QSTORAGE = "qstorage"
    NN = "nn"


@dataclass(frozen=True)
class Arm:
    """How one backend runs one op: its status and the Python statements of its arm."""

    backend: Backend
    status: ArmStatus
    body: tuple[str, ...]
    # Statements run before the method's `match`: a fast path that returns only where this arm
    # would pass every check and compute the same, else falls through to the `match` (dispatch.py).
    fast: tuple[str, ...] = ()

    @property
    def runs(self) -> bool:
        """Whether the arm runs the op (not: raises the generated missing error)."""
        return self.status is not ArmStatus.MISSING


@dataclass(frozen=True)
class Transfer:
    """to_device from one backend to another, and how it is done."""

    src: Backend
    dst: Backend
    arm: Arm


@dataclass(frozen=True)
class Operation:
    """A storage op (a method of Storage), a device method (of Device), a method of
    QStorage, or an NN op (a custom op of `trait`, generated as a class)."""

    name: str
    kind: OpKind
    params: tuple[Param, ...]
    returns: str
    fallback: str | None
    hook: str | None
    same_dtype: tuple[str, ...]
    same_shape: tuple[str, ...]
    arg_dtypes: tuple[tuple[str, tuple[str, ...]], ...]
    impl: tuple[tuple[str, str], ...]
    doc: str
    line: int
    arms: tuple[Arm, ...] = ()
    kernel: tuple[str, ...] = ()  # HIP entry point patterns in hip/, for backends that run HIP kernels
    trait: str | None = None  # nn ops: the custom-op trait the generated class implements
    kernel_dtypes: tuple[tuple[str, tuple[str, ...]], ...] = ()  # pattern -> the dtypes {self} covers there
    writes: str | None = None  # the Storage argument (or "self") the op writes in place

    def function(self, backend: str) -> str:
        """The runtime function the arm calls: QStorage methods are q_<name>, since the
        runtime modules also define Storage's ops of the same names."""
        return dict(self.impl).get(backend, f"q_{self.name}" if self.kind is OpKind.QSTORAGE else self.name)

    @property
    def label(self) -> str:
        """How errors name the op: QStorage's methods share names with Storage's."""
        return f"QStorage.{self.name}" if self.kind is OpKind.QSTORAGE else self.name

    @property
    def owner(self) -> str:
        """The generated class the op is a method of (nn ops: their own class)."""
        match self.kind:
            case OpKind.STORAGE:
                return "Storage"
            case OpKind.DEVICE:
                return "Device"
            case OpKind.QSTORAGE:
                return "QStorage"
            case OpKind.NN:
                return self.class_name
            case _:
                assert_never(self.kind)

    @property
    def class_name(self) -> str:
        """nn ops: the generated class, e.g. softmax_last_dim -> SoftmaxLastDim."""
        return "".join(part[:1].upper() + part[1:] for part in self.name.split("_"))

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes `self` may have (nn ops: every input), where the registry limits them."""
        return dict(self.arg_dtypes).get("self", ())

    @property
    def table(self) -> str:
        """The kernel table of the launch-wrapper module the op's arms pass to runtimes."""
        match self.kind:
            case OpKind.STORAGE | OpKind.QSTORAGE | OpKind.NN:
                return self.kind.upper()
            case OpKind.DEVICE:
                raise ValueError(f"device method {self.name} has no kernel table")  # kernel_ops leaves them out
            case _:
                assert_never(self.kind)

    @property
    def storage_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_storage)

    @property
    def signature(self) -> str:
        return "".join(f", {p.name}: {p.annotation}" for p in self.params)

    @property
    def annotation(self) -> str:
        return RETURN_TYPES[self.returns]


@dataclass(frozen=True)
class CustomOpTrait:
    name: str
    inputs: int
    inplace: bool
    line: int

    @property
    def fwd_params(self) -> str:
        return ", ".join(f"s{i}, l{i}" for i in range(1, self.inputs + 1))


# What a collective's parameters may be, with their Python annotations.
COLLECTIVE_PARAM_TYPES: dict[str, str] = {
    "Storage": "Storage",
    "Rank": "int",
    "Reduction": "Reduction",
    "int": "int",
    "float": "float",
}
# The reductions the engines (MPI, NCCL, RCCL) all provide; avg is sum / size.
REDUCTIONS = ("sum", "prod", "min", "max", "avg")


@dataclass(frozen=True)
class CountRule:
    """A Storage argument's element count, as another's: `of` alone, times or divided by the size."""

    storage: str
    of: str
    scale: str  # "" | "*" | "/"

    def expected(self, count: str) -> str:
        """The Python expression of the count it must have, from `count`, the other's."""
        return {"": count, "*": f"{count} * self.size", "/": f"{count} // self.size"}[self.scale]


@dataclass(frozen=True)
class Collective:
    """A method of Comm: one collective operation (or the communicator's own, as split)."""

    name: str
    params: tuple[Param, ...]
    returns: str  # None | Comm
    dtypes: tuple[str, ...]  # what every Storage argument may hold
    same_dtype: tuple[str, ...]
    counts: tuple[CountRule, ...]
    per_rank: tuple[str, ...]
    in_place: bool
    reductions: tuple[tuple[str, tuple[str, ...]], ...]  # reduction -> its dtypes
    agree: tuple[str, ...]
    writes: str | None
    doc: str
    line: int
    arms: tuple[Arm, ...] = ()

    @property
    def function(self) -> str:
        """The runtime function each arm calls: comm_<name> (runtime modules also define
        Storage ops, some of the same names)."""
        return f"comm_{self.name}"

    @property
    def label(self) -> str:
        return f"Comm.{self.name}"

    @property
    def storage_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_storage)

    @property
    def signature(self) -> str:
        return "".join(f", {p.name}: {COLLECTIVE_PARAM_TYPES[p.type]}" for p in self.params)

    @property
    def annotation(self) -> str:
        return "Comm" if self.returns == "Comm" else "None"


@dataclass(frozen=True)
class ApiMethod:
    """A method of Storage, Device or QStorage as one library spells it (a target's API
    profile): a registry op under the library's name, parameters and types, or a method of
    that library alone. Types are the target language's, written as the library writes them."""

    owner: str  # Storage | Device | QStorage
    name: str  # the library's name; with {backend}, one method per backend of `each`
    op: str | None  # the registry op it spells; None: a method of the library alone
    line: int
    generics: str = ""  # inside <..>, e.g. "B: op::UnaryOpT"
    where: tuple[str, ...] = ()  # where-clause predicates
    receiver: str | None = None  # "&self", "&mut self", "" (none: an associated function); None: derived
    unsafe: bool = False
    params: tuple[tuple[str, str | None], ...] | None = None  # (name, type); op spellings: order, type None = derived
    types: tuple[tuple[str, str], ...] = ()  # op spellings: parameters whose type the registry cannot infer
    returns: str | None = None  # None: derived from the op
    call: str | None = None  # what each arm calls on the backend, where it differs from the name
    body: str | None = None  # a fixed body instead of a dispatch
    arms: tuple[tuple[str, str], ...] = ()  # (backend, "{backend}" or "*") -> the arm's expression
    subject: str | None = None  # the parameter matched on instead of self (a &Device)
    host_operands: tuple[str, ...] = ()  # Storage parameters always on the host backend
    each: tuple[str, ...] | None = None  # one method per backend: those named, () every backend
    doc: str = ""
    omit: bool = False  # a registry op the library does not have: not generated for this target


@dataclass(frozen=True)
class QTensorOp:
    """The library's quantized tensor as a custom op of the registry's `qstorage.matmul`
    (candle-core's QTensor, a CustomOp1 named "qmatmul")."""

    type: str  # the tensor type, in the module the generated file is a child of
    name: str  # the custom op's name


@dataclass(frozen=True)
class UgOp:
    """The library's in-place op whose kernel a backend compiles at run time (candle-core's
    UgIOp1): the backends with a code generator for it run it, every other one errs."""

    type: str  # the op type, in the module the generated file is a child of
    backends: tuple[str, ...]


@dataclass(frozen=True)
class Profile:
    """How one library spells the registry in a target's language (a file beside ops.yaml,
    named by `targets: <target>: profile:`): its backends of this target alone, its method
    names and types, its methods that are no registry op."""

    path: str
    library: str
    commit: str
    backends: tuple[Backend, ...]  # of this target alone: no runtime, arms generated like the others
    methods: tuple[ApiMethod, ...]
    dummies: bool = False  # a backend whose feature is off compiles as a dummy, as candle-core does
    # backend-trait methods the generated code calls besides the ops' (to_cpu_storage, new ...),
    # owner = the trait; with them the target writes the traits (backend.rs)
    trait_methods: tuple[ApiMethod, ...] = ()
    crate: str = ""  # how the library's other crates name it (candle); "" for `crate`
    nn_names: tuple[tuple[str, str], ...] = ()  # registry nn op -> the library's struct name
    thiserror: bool = False  # the error enum derives thiserror::Error: variants carry #[error(..)]
    qtensor: QTensorOp | None = None  # the quantized tensor's product as a custom op
    ug_op: UgOp | None = None  # the op whose kernel a backend compiles at run time

    def spelling(self, owner: str, op: str) -> ApiMethod | None:
        return next((m for m in self.methods if m.owner == owner and m.op == op), None)

    def omits(self, owner: str, op: str) -> bool:
        spelled = self.spelling(owner, op)
        return spelled is not None and spelled.omit

    def additions(self, owner: str) -> tuple[ApiMethod, ...]:
        return tuple(m for m in self.methods if m.owner == owner and m.op is None)


@dataclass(frozen=True)
class Target:
    """An emission target the registry asks for: `python` (the package) or `rust` (Candle's
    dispatch layer), written to `out`, a folder relative to the registry's."""

    name: str
    out: str
    line: int
    profile: Profile | None = None  # a library's spelling of the output (rust: candle.yaml)


# Every target `gen` knows, in the order it renders them.
TARGET_NAMES = ("python", "rust")


@dataclass(frozen=True)
class Registry:
    path: str  # as given, for messages and the generated marker
    dtypes: tuple[DType, ...]
    dtype_sets: tuple[tuple[str, tuple[str, ...]], ...]
    backends: tuple[Backend, ...]
    elementwise: tuple[Elementwise, ...]
    storage: tuple[Operation, ...]
    device: tuple[Operation, ...]
    custom_ops: tuple[CustomOpTrait, ...]
    to_numpy: tuple[Arm, ...] = ()  # one arm per backend
    hip_kernels: tuple = ()  # (name, KernelSignature) of the hand-written kernels in hip/
    # the hip/*.hip files and runtime modules naming KernelPattern read, for the stamp
    hip_sources: tuple[str, ...] = ()
    transfers: tuple[Transfer, ...] = ()  # to_device, one per (source, destination) pair
    formats: tuple[QFormat, ...] = ()  # quantized block formats
    qstorage: tuple[Operation, ...] = ()  # methods of QStorage
    nn: tuple[Operation, ...] = ()  # NN ops: custom ops generated as classes
    targets: tuple[Target, ...] = ()  # what to emit; () is the Python package alone, in --out
    interop: tuple[tuple[str, tuple[Arm, ...]], ...] = ()  # DLPack / CUDA Array Interface arms by function
    kernel_facts: tuple[KernelFact, ...] = ()  # shared by the HIP kernels and the GPU runtime
    switches: tuple[Switch, ...] = ()  # process-wide switches of some backends
    collectives: tuple[Collective, ...] = ()  # methods of Comm

    @property
    def reductions(self) -> tuple[str, ...]:
        """Every reduction a collective takes, in REDUCTIONS' order: the members of Reduction."""
        used = {name for c in self.collectives for name, _ in c.reductions}
        return tuple(r for r in REDUCTIONS if r in used)

    def interop_arms(self, function: str) -> tuple[Arm, ...]:
        return dict(self.interop)[function]

    def cai_import(self) -> Arm | None:
        """The arm of the backend that takes a __cuda_array_interface__, if one does."""
        return next((a for a in self.interop_arms("from_cuda_array_interface") if a.status == "implemented"), None)

    @property
    def kernel_ops(self) -> tuple[Operation, ...]:
        """Ops whose HIP kernels the launch-wrapper module tabulates."""
        return tuple(op for op in (*self.storage, *self.qstorage, *self.nn) if op.kernel)

    def kernel_patterns(self) -> tuple[str, ...]:
        """Every `kernel:` pattern of the registry, each once, in the order ops declare them."""
        return tuple(dict.fromkeys(p for op in self.kernel_ops for p in op.kernel))

    def kernel_instances(self, pattern: str) -> tuple[KernelInstance, ...]:
        """The entry points of one `kernel:` pattern: the union over every op declaring it of
        the placeholder values it supports, ordered as the registry orders dtypes, ops and
        formats (the order of the pattern's placeholders first)."""
        return self._kernel_instances.get(pattern, ())

    @functools.cached_property
    def _kernel_instances(self) -> dict[str, tuple[KernelInstance, ...]]:
        """kernel_instances of every pattern, computed once (the registry is frozen)."""
        found: dict[str, dict[str, KernelInstance]] = {}
        dtypes = {d.name: d for d in self.dtypes}
        ops = {e.name: e for e in self.elementwise}
        hip = {n: d.hip or n for n, d in dtypes.items()}
        compute = {n: hip[d.compute] if d.compute else hip[n] for n, d in dtypes.items()}
        results = {n: hip[e.result] if e.result and e.result in hip else "" for n, e in ops.items()}
        for op in self.kernel_ops:
            for pattern in op.kernel:
                names = tuple(dict.fromkeys(re.findall(r"{(\w+)}", pattern)))
                one = dataclasses.replace(op, kernel=(pattern,))
                into = found.setdefault(pattern, {})
                for values, name in kernel_entries(one, self):
                    if name in into:
                        continue
                    pairs = tuple(zip(names, values))
                    into[name] = KernelInstance(
                        pattern,
                        name,
                        pairs,
                        dict(pairs),
                        {k: hip[v] for k, v in pairs if v in dtypes},
                        {k: compute[v] for k, v in pairs if v in dtypes},
                        {k: results[v] for k, v in pairs if v in ops and v not in dtypes},
                    )
        rank = {
            **{d.name: i for i, d in enumerate(self.dtypes)},
            **{e.name: i for i, e in enumerate(self.elementwise)},
        }
        # A QStorage op's {self} is a format, whose names may also be dtypes' (f32, f16, bf16).
        format_rank = {f.name: i for i, f in enumerate(self.formats)}
        quantized = {p for op in self.kernel_ops if op.kind is OpKind.QSTORAGE for p in op.kernel}

        def key(k: KernelInstance) -> tuple[int, ...]:
            by_format = k.pattern in quantized
            return tuple((format_rank if by_format and n == "self" else rank).get(v, 0) for n, v in k.placeholders)

        return {pattern: tuple(sorted(by_name.values(), key=key)) for pattern, by_name in found.items()}

    @property
    def conversion_arms(self) -> tuple[Arm, ...]:
        """The arms of to_numpy, of to_device for every pair of backends and of the interop
        functions (DLPack, the CUDA Array Interface)."""
        return (*self.to_numpy, *(t.arm for t in self.transfers), *(a for _, arms in self.interop for a in arms))

    @property
    def qstorage_transfer(self) -> bool:
        """Whether QStorage.to_device can be generated: it moves the raw blocks."""
        return {"data", "dtype"} <= {op.name for op in self.qstorage} and any(
            op.name == "qstorage_from_bytes" for op in self.device
        )

    @property
    def kernel_languages(self) -> tuple[str, ...]:
        return tuple(sorted({b.kernels for b in self.backends if b.kernels}))

    @property
    def input_files(self) -> tuple[str, ...]:
        """Files besides the registry, templates and generator that the output depends on."""
        profiles = (t.profile.path for t in self.targets if t.profile)
        return tuple(sorted({*(p for b in self.backends for p in b.runtime_paths), *self.hip_sources, *profiles}))

    def hip_ops(self) -> tuple[Elementwise, ...]:
        """Elementwise ops with a HIP expression: generated/elementwise.hip instantiates them."""
        return tuple(op for op in self.elementwise if op.hip and op.family != "reduce")

    def family(self, family: str) -> tuple[Elementwise, ...]:
        return tuple(op for op in self.elementwise if op.family == family)

    def dtype(self, name: str) -> DType:
        return self._dtype_by_name[name]

    @functools.cached_property
    def _dtype_by_name(self) -> dict[str, DType]:
        """Templates ask for a dtype by name once per op and dtype: 16,000 times for a
        2,584-op registry. (cached_property writes the instance dict, which a frozen
        dataclass allows; replace() makes a new instance, with its own.)"""
        return {d.name: d for d in self.dtypes}

    def backend(self, name: str) -> Backend:
        return next(b for b in self.backends if b.name == name)


def dispatch_checks(op: Operation, backend: Backend | None = None) -> tuple[str, ...]:
    """Statements run before dispatch: device, dtype and shape agreement of the arguments.
    Written as plain `if`s so that the common case, all agreeing, calls nothing more.

    In `backend`'s arm of a Storage op whose runtime defines `dtype`, dtypes are read from
    the runtime directly rather than through Storage.dtype() (a method call and a `match`
    each, a third of a binary op's dispatch on the CPU): the same objects are compared
    first, since identical runtime dtypes name the same registry dtype."""
    direct = backend is not None and op.kind == "storage" and backend.implements("dtype")

    def raw(name: str) -> str:
        assert backend is not None  # only called where `direct`
        return f"{backend.alias}.dtype({name}.inner)"

    def registry_dtype(name: str) -> str:
        return f"_dtype_of({raw(name)})" if direct else f"{name}.dtype()"

    lines = []
    for p in op.storage_params:
        lines += [
            f"if {p.name}.backend is not self.backend:",
            f'    raise _device_mismatch("{op.name}", self, {p.name})',
        ]
    if op.same_dtype:
        first, *rest = op.same_dtype
        lines.append(f"_dtype = {raw(first)}" if direct else f"_dtype = {first}.dtype()")
        for name in rest:
            if direct:  # the runtime's dtype read once, in a local: each line within the width
                lines.append(f"_{name}_dtype = {raw(name)}")
                differs = f"_{name}_dtype is not _dtype and _dtype_of(_{name}_dtype) is not _dtype_of(_dtype)"
            else:
                differs = f"{name}.dtype() is not _dtype"
            lines += [f"if {differs}:", f'    raise _dtype_mismatch("{op.name}", {first}, {name})']
    if op.same_shape:
        first, *rest = op.same_shape
        for name in rest:
            lines += [
                f"if {name}.shape != {first}.shape:",
                f'    raise ShapeMismatch("{op.name}", self.backend.value, {first}.shape, {name}.shape)',
            ]
    for name, _ in op.arg_dtypes:
        allowed = _allowed_constant(op, name)
        lines += [
            f"if {registry_dtype(name)} not in {allowed}:",
            f'    raise _dtype_not_in("{op.name}", {name}, {allowed})',
        ]
    return tuple(lines)


def _allowed_constant(op: Operation, name: str) -> str:
    return f"_{op.name.upper()}_{name.upper()}_DTYPES"


def allowed_dtype_sets(ops: tuple[Operation, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Module constants (name, dtypes) for the `dtypes:` restrictions of the ops."""
    return tuple((_allowed_constant(op, name), dtypes) for op in ops for name, dtypes in op.arg_dtypes)


@dataclass(frozen=True)
class KernelEntry:
    """One (op, dtype) entry of a generated numpy kernel table."""

    dtype: str
    function: str  # expression naming the callable


# Expressions that are exactly one numpy ufunc: the kernel table holds the ufunc itself,
# saving a Python call on every dispatch.
_UFUNC_NAMES = frozenset(
    [
        "exp",
        "log",
        "sin",
        "cos",
        "tan",
        "tanh",
        "sqrt",
        "abs",
        "absolute",
        "ceil",
        "floor",
        "trunc",
        "sign",
        "negative",
        "reciprocal",
        "square",
        "add",
        "subtract",
        "multiply",
        "divide",
        "true_divide",
        "floor_divide",
        "maximum",
        "minimum",
        "power",
        "equal",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
    ]
)
_OPERATOR_UFUNCS = {
    "x + y": "add",
    "x - y": "subtract",
    "x * y": "multiply",
    "x / y": "true_divide",
    "x == y": "equal",
    "x != y": "not_equal",
    "x < y": "less",
    "x <= y": "less_equal",
    "x > y": "greater",
    "x >= y": "greater_equal",
    "-x": "negative",
    "x * x": "square",
}


@functools.cache  # a registry repeats a few expressions over thousands of ops
def ufunc_of(expression: str, arity: int) -> str | None:
    """`np.<ufunc>` when the expression is exactly one ufunc applied to its operands."""
    text = expression.replace(" ", "")
    if expression.strip() in _OPERATOR_UFUNCS:
        return f"np.{_OPERATOR_UFUNCS[expression.strip()]}"
    args = "(x)" if arity == 1 else "(x,y)"
    if text.startswith("np.") and text.endswith(args) and text[3 : -len(args)] in _UFUNC_NAMES:
        return text[: -len(args)]
    return None


def numpy_functions(op: Elementwise) -> tuple[tuple[str, str], ...]:
    """(function name, expression) for each numpy expression of the op."""
    base = f"{op.family}_{op.name}"
    return tuple((base if kind == "*" else f"{base}_{kind}", expr) for kind, expr in op.numpy)


def numpy_definitions(op: Elementwise) -> tuple[tuple[str, str], ...]:
    """The functions the numpy kernel module defines: those not served by a ufunc."""
    arity = 1 if op.family in ("unary", "reduce") else 2
    return tuple((name, expr) for name, expr in numpy_functions(op) if not ufunc_of(expr, arity))


def numpy_entries(op: Elementwise, registry: Registry) -> tuple[KernelEntry, ...]:
    arity = 1 if op.family in ("unary", "reduce") else 2
    names = {kind: ufunc_of(expr, arity) or name for (kind, expr), (name, _) in zip(op.numpy, numpy_functions(op))}
    out = []
    for dt_name in op.dtypes:
        dt = registry.dtype(dt_name)
        fn = names.get(dt.kind, names.get("*"))
        assert fn is not None, f"{op.name}: no numpy expression for {dt_name}"  # validate reports it first
        if dt.compute:
            back = f"_{dt.member}" if op.result is None else "None"
            fn = f"_lowp{arity}({fn}, _{dt.compute.upper()}, {back})"
        out.append(KernelEntry(dt_name, fn))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class KernelInstance:
    """One entry point of a `kernel:` pattern, as the entry-point templates
    (templates/hip/*.h.j2) see it: `name`, `values.<placeholder>` (the registry's name: a
    dtype, an op, a format), `types.<placeholder>` (a dtype's HIP type), `compute.<placeholder>`
    (the HIP type of the dtype it computes in) and `results.<placeholder>` (an op's result
    dtype's HIP type, "" where the op keeps the operand's dtype)."""

    pattern: str
    name: str
    placeholders: tuple[tuple[str, str], ...]  # (placeholder, value), in the pattern's order
    values: dict[str, str]
    types: dict[str, str]
    compute: dict[str, str]
    results: dict[str, str]


def camel(name: str) -> str:
    """The Rust variant name of a registry backend (or reduction): cpu -> Cpu, my_gpu -> MyGpu."""
    return "".join(part.capitalize() for part in name.split("_"))


def pattern_member(pattern: str) -> str:
    """The KernelPattern member naming a `kernel:` pattern: copy_strided_{self} -> COPY_STRIDED_SELF."""
    return re.sub(r"_+", "_", re.sub(r"\W", "_", pattern)).strip("_").upper()


def kernel_placeholders(op: Operation) -> tuple[str, ...]:
    """The {names} of an op's kernel patterns, each once, in order."""
    return tuple(dict.fromkeys(n for pattern in op.kernel for n in re.findall(r"{(\w+)}", pattern)))


def placeholder_values(op: Operation, name: str, registry: Registry) -> tuple[str, ...] | None:
    """What a kernel-pattern placeholder stands for: the dtypes of self or of a Storage or
    DType argument, or the ops of an op-enum argument; None for a name it cannot be."""
    allowed = dict(op.arg_dtypes)
    every = tuple(d.name for d in registry.dtypes)
    if name == "self" and op.kind is OpKind.QSTORAGE:
        return tuple(f.name for f in registry.formats)
    if name == "self":
        return allowed.get("self") or every
    param = next((p for p in op.params if p.name == name), None)
    if param is None:
        return None
    if param.is_storage:
        if name in op.same_dtype and "self" in op.same_dtype:
            return allowed.get(name) or allowed.get("self") or every
        return allowed.get(name) or every
    if param.type == "DType":
        return every
    if param.type in OP_ENUM_TYPES:
        return tuple(e.name for e in registry.family(OP_ENUM_TYPES[param.type]))
    return None


def expanded_facts(registry: Registry) -> tuple[KernelFact, ...]:
    """The kernel facts with each `kernel:` pattern their lists name replaced by the entry points
    of that pattern (each name once, in the list's order): what the kernels and runtime read."""
    patterns = set(registry.kernel_patterns())

    def names(item: str) -> tuple[str, ...]:
        return tuple(k.name for k in registry.kernel_instances(item)) if item in patterns else (item,)

    return tuple(
        dataclasses.replace(f, value=tuple(dict.fromkeys(n for item in f.value for n in names(item))))
        if isinstance(f.value, tuple)
        else f
        for f in registry.kernel_facts
    )


def kernel_entries(op: Operation, registry: Registry) -> tuple[tuple[tuple[str, ...], str], ...]:
    """(placeholder values, entry point name) for every pattern and every combination of its
    placeholders the op supports; the values key the op's launch table."""
    out = []
    limits = dict(op.kernel_dtypes)
    for pattern in op.kernel:
        names = tuple(dict.fromkeys(re.findall(r"{(\w+)}", pattern)))
        domains = [
            limits[pattern] if n == "self" and pattern in limits else placeholder_values(op, n, registry) or ()
            for n in names
        ]
        out += [(combo, pattern.format(**dict(zip(names, combo)))) for combo in itertools.product(*domains)]
    return tuple(out)

"""The shape of ops.yaml, declared once. Validation walks it; `gen schema` turns it into
the JSON Schema that editors use, so the two cannot drift apart."""

from __future__ import annotations

import difflib
import keyword
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .diagnostics import Diagnostic
from .loader import Node


@dataclass(frozen=True)
class Str:
    choices: tuple[str, ...] = ()
    identifier: bool = False
    dotted: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Int:
    minimum: int | None = None
    maximum: int | None = None
    doc: str = ""


@dataclass(frozen=True)
class Bool:
    doc: str = ""


@dataclass(frozen=True)
class List:
    item: object
    doc: str = ""


@dataclass(frozen=True)
class Map:
    """Open mapping: keys are identifiers chosen by the user."""

    value: object
    doc: str = ""
    names: str = ""  # a regex the keys match instead of identifiers (templates such as new_{backend})


@dataclass(frozen=True)
class Record:
    """Closed mapping: only the declared fields, some required."""

    fields: dict[str, object]
    required: tuple[str, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class AnyOf:
    options: tuple[object, ...]
    doc: str = ""


# Every number has both bounds: what the generated code can hold (a C `int` for what
# kernel_facts.h #defines and GGML's enum), not only what makes sense. Larger values would
# be written into the package as they are (a #define of 400 digits) or not fit a type.
C_INT_MAX = 2**31 - 1
BLOCK_MAX = 1 << 16  # a quantized block's values or bytes: GGML's are at most 256 and 210

IDENT = Str(identifier=True)
DTYPE_LIST = AnyOf((IDENT, List(IDENT)), doc="a dtype set name, or a list of dtype names")
TYPE_NAME = Str(identifier=True, doc="a parameter type: Layout, Storage, float, int, ... or a custom-op trait")
NUMPY_EXPR = AnyOf(
    (Str(), Record({"float": Str(), "int": Str(), "uint": Str()})),
    doc="numpy expression in x (and y), or one per dtype kind",
)

ELEMENTWISE = Record(
    {
        "numpy": NUMPY_EXPR,
        "hip": Str(doc="HIP C++ expression in x (and y) of type T"),
        "dtypes": DTYPE_LIST,
        "result": Str(identifier=True, doc="result dtype where it differs from the input's"),
        "doc": Str(),
    },
    required=("numpy", "dtypes"),
)

KERNEL_PATTERNS = AnyOf(
    (Str(), List(AnyOf((Str(), Record({"pattern": Str(), "dtypes": DTYPE_LIST}, required=("pattern", "dtypes")))))),
    doc="HIP entry point pattern(s) in hip/, e.g. affine_{self} or cast_{self}_{dtype}: each {name} "
    "is self or a parameter, standing for its dtypes (or an op enum's ops); a {pattern, dtypes} "
    "item covers only those dtypes of self",
)

OPERATION = Record(
    {
        "params": Map(TYPE_NAME, doc="parameter name -> type, in call order"),
        "returns": Str(doc="Storage, None, DType, Device, StorageShape, str, bool, int, Array, QStorage or GgmlDType"),
        "fallback": Str(identifier=True, doc="backend to run on where a backend lacks the op"),
        "hook": Str(identifier=True, doc="custom-op parameter whose <backend>_fwd runs the op"),
        "impl": Map(Str(identifier=True), doc="backend -> runtime function, where not the op's name"),
        "kernel": KERNEL_PATTERNS,
        "same_dtype": List(IDENT, doc="Storage arguments (or self) that must share one dtype"),
        "same_shape": List(IDENT, doc="Layout arguments that must share one shape"),
        "dtypes": Map(DTYPE_LIST, doc="Storage argument (or self) -> allowed dtypes"),
        "writes": Str(identifier=True, doc="the Storage argument (or self) the op writes in place"),
        "doc": Str(),
    },
    required=("params", "returns"),
)

QFORMAT = Record(
    {
        "block": Int(1, BLOCK_MAX, doc="values per block"),
        "bytes": Int(1, BLOCK_MAX, doc="bytes per block"),
        "ggml_type": Int(0, C_INT_MAX, doc="GGML's enum value of the format, as GGUF files name it"),
        "doc": Str(),
    },
    required=("block", "bytes", "ggml_type"),
)

NN_OP = Record(
    {
        "trait": Str(identifier=True, doc="the custom-op trait the generated class implements, e.g. CustomOp2"),
        "params": Map(Str(choices=("float", "int", "bool", "str")), doc="parameter name -> type: fields of the op"),
        "dtypes": DTYPE_LIST,
        "kernel": KERNEL_PATTERNS,
        "doc": Str(),
    },
    required=("trait", "dtypes"),
)

KERNEL_FACT = Record(
    {
        "value": AnyOf(
            (Int(0, C_INT_MAX), List(Str())),
            doc="a number, or a list of kernel entry points (names the generated entries define) and "
            "kernel patterns (each standing for every entry point of that `kernel:` pattern)",
        ),
        "overridable": Bool(
            doc="the header's value is a default (#ifndef): a -D, or a #define before the include, may set "
            "another to tune the kernels, and whoever does sets the runtime's <NAME> alike (bench/gpu.py "
            "--explore nn-rows does both)"
        ),
        "doc": Str(),
    },
    required=("value",),
    doc="a fact the HIP kernels and the GPU runtime share: gen writes it into generated/kernel_facts.h "
    "(OPGEN_<NAME>) and generated/kernel_facts.py (<NAME>)",
)

SWITCH = Record(
    {
        "backends": List(Str(identifier=True), doc="the backends whose runtime module has the switch"),
        "doc": Str(),
    },
    required=("backends",),
    doc="a process-wide switch of some backends (Candle's set_gemm_reduced_precision_*): its runtime "
    "modules define <name>() and set_<name>(enabled); gen writes generated/switches.py and "
    "generated/rust/switches.rs (a module per backend, as candle_core::cuda has them)",
)

COUNT_RULE = Str(
    doc="the element count a Storage argument must have: another Storage argument's name, "
    "alone or times / divided by the group's size (`send * size`, `send / size`)"
)

COLLECTIVE = Record(
    {
        "params": Map(
            Str(choices=("Storage", "Rank", "Reduction", "int", "float")),
            doc="parameter name -> type, in call order: Storage (a whole buffer), Rank (a rank of "
            "the group, checked to be one), Reduction (sum, prod, ...), int or float",
        ),
        "returns": Str(choices=("None", "Comm"), doc="None, or Comm (a new communicator, as split makes)"),
        "dtypes": DTYPE_LIST,
        "same_dtype": List(IDENT, doc="Storage arguments that must share one dtype"),
        "counts": Map(COUNT_RULE, doc="Storage argument -> the element count it must have"),
        "per_rank": List(IDENT, doc="Storage arguments split in equal parts, one a rank: counts a multiple of size"),
        "in_place": Bool(doc="the op's send and recv may be one Storage"),
        "reductions": Map(DTYPE_LIST, doc="reduction (sum, prod, min, max, avg) -> the dtypes it takes"),
        "agree": List(
            IDENT,
            doc="parameters every rank must pass alike (a Storage: its count and dtype); compared "
            "across ranks first where the communicator checks agreement",
        ),
        "writes": Str(identifier=True, doc="the Storage argument the op writes"),
        "doc": Str(),
    },
    required=("params",),
    doc="a method of Comm, one arm per backend calling the runtime function comm_<name>",
)

TARGET = Record(
    {
        "out": Str(doc="output directory, relative to the registry's folder, inside generated/ or tests/"),
        "profile": Str(doc="a library's API profile (a YAML file beside the registry): its names, types and backends"),
    },
    required=("out",),
)

REGISTRY = Record(
    {
        "version": Int(1, 1, doc="registry format version"),
        "dtypes": Map(
            Record(
                {
                    "numpy": Str(doc="numpy dtype name (ml_dtypes adds bfloat16)"),
                    "hip": Str(doc="device type name in HIP/CUDA C++"),
                    "kind": Str(choices=("uint", "int", "float")),
                    "compute": Str(identifier=True, doc="dtype CPU kernels compute in"),
                    "doc": Str(),
                },
                required=("numpy", "kind"),
            )
        ),
        "dtype_sets": Map(List(IDENT)),
        "backends": Map(
            Record(
                {
                    "runtime": Str(dotted=True, doc="hand-written runtime module, e.g. runtime.cpu"),
                    "ordinal": Bool(doc="whether devices of this backend are numbered"),
                    "kernels": Str(choices=("numpy", "hip"), doc="generated kernel module the runtime receives"),
                    "doc": Str(),
                },
                required=("runtime",),
            )
        ),
        "unary": Map(ELEMENTWISE),
        "binary": Map(ELEMENTWISE),
        "cmp": Map(ELEMENTWISE),
        "reduce": Map(ELEMENTWISE),
        "storage": Map(OPERATION),
        "device": Map(OPERATION),
        "custom_ops": Map(
            Record({"inputs": Int(1, 3), "inplace": Bool(), "doc": Str()}, required=("inputs", "inplace"))
        ),
        "nn": Map(NN_OP, doc="NN ops: custom ops of the traits above, generated as classes in nn.py"),
        "quantized": Map(QFORMAT, doc="GGML block formats of quantized storage (QStorage)"),
        "qstorage": Map(OPERATION, doc="methods of QStorage; each arm calls the runtime function q_<name>"),
        "collectives": Map(
            COLLECTIVE,
            doc="collective communication: methods of Comm, a group of processes with one device each",
        ),
        "kernel_facts": Map(
            KERNEL_FACT,
            doc="numbers and kernel lists the HIP kernels and the GPU runtime share, "
            "in UPPER_CASE: one source for both",
        ),
        "switches": Map(SWITCH, doc="process-wide switches of the backends, off by default"),
        "targets": Record(
            {"python": TARGET, "rust": TARGET},
            doc="what `gen` writes, and where: the Python package, Candle-shaped Rust dispatch "
            "(absent: the Python package, in --out)",
        ),
    },
    required=("version", "dtypes", "backends"),
)


# The checker meets 16,000 nodes of a 2,584-op registry, of a handful of spec kinds.
_METHODS: dict[type, Callable[..., bool]] = {}


@dataclass
class Checker:
    """Walks a Node tree against a spec, collecting diagnostics."""

    errors: list[Diagnostic] = field(default_factory=list)

    def error(self, node: Node, key: str, message: str) -> None:
        self.errors.append(Diagnostic(node.position, key, message))

    def check(self, spec: object, node: Node, key: str) -> bool:
        method = _METHODS.get(type(spec))
        if method is None:  # Str -> Checker._str, looked up once per kind of spec
            method = _METHODS[type(spec)] = getattr(Checker, f"_{type(spec).__name__.lower()}")
        return method(self, spec, node, key)

    def _str(self, spec: Str, node: Node, key: str) -> bool:
        if node.tag != "str":
            self.error(node, key, f"expected a string, got {_describe(node)}")
            return False
        if spec.choices and node.value not in spec.choices:
            self.error(node, key, f"{node.value!r} is not one of {', '.join(spec.choices)}")
            return False
        if spec.identifier:
            return self.identifier(node, key)
        if spec.dotted and not all(p.isidentifier() for p in node.value.split(".")):
            self.error(node, key, f"{node.value!r} is not a dotted module name")
            return False
        return True

    def identifier(self, node: Node, key: str) -> bool:
        name = str(node.value)
        if not name.isidentifier() or not name.isascii():
            self.error(node, key, f"{name!r} is not a valid identifier")
            return False
        if keyword.iskeyword(name) or keyword.issoftkeyword(name):
            self.error(node, key, f"{name!r} is a Python keyword")
            return False
        return True

    def _int(self, spec: Int, node: Node, key: str) -> bool:
        if node.tag != "int":
            self.error(node, key, f"expected an integer, got {_describe(node)}")
            return False
        lo, hi = spec.minimum, spec.maximum
        if (lo is not None and node.value < lo) or (hi is not None and node.value > hi):
            bound = f"{lo}" if lo == hi else f"between {lo} and {hi}"
            self.error(node, key, f"expected {bound}, got {node.value}")
            return False
        return True

    def _bool(self, spec: Bool, node: Node, key: str) -> bool:
        if node.tag != "bool":
            self.error(node, key, f"expected true or false, got {_describe(node)}")
            return False
        return True

    def _list(self, spec: List, node: Node, key: str) -> bool:
        if node.tag != "seq":
            self.error(node, key, f"expected a list, got {_describe(node)}")
            return False
        return all([self.check(spec.item, item, f"{key}[{i}]") for i, item in enumerate(node.value)])

    def _map(self, spec: Map, node: Node, key: str) -> bool:
        if node.tag != "map":
            self.error(node, key, f"expected a mapping, got {_describe(node)}")
            return False
        ok = True
        for name, (knode, vnode) in node.value.items():
            if spec.names and not re.fullmatch(spec.names, name):
                self.error(knode, f"{key}.{name}", f"{name!r} is not a name here ({spec.doc})")
                ok = False
            elif not spec.names:
                ok &= self.identifier(knode, f"{key}.{name}")
            ok &= self.check(spec.value, vnode, f"{key}.{name}")
        return ok

    def _record(self, spec: Record, node: Node, key: str) -> bool:
        if node.tag != "map":
            self.error(node, key, f"expected a mapping, got {_describe(node)}")
            return False
        ok = True
        for name, (knode, vnode) in node.value.items():
            child = f"{key}.{name}" if key else name
            if name not in spec.fields:
                self.error(knode, child, f"unknown key {name!r}{_did_you_mean(name, spec.fields)}")
                ok = False
            else:
                ok &= self.check(spec.fields[name], vnode, child)
        for name in spec.required:
            if name not in node.value:
                self.error(node, key or name, f"missing required key {name!r}")
                ok = False
        return ok

    def _anyof(self, spec: AnyOf, node: Node, key: str) -> bool:
        for option in spec.options:
            trial = Checker()
            if trial.check(option, node, key):
                return True
        if node.tag in ("map", "seq"):  # report the errors of the option of the same shape
            shaped = [o for o in spec.options if isinstance(o, Record if node.tag == "map" else List)]
            if shaped:
                return self.check(shaped[0], node, key)
        self.error(node, key, f"expected {spec.doc}, got {_describe(node)}")
        return False


def _describe(node: Node) -> str:
    names = {"map": "a mapping", "seq": "a list", "null": "nothing"}
    return names.get(node.tag, f"{node.tag} {node.value!r}")


def _did_you_mean(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    return _did_you_mean(name, choices)


def json_schema(spec: Any = REGISTRY) -> dict:
    """The JSON Schema (draft 2020-12) of a spec node."""
    doc = {"description": spec.doc} if getattr(spec, "doc", "") else {}
    if isinstance(spec, Str):
        out: dict = {"type": "string"}
        if spec.choices:
            out["enum"] = list(spec.choices)
        elif spec.identifier:
            out["pattern"] = "^[A-Za-z_][A-Za-z0-9_]*$"
        elif spec.dotted:
            out["pattern"] = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
    elif isinstance(spec, Int):
        out = {"type": "integer"}
        if spec.minimum is not None:
            out["minimum"] = spec.minimum
        if spec.maximum is not None:
            out["maximum"] = spec.maximum
    elif isinstance(spec, Bool):
        out = {"type": "boolean"}
    elif isinstance(spec, List):
        out = {"type": "array", "items": json_schema(spec.item)}
    elif isinstance(spec, Map):
        out = {
            "type": "object",
            "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "additionalProperties": json_schema(spec.value),
        }
    elif isinstance(spec, Record):
        out = {
            "type": "object",
            "properties": {k: json_schema(v) for k, v in spec.fields.items()},
            "additionalProperties": False,
        }
        if spec.required:
            out["required"] = list(spec.required)
    elif isinstance(spec, AnyOf):
        out = {"anyOf": [json_schema(o) for o in spec.options]}
    else:
        raise TypeError(spec)
    return {**doc, **out}


def registry_json_schema() -> dict:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://opgen.invalid/ops.schema.json",
        "title": "opgen op registry (ops.yaml)",
        **json_schema(REGISTRY),
    }

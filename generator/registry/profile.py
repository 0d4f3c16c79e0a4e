"""A target's API profile: how one library spells the registry (candle.yaml for Candle's Rust).

The registry says which ops, backends and types exist; a profile says how a library names
them in one target's language: method names and generics, types the registry cannot infer
(`u64`, `Cow<'_, [u8]>`, `Option<f64>`), methods generated once per backend, methods that
are no registry op, and backends of that target alone (Metal for Rust, with no Python
runtime). Another library's API is described by another profile of the same shape; the
registry and the other targets' output do not change."""

from __future__ import annotations

from pathlib import Path

from .. import model
from .diagnostics import Diagnostic
from .loader import Node, load_file
from .spec import AnyOf, Bool, Checker, List, Map, Record, Str

OWNERS = ("Storage", "Device", "QStorage")
METHOD_NAME = r"(?:[A-Za-z_]|\{backend\})(?:\w|\{backend\})*"
PARAMS = AnyOf(
    (List(Str(identifier=True)), Map(Str())),
    doc="the registry op's parameter names in the library's order, or a mapping of name: type",
)
METHOD = Record(
    {
        "op": Str(identifier=True, doc="the registry op this method spells (absent: a method of the library alone)"),
        "generics": Str(doc="generic parameters, inside <..>"),
        "where": List(Str(), doc="where-clause predicates"),
        "receiver": Str(choices=("&self", "&mut self", "none"), doc="none: an associated function"),
        "unsafe": Bool(),
        "params": PARAMS,
        "types": Map(Str(), doc="an op's parameters whose type the registry cannot infer: name: type"),
        "returns": Str(doc="the return type, as the library writes it"),
        "call": Str(doc="the backend method each arm calls, where it differs from the name"),
        "body": Str(doc="a fixed body instead of a dispatch"),
        "arms": Map(
            Str(),
            doc="backend (or '{backend}' for the method's own, '*' for the rest): the arm's expression",
            names=r"\*|\{backend\}|[A-Za-z_]\w*",
        ),
        "subject": Str(identifier=True, doc="the &Device parameter matched on instead of self"),
        "host_operands": List(Str(identifier=True), doc="Storage parameters always on the host backend"),
        "each": AnyOf(
            (Bool(), Str(choices=("all",)), List(Str(identifier=True))),
            doc="one method per backend: true, each with a device ordinal; all, the host's too; or the backends",
        ),
        "doc": Str(),
        "omit": Bool(doc="a registry op the library does not have: not generated for this target"),
    }
)
TRAITS = ("BackendStorage", "BackendDevice", "QBackendStorage")
PROFILE = Record(
    {
        "library": Str(doc="the library whose API this profile spells"),
        "commit": Str(doc="the library's commit the names and types follow"),
        "backends": Map(
            Record({"ordinal": Bool(), "doc": Str()}, required=("ordinal",)),
            doc="backends of this target alone: no runtime, arms and hooks generated like the others",
        ),
        "dummies": Bool(doc="a backend whose feature is off compiles as a dummy that errs, not as a cfg'd-out variant"),
        "crate": Str(identifier=True, doc="how the library's other crates name it (`candle` for candle-core)"),
        "nn": Map(Str(identifier=True), doc="registry nn op: the library's name of its custom-op struct"),
        "thiserror": Bool(doc="the error enum derives thiserror::Error: generated variants carry #[error(..)]"),
        "qtensor": Record(
            {
                "type": Str(identifier=True, doc="the quantized tensor type (fields `storage`, `shape`)"),
                "name": Str(identifier=True, doc="the custom op's name"),
            },
            required=("type", "name"),
            doc="the quantized tensor as a CustomOp1 of the registry's qstorage.matmul, a hook per backend",
        ),
        "traits": Record(
            {t: Map(METHOD, doc=f"{t} methods besides the ops'") for t in TRAITS},
            doc="backend-trait methods the generated code calls besides the ops' (absent: no backend.rs)",
        ),
        "ug_op": Record(
            {
                "type": Str(identifier=True, doc="the op type (fields `name`, `func`)"),
                "backends": List(Str(identifier=True), doc="the backends with a code generator for its kernels"),
            },
            required=("type", "backends"),
            doc="the in-place op whose kernel a backend compiles at run time: a hook per backend, the others err",
        ),
        **{
            owner: Map(
                METHOD,
                doc=f"methods of {owner}, by the library's name ({{backend}}: one per backend)",
                names=METHOD_NAME,
            )
            for owner in OWNERS
        },
    },
    required=("library", "commit"),
)


def load(
    path: Path, known_backends: tuple[str, ...], ops: dict[str, set[str]]
) -> tuple[model.Profile | None, list[Diagnostic]]:
    """The profile at `path`, or every diagnostic of it. `ops`: owner -> the registry's op names."""
    from .diagnostics import RegistryError

    try:
        root = load_file(str(path))
    except RegistryError as exc:
        return None, list(exc.diagnostics)
    checker = Checker()
    if not checker.check(PROFILE, root, ""):
        return None, checker.errors
    backends = tuple(
        model.Backend(name, "", _flag(node.get("ordinal")), _text(node.get("doc")), None, frozenset(), k.position.line)
        for name, (k, node) in _items(root.get("backends"))
    )
    names = (*known_backends, *(b.name for b in backends))
    methods = []
    for owner in OWNERS:
        for name, (knode, node) in _items(root.get(owner)):
            method = _method(owner, name, knode, node, names, ops.get(owner, set()), checker)
            if method is not None:
                methods.append(method)
    traits = root.get("traits")
    trait_methods = [
        m
        for t in TRAITS
        for name, (knode, node) in _items(traits.get(t) if traits is not None else None)
        if (m := _method(t, name, knode, node, names, set(), checker)) is not None
    ]
    for op, (k, _) in _items(root.get("nn")):
        if op not in ops.get("nn", set()):
            checker.error(k, f"nn.{op}", f"the registry has no nn op {op!r}")
    qtensor = root.get("qtensor")
    if qtensor is not None and "matmul" not in ops.get("QStorage", set()):
        checker.error(qtensor, "qtensor", "the registry has no qstorage op 'matmul' for the quantized tensor to apply")
    ug = root.get("ug_op")
    ug_backends = ug.get("backends") if ug is not None else None
    for b in ug_backends.value if ug_backends is not None else ():
        if str(b.value) not in names:
            checker.error(b, "ug_op.backends", f"no backend {b.value!r}")
    for b, (k, _) in zip(backends, (v for _, v in _items(root.get("backends"))), strict=True):
        if b.name in known_backends:
            checker.error(k, f"backends.{b.name}", f"backend {b.name!r} is the registry's already")
    seen: set[tuple[str, str]] = set()
    for m in methods:
        if m.op and (m.owner, m.op) in seen:
            checker.error(root.get(m.owner) or root, f"{m.owner}.{m.name}", f"the op {m.op!r} is spelled twice")
        seen.add((m.owner, m.op or f"+{m.name}"))
    if checker.errors:
        return None, checker.errors
    return model.Profile(
        str(path),
        _text(root.get("library")),
        _text(root.get("commit")),
        backends,
        tuple(methods),
        _flag(root.get("dummies")),
        tuple(trait_methods),
        crate=_text(root.get("crate")),
        nn_names=tuple((op, _text(v)) for op, (_, v) in _items(root.get("nn"))),
        thiserror=_flag(root.get("thiserror")),
        qtensor=model.QTensorOp(_text(qtensor.get("type")), _text(qtensor.get("name")))
        if qtensor is not None
        else None,
        ug_op=model.UgOp(_text(ug.get("type")), _texts(ug.get("backends"))) if ug is not None else None,
    ), []


def _items(node: Node | None) -> list[tuple[str, tuple[Node, Node]]]:
    return list(node.value.items()) if node is not None and node.tag == "map" else []


def _texts(node: Node | None) -> tuple[str, ...]:
    return tuple(str(n.value) for n in node.value) if node is not None and node.tag == "seq" else ()


def _flag(node: Node | None) -> bool:
    return bool(node.value) if node is not None and node.tag == "bool" else False


def _text(node: Node | None) -> str:
    return str(node.value) if node is not None and node.tag == "str" else ""


def _method(
    owner: str, name: str, knode: Node, node: Node, backends: tuple[str, ...], ops: set[str], checker: Checker
) -> model.ApiMethod | None:
    key = f"{owner}.{name}"
    op = _text(node.get("op")) or None
    if op is not None and op not in ops:
        checker.error(node.get("op") or knode, f"{key}.op", f"{owner} has no registry op {op!r}")
        return None
    params_node = node.get("params")
    params: tuple[tuple[str, str | None], ...] | None = None
    if params_node is not None and params_node.tag == "seq":
        params = tuple((str(n.value), None) for n in params_node.value)
    elif params_node is not None:
        params = tuple((k, str(v.value)) for k, (_, v) in params_node.value.items())
    types = tuple((k, str(v.value)) for k, (_, v) in _items(node.get("types")))
    each_node = node.get("each")
    each: tuple[str, ...] | None = None
    if each_node is not None:
        if each_node.tag == "str":  # `all`: the host backend too
            each = backends
        else:
            each = () if each_node.tag == "bool" else tuple(str(n.value) for n in each_node.value)
        if each_node.tag == "bool" and not each_node.value:
            each = None
    for b in each or ():
        if b not in backends:
            checker.error(each_node or knode, f"{key}.each", f"no backend {b!r}")
    arms = tuple((k, str(v.value)) for k, (_, v) in _items(node.get("arms")))
    for k, _ in arms:
        if k not in (*backends, "*", "{backend}"):
            checker.error(node.get("arms") or knode, f"{key}.arms.{k}", f"no backend {k!r}")
    if op is None and node.get("returns") is None:
        checker.error(knode, key, "a method of the library alone needs `returns`")
    receiver = _text(node.get("receiver")) or None
    return model.ApiMethod(
        owner,
        name,
        op,
        knode.position.line,
        generics=_text(node.get("generics")),
        where=_texts(node.get("where")),
        receiver="" if receiver == "none" else receiver,
        unsafe=_flag(node.get("unsafe")),
        params=params,
        types=types,
        returns=_text(node.get("returns")) or None,
        call=_text(node.get("call")) or None,
        body=_text(node.get("body")) or None,
        arms=arms,
        subject=_text(node.get("subject")) or None,
        host_operands=_texts(node.get("host_operands")),
        each=each,
        doc=_text(node.get("doc")),
        omit=_flag(node.get("omit")),
    )

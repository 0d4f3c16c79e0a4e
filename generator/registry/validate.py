"""Validate: a loaded Node tree -> the frozen Registry model, or every error at once.

Structure is checked against generator.registry.spec; the checks here are about meaning: names
that must refer to something, expressions that must parse, runtime functions that must
exist. Each diagnostic names the file position and the key at fault."""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from pathlib import Path

from .. import dispatch, model
from .diagnostics import RegistryError
from .loader import Node
from .runtime_scan import scan
from .spec import REGISTRY, Checker, did_you_mean

# Names a numpy expression may use besides its operands.
NUMPY_NAMESPACES = frozenset({"np", "special"})
OPERANDS = {"unary": ("x",), "reduce": ("x",), "binary": ("x", "y"), "cmp": ("x", "y")}
# Names the generated classes use themselves; an op may not shadow them.
RESERVED = {
    "storage": frozenset({"backend", "inner"}),
    "device": frozenset({"backend", "ordinal", "parse", "available", "same_device", "cpu"}),
    "qstorage": frozenset({"backend", "inner", "to_device"}),
}


# The kind of the numpy dtypes people name; others are asked of numpy itself, which costs
# its import (0.16 s), a tenth of a full generation.
KNOWN_NUMPY_KINDS = {
    **{f"uint{n}": "uint" for n in (8, 16, 32, 64)},
    **{f"int{n}": "int" for n in (8, 16, 32, 64)},
    **{f"float{n}": "float" for n in (16, 32, 64)},
    "bfloat16": "float",
    "float8_e4m3fn": "float",
    "float8_e5m2": "float",
}
NOT_A_DTYPE = "unknown"


@functools.cache
def numpy_kind(name: str) -> str | None:
    """uint, int or float for a scalar number dtype; None for any other dtype numpy knows
    (structured, string, object, ...); NOT_A_DTYPE when numpy knows no such dtype."""
    if name in KNOWN_NUMPY_KINDS:
        return KNOWN_NUMPY_KINDS[name]
    import ml_dtypes  # registers bfloat16 and friends with numpy
    import numpy as np

    try:
        dt = np.dtype(name)
    except TypeError:
        return NOT_A_DTYPE
    if dt.fields or dt.subdtype:
        return None
    if dt.kind in "uif":
        return {"u": "uint", "i": "int", "f": "float"}[dt.kind]
    try:
        ml_dtypes.finfo(dt)
    except (TypeError, ValueError):
        return None
    return "float"


# Names the generated modules define or import: a parameter or custom-op trait of that
# name would hide them inside the generated code.
GENERATED_NAMES = frozenset(
    {
        "Storage",
        "Device",
        "DType",
        "Backend",
        "On",
        "Layout",
        "Kernel",
        "MatmulDims",
        "ConvParams1D",
        "ConvParams2D",
        "ConvTransposeParams1D",
        "ConvTransposeParams2D",
        "UnaryOp",
        "BinaryOp",
        "CmpOp",
        "ReduceOp",
        "np",
        "QStorage",
        "GgmlDType",
    }
)


@functools.lru_cache(maxsize=4096)
def expression_problem(expr: str, operands: tuple[str, ...]) -> str | None:
    """Why a numpy expression is unusable, or None. Registries repeat expressions: cached."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        return f"numpy expression does not parse: {exc.msg} in {expr!r}"
    allowed = NUMPY_NAMESPACES | set(operands)
    used = set()
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Name):
            if sub.id not in allowed:
                return f"numpy expression uses unknown name {sub.id!r}; allowed: {', '.join(sorted(allowed))}"
            used.add(sub.id)
        elif isinstance(sub, ast.Attribute) and sub.attr.startswith("_"):
            return f"numpy expression uses private attribute {sub.attr!r}"
        elif isinstance(sub, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield)):
            return "numpy expression must be a plain expression"
    if not used & set(operands):
        return f"numpy expression does not use its operand{'s' if len(operands) > 1 else ''} {' and '.join(operands)}"
    return None


class Validator:
    def __init__(self, root: Node, runtime_root: Path) -> None:
        self.root = root
        self.runtime_root = runtime_root
        self.checker = Checker()
        self.path = root.position.path

    # -- helpers -----------------------------------------------------------------------
    def error(self, node: Node | None, key: str, message: str) -> None:
        """`node` None (a key the spec check lets be absent): the error points at the file's top."""
        self.checker.error(node or self.root, key, message)

    def section(self, name: str) -> list[tuple[str, Node, Node]]:
        node = self.root.get(name)
        if node is None or node.tag != "map":
            return []
        return [(k, kn, vn) for k, (kn, vn) in node.value.items()]

    @staticmethod
    def text(node: Node | None, default: str = "") -> str:
        return str(node.value) if node is not None and node.tag == "str" else default

    # -- sections ----------------------------------------------------------------------
    def run(self) -> model.Registry:
        self.checker.check(REGISTRY, self.root, "")
        dtypes = self.dtypes()
        sets = self.dtype_sets(dtypes)
        backends = self.backends()
        customs = self.custom_ops()
        elementwise = tuple(op for fam in model.FAMILIES for op in self.elementwise(fam, dtypes, sets))
        formats = self.formats()
        storage = self.operations("storage", dtypes, sets, backends, customs, formats)
        device = self.operations("device", dtypes, sets, backends, customs, formats)
        qstorage = self.operations("qstorage", dtypes, sets, backends, customs, formats)
        nn = self.nn_ops(dtypes, sets, customs, (*storage, *device))
        self.cross_checks(backends, storage, device, elementwise)
        hip_kernels = self.hip_kernels(backends)
        hip_dir = self.runtime_root / "hip"
        runs_hip = any(b.kernels == "hip" for b in backends) and hip_dir.is_dir()
        registry = model.Registry(
            self.path,
            dtypes,
            tuple(sets.items()),
            backends,
            elementwise,
            storage,
            device,
            customs,
            hip_kernels=tuple(sorted(hip_kernels.items())),
            hip_sources=tuple(
                str(p) for p in (*sorted(hip_dir.glob("*.hip")), *runtime_pattern_users(self.runtime_root))
            )
            if runs_hip
            else (),
            formats=formats,
            qstorage=qstorage,
            nn=nn,
            kernel_facts=self.kernel_facts(),
        )
        registry = dataclasses.replace(registry, targets=self.targets(registry))
        self.kernel_refs(registry, hip_kernels)
        if self.checker.errors:
            raise RegistryError(self.checker.errors)
        return dispatch.with_arms(registry)

    def targets(self, registry: model.Registry) -> tuple[model.Target, ...]:
        """Each target's output folder: relative to the registry's, under generated/ or tests/
        (the project's top-level layout), one folder per target."""
        out: list[model.Target] = []
        seen: dict[str, str] = {}
        for name, knode, node in self.section("targets"):
            onode = node.get("out") if node.tag == "map" else None
            if name not in model.TARGET_NAMES or onode is None or onode.tag != "str":
                continue  # the spec reported it
            key = f"targets.{name}.out"
            path = str(onode.value).replace("\\", "/").rstrip("/")
            parts = path.split("/")
            if path.startswith("/") or (len(parts[0]) > 1 and parts[0][1] == ":"):
                self.error(onode, key, f"output folder {path!r} is absolute; give it relative to the registry's folder")
            elif any(p in ("", ".", "..") for p in parts):
                self.error(
                    onode, key, f"output folder {path!r} must be a plain relative path (no '.', '..' or empty parts)"
                )
            elif parts[0] not in ("generated", "tests"):
                self.error(
                    onode, key, f"output folder {path!r} is outside generated/ and tests/, where generated files live"
                )
            elif path in seen:
                self.error(onode, key, f"output folder {path!r} is also the {seen[path]} target's")
            else:
                seen[path] = name
                out.append(model.Target(name, path, knode.position.line))
        if any(t.name == "rust" for t in out):
            self.rust_needs(registry)
        return tuple(out)

    def rust_needs(self, registry: model.Registry) -> None:
        """What the generated Rust calls besides the ops: a host backend, and the getters
        its device and dtype checks read."""
        node = self.root.find("targets", "rust")
        if registry.backends and not any(not b.ordinal for b in registry.backends):
            self.error(
                node,
                "targets.rust",
                "the rust target needs a host backend (one with `ordinal: false`): "
                "to_device copies between other backends through its storage",
            )
        getters = {(op.name, op.returns) for op in registry.storage}
        for name, returns in (("device", "Device"), ("dtype", "DType")):
            if (name, returns) not in getters:
                self.error(
                    node,
                    "targets.rust",
                    f"the rust target needs a storage op `{name}` returning {returns}: "
                    "the generated device and dtype checks call it",
                )
        if any(op.storage_params for op in registry.qstorage) and not any(
            op.name == "device" and op.returns == "Device" for op in registry.qstorage
        ):
            self.error(
                node,
                "targets.rust",
                "the rust target needs a qstorage op `device` returning Device: "
                "QStorage methods that take a Storage check its device",
            )

    def hip_kernels(self, backends) -> dict:
        """Entry points of hip/*.hip, read when a backend runs HIP kernels."""
        users = [b for b in backends if b.kernels == "hip"]
        if not users:
            return {}
        from . import kernel_sigs

        node = self.root.find("backends", users[0].name, "kernels")
        directory = self.runtime_root / "hip"
        if not directory.is_dir():
            self.error(node, f"backends.{users[0].name}.kernels", f"no HIP kernel directory {directory}")
            return {}
        try:
            return kernel_sigs.scan(directory)
        except kernel_sigs.SignatureError as exc:
            self.error(node, f"backends.{users[0].name}.kernels", f"hip/{exc}")
            return {}

    def kernel_refs(self, registry: model.Registry, hip_kernels: dict) -> None:
        """Kernel patterns against the kernels, both ways: each pattern of an op is instantiated
        by an entry-point template (templates/hip/<name>.h.j2 of a hip/<name>.hip the registry's
        folder holds; generator.targets.hip) or written by hand in hip/*.hip; each pattern such
        a template instantiates is declared by an op; each such source includes the header its
        entry points go to."""
        users = [b for b in registry.backends if b.kernels == "hip"]
        if not users:
            return
        from jinja2 import TemplateSyntaxError

        from ..targets import hip as hip_entries
        from ..targets.python import TEMPLATES, environment

        kernels_node = self.root.find("backends", users[0].name, "kernels")
        kernels_key = f"backends.{users[0].name}.kernels"
        sources = {Path(p).name: Path(p) for p in registry.hip_sources}
        try:  # the templates of the kernel sources this registry's hip/ holds
            provided = {
                pattern: template
                for pattern, template in hip_entries.instantiated_patterns(environment(TEMPLATES), TEMPLATES).items()
                if f"{template.removeprefix(hip_entries.ENTRY_DIR + '/').removesuffix(hip_entries.SUFFIX)}.hip"
                in sources
            }
        except (ValueError, TemplateSyntaxError) as exc:
            self.error(kernels_node, kernels_key, str(exc))
            return
        for stem, template in hip_entries.templates(TEMPLATES).items():
            if f"{stem}.hip" in sources and hip_entries.include_line(stem) not in sources[f"{stem}.hip"].read_text(
                encoding="utf-8"
            ):
                self.error(
                    kernels_node,
                    kernels_key,
                    f"hip/{stem}.hip does not {hip_entries.include_line(stem)}, "
                    f"where templates/{template} writes its entry points",
                )
        declared = set(registry.kernel_patterns())
        for pattern, template in sorted(provided.items()):
            if pattern not in declared:
                self.error(
                    kernels_node,
                    kernels_key,
                    f"templates/{template} instantiates kernel pattern {pattern!r}, which no op's `kernel:` declares",
                )
        names = set(hip_kernels)
        for op in registry.kernel_ops:
            key = f"{op.kind}.{op.name}.kernel"
            node = self.root.find(op.kind, op.name, "kernel")
            unknown = [n for n in model.kernel_placeholders(op) if model.placeholder_values(op, n, registry) is None]
            if unknown:
                self.error(
                    node, key, f"{{{unknown[0]}}} is not self or a Storage, DType or op-enum parameter of {op.name}"
                )
                continue
            for pattern in op.kernel:
                if pattern in provided:
                    names.update(k.name for k in registry.kernel_instances(pattern))
                    continue
                one = dataclasses.replace(op, kernel=(pattern,))
                missing = [e for _, e in model.kernel_entries(one, registry) if e not in hip_kernels]
                if missing:
                    shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
                    self.error(
                        node,
                        key,
                        f"kernel pattern {pattern!r}: no entry-point template (templates/hip/*.h.j2) "
                        f"instantiates it, and hip/*.hip does not define {shown}",
                    )
        self.runtime_pattern_refs(registry, kernels_node, kernels_key)
        for fact in registry.kernel_facts:
            if isinstance(fact.value, tuple):
                fnode = self.root.find("kernel_facts", fact.name, "value")
                for i, name in enumerate(fact.value):
                    if name not in names and fnode is not None:
                        self.error(
                            fnode.value[i],
                            f"kernel_facts.{fact.name}.value[{i}]",
                            f"{name!r} is not a kernel entry point{did_you_mean(name, names)}",
                        )

    def runtime_pattern_refs(self, registry: model.Registry, node: Node | None, key: str) -> None:
        """Every KernelPattern member the runtime modules name (runtime/**/*.py, read with ast)
        is a pattern of the registry: a renamed pattern fails here, at generation time, not at
        a launch. The launch tables are keyed (KernelPattern, *values)."""
        members = {model.pattern_member(p) for p in registry.kernel_patterns()}
        for path in runtime_pattern_users(self.runtime_root):
            for line, name in kernel_pattern_refs(path):
                if name not in members:
                    where = f"{path.relative_to(self.runtime_root).as_posix()}:{line}"
                    self.error(
                        node,
                        key,
                        f"{where} names KernelPattern.{name}, which no `kernel:` pattern of "
                        f"the registry gives{did_you_mean(name, members)}",
                    )

    def kernel_facts(self) -> tuple[model.KernelFact, ...]:
        out = []
        for name, knode, node in self.section("kernel_facts"):
            key = f"kernel_facts.{name}"
            if not (name.isupper() and name.isidentifier()):
                self.error(
                    knode,
                    key,
                    f"kernel fact {name!r} must be an UPPER_CASE identifier: it names a "
                    "C macro (OPGEN_<NAME>) and a Python constant",
                )
            value = node.get("value") if node.tag == "map" else None
            if value is None:
                continue  # the spec reported it
            overridable = node.get("overridable")
            tunable = overridable is not None and overridable.value is True
            doc, line = self.text(node.get("doc")), node.position.line
            if value.tag == "int":
                out.append(model.KernelFact(name, value.value, doc, line, tunable))
            elif value.tag == "seq":
                items = tuple(str(v.value) for v in value.value if v.tag == "str")
                out.append(model.KernelFact(name, items, doc, line, tunable))
        return tuple(out)

    def dtypes(self) -> tuple[model.DType, ...]:
        out = []
        names = {k for k, _, _ in self.section("dtypes")}
        for name, _, node in self.section("dtypes"):
            key = f"dtypes.{name}"
            numpy_name, compute, kind = self.text(node.get("numpy")), node.get("compute"), node.get("kind")
            numpy_kind_ = numpy_kind(numpy_name) if numpy_name else NOT_A_DTYPE
            if numpy_name and numpy_kind_ == NOT_A_DTYPE:
                self.error(node.get("numpy"), f"{key}.numpy", f"unknown numpy dtype {numpy_name!r}")
            elif numpy_name and numpy_kind_ is None:
                self.error(node.get("numpy"), f"{key}.numpy", f"numpy dtype {numpy_name!r} is not a scalar number type")
            elif kind is not None and kind.value in ("uint", "int", "float") and kind.value != numpy_kind_:
                self.error(
                    kind, f"{key}.kind", f"kind {kind.value!r} does not match numpy dtype {numpy_name} ({numpy_kind_})"
                )
            if compute is not None and compute.tag == "str" and compute.value not in names:
                self.error(
                    compute, f"{key}.compute", f"unknown dtype {compute.value!r}{did_you_mean(compute.value, names)}"
                )
            out.append(
                model.DType(
                    name,
                    numpy_name,
                    self.text(node.get("hip")) or None,
                    self.text(node.get("kind"), "float"),
                    self.text(compute) or None,
                    node.position.line,
                )
            )
        section = self.root.get("dtypes")
        if not out and section is not None and section.tag == "map":
            self.error(section, "dtypes", "declare at least one dtype")
        return tuple(out)

    def dtype_sets(self, dtypes: tuple[model.DType, ...]) -> dict[str, tuple[str, ...]]:
        known = {d.name for d in dtypes}
        sets: dict[str, tuple[str, ...]] = {"all": tuple(d.name for d in dtypes)}
        for name, knode, node in self.section("dtype_sets"):
            if name in known:
                self.error(knode, f"dtype_sets.{name}", f"dtype set {name!r} has the name of a dtype")
            members = self.dtype_names(node, f"dtype_sets.{name}", known, {})
            sets[name] = members
        return sets

    def dtype_names(self, node: Node, key: str, known: set[str], sets: dict) -> tuple[str, ...]:
        """A dtype list: a set name or a list of dtype names; unknown names are errors."""
        if node.tag == "str":
            if node.value in sets:
                return sets[node.value]
            if node.value in known:
                return (node.value,)
            self.error(node, key, f"unknown dtype set {node.value!r}{did_you_mean(node.value, [*sets, *known])}")
            return ()
        if node.tag != "seq":
            return ()
        names: list[str] = []
        for i, item in enumerate(node.value):
            if item.tag != "str":
                continue
            if item.value not in known:
                self.error(item, f"{key}[{i}]", f"unknown dtype {item.value!r}{did_you_mean(item.value, known)}")
            elif item.value in names:
                self.error(item, f"{key}[{i}]", f"dtype {item.value!r} listed twice")
            else:
                names.append(item.value)
        if not node.value:
            self.error(node, key, "the dtype list is empty")
        return tuple(names)

    def backends(self) -> tuple[model.Backend, ...]:
        out = []
        for name, _, node in self.section("backends"):
            runtime = self.text(node.get("runtime"))
            functions: frozenset[str] = frozenset()
            stubs: frozenset[str] = frozenset()
            runtime_path = None
            imports: tuple[str, ...] = ()
            if runtime:
                module = scan(self.runtime_root, runtime)
                functions, stubs = module.functions, module.stubs
                runtime_path = str(module.path) if module.path else None
                imports = tuple(str(p) for p in module.paths[1:])
                if module.error:
                    self.error(node.get("runtime"), f"backends.{name}.runtime", module.error)
                else:
                    for required in model.REQUIRED_RUNTIME:
                        if required not in functions:
                            self.error(
                                node.get("runtime"),
                                f"backends.{name}.runtime",
                                f"runtime module {runtime!r} does not define {required}()",
                            )
            ordinal = node.get("ordinal")
            out.append(
                model.Backend(
                    name,
                    runtime,
                    bool(ordinal.value) if ordinal is not None else False,
                    self.text(node.get("doc")),
                    self.text(node.get("kernels")) or None,
                    functions,
                    node.position.line,
                    runtime_path,
                    stubs,
                    imports,
                )
            )
        section = self.root.get("backends")
        if not out and section is not None and section.tag == "map":
            self.error(section, "backends", "declare at least one backend")
        return tuple(out)

    def formats(self) -> tuple[model.QFormat, ...]:
        out = []
        for name, _, node in self.section("quantized"):
            fields = {f: node.get(f) for f in ("block", "bytes", "ggml_type")}
            values = {f: v.value if v is not None and v.tag == "int" else 1 for f, v in fields.items()}
            out.append(model.QFormat(name, values["block"], values["bytes"], values["ggml_type"], node.position.line))
        self.collisions("quantized", "format")
        return tuple(out)

    def nn_ops(self, dtypes, sets, customs, taken_ops) -> tuple[model.Operation, ...]:
        """NN ops: each a custom op of a trait, generated as a class whose hooks call the
        runtime function of the op's name."""
        known = {d.name for d in dtypes}
        traits = {c.name: c for c in customs}
        taken = {op.name for op in taken_ops}
        classes: dict[str, str] = {}
        out = []
        for name, knode, node in self.section("nn"):
            key = f"nn.{name}"
            dtypes_node = node.get("dtypes")
            trait = self.text(node.get("trait")) or None
            if trait is not None and trait not in traits:
                self.error(
                    node.get("trait"), f"{key}.trait", f"unknown custom-op trait {trait!r}{did_you_mean(trait, traits)}"
                )
            elif trait is not None and traits[trait].inplace:
                self.error(node.get("trait"), f"{key}.trait", f"{trait} works in place; an nn op returns a new storage")
            if name in taken:
                self.error(
                    knode,
                    key,
                    f"nn op {name!r} has the name of a storage op or device method "
                    "(both call the runtime function of that name)",
                )
            op = model.Operation(
                name,
                model.OpKind.NN,
                self.nn_params(node.get("params"), f"{key}.params"),
                "StorageShape",
                None,
                None,
                (),
                (),
                (("self", self.dtype_names(dtypes_node, f"{key}.dtypes", known, sets)),) if dtypes_node else (),
                (),
                self.text(node.get("doc")),
                node.position.line,
                trait=trait,
                **self.patterns(node.get("kernel"), f"{key}.kernel", known, sets),
            )
            if op.class_name in classes or op.class_name in traits or op.class_name in GENERATED_NAMES:
                owner = f"nn op {classes[op.class_name]!r}" if op.class_name in classes else "the package"
                self.error(knode, key, f"nn op {name!r} becomes class {op.class_name}, which {owner} already defines")
            classes.setdefault(op.class_name, name)
            out.append(op)
        return tuple(out)

    def nn_params(self, node: Node | None, key: str) -> tuple[model.Param, ...]:
        if node is None or node.tag != "map":
            return ()
        out = []
        for name, (knode, vnode) in node.value.items():
            if name in ("self", "name") or name.startswith("_"):
                self.error(knode, f"{key}.{name}", f"parameter {name!r} would hide a name of the generated class")
            out.append(model.Param(name, str(vnode.value)))
        return tuple(out)

    def custom_ops(self) -> tuple[model.CustomOpTrait, ...]:
        out = []
        for name, knode, node in self.section("custom_ops"):
            if name in GENERATED_NAMES or name in model.PARAM_TYPES or name in model.RETURN_TYPES:
                self.error(knode, f"custom_ops.{name}", f"custom op {name!r} has the name of a generated or core type")
            inputs, inplace = node.get("inputs"), node.get("inplace")
            out.append(
                model.CustomOpTrait(
                    name,
                    inputs.value if inputs is not None and inputs.tag == "int" else 1,
                    bool(inplace.value) if inplace is not None and inplace.tag == "bool" else False,
                    node.position.line,
                )
            )
        return tuple(out)

    def elementwise(self, family: str, dtypes, sets) -> list[model.Elementwise]:
        known = {d.name: d for d in dtypes}
        out = []
        for name, _, node in self.section(family):
            key = f"{family}.{name}"
            names: tuple[str, ...] = ()
            dtypes_node = node.get("dtypes")
            if dtypes_node is not None:
                names = self.dtype_names(dtypes_node, f"{key}.dtypes", set(known), sets)
            exprs = self.numpy_exprs(node.get("numpy"), f"{key}.numpy", OPERANDS[family])
            kinds = {k for k, _ in exprs}
            for dt in names:
                kind = known[dt].kind  # an invalid kind is reported at the dtype, not again here
                if "*" not in kinds and kind not in kinds and exprs and kind in ("uint", "int", "float"):
                    self.error(node.get("numpy"), f"{key}.numpy", f"no numpy expression for {dt} (kind {kind})")
            result = node.get("result")
            if result is not None and result.tag == "str" and result.value not in known:
                self.error(
                    result, f"{key}.result", f"unknown dtype {result.value!r}{did_you_mean(result.value, known)}"
                )
            out.append(
                model.Elementwise(
                    name,
                    family,
                    exprs,
                    self.text(node.get("hip")) or None,
                    names,
                    self.text(result) or ("u8" if family == "cmp" and "u8" in known else None) or None,
                    node.position.line,
                )
            )
        return out

    def numpy_exprs(self, node: Node | None, key: str, operands: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        if node is None:
            return ()
        if node.tag == "str":
            pairs = [("*", node, key)]
        elif node.tag == "map":
            pairs = [(k, vn, f"{key}.{k}") for k, (_, vn) in node.value.items() if vn.tag == "str"]
        else:
            return ()
        out = []
        for kind, enode, ekey in pairs:
            if self.expression_ok(enode, ekey, operands):
                out.append((kind, enode.value.strip()))  # as expression_problem parsed it
        return tuple(out)

    def expression_ok(self, node: Node, key: str, operands: tuple[str, ...]) -> bool:
        problem = expression_problem(node.value, operands)
        if problem:
            self.error(node, key, problem)
        return problem is None

    def operations(self, kind, dtypes, sets, backends, customs, formats) -> tuple[model.Operation, ...]:
        known_dtypes = {d.name for d in dtypes}
        backend_names = {b.name for b in backends}
        trait_names = {c.name: c for c in customs}
        out = []
        for name, knode, node in self.section(kind):
            key = f"{kind}.{name}"
            if name in RESERVED[kind]:
                self.error(knode, key, f"{kind} op name {name!r} is reserved by the generated class")
            elif name.startswith("_"):
                self.error(knode, key, f"{kind} op name {name!r} may not start with an underscore")
            params = self.params(node.get("params"), f"{key}.params", trait_names)
            by_name = {p.name: p for p in params}
            returns = self.text(node.get("returns"))
            if node.get("returns") is not None and returns and returns not in model.RETURN_TYPES:
                self.error(
                    node.get("returns"),
                    f"{key}.returns",
                    f"unknown return type {returns!r}{did_you_mean(returns, model.RETURN_TYPES)}",
                )
            quantized = [t for t in (returns, *(p.type for p in params)) if t in model.QUANTIZED_TYPES]
            if quantized and not formats:
                self.error(knode, key, f"{quantized[0]} needs the quantized formats: declare a `quantized` section")
            elif "QStorage" in quantized and not self.section("qstorage"):
                self.error(knode, key, "QStorage needs its methods: declare a `qstorage` section")
            fallback = self.text(node.get("fallback")) or None
            if fallback is not None:
                fnode = node.get("fallback")
                if fallback not in backend_names:
                    self.error(
                        fnode, f"{key}.fallback", f"unknown backend {fallback!r}{did_you_mean(fallback, backend_names)}"
                    )
                elif kind != "storage" or returns != "Storage":
                    self.error(fnode, f"{key}.fallback", "only storage ops that return a new Storage can fall back")
                elif not backends[[b.name for b in backends].index(fallback)].implements(
                    self.text((node.get("impl") or node).get(fallback)) or name
                ):
                    self.error(fnode, f"{key}.fallback", f"fallback backend {fallback!r} does not implement {name}")
            hook = self.text(node.get("hook")) or None
            if hook is not None:
                self.check_hook(node.get("hook"), f"{key}.hook", hook, by_name, trait_names, returns, kind)
            same_dtype = self.param_refs(
                node.get("same_dtype"), f"{key}.same_dtype", by_name, "Storage", allow_self=True
            )
            same_shape = self.param_refs(node.get("same_shape"), f"{key}.same_shape", by_name, "Layout")
            arg_dtypes = self.arg_dtypes(node.get("dtypes"), f"{key}.dtypes", by_name, known_dtypes, sets)
            impl = self.impl(node.get("impl"), f"{key}.impl", backends)
            writes = self.writes(node.get("writes"), f"{key}.writes", by_name, kind)
            out.append(
                model.Operation(
                    name,
                    model.OpKind(kind),
                    params,
                    returns or "None",
                    fallback,
                    hook,
                    same_dtype,
                    same_shape,
                    arg_dtypes,
                    impl,
                    self.text(node.get("doc")),
                    node.position.line,
                    **self.patterns(node.get("kernel"), f"{key}.kernel", known_dtypes, sets),
                    writes=writes,
                )
            )
        return tuple(out)

    def writes(self, node, key, by_name, kind) -> str | None:
        """`writes`: self or a Storage parameter, of a storage or QStorage method."""
        if node is None or node.tag != "str":
            return None
        name = node.value
        if kind == "device":
            self.error(node, key, "a device method writes no storage in place")
        elif name != "self" and name not in by_name:
            self.error(node, key, f"no parameter named {name!r}{did_you_mean(name, ['self', *by_name])}")
        elif name != "self" and not by_name[name].is_storage:
            self.error(node, key, f"parameter {name!r} is a {by_name[name].type}, not a Storage")
        else:
            return name
        return None

    def patterns(self, node: Node | None, key: str, known: set[str], sets: dict) -> dict:
        """A kernel pattern, or a list of them, each a string or {pattern, dtypes}: the
        Operation fields `kernel` and `kernel_dtypes`."""
        if node is None:
            return {}
        patterns, limits = [], []
        for i, item in enumerate(node.value if node.tag == "seq" else [node]):
            if item.tag == "str":
                patterns.append(str(item.value))
            elif item.tag == "map" and item.get("pattern") is not None and item.get("dtypes") is not None:
                pattern = self.text(item.get("pattern"))
                patterns.append(pattern)
                limits.append((pattern, self.dtype_names(item.get("dtypes"), f"{key}[{i}].dtypes", known, sets)))
        return {"kernel": tuple(patterns), "kernel_dtypes": tuple(limits)}

    def params(self, node: Node | None, key: str, traits: dict) -> tuple[model.Param, ...]:
        if node is None or node.tag != "map":
            return ()
        out = []
        for name, (knode, vnode) in node.value.items():
            if vnode.tag != "str":
                continue
            t = vnode.value
            if name in ("self",):
                self.error(knode, f"{key}.{name}", "a parameter may not be called 'self'")
            elif name in GENERATED_NAMES or name in traits or name.startswith("_"):
                self.error(knode, f"{key}.{name}", f"parameter {name!r} would hide the generated name {name}")
            if t not in model.PARAM_TYPES and t not in model.OP_ENUM_TYPES and t not in traits:
                choices = [*model.PARAM_TYPES, *model.OP_ENUM_TYPES, *traits]
                self.error(vnode, f"{key}.{name}", f"unknown parameter type {t!r}{did_you_mean(t, choices)}")
            out.append(model.Param(name, t))
        return tuple(out)

    def check_hook(self, node, key, hook, by_name, traits, returns, kind) -> None:
        param = by_name.get(hook)
        if kind != "storage":
            self.error(node, key, "only storage ops can have a hook")
        elif param is None:
            self.error(node, key, f"hook names no parameter: {hook!r}{did_you_mean(hook, by_name)}")
        elif param.type not in traits:
            self.error(node, key, f"hook parameter {hook!r} has type {param.type}, not a custom-op trait")
        else:
            trait = traits[param.type]
            storages = 1 + sum(p.is_storage for p in by_name.values())
            if trait.inputs != storages:
                self.error(
                    node, key, f"{param.type} takes {trait.inputs} input(s) but the op has {storages} storage(s)"
                )
            expected = "None" if trait.inplace else "StorageShape"
            if returns and returns != expected:
                self.error(node, key, f"an op hooked to {param.type} must return {expected}, not {returns}")

    def param_refs(self, node, key, by_name, expected_type, allow_self=False) -> tuple[str, ...]:
        if node is None or node.tag != "seq":
            return ()
        out = []
        for i, item in enumerate(node.value):
            if item.tag != "str":
                continue
            name = item.value
            if allow_self and name == "self":
                out.append(name)
            elif name not in by_name:
                self.error(item, f"{key}[{i}]", f"no parameter named {name!r}{did_you_mean(name, by_name)}")
            elif by_name[name].type != expected_type:
                self.error(item, f"{key}[{i}]", f"parameter {name!r} is a {by_name[name].type}, not a {expected_type}")
            else:
                out.append(name)
        if len(node.value) < 2:
            self.error(node, key, "name at least two arguments to compare")
        return tuple(out)

    def arg_dtypes(self, node, key, by_name, known, sets) -> tuple[tuple[str, tuple[str, ...]], ...]:
        if node is None or node.tag != "map":
            return ()
        out = []
        for name, (knode, vnode) in node.value.items():
            if name != "self" and name in by_name and not by_name[name].is_storage:
                self.error(knode, f"{key}.{name}", f"parameter {name!r} is a {by_name[name].type}, not a Storage")
                continue
            if name != "self" and name not in by_name:
                self.error(knode, f"{key}.{name}", f"no Storage parameter named {name!r}{did_you_mean(name, by_name)}")
                continue
            out.append((name, self.dtype_names(vnode, f"{key}.{name}", known, sets)))
        return tuple(out)

    def impl(self, node, key, backends) -> tuple[tuple[str, str], ...]:
        if node is None or node.tag != "map":
            return ()
        by_name = {b.name: b for b in backends}
        out = []
        for name, (knode, vnode) in node.value.items():
            if name not in by_name:
                self.error(knode, f"{key}.{name}", f"unknown backend {name!r}{did_you_mean(name, by_name)}")
            elif vnode.tag == "str" and by_name[name].runtime and not by_name[name].implements(vnode.value):
                self.error(
                    vnode,
                    f"{key}.{name}",
                    f"runtime module {by_name[name].runtime!r} defines no function {vnode.value!r}",
                )
            else:
                out.append((name, str(vnode.value)))
        return tuple(out)

    def cross_checks(self, backends, storage, device, elementwise) -> None:
        """Names that would collide in the generated package."""
        seen: dict[str, Node] = {}
        for fam in model.FAMILIES:
            for name, knode, _ in self.section(fam):
                member = f"{fam}:{name.upper()}"
                if member in seen:
                    self.error(
                        knode,
                        f"{fam}.{name}",
                        f"op {name!r} collides with another {fam} op of the same upper-case name",
                    )
                seen[member] = knode
        storage_names = {k: kn for k, kn, _ in self.section("storage")}
        for name, knode, _ in self.section("device"):
            if name in storage_names:
                self.error(
                    knode,
                    f"device.{name}",
                    f"device method {name!r} has the name of a storage op "
                    "(both call the runtime function of that name)",
                )
            if any(name == f"is_{b.name}" for b in backends):
                self.error(knode, f"device.{name}", f"device method {name!r} is generated for every backend")
        for name, knode, _ in self.section("backends"):
            if name.upper() != name.upper().strip() or not name.islower():
                self.error(knode, f"backends.{name}", f"backend name {name!r} must be lower case")
        for op in storage:
            if not any(p.type in model.OP_ENUM_TYPES for p in op.params):
                continue
            for b in backends:
                if b.implements(op.function(b.name)) and not b.kernels:
                    node = self.root.find("backends", b.name)
                    self.error(
                        node,
                        f"backends.{b.name}.kernels",
                        f"{b.runtime} implements {op.name}, which takes generated kernels, "
                        "but the backend declares no `kernels`",
                    )
        families = {e.family for e in elementwise}
        for section in ("storage", "device"):
            for op_name, _, op_node in self.section(section):
                params = op_node.get("params")
                for p_name, (_, t_node) in params.value.items() if params is not None and params.tag == "map" else ():
                    family = model.OP_ENUM_TYPES.get(t_node.value) if t_node.tag == "str" else None
                    if family and family not in families:
                        self.error(
                            t_node,
                            f"{section}.{op_name}.params.{p_name}",
                            f"parameters of type {t_node.value} need at least one {family} op",
                        )
        self.collisions("dtypes", "dtype")
        functions: dict[str, str] = {}
        for op in elementwise:
            for fn, _ in model.numpy_functions(op):
                if fn in functions:
                    self.error(
                        self.root.find(op.family, op.name),
                        f"{op.family}.{op.name}",
                        f"kernel function {fn} of {op.name!r} collides with that of {functions[fn]!r}",
                    )
                functions.setdefault(fn, op.name)
        checks = [op.name for op in storage if op.same_dtype or op.arg_dtypes]
        if checks and not any(op.name == "dtype" and op.returns == "DType" for op in storage):
            self.error(
                self.root.get("storage"),
                "storage",
                f"{checks[0]} checks dtypes before dispatch: declare a storage op `dtype` returning DType",
            )

    def collisions(self, section: str, what: str) -> None:
        """Names that differ only in case become one enum member."""
        seen: dict[str, str] = {}
        for name, knode, _ in self.section(section):
            if name.upper() in seen:
                self.error(
                    knode,
                    f"{section}.{name}",
                    f"{what} {name!r} collides with {seen[name.upper()]!r} (the same upper-case name)",
                )
            seen.setdefault(name.upper(), name)


def runtime_pattern_users(runtime_root: Path) -> list[Path]:
    """The runtime modules that import KernelPattern (runtime/**/*.py)."""
    return [
        p for p in sorted((runtime_root / "runtime").rglob("*.py")) if "KernelPattern" in p.read_text(encoding="utf-8")
    ]


_KERNEL_PATTERN_ALIAS = re.compile(r"\bKernelPattern(?:\s+as\s+([A-Za-z_]\w*))?")


def kernel_pattern_refs(path: Path) -> tuple[tuple[int, str], ...]:
    """(line, member) of every `KernelPattern.X` (or its import alias's `K.X`) in a module,
    read with regular expressions (ast took 0.2 s of a run over runtime/): comments and
    strings count too, so a docstring naming a member stays true."""
    text = path.read_text(encoding="utf-8")
    aliases = {"KernelPattern", *(a for a in _KERNEL_PATTERN_ALIAS.findall(text) if a)}
    refs = re.compile(rf"\b(?:{'|'.join(sorted(aliases))})\.([A-Za-z_]\w*)")
    return tuple((text.count("\n", 0, m.start()) + 1, m[1]) for m in refs.finditer(text))


def validate(root: Node, runtime_root: Path) -> model.Registry:
    """Every problem at once as RegistryError, or the model."""
    return Validator(root, runtime_root).run()

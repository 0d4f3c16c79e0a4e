"""The method sections (`storage:`, `device:`, `qstorage:`), `custom_ops:`, `nn:` and `quantized:`:
parameters, hooks, in-place writes, per-backend implementations, and the checks across them."""

from __future__ import annotations

from ... import model
from ..loader import Node
from ..spec import did_you_mean
from .elementwise import ElementwiseChecks

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


# Names the generated classes use themselves; an op may not shadow them.
RESERVED = {
    "storage": frozenset({"backend", "inner"}),
    "device": frozenset({"backend", "ordinal", "parse", "available", "same_device", "cpu"}),
    "qstorage": frozenset({"backend", "inner", "to_device"}),
}


class OperationChecks(ElementwiseChecks):
    def formats(self) -> tuple[model.QFormat, ...]:
        out = []
        for name, _, node in self.section("quantized"):
            fields = {f: node.get(f) for f in ("block", "bytes", "ggml_type")}
            values = {f: v.value if v is not None and v.tag == "int" else 1 for f, v in fields.items()}
            out.append(model.QFormat(name, values["block"], values["bytes"], values["ggml_type"], node.position.line))
        self.collisions("quantized", "format")
        return tuple(out)

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

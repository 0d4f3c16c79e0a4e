"""The `backends:` and `targets:` sections, and what they name outside the registry: runtime
modules, the HIP kernels' entry points and the kernel patterns the runtime refers to."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from ... import model
from .. import profile
from ..loader import Node
from ..runtime_scan import scan
from ..spec import did_you_mean
from .dtypes import DTypeChecks

_KERNEL_PATTERN_ALIAS = re.compile(r"\bKernelPattern(?:\s+as\s+([A-Za-z_]\w*))?")


def runtime_pattern_users(runtime_root: Path) -> list[Path]:
    """The runtime modules that import KernelPattern (runtime/**/*.py)."""
    return [
        p for p in sorted((runtime_root / "runtime").rglob("*.py")) if "KernelPattern" in p.read_text(encoding="utf-8")
    ]


def kernel_pattern_refs(path: Path) -> tuple[tuple[int, str], ...]:
    """(line, member) of every `KernelPattern.X` (or its import alias's `K.X`) in a module,
    read with regular expressions (ast took 0.2 s of a run over runtime/): comments and
    strings count too, so a docstring naming a member stays true."""
    text = path.read_text(encoding="utf-8")
    aliases = {"KernelPattern", *(a for a in _KERNEL_PATTERN_ALIAS.findall(text) if a)}
    refs = re.compile(rf"\b(?:{'|'.join(sorted(aliases))})\.([A-Za-z_]\w*)")
    return tuple((text.count("\n", 0, m.start()) + 1, m[1]) for m in refs.finditer(text))


class BackendChecks(DTypeChecks):
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

    def switches(self, backends: tuple[model.Backend, ...]) -> tuple[model.Switch, ...]:
        """`switches:`: lower-case names, backends the registry declares, each of whose runtime
        modules defines the getter and the setter."""
        by_name = {b.name: b for b in backends}
        out = []
        for name, knode, node in self.section("switches"):
            key = f"switches.{name}"
            if not (name.isidentifier() and name == name.lower()):
                self.error(knode, key, f"switch {name!r} must be a lower_case identifier: it names functions")
            listed = node.get("backends") if node.tag == "map" else None
            names = [item for item in (listed.value if listed is not None and listed.tag == "seq" else [])]
            for i, item in enumerate(names):
                backend = by_name.get(str(item.value))
                if backend is None:
                    self.error(item, f"{key}.backends[{i}]", f"unknown backend {item.value!r}")
                    continue
                for function in (name, f"set_{name}"):
                    if backend.functions and not backend.defines(function):
                        self.error(
                            item,
                            f"{key}.backends[{i}]",
                            f"runtime module {backend.runtime!r} does not define {function}() (switch {name!r})",
                        )
            backend_names = tuple(str(item.value) for item in names)
            out.append(model.Switch(name, backend_names, self.text(node.get("doc")), knode.position.line))
        return tuple(out)

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
                out.append(model.Target(name, path, knode.position.line, self.profile(name, node, registry)))
        if any(t.name == "rust" for t in out):
            self.rust_needs(registry)
        return tuple(out)

    def profile(self, target: str, node: Node, registry: model.Registry) -> model.Profile | None:
        """The target's API profile, a file beside the registry; its errors join the registry's."""
        pnode = node.get("profile")
        if pnode is None or pnode.tag != "str":
            return None
        path = Path(self.path).parent / str(pnode.value)
        if not path.is_file():
            self.error(pnode, f"targets.{target}.profile", f"no profile file {str(pnode.value)!r} beside the registry")
            return None
        ops = {"Storage": {o.name for o in registry.storage}, "Device": {o.name for o in registry.device}}
        ops["QStorage"] = {o.name for o in registry.qstorage}
        ops["nn"] = {o.name for o in registry.nn}
        found, errors = profile.load(path, tuple(b.name for b in registry.backends), ops)
        self.checker.errors.extend(errors)
        return found

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
        from .. import kernel_sigs

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

        from ...targets import hip as hip_entries
        from ...targets.python import TEMPLATES, environment

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
        patterns = set(registry.kernel_patterns())
        for fact in registry.kernel_facts:
            if isinstance(fact.value, tuple):
                fnode = self.root.find("kernel_facts", fact.name, "value")
                for i, name in enumerate(fact.value):
                    if name not in names and name not in patterns and fnode is not None:
                        self.error(
                            fnode.value[i],
                            f"kernel_facts.{fact.name}.value[{i}]",
                            f"{name!r} is not a kernel entry point nor a `kernel:` pattern"
                            + did_you_mean(name, names | patterns),
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

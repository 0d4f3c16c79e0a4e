"""`gen docs`: the op reference in Markdown, from the registry model alone.

Every op with its signature, dtypes, where it is declared (REGISTRY:LINE) and how each backend
runs it, read from the same dispatch arms the generated package is rendered from, so the
page cannot claim what the package does not do. No dates or paths beyond the registry's:
the same registry and runtimes give the same bytes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from ..model import OP_ENUM_TYPES, Arm, ArmStatus, Operation, OpKind, Registry
from ..registry.declared import key_lines
from ..registry.loader import Node


def _status(status: ArmStatus) -> str:
    match status:
        case ArmStatus.IMPLEMENTED | ArmStatus.FALLBACK | ArmStatus.HOOK:
            return status.value
        case ArmStatus.MISSING:
            return "**missing**"
        case _:
            assert_never(status)


STATUS = {s: _status(s) for s in ArmStatus}
LEGEND = (
    "Status per backend: **implemented**, the backend's runtime module defines the function; "
    "**fallback**, it runs on the fallback backend through host memory; **hook**, the custom op's "
    "`<backend>_fwd` runs it; **missing**, the arm raises (`BackendUnavailable` where the backend "
    "cannot run here, else `NotImplementedForBackend`)."
)


def _cell(text: object) -> str:
    """Table cell text: pipes would end the cell, newlines the row."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _table(header: list[str], rows: Sequence[Sequence[object]]) -> list[str]:
    return [_row(header), "|" + "|".join("---" for _ in header) + "|", *(_row(r) for r in rows), ""]


class Reference:
    def __init__(self, registry: Registry, lines: dict[tuple[str, str], int] | None = None) -> None:
        self.r = registry
        self.lines = lines or {}
        self.backends = [b.name for b in registry.backends]

    def where(self, line: int, section: str = "", name: str = "") -> str:
        return f"`{self.r.path}:{self.lines.get((section, name), line)}`"

    def statuses(self, arms: tuple[Arm, ...]) -> list[str]:
        by = {a.backend.name: STATUS[a.status] for a in arms}
        return [by.get(b, "") for b in self.backends]

    def signature(self, op: Operation) -> str:
        params = ", ".join(f"{p.name}: {p.type}" for p in op.params)
        if op.kind is OpKind.NN:
            return _code(f"nn.{op.class_name}({params}): {op.trait}")
        return _code(f"{op.owner}.{op.name}({params}) -> {op.returns}")

    @staticmethod
    def dtypes(op: Operation) -> str:
        return "; ".join(f"{name}: {', '.join(ds)}" for name, ds in op.arg_dtypes) or "any"

    @staticmethod
    def notes(op: Operation) -> str:
        notes = []
        if op.same_dtype:
            notes.append(f"same dtype: {', '.join(op.same_dtype)}")
        if op.same_shape:
            notes.append(f"same shape: {', '.join(op.same_shape)}")
        if op.fallback:
            notes.append(f"falls back to {op.fallback}")
        if op.hook:
            notes.append(f"runs `{op.hook}.<backend>_fwd`")
        if op.writes:
            notes.append(f"writes {op.writes} in place")
        if op.kind is OpKind.NN:
            notes.append(f"hooks call the runtime function `{op.name}`")
        if op.doc:
            notes.append(op.doc)
        return "; ".join(notes)

    # -- sections -------------------------------------------------------------------------
    def backends_section(self) -> list[str]:
        rows = [
            [
                f"`{b.name}`",
                f"`{b.runtime}`",
                "yes" if b.ordinal else "no",
                b.kernels or "",
                b.doc,
                self.where(b.line, "backends", b.name),
            ]
            for b in self.r.backends
        ]
        return ["## Backends", "", *_table(["backend", "runtime", "ordinal", "kernels", "doc", "declared"], rows)]

    def dtypes_section(self) -> list[str]:
        rows = [
            [f"`{d.name}`", d.numpy, d.hip or "", d.kind, d.compute or "", self.where(d.line, "dtypes", d.name)]
            for d in self.r.dtypes
        ]
        sets = [f"- `{name}`: {', '.join(members)}" for name, members in self.r.dtype_sets]
        return [
            "## Dtypes",
            "",
            *_table(["dtype", "numpy", "hip", "kind", "computes in", "declared"], rows),
            "Dtype sets:",
            "",
            *sets,
            "",
        ]

    def elementwise_section(self) -> list[str]:
        out = ["## Elementwise ops", ""]
        for enum, family in OP_ENUM_TYPES.items():
            ops = self.r.family(family)
            if not ops:
                continue
            users = [op for op in self.r.storage if any(p.type == enum for p in op.params)]
            out += [f"### {family} (`{enum}`)", ""]
            if users:
                calls = ", ".join(self.signature(op) for op in users)
                those = "those ops" if len(users) > 1 else "that op"
                out += [
                    f"Run through {calls}; per-backend status from {those}'s "
                    "arms (the kernel of each op and dtype is generated).",
                    "",
                ]
            else:
                out += [f"No storage op takes a `{enum}`: the kernels are generated, nothing dispatches them.", ""]
            status = self.statuses(users[0].arms) if users else ["—"] * len(self.backends)
            rows = []
            for op in ops:
                numpy = "; ".join(f"{k}: {e}" if k != "*" else e for k, e in op.numpy)
                rows.append(
                    [
                        f"`{op.name}`",
                        _code(numpy),
                        _code(op.hip) if op.hip else "",
                        ", ".join(op.dtypes),
                        op.result or "",
                        *status,
                        self.where(op.line, family, op.name),
                    ]
                )
            out += _table(["op", "numpy", "hip", "dtypes", "result", *self.backends, "declared"], rows)
        return out

    def operations_section(self, title: str, ops: tuple[Operation, ...]) -> list[str]:
        if not ops:
            return []
        rows = [
            [
                f"`{op.name}`",
                self.signature(op),
                self.dtypes(op),
                self.notes(op),
                *self.statuses(op.arms),
                self.where(op.line, op.kind, op.name),
            ]
            for op in ops
        ]
        return [f"## {title}", "", *_table(["op", "signature", "dtypes", "notes", *self.backends, "declared"], rows)]

    def formats_section(self) -> list[str]:
        if not self.r.formats:
            return []
        rows = [
            [f"`{f.name}`", f.block, f.nbytes, f.ggml_type, self.where(f.line, "quantized", f.name)]
            for f in self.r.formats
        ]
        return [
            "## Quantized formats",
            "",
            *_table(["format", "values per block", "bytes per block", "GGML type", "declared"], rows),
        ]

    def conversions_section(self) -> list[str]:
        rows = [["`to_numpy(storage, layout)`", *self.statuses(self.r.to_numpy)]]
        for src in self.r.backends:
            by_dst = {t.dst.name: STATUS[t.arm.status] for t in self.r.transfers if t.src is src}
            rows.append([f"`to_device` from {src.name}", *(by_dst.get(b, "") for b in self.backends)])
        return [
            "## Conversions",
            "",
            "Columns: the backend the storage is on (`to_numpy`) or moves to (`to_device`).",
            "",
            *_table(["function", *self.backends], rows),
        ]

    def custom_ops_section(self) -> list[str]:
        if not self.r.custom_ops:
            return []
        rows = []
        for t in self.r.custom_ops:
            hooks = ", ".join(f"`{b}_fwd({t.fwd_params})`" for b in self.backends)
            used = ", ".join(f"`{op.name}`" for op in self.r.storage if any(p.type == t.name for p in op.params))
            returns = "None (in place)" if t.inplace else "(storage, shape)"
            rows.append([f"`{t.name}`", t.inputs, returns, hooks, used, self.where(t.line, "custom_ops", t.name)])
        return [
            "## Custom-op traits",
            "",
            "Subclass one, set `name`, override the hooks of the backends you support; the others raise "
            "`NotImplementedForBackend`. `gen audit` finds subclasses that override some hooks but not all.",
            "",
            *_table(["trait", "inputs", "returns", "hooks", "used by", "declared"], rows),
        ]

    def targets_section(self) -> list[str]:
        """What `gen` writes from this registry (only where it declares `targets:`)."""
        if not self.r.targets:
            return []
        what = {"python": "the Python package", "rust": "Candle's dispatch layer (Rust)"}
        rows = [[t.name, _code(t.out + "/"), what[t.name], f"`{self.r.path}:{t.line}`"] for t in self.r.targets]
        return ["## Targets", "", *_table(["target", "folder", "what", "declared"], rows)]

    def render(self) -> str:
        counts = (
            f"{len(self.r.backends)} backends, {len(self.r.dtypes)} dtypes, {len(self.r.elementwise)} "
            f"elementwise ops, {len(self.r.storage)} storage ops, {len(self.r.device)} device methods, "
            f"{len(self.r.custom_ops)} custom-op traits, {len(self.r.nn)} nn ops, "
            f"{len(self.r.formats)} quantized formats, {len(self.r.qstorage)} QStorage methods"
        )
        lines = [
            "# Op reference",
            "",
            f"Generated by `gen docs` from `{self.r.path}`; do not edit. {counts}.",
            "",
            LEGEND,
            "",
            *self.targets_section(),
            *self.backends_section(),
            *self.dtypes_section(),
            *self.elementwise_section(),
            *self.operations_section("Storage ops", self.r.storage),
            *self.operations_section("Device methods", self.r.device),
            *self.conversions_section(),
            *self.custom_ops_section(),
            *self.operations_section("NN ops", self.r.nn),
            *self.formats_section(),
            *self.operations_section("QStorage methods", self.r.qstorage),
        ]
        return "\n".join(lines).rstrip("\n") + "\n"


def reference(registry: Registry, root: Node | None = None) -> str:
    """The page; with the loaded tree, entries point at their key's line."""
    return Reference(registry, key_lines(root) if root is not None else None).render()

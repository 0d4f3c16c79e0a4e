"""comm.rs: the collectives' communicator, `Comm` (one variant per backend) and the
`CommBackend` trait each backend's communicator implements, from the registry's `collectives:`.
Checked before dispatch, as the Python package's Comm does: dtypes, ranks within the group, the
reductions each dtype takes (Candle's storages carry no element count, so counts are the
backend's to check). Laid out as rustfmt lays it out (rust_layout)."""

from __future__ import annotations

from ... import model
from ...model import camel
from ..rust_layout import array_statement, call_statement
from .types import Arm, Variant, host_backend, layout_signature, profile

_COMM_TYPES = {"Rank": "usize", "Reduction": "Reduction", "int": "i64", "float": "f64"}
_BODY = " " * 8  # a method's statements: inside `impl Comm` and the fn


def _params(op: model.Collective, storage: str) -> list[str]:
    def one(p: model.Param) -> str:
        if p.is_storage:
            return f"{p.name}: &{'mut ' if p.name == op.writes else ''}{storage}"
        return f"{p.name}: {_COMM_TYPES[p.type]}"

    return ["&self", *(one(p) for p in op.params)]


def _returns(op: model.Collective, comm: str) -> str:
    return f" -> Result<{comm if op.returns == 'Comm' else '()'}>"


def _dtypes_const(op: model.Collective, reduction: str) -> str:
    return f"{op.name.upper()}_{reduction.upper()}_DTYPES"


def _statement(call: str, indent: str = _BODY) -> tuple[str, ...]:
    """`call?;` as rustfmt lays it out, its lines relative to `indent`."""
    return tuple(line.removeprefix(indent) for line in call_statement("", call, "?;", indent).split("\n"))


def _restricted(op: model.Collective) -> list[tuple[str, tuple[str, ...]]]:
    """The reductions that take only some of the op's dtypes (avg: the float ones), which the
    checks test and the consts list."""
    return [(name, allowed) for name, allowed in op.reductions if not set(allowed) >= set(op.dtypes)]


def _checks(op: model.Collective) -> tuple[str, ...]:
    storages = [p.name for p in op.storage_params]
    lines: list[str] = []
    first = op.same_dtype[0] if op.same_dtype else None
    for other in op.same_dtype[1:]:
        lines += _statement(f'self.same_dtype("{op.name}", "{other}", {first}.dtype(), {other}.dtype())')
    for p in op.params:
        if p.type == "Rank":
            lines += _statement(f'self.rank_within("{op.name}", "{p.name}", {p.name})')
        if p.type == "Reduction" and storages:
            for name, _ in _restricted(op):
                call = f'self.dtype_in("{op.name}", "{name}", {storages[0]}.dtype(), {_dtypes_const(op, name)})'
                lines += [
                    f"if {p.name} == Reduction::{camel(name)} {{",
                    *(f"    {line}" for line in _statement(call, _BODY + "    ")),
                    "}",
                ]
    return tuple(lines)


def _consts(registry: model.Registry) -> tuple[str, ...]:
    """The dtypes each restricted reduction takes (avg: the float dtypes), one const a pair."""
    out = []
    for op in registry.collectives:
        if not any(p.type == "Reduction" for p in op.params) or not op.storage_params:
            continue
        for name, allowed in _restricted(op):
            items = [f"DType::{d.upper()}" for d in allowed]
            out.append(array_statement(f"const {_dtypes_const(op, name)}: &[DType] = &", items, ";", ""))
    return tuple(out)


def _arms(op: model.Collective, vs) -> tuple[Arm, ...]:
    storages = [p.name for p in op.storage_params]
    call = f"c.{op.name}({', '.join(p.name for p in op.params)})"
    out = []
    for v in vs:
        body = f"{call}.map(Comm::{v.name})" if op.returns == "Comm" else call
        pattern = f"Comm::{v.name}(c)"
        if storages:
            pattern = f"({', '.join([pattern, *(f'Storage::{v.name}({s})' for s in storages)])})"
        out.append(Arm(v.cfg, pattern, (body,)))
    if storages and len(vs) > 1:
        out.append(Arm(None, "_", (f'Err(self.off_backend("{op.name}"))',), "unreachable_patterns"))
    return tuple(out)


def comm_variants(registry: model.Registry) -> tuple[Variant, ...]:
    """Comm's variants: the registry's backends (each runs an engine: MPI, NCCL, RCCL), a GPU
    one behind its feature even where a profile compiles every Storage variant, since the
    library's dummy backends have no communicator."""
    host = host_backend(registry)
    return tuple(Variant(b, camel(b.name), None if b is host else f'feature = "{b.name}"') for b in registry.backends)


def comm_context(registry: model.Registry) -> dict:
    """The Reduction variants, CommBackend's methods and Comm's, for comm.rs.j2."""
    vs = comm_variants(registry)
    methods = []
    for op in registry.collectives:
        subject = f"({', '.join(['self', *(p.name for p in op.storage_params)])})" if op.storage_params else "self"
        methods.append(
            {
                "doc": op.doc or op.name,
                "signature": layout_signature(f"pub fn {op.name}", _params(op, "Storage"), _returns(op, "Comm") + " {"),
                "checks": _checks(op),
                "subject": subject,
                "arms": _arms(op, vs),
            }
        )
    trait_methods = tuple(
        line
        for op in registry.collectives
        for line in layout_signature(f"fn {op.name}", _params(op, "Self::Storage"), _returns(op, "Self") + ";")
    )
    return {
        "reductions": tuple(camel(r) for r in registry.reductions),
        "reduction_consts": _consts(registry),
        "trait_methods": trait_methods,
        "comm_methods": tuple(methods),
        "comm_variants": vs,
        "comm_note": _note(registry),
    }


def _note(registry: model.Registry) -> str:
    """The audit's allowance for the backends of the target alone (Metal): no engine runs them."""
    spelled = profile(registry)
    others = [b.name for b in spelled.backends] if spelled else []
    return f" // opgen: allow({', '.join(others)}): no collectives engine" if others else ""

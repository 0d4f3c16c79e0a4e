"""The `dtypes:`, `dtype_sets:` and `kernel_facts:` sections."""

from __future__ import annotations

import functools

from ... import model
from ..loader import Node
from ..spec import did_you_mean
from .base import Checks

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


class DTypeChecks(Checks):
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

"""The `collectives:` section: methods of Comm. Parameters and the names that refer to them
(same_dtype, counts, per_rank, agree, writes), count rules, reductions and their dtypes."""

from __future__ import annotations

import re

from ... import model
from ..loader import Node
from ..spec import did_you_mean
from .operations import OperationChecks

# Names Comm defines itself: an op of that name would hide them.
COMM_RESERVED = frozenset(
    {"backend", "inner", "rank", "size", "local_rank", "ordinal", "check_agree", "world", "device", "timeout"}
)
_COUNT_RULE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:([*/])\s*size\s*)?$")


class CollectiveChecks(OperationChecks):
    def collectives(self, dtypes, sets) -> tuple[model.Collective, ...]:
        known = {d.name for d in dtypes}
        every = tuple(d.name for d in dtypes)
        out = []
        for name, knode, node in self.section("collectives"):
            key = f"collectives.{name}"
            if name in COMM_RESERVED or name.startswith("_"):
                self.error(knode, key, f"collective name {name!r} is reserved by the generated Comm")
            params = self.collective_params(node.get("params"), f"{key}.params")
            by_name = {p.name: p for p in params}
            storages = {p.name for p in params if p.is_storage}
            dnode = node.get("dtypes")
            op_dtypes = self.dtype_names(dnode, f"{key}.dtypes", known, sets) if dnode is not None else every
            reductions = self.reductions(node.get("reductions"), f"{key}.reductions", known, sets, op_dtypes)
            has_reduction = any(p.type == "Reduction" for p in params)
            if has_reduction and node.get("reductions") is None:
                self.error(node, key, "an op with a Reduction parameter lists its `reductions`")
            elif reductions and not has_reduction:
                self.error(node.get("reductions"), f"{key}.reductions", "the op has no Reduction parameter")
            same_dtype = self.storage_refs(node.get("same_dtype"), f"{key}.same_dtype", storages)
            per_rank = self.storage_refs(node.get("per_rank"), f"{key}.per_rank", storages)
            agree = self.agree_refs(node.get("agree"), f"{key}.agree", by_name)
            writes = self.text(node.get("writes")) or None
            if writes is not None and writes not in storages:
                self.error(node.get("writes"), f"{key}.writes", f"no Storage parameter named {writes!r}")
                writes = None
            in_place = node.get("in_place")
            if in_place is not None and in_place.value is True and not {"send", "recv"} <= storages:
                self.error(in_place, f"{key}.in_place", "in_place needs Storage parameters `send` and `recv`")
            out.append(
                model.Collective(
                    name,
                    params,
                    self.text(node.get("returns"), "None"),
                    op_dtypes,
                    same_dtype,
                    self.count_rules(node.get("counts"), f"{key}.counts", storages),
                    per_rank,
                    bool(in_place is not None and in_place.value is True),
                    reductions,
                    agree,
                    writes,
                    self.text(node.get("doc")),
                    node.position.line,
                )
            )
        return tuple(out)

    def collective_params(self, node: Node | None, key: str) -> tuple[model.Param, ...]:
        if node is None or node.tag != "map":
            return ()
        out = []
        for name, (knode, vnode) in node.value.items():
            if name == "self" or name.startswith("_") or name in COMM_RESERVED or name in ("Storage", "Reduction"):
                self.error(knode, f"{key}.{name}", f"parameter {name!r} would hide a name of the generated Comm")
            if vnode.tag == "str" and vnode.value in model.COLLECTIVE_PARAM_TYPES:
                out.append(model.Param(name, vnode.value))
        return tuple(out)

    def storage_refs(self, node: Node | None, key: str, storages: set[str]) -> tuple[str, ...]:
        if node is None or node.tag != "seq":
            return ()
        out = []
        for i, item in enumerate(node.value):
            if item.tag == "str" and item.value not in storages:
                self.error(
                    item,
                    f"{key}[{i}]",
                    f"no Storage parameter named {item.value!r}{did_you_mean(item.value, storages)}",
                )
            elif item.tag == "str":
                out.append(item.value)
        return tuple(out)

    def agree_refs(self, node: Node | None, key: str, by_name: dict) -> tuple[str, ...]:
        if node is None or node.tag != "seq":
            return ()
        out = []
        for i, item in enumerate(node.value):
            if item.tag != "str":
                continue
            if item.value not in by_name:
                self.error(item, f"{key}[{i}]", f"no parameter named {item.value!r}{did_you_mean(item.value, by_name)}")
            else:
                out.append(item.value)
        return tuple(out)

    def count_rules(self, node: Node | None, key: str, storages: set[str]) -> tuple[model.CountRule, ...]:
        if node is None or node.tag != "map":
            return ()
        out = []
        for name, (knode, vnode) in node.value.items():
            if name not in storages:
                self.error(knode, f"{key}.{name}", f"no Storage parameter named {name!r}{did_you_mean(name, storages)}")
                continue
            found = _COUNT_RULE.match(str(vnode.value)) if vnode.tag == "str" else None
            if found is None or found.group(1) not in storages or found.group(1) == name:
                self.error(
                    vnode,
                    f"{key}.{name}",
                    f"expected another Storage parameter, alone or `* size` / `/ size`, got {vnode.value!r}",
                )
                continue
            out.append(model.CountRule(name, found.group(1), found.group(2) or ""))
        return tuple(out)

    def reductions(
        self, node: Node | None, key: str, known, sets, op_dtypes
    ) -> tuple[tuple[str, tuple[str, ...]], ...]:
        if node is None or node.tag != "map":
            return ()
        out = []
        for name, (knode, vnode) in node.value.items():
            if name not in model.REDUCTIONS:
                self.error(
                    knode, f"{key}.{name}", f"unknown reduction {name!r}; expected one of {', '.join(model.REDUCTIONS)}"
                )
                continue
            dts = self.dtype_names(vnode, f"{key}.{name}", known, sets)
            outside = [d for d in dts if d not in op_dtypes]
            if outside:
                self.error(vnode, f"{key}.{name}", f"dtype {outside[0]!r} is not one of the op's dtypes")
            out.append((name, tuple(d for d in dts if d in op_dtypes)))
        return tuple(out)

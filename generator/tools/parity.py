"""Parity: the op x backend table, from the model's dispatch arms."""

from __future__ import annotations

from typing import assert_never

from ..model import ArmStatus, Registry


def _label(status: ArmStatus) -> str:
    match status:
        case ArmStatus.IMPLEMENTED:
            return "yes"
        case ArmStatus.FALLBACK | ArmStatus.HOOK:
            return status.value
        case ArmStatus.MISSING:
            return "MISSING"
        case _:
            assert_never(status)


STATUS = {s: _label(s) for s in ArmStatus}


def parity_rows(registry: Registry) -> list[dict]:
    rows = []
    for op in (*registry.storage, *registry.device, *registry.qstorage, *registry.nn):
        row = {"op": f"{op.kind}.{op.name}"}
        row.update({arm.backend.name: STATUS[arm.status] for arm in op.arms})
        rows.append(row)
    for t in registry.transfers:
        rows.append({"op": f"to_device {t.src.name}->{t.dst.name}", t.dst.name: STATUS[t.arm.status]})
    return rows


def render_table(rows: list[dict]) -> str:
    backends = list(dict.fromkeys(k for r in rows for k in r if k != "op"))
    ops = [r for r in rows if not r["op"].startswith("to_device")]
    width = max(len(r["op"]) for r in rows)
    lines = [" ".join([f"{'op':<{width}}", *(f"{b:>9}" for b in backends)])]
    lines += [" ".join([f"{r['op']:<{width}}", *(f"{r.get(b, ''):>9}" for b in backends)]) for r in rows]
    summary = []
    for b in backends:
        count = {s: sum(r.get(b) == s for r in ops) for s in STATUS.values()}
        runnable = count["yes"] + count["fallback"]
        summary.append(
            f"{b}: {count['yes']} implemented, {count['fallback']} fall back, {count['hook']} custom-op hooks, "
            f"{count['MISSING']} missing ({100 * runnable // max(len(ops) - count['hook'], 1)}% runnable)"
        )
    return "\n".join([*lines, "", *summary])

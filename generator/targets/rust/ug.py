"""The library's op whose kernel a backend compiles at run time (candle-core's `UgIOp1`, an
InplaceOp1): a `<backend>_fwd` per backend, those the profile names running the compiled
kernel through their storage's `UgStorage`, every other one an error naming the op and the
backend, where candle-core writes three hooks by hand and a backend it lacks has none."""

from __future__ import annotations

from dataclasses import dataclass

from ... import model
from .types import layout_signature, variants


@dataclass(frozen=True)
class UgHook:
    backend: str
    cfg: str | None  # a running backend's hook: where its feature (and its UgStorage) is compiled
    signature: tuple[str, ...]
    runs: bool  # the backend compiles the op's kernels; else the hook errs


def ug_hooks(registry: model.Registry, op: model.UgOp) -> tuple[UgHook, ...]:
    out = []
    for v in variants(registry):
        runs = v.backend.name in op.backends
        s, layout = ("s1", "l1") if runs else ("_s1", "_l1")
        params = ["&self", f"{s}: &mut crate::{v.storage}", f"{layout}: &Layout"]
        signature = layout_signature(f"fn {v.backend.name}_fwd", params, " -> Result<()> {")
        cfg = f'feature = "{v.backend.name}"' if runs and v.backend.ordinal else None
        out.append(UgHook(v.backend.name, cfg, signature, runs))
    return tuple(out)

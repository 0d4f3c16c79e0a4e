"""Custom-op traits: a `<backend>_fwd` hook per backend, whose default errs naming the op
and the backend."""

from __future__ import annotations

from dataclasses import dataclass

from ... import model
from .types import Variant, layout_signature


@dataclass(frozen=True)
class Hook:
    """The `<backend>_fwd` of a custom-op trait: a default that errs, naming op and backend."""

    backend: str
    cfg: str | None
    signature: tuple[str, ...]


def hooks(trait: model.CustomOpTrait, vs: tuple[Variant, ...]) -> tuple[Hook, ...]:
    out = []
    for v in vs:
        params = ["&self"]
        for i in range(1, trait.inputs + 1):
            ref = "&mut " if trait.inplace and i == 1 else "&"
            params += [f"_s{i}: {ref}crate::{v.storage}", f"_l{i}: &Layout"]
        returns = "Result<()>" if trait.inplace else f"Result<(crate::{v.storage}, Shape)>"
        signature = layout_signature(f"fn {v.backend.name}_fwd", params, f" -> {returns} {{")
        out.append(Hook(v.backend.name, v.cfg, signature))
    return tuple(out)

"""The library's quantized tensor as a custom op (candle-core's `impl CustomOp1 for QTensor`,
QMatMul's product): one `<backend>_fwd` per backend, each calling that backend's quantized
storage's `matmul` (the registry's `qstorage.matmul`), where candle-core writes three by hand
and a backend it lacks gets the trait's default error."""

from __future__ import annotations

from dataclasses import dataclass

from ... import model
from .types import layout_signature, variants


@dataclass(frozen=True)
class QHook:
    variant: str  # Cpu, Cuda
    backend: str
    cfg: str | None
    signature: tuple[str, ...]
    x_device: str  # x's Device, as the mismatch error names it


def qtensor_hooks(registry: model.Registry) -> tuple[QHook, ...]:
    out = []
    for v in variants(registry):
        storage = f"crate::{v.storage}"
        params = ["&self", f"s1: &{storage}", "l1: &Layout"]
        signature = layout_signature(f"fn {v.backend.name}_fwd", params, f" -> Result<({storage}, Shape)> {{")
        x_device = f"Device::{v.name}(s1.device().clone())" if v.backend.ordinal else f"Device::{v.name}"
        out.append(QHook(v.name, v.backend.name, v.cfg, signature, x_device))
    return tuple(out)

"""to_device: every (source storage, destination device) pair of backends."""

from __future__ import annotations

from ... import model
from .types import Arm, both, variants


def transfers(registry: model.Registry) -> tuple[Arm, ...]:
    """Every (source storage, destination device) pair: within a backend the backend's own
    transfer, to and from the host through the host storage, between two other backends
    through host memory."""
    vs = variants(registry)
    host = next(v for v in vs if not v.backend.ordinal)
    to_host = f"to_{host.backend.name}_storage"
    from_host = f"storage_from_{host.backend.name}_storage"
    arms = []
    for src in vs:
        for dst in vs:
            device = f"Device::{dst.name}" if dst is host else f"Device::{dst.name}(d)"
            pattern = f"(Self::{src.name}(s), {device})"
            if dst is host:
                body = f"Ok(Self::{host.name}(s.{to_host}()?))"
            elif src is host:
                body = f"Ok(Self::{dst.name}(d.{from_host}(s)?))"
            elif src is dst:
                body = f"Ok(Self::{dst.name}(s.transfer_to_device(d)?))"
            else:
                body = f"Ok(Self::{dst.name}(d.{from_host}(&s.{to_host}()?)?))"
            arms.append(Arm(both(src.cfg, dst.cfg), pattern, (body,)))
    return tuple(arms)

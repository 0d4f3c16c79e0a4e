"""Validate: a loaded Node tree -> the frozen Registry model, or every error at once.

Structure is checked against generator.registry.spec; the checks here are about meaning: names
that must refer to something, expressions that must parse, runtime functions that must
exist. Each diagnostic names the file position and the key at fault."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ... import dispatch, model
from ..diagnostics import RegistryError
from ..loader import Node
from ..spec import REGISTRY
from .backends import runtime_pattern_users
from .collectives import CollectiveChecks


class Validator(CollectiveChecks):
    """Every section's checks (the classes it derives from, one module a section), run in the
    registry's order."""

    def run(self) -> model.Registry:
        self.checker.check(REGISTRY, self.root, "")
        dtypes = self.dtypes()
        sets = self.dtype_sets(dtypes)
        backends = self.backends()
        customs = self.custom_ops()
        elementwise = tuple(op for fam in model.FAMILIES for op in self.elementwise(fam, dtypes, sets))
        formats = self.formats()
        storage = self.operations("storage", dtypes, sets, backends, customs, formats)
        device = self.operations("device", dtypes, sets, backends, customs, formats)
        qstorage = self.operations("qstorage", dtypes, sets, backends, customs, formats)
        nn = self.nn_ops(dtypes, sets, customs, (*storage, *device))
        collectives = self.collectives(dtypes, sets)
        self.cross_checks(backends, storage, device, elementwise)
        hip_kernels = self.hip_kernels(backends)
        hip_dir = self.runtime_root / "hip"
        runs_hip = any(b.kernels == "hip" for b in backends) and hip_dir.is_dir()
        registry = model.Registry(
            self.path,
            dtypes,
            tuple(sets.items()),
            backends,
            elementwise,
            storage,
            device,
            customs,
            hip_kernels=tuple(sorted(hip_kernels.items())),
            hip_sources=tuple(
                str(p) for p in (*sorted(hip_dir.glob("*.hip")), *runtime_pattern_users(self.runtime_root))
            )
            if runs_hip
            else (),
            formats=formats,
            qstorage=qstorage,
            nn=nn,
            kernel_facts=self.kernel_facts(),
            switches=self.switches(backends),
            collectives=collectives,
        )
        registry = dataclasses.replace(registry, targets=self.targets(registry))
        self.kernel_refs(registry, hip_kernels)
        if self.checker.errors:
            raise RegistryError(self.checker.errors)
        return dispatch.with_arms(dataclasses.replace(registry, kernel_facts=model.expanded_facts(registry)))


def validate(root: Node, runtime_root: Path) -> model.Registry:
    """Every problem at once as RegistryError, or the model."""
    return Validator(root, runtime_root).run()

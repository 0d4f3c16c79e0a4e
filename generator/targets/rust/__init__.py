"""The rust target: Candle's dispatch layer from the same model as the Python package.

Candle (candle-core) spells out, by hand, one `match` arm per backend in every method of
`Storage`, `Device` and `QStorage`, a `<backend>_fwd` per backend in every custom-op trait,
every backend pair of `to_device`, the exports of each backend's types and the launch of
every kernel. This module derives those facts from the frozen model: Rust types of the
registry's parameter and return types, the arms of each method, the cfg gate of each arm.
The templates in templates/rust/ only lay them out. No raw YAML, nothing copied from Candle:
the names and shapes follow candle-core (the commit is in templates/rust/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2

from ... import model
from .. import location, rust_layout
from ..python import environment as python_environment, generated_kernels
from .additions import additions
from .comm import comm_context
from .custom_ops import hooks
from .launch import Launch, launches
from .methods import device_methods, hooked_methods, qstorage_methods, storage_methods
from .nn import nn_ops
from .qtensor import qtensor_hooks
from .syntax import check_rust, syntax_error
from .to_device import transfers
from .traits import dummies, traits
from .types import HELPERS, TYPE_NAMES, Method, Variant, profile, uses, variants
from .ug import ug_hooks

__all__ = ["outputs", "render", "syntax_error"]

TEMPLATES = location.TEMPLATES / "rust"
# Laid out by their templates (launch.rs: each wrapper's lines from launch.launches, 5 MB for
# a 2,584-op registry, which rust_layout.fit would only search for arms it has none of).
LAID_OUT = frozenset({"launch.rs"})


def _mentioned(methods: tuple[Method, ...], candidates) -> set[str]:
    """The candidates (identifiers) that stand as whole words in the methods' lines: the
    words of the text found once, not one search of the whole text per candidate."""
    text = "\n".join(
        "\n".join([*m.signature, *m.checks, *m.body, *(ln for a in m.arms for ln in a.body)]) for m in methods
    )
    return set(candidates) & set(_WORD.findall(text))


_WORD = re.compile(r"\w+")


def context(registry: model.Registry) -> dict:
    vs = variants(registry)
    spelled = profile(registry)
    storage = (*storage_methods(registry), *additions(registry, spelled, "Storage"))
    hooked = hooked_methods(registry)
    qmethods = (*qstorage_methods(registry), *additions(registry, spelled, "QStorage"))
    device = (*device_methods(registry, quantized=False), *additions(registry, spelled, "Device"))
    qdevice = device_methods(registry, quantized=True)
    traits = [t for t in registry.custom_ops]
    kernels: tuple[Launch, ...] = ()
    entry_points: tuple = ()
    if any(b.kernels == "hip" for b in registry.backends):
        entry_points = generated_kernels(registry)[1]
        kernels = launches(entry_points)
    return {
        "registry": registry,
        "registry_name": Path(registry.path).name,
        "variants": vs,
        "switch_backends": sorted({b for switch in registry.switches for b in switch.backends}),
        "host": next(v for v in vs if not v.backend.ordinal),
        "storage_methods": storage,
        "hooked_methods": hooked,
        "qstorage_methods": qmethods,
        "device_methods": device,
        "qdevice_methods": qdevice,
        "transfers": transfers(registry),
        "traits": [(t, hooks(t, vs)) for t in traits],
        "launches": kernels,
        "launch_uses_c_void": any("c_void" in k.signature for k in kernels),
        "checks_text": "\n".join(line for m in (*storage, *hooked, *qmethods) for line in m.checks),
        "dtypes": registry.dtypes,
        "formats": ggml_variants(registry),
        "uses_storage": uses(
            "Error",
            "Result",
            "Device",
            "DType",
            "Layout",
            "BackendStorage",
            *(_mentioned(storage, TYPE_NAMES) - {"Storage"}),
        ),
        "uses_device": uses("Result", "Error", "BackendDevice", *(_mentioned(device, TYPE_NAMES) - {"Device"})),
        "uses_custom_op": uses(
            "Error",
            "Result",
            "Layout",
            "Shape",
            *(_mentioned(hooked, (*TYPE_NAMES, *HELPERS)) | ({"Storage"} if hooked else set())),
        ),
        "uses_quantized": uses(
            "Result",
            "Device",
            "QBackendStorage",
            *(("BackendDevice",) if _calls_a_device(qdevice) else ()),
            *(_mentioned((*qmethods, *qdevice), (*TYPE_NAMES, *HELPERS)) - {"QStorage", "GgmlDType"}),
        ),
        # Only arms towards a non-host device call the device (storage_from_<host>_storage).
        "uses_to_device": uses(
            "Result",
            "Device",
            "Storage",
            "BackendStorage",
            *(("BackendDevice",) if any(v.backend.ordinal for v in vs) and not _any_cfg(vs) else ()),
            cfg_uses=((gpu_cfg, "crate::backend::BackendDevice"),) if (gpu_cfg := _any_cfg(vs)) else (),
        ),
        "nn_ops": nn_ops(registry, vs, entry_points) if kernels else (),
        "numbered": tuple(v for v in vs if v.backend.ordinal),
        "library_crate": (spelled.crate if spelled else "") or "crate",
        "thiserror": bool(spelled and spelled.thiserror),
        "qtensor": spelled.qtensor if spelled else None,
        "qtensor_hooks": qtensor_hooks(registry) if spelled and spelled.qtensor else (),
        "ug_op": spelled.ug_op if spelled else None,
        "ug_hooks": ug_hooks(registry, spelled.ug_op) if spelled and spelled.ug_op else (),
        **_trait_context(registry, spelled),
        **(comm_context(registry) if registry.collectives else {}),
    }


TRAIT_BOUNDS = {
    "BackendStorage": "Sized",
    "BackendDevice": "Sized + std::fmt::Debug + Clone",
    "QBackendStorage": "Sized",
}
TRAIT_NAMES = (*TYPE_NAMES, "CpuStorage", "DeviceLocation", "WithDType")


def _trait_context(registry: model.Registry, spelled: model.Profile | None) -> dict:
    """The backend traits (backend.rs) and the dummy backends, where the profile asks for them."""
    if spelled is None or not spelled.trait_methods:
        return {"backend_traits": (), "uses_backend": (), "uses_dummy": (), "has_qtrait": False}
    found = traits(registry, spelled)
    text = re.sub(r"Self::\w+", "", "\n".join(line for t in found for m in t.methods for line in m.signature))
    names = set(TRAIT_NAMES) & set(_WORD.findall(text))
    has_q = any(t.name == "QBackendStorage" for t in found)
    return {
        "backend_traits": found,
        "trait_bounds": TRAIT_BOUNDS,
        "has_qtrait": has_q,
        "uses_backend": uses("Result", *names),
        "uses_dummy": uses("Error", "Result", *(t.name for t in found), *names),
    }


def ggml_variants(registry: model.Registry) -> tuple[tuple[str, model.QFormat], ...]:
    """(Rust variant, format) of each quantized format, as candle-core's GgmlDType spells it:
    upper case, the K-quants without their underscore (q4_0 -> Q4_0, q4_k -> Q4K)."""
    return tuple((re.sub(r"_K$", "K", f.name.upper()), f) for f in registry.formats)


def _calls_a_device(methods: tuple[Method, ...]) -> bool:
    """Whether an arm calls a backend device's method (BackendDevice must be in scope)."""
    return any(_DEVICE_CALL.search(line) for m in methods for a in m.arms for line in a.body)


_DEVICE_CALL = re.compile(r"(?:\bd|crate::\w+Device)\.\w+\(")


def _any_cfg(vs: tuple[Variant, ...]) -> str | None:
    gates = [v.cfg for v in vs if v.cfg]
    return None if not gates else gates[0] if len(gates) == 1 else f"any({', '.join(gates)})"


def outputs(registry: model.Registry) -> dict[str, tuple[str, dict]]:
    """Output file -> (its template, what it adds to the context), for this registry."""
    files = ["backends.rs", "device.rs", "storage.rs", "custom_op.rs", "to_device.rs"]
    files += ["quantized.rs"] if registry.qstorage or any(op.returns == "QStorage" for op in registry.device) else []
    files += ["launch.rs"] if any(b.kernels == "hip" for b in registry.backends) else []
    files += ["switches.rs"] if registry.switches else []
    files += ["comm.rs"] if registry.collectives else []
    spelled = profile(registry)
    files += ["backend.rs"] if spelled and spelled.trait_methods else []
    files += ["nn_ops.rs"] if registry.nn and "launch.rs" in files else []
    # the sites around the dispatch that construct devices by the profile's `new_<backend>`
    files += ["backend_error.rs", "test_device.rs"] if spelled else []
    files += ["python_device.rs"] if spelled and spelled.crate else []
    files += ["qtensor_op.rs"] if spelled and spelled.qtensor and "quantized.rs" in files else []
    files += ["ug_op.rs"] if spelled and spelled.ug_op else []
    out: dict[str, tuple[str, dict]] = {f: (f"{f}.j2", {}) for f in files}
    for d in dummies(registry, spelled):
        v = d.variant
        out[f"dummy_{v.module}.rs"] = (
            "dummy_backend.rs.j2",
            {
                "dummy": d,
                "dummy_types": {"BackendStorage": v.storage, "BackendDevice": v.device, "QBackendStorage": v.qstorage},
                "dummy_assoc": {
                    "BackendStorage": (f"type Device = {v.device};",),
                    "BackendDevice": (f"type Storage = {v.storage};",),
                    "QBackendStorage": (f"type Storage = {v.storage};", f"type Device = {v.device};"),
                },
            },
        )
    return out


def environment() -> jinja2.Environment:
    """The Python target's Jinja settings (strict, cached), over templates/rust/."""
    return python_environment(TEMPLATES)


def render(registry: model.Registry) -> dict[str, str]:
    """Every generated Rust file's text, by name; each is parsed (tree-sitter) before anything is written."""
    env = environment()
    ctx = context(registry)
    rendered = {}
    for output, (template, extra) in sorted(outputs(registry).items()):
        text = env.get_template(template).render({**ctx, **extra} if extra else ctx)
        if output not in LAID_OUT:
            text = rust_layout.fit(text)
        check_rust(template, output, text)
        rendered[output] = text
    return rendered

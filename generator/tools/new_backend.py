"""`gen new-backend`: one line in the registry and a runtime module of stubs, checked together
before either is written, so that a refused request changes nothing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..model import Registry
from ..output import atomic
from ..registry.declared import key_lines
from ..registry.diagnostics import RegistryError
from ..registry.loader import load_file, load_text
from ..registry.runtime_scan import module_path, pending
from ..registry.validate import validate
from .registry_edit import EditRefused, add_backend
from .scaffold import runtime_module

NAME = re.compile(r"[a-z][a-z0-9_]*")


class Refused(Exception):
    """Why the backend cannot be added: one message per line, FILE:LINE:COL where about a file."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = messages
        super().__init__("\n".join(messages))


@dataclass(frozen=True)
class NewBackend:
    registry: Path
    registry_text: str
    line: int  # of the entry
    entry: str
    runtime: Path
    runtime_text: str
    stubs: int


def _diagnostics(exc: RegistryError) -> list[str]:
    return [str(d) for d in exc.diagnostics]


def default_module(registry: Registry, name: str) -> str:
    """Beside the other backends' runtime modules: runtime.cpu, runtime.cuda -> runtime.<name>."""
    packages = {b.runtime.rpartition(".")[0] for b in registry.backends}
    package = packages.pop() if len(packages) == 1 else "runtime"
    return f"{package}.{name}" if package else name


def plan(registry: Path, name: str, runtime: str | None, ordinal: bool, doc: str | None) -> NewBackend:
    if not NAME.fullmatch(name):
        raise Refused(
            [f"error: {name!r} is not a backend name: a lower-case letter, then lower-case letters, digits and _"]
        )
    root = registry.resolve().parent
    try:
        tree = load_file(str(registry))
        current = validate(tree, root)
    except RegistryError as exc:
        raise Refused([*_diagnostics(exc), f"{registry}: fix the registry first; nothing changed"]) from None
    module = runtime or default_module(current, name)
    if not all(part.isidentifier() for part in module.split(".")):
        raise Refused([f"error: --runtime {module!r} is not a dotted module name"])
    fields = [("runtime", module), ("ordinal", "true" if ordinal else "false")]
    if doc:
        fields.append(("doc", json.dumps(doc)))  # a JSON string is a YAML double-quoted scalar
    text = registry.read_bytes().decode("utf-8")
    try:
        inserted = add_backend(text, str(registry), name, fields)
    except EditRefused as exc:
        raise Refused([str(exc)]) from None
    existing = module_path(root, module)
    if existing is not None:
        raise Refused([f"{existing}:1:1: runtime module {module!r} exists; refusing to overwrite it"])
    target = root.joinpath(*module.split(".")).with_suffix(".py")
    if not target.parent.is_dir():
        raise Refused([f"error: {target.parent} does not exist: create the package of {module!r} first"])
    shown = target.relative_to(root) if target.is_relative_to(root) else target
    source = runtime_module(current, name, str(shown), key_lines(tree))
    try:
        with pending({target: source}):
            validate(load_text(inserted.text, str(registry)), root)
    except RegistryError as exc:
        refusal = f"{registry}: the entry would make the registry invalid; nothing changed"
        raise Refused([*_diagnostics(exc), refusal]) from None
    stubs = source.count("\n    raise NotImplementedForBackend(")
    return NewBackend(registry, inserted.text, inserted.line, inserted.entry, target, source, stubs)


def write(new: NewBackend) -> None:
    """The runtime module first: a registry naming a module that is not there would not load."""
    if new.runtime.exists():
        raise Refused([f"{new.runtime}:1:1: appeared while planning; refusing to overwrite it"])
    atomic.write_text(new.runtime, new.runtime_text)
    try:
        atomic.write_text(new.registry, new.registry_text)
    except BaseException:
        new.runtime.unlink(missing_ok=True)
        raise

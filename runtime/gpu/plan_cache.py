"""cuDNN's chosen plans on disk, so that a second process starts warm: the kernel cache's design
(runtime/gpu/compile.py) for what runtime/gpu/cudnn.py chooses at a graph's first call.

An entry is `<directory>/KEY.json`, in the kernel cache's format (the sha256 of KEY and of the
JSON text, then the text: an entry copied from another key is not taken); KEY digests the
backend, the device's name and architecture, the cuDNN and frontend versions, and the graph's
own key (op, dtype, dims, strides, parameters, precision mode, heuristic or autotuned). The
JSON holds the plan's index among the heuristics' plans (autotuning's choice, or None: the
heuristics' own), the uids of the graph's tensors in the order the op passes addresses, and the
built plan as the frontend serializes it (base64; empty where it cannot), which deserializes
without asking the heuristics or compiling a runtime-fused kernel again.

Damage never costs a result: a damaged or unreadable entry is as if there were none (the plan
is chosen again and the entry replaced), a directory that cannot be written means choosing in
every process; the first such fault of a cache gives a KernelCacheWarning, saying which."""

from __future__ import annotations

import base64
import json
import warnings
from pathlib import Path
from typing import Any

from runtime.gpu.compile import _digest, entry_blob, read_entry, store_entry, sweep_old_temps
from runtime.gpu.errors import KernelCacheWarning


def plan_key(*parts: Any) -> str:
    """The entry's key: a digest of the parts' reprs (ints, strings, tuples of them)."""
    return _digest(*(repr(part).encode() for part in parts))


class PlanCache:
    """Entries (dicts of JSON values) under `directory`, by plan_key."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._warned = False
        self._swept = False

    def get(self, key: str) -> dict | None:
        """The entry of `key`, or None (none, or damaged: one warning, then chosen again)."""
        path = self.directory / f"{key}.json"
        text, damage = read_entry(path, key)
        if text is None:
            if damage:
                self._warn(f"plan cache: {path} {damage}; the plan is chosen again and the entry replaced")
            return None
        try:
            entry = json.loads(text)
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            self._warn(f"plan cache: {path} does not hold a plan; the plan is chosen again and the entry replaced")
            return None
        return entry

    def put(self, key: str, entry: dict) -> None:
        """Store `entry` atomically; where the directory cannot be written, one warning."""
        text = json.dumps(entry, sort_keys=True).encode()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if not self._swept:  # temp files of stores killed an hour ago or more
                self._swept = True
                sweep_old_temps(self.directory)
            failure = store_entry(self.directory / f"{key}.json", key, entry_blob(key, text))
        except OSError as exc:
            failure = exc.strerror or str(exc)
        if failure:
            self._warn(
                f"plan cache: cannot write to {self.directory} ({failure}); plans are chosen in every process "
                "(set OPGEN_CACHE_DIR to a writable directory)"
            )

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(KernelCacheWarning(message), stacklevel=4)


def encode_blob(blob: bytes) -> str:
    return base64.b64encode(blob).decode("ascii")


def decode_blob(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)

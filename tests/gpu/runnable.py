"""The GPU backends that can run here, for test modules that compare them against the cpu:
a module with none skips as a whole, saying each backend's reason."""

from __future__ import annotations

import pytest

import generated as g


def gpu_backends_or_skip() -> list[g.Backend]:
    """Every non-cpu backend that can run here; skips the calling module where none can."""
    reasons = {b: b.unavailable_reason() for b in g.Backend if b is not g.Backend.CPU}
    runnable = [b for b, reason in reasons.items() if reason is None]
    if not runnable:
        pytest.skip(
            "no GPU backend can run here: " + "; ".join(f"{b.value}: {r}" for b, r in reasons.items()),
            allow_module_level=True,
        )
    return runnable

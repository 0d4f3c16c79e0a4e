"""`gen` turns the cyclic garbage collector off while it generates (a speed-up); the caller's
interpreter gets it back however the run ends: written, stale, or a broken registry."""

from __future__ import annotations

import gc

import pytest
from gen_harness import BROKEN, MINI, run_cli


@pytest.mark.parametrize("case", ["written", "stale", "broken"])
def test_collector_is_enabled_again_after_gen(case, tmp_path):
    out = tmp_path / "pkg"
    args = {
        "written": ("--registry", MINI, "--out", out),
        "stale": ("--registry", MINI, "--out", out, "--check"),
        "broken": ("--registry", sorted(BROKEN.glob("*.yaml"))[0], "--out", out),
    }[case]
    assert gc.isenabled()
    result = run_cli(*args)
    assert result.exit_code == {"written": 0, "stale": 1, "broken": 2}[case], result.output
    assert gc.isenabled()


def test_a_caller_that_disabled_the_collector_keeps_it_disabled(tmp_path):
    gc.disable()
    try:
        assert run_cli("--registry", MINI, "--out", tmp_path / "pkg").exit_code == 0
        assert not gc.isenabled()
    finally:
        gc.enable()

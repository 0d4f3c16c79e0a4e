"""Options of the whole test suite. They live here, at the top of testpaths, so that pytest
knows them however it is started (`pytest`, `pytest tests/generator`, one file)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/mini/ from tests/fixtures/mini/ops.yaml (generator tests)",
    )


# A backend in progress (`gen new-backend`, then its stubs replaced one by one) runs every suite
# that takes the available backends; what it does not implement yet raises
# NotImplementedForBackend. Where `gen parity` lists that op as MISSING on that backend, the test
# is skipped with the error's words ("no vulkan implementation for zeros"); anywhere else the
# error fails the test as before.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    try:
        return (yield)
    except Exception as exc:
        _skip_if_listed_missing(exc)
        raise


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    try:
        return (yield)
    except Exception as exc:
        _skip_if_listed_missing(exc)
        raise


def _skip_if_listed_missing(exc: BaseException) -> None:
    from runtime.errors import NotImplementedForBackend

    if isinstance(exc, NotImplementedForBackend) and exc.op in _missing_ops().get(exc.backend, ()):
        pytest.skip(f"{exc} (gen parity lists it as missing)")


_MISSING: dict[str, frozenset[str]] = {}


def _missing_ops() -> dict[str, frozenset[str]]:
    """Backend -> the ops `gen parity` lists as MISSING there, by their short names (zeros,
    binary, to_host), from this checkout's registry and runtime modules."""
    if not _MISSING:
        from pathlib import Path

        from generator.registry.loader import load_file
        from generator.registry.validate import validate
        from generator.tools.parity import parity_rows

        registry = Path(__file__).resolve().parents[1] / "ops.yaml"
        rows = parity_rows(validate(load_file(str(registry)), registry.parent))
        found: dict[str, set[str]] = {}
        for row in rows:
            short = row["op"].split(".")[-1]
            for backend, status in row.items():
                if status == "MISSING":
                    found.setdefault(backend, set()).add(short)
        _MISSING.update({backend: frozenset(ops) for backend, ops in found.items()})
        _MISSING.setdefault("", frozenset())  # computed, even where nothing is missing
    return _MISSING

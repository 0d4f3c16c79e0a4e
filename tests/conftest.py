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

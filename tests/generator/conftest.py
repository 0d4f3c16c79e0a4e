"""Fixtures of the generator tests. `--update-golden` (declared in tests/conftest.py)
rewrites tests/golden/mini/."""

from __future__ import annotations

import pytest
from gen_harness import Importer, workspace


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def importer():
    imp = Importer()
    yield imp
    imp.close()


@pytest.fixture(scope="session")
def package_importer():
    imp = Importer()
    yield imp
    imp.close()


@pytest.fixture(scope="session")
def ws(tmp_path_factory: pytest.TempPathFactory):
    """A workspace shared by the whole test run with a copy of the fixture runtimes (mini_rt/)."""
    return workspace(tmp_path_factory.mktemp("ws"))

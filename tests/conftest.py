"""Shared test fixtures: one SparkSession per run, and the ``--rewrite`` option of golden files."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--rewrite", action="store_true", help="rewrite golden fixture files")


@pytest.fixture(scope="session")
def rewrite(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--rewrite"))


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """The one SparkSession of the test run (``getOrCreate`` hands every caller the same)."""
    from matview.runtime.session import start_session

    return start_session()

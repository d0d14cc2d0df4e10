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


@pytest.fixture()
def con(spark):  # type: ignore[no-untyped-def]
    """A connection on a manual clock at 0 with tables ``customers (id, region)``, holding two
    customers, and ``orders (id, cust, amount, note)``, empty."""
    import matview

    connection = matview.connect(clock=0, spark=spark)
    connection.execute("CREATE TABLE customers (id INT, region TEXT)")
    connection.execute("CREATE TABLE orders (id INT, cust INT, amount BIGINT, note TEXT)")
    connection.execute("INSERT INTO customers VALUES (1, 'eu'), (2, 'us')")
    return connection

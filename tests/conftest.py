"""Shared test fixtures: one SparkSession per run, on the Spark master ``--spark-master`` names
(local mode by default; ``tests/cluster/test_cluster.py`` runs on a real cluster), and the
``--rewrite`` option of golden files. Every test asking for the session, directly or through
other fixtures, is marked ``spark`` (``pytest -m "not spark"`` runs without a JVM)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--rewrite", action="store_true", help="rewrite golden fixture files")
    parser.addoption(
        "--spark-master", default=None, metavar="MASTER",
        help="the Spark master the run's session starts on (default local[2]), e.g. "
             "'local-cluster[2,1,1024]' (two executors, each a JVM of its own), "
             "spark://host:7077 or sc://host:15002 (a Spark Connect server)")
    parser.addoption(
        "--spark-connect", action="store_true",
        help="reach the master through a Spark Connect server the run starts in front of it")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``spark`` every test whose fixtures (their closure) include the session."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def rewrite(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--rewrite"))


@pytest.fixture(scope="session")
def spark_master(request: pytest.FixtureRequest) -> str:
    """The master the run's session is on (``--spark-master``, default ``local[2]``)."""
    return request.config.getoption("--spark-master") or "local[2]"


LOCAL_CONFIG = {"spark.sql.codegen.wholeStage": "false",
                "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
"""The Spark settings of a run in local mode (the main run) beyond matview's own: Spark's
expressions interpreted, not compiled. Every plan of these tests reads a few rows, and
generating and compiling each new plan's code (Janino, then the JIT on the second core) was
about a fifth of the run: ``test_maintained_subqueries`` 125 s against 94.5 s, the oracle
loop 276 s against 233 s. The cluster runs keep Spark's code generation, as a user's
session has it, so both kinds of evaluation run every workload they share."""


CLUSTER_CONFIG = {"spark.executor.extraJavaOptions": "-Xss32m -XX:TieredStopAtLevel=1"}
"""The Spark settings of a cluster run beyond matview's own: executor JVMs compiling with the
JIT's first tier only (C1; the generated code Spark compiles still runs). Their tasks read a
few rows each, yet on 2 cores each executor's C2 compiler took some 60 s of CPU, competing
with the driver that plans every step: the classic run took 397 s with it and 335 s
without. The driver keeps C2 (with C1 only, 366 s: Catalyst's planning is hot code)."""


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest, spark_master: str) -> SparkSession:
    """The one SparkSession of the test run (``getOrCreate`` hands every caller the same):
    on ``--spark-master``, through a Spark Connect server of its own with
    ``--spark-connect``; in local mode with ``LOCAL_CONFIG``, else ``CLUSTER_CONFIG``."""
    from matview.runtime.spark.session import start_session

    config = LOCAL_CONFIG if spark_master.startswith("local[") else CLUSTER_CONFIG
    return start_session(spark_master, config,
                         connect=request.config.getoption("--spark-connect"))


@pytest.fixture()
def settings() -> dict[str, int | float]:
    """The runtime settings ``con`` changes (none; a module overrides this fixture to run its
    tests with others, e.g. ``{"table_copy_rows": 0}``)."""
    return {}


@pytest.fixture()
def runtime_settings() -> Iterator[Callable[..., None]]:
    """``runtime_settings(name=value, ...)``: the rest of the test runs with those runtime
    settings (``matview.runtime.settings.using``), and the connections it opens after the call
    take them."""
    from matview.runtime.settings import active, using

    with ExitStack() as stack:
        yield lambda **changes: stack.enter_context(using(active().replaced(changes)))


@pytest.fixture()
def con(spark, settings):  # type: ignore[no-untyped-def]
    """A connection on a manual clock at 0 with tables ``customers (id, region)``, holding two
    customers, and ``orders (id, cust, amount, note)``, empty; ``settings`` its runtime
    settings."""
    import matview

    connection = matview.connect(clock=0, spark=spark, settings=settings)
    connection.execute("CREATE TABLE customers (id INT, region TEXT)")
    connection.execute("CREATE TABLE orders (id INT, cust INT, amount BIGINT, note TEXT)")
    connection.execute("INSERT INTO customers VALUES (1, 'eu'), (2, 'us')")
    return connection

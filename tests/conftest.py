"""Shared test fixtures: one SparkSession per run, on the Spark master ``--spark-master`` names
(local mode by default; ``tests/cluster/test_cluster.py`` runs on a real cluster), and the
``--rewrite`` option of golden files. Every test asking for the session, directly or through
other fixtures, is marked ``spark`` (``pytest -m "not spark"`` runs without a JVM)."""

from __future__ import annotations

import socket
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
        "--spark-api", choices=("classic", "connect", "both"), default="classic",
        help="how the tests reach the master: classic PySpark (the default), through a Spark "
             "Connect server the run starts in front of it, or both: every test asking for "
             "the session runs classic and then again through a Spark Connect server in "
             "front of the same SparkContext, in one process")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """With ``--spark-api both``, every test asking for the session runs once per API."""
    if metafunc.config.getoption("--spark-api") == "both" and "spark" in metafunc.fixturenames:
        metafunc.parametrize("spark_api", ["classic", "connect"], scope="session")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``spark`` every test whose fixtures (their closure) include the session; run the
    tests through Spark Connect after every classic one (a Spark Connect client switches
    PySpark's functions to Spark Connect's for the whole process: ``is_remote``)."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
    items.sort(key=lambda item: _api(item) == "connect")


def _api(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("spark_api")


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

LOCAL_DRIVER_JVM = "-XX:+UseParallelGC -XX:CompileThresholdScaling=0.3"
"""The options of a local run's driver JVM beyond matview's own. The parallel garbage
collector, not G1: the run is a throughput of short plans whose garbage dies young, and
G1's barriers and concurrent threads took a share of the two cores (five feature and oracle
modules took 180, 179 and 186 s with it against 210, 191 and 192 s with G1, the three
largest 526 s against 568 s: bench/README.md). And the JIT compiling a method after a
third of the calls it waits for by default: the run's thread planning every step waits on
Catalyst's code being compiled, which the JIT's threads do on the other core (five modules
took 124.9 and 126.9 s with it against 129.2 and 130.5 s without, in alternation; later,
slower, 161.0 and 161.9 s against 171.3 and 174.5 s). The cluster runs keep the JVM's
defaults, as a user's session has them."""


CLUSTER_CONFIG = {"spark.executor.extraJavaOptions": "-Xss32m -XX:TieredStopAtLevel=1"}
"""The Spark settings of a cluster run beyond matview's own: executor JVMs compiling with the
JIT's first tier only (C1; the generated code Spark compiles still runs). Their tasks read a
few rows each, yet on 2 cores each executor's C2 compiler took some 60 s of CPU, competing
with the driver that plans every step: the classic run took 397 s with it and 335 s
without. The driver keeps C2 (with C1 only, 366 s: Catalyst's planning is hot code)."""


@pytest.fixture(scope="session")
def spark_api(request: pytest.FixtureRequest) -> str:
    """``classic`` or ``connect``: the API the test's session is reached through
    (``--spark-api``; with ``both``, a parameter of the test)."""
    return str(request.config.getoption("--spark-api"))


@pytest.fixture(scope="session")
def serving_spark(request: pytest.FixtureRequest, spark_master: str) -> SparkSession:
    """With ``--spark-api both``, the classic session on ``--spark-master`` whose
    SparkContext also serves Spark Connect (``SparkConnectPlugin``) on a free port of
    127.0.0.1, kept in ``spark.connect.grpc.binding.port``."""
    from matview.runtime.spark.session import start_session

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return start_session(spark_master, {
        **_config(spark_master), "spark.plugins": CONNECT_PLUGIN,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port)})


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest, spark_master: str, spark_api: str) -> SparkSession:
    """The SparkSession of the test (``getOrCreate`` hands every caller the same): on
    ``--spark-master``, classic or through Spark Connect as ``spark_api`` says; in local
    mode with ``LOCAL_CONFIG``, else ``CLUSTER_CONFIG``. With ``--spark-api both`` both are
    in front of one SparkContext (``serving_spark``): the classic tests run first."""
    from matview.runtime.spark.session import start_session

    if request.config.getoption("--spark-api") != "both":
        return start_session(spark_master, _config(spark_master),
                             connect=spark_api == "connect")
    context: SparkSession = request.getfixturevalue("serving_spark")
    if spark_api == "classic":
        return context
    port = context.conf.get("spark.connect.grpc.binding.port")
    return start_session(f"sc://127.0.0.1:{port}", _config(spark_master))


CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
"""The Spark plugin that serves Spark Connect from a SparkContext."""


def _config(master: str) -> dict[str, str]:
    if not master.startswith("local["):
        return CLUSTER_CONFIG
    from matview.runtime.spark.session import DEFAULT_CONFIG

    java = DEFAULT_CONFIG["spark.driver.extraJavaOptions"]
    return {**LOCAL_CONFIG, "spark.driver.extraJavaOptions": f"{java} {LOCAL_DRIVER_JVM}"}


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

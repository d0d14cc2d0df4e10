"""Creating the SparkSession matview runs on, with the configuration chosen from
``SPARK_NOTES.md`` and ``bench/README.md``: few shuffle partitions, no adaptive execution,
no constraint propagation, deep thread stacks, no UI, Arrow transfers, UTC session time zone
(SQL TIMESTAMP has no zone) and ANSI arithmetic (overflow and division by zero are errors,
as in PostgreSQL); a driver JVM it starts maps the archive of Spark's classes
(``class_archive``)."""

from __future__ import annotations

import os
import shutil
import socket
import urllib.parse
import warnings
from collections.abc import Mapping
from pathlib import Path

from matview.runtime.spark.class_archive import archive_options
from matview.runtime.spark.jvm_objects import jvm_helper
from pyspark import SparkContext
from pyspark.sql import SparkSession

DEFAULT_CONFIG: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.ansi.enabled": "true",
    # Catalyst's constraint propagation infers constraints from every alias of every
    # expression; over a join feeding a Reduce whose rows carry errors as data (TPC-H Q10)
    # planning one step took 550 s with it and 6 s without (bench/README.md)
    "spark.sql.constraintPropagation.enabled": "false",
    # a join whose sides are each one partition (a small step's lookups) keeps them so only
    # while Spark's size estimate of each side is at most this; the estimate of a join is
    # the product of its inputs' sizes, so from a path's second lookup on the 128 MB default
    # was passed and every later lookup shuffled both its sides (bench/README.md)
    "spark.sql.maxSinglePartitionBytes": "9223372036854775807b",
    # a small step's semi-join (the state of a GROUP BY restricted to the keys it touches)
    # reads both sides in one partition, with no shuffle (``updates.lookup``); Catalyst's
    # PushDownLeftSemiAntiJoin moved the join below its left side's coalesce, which brought
    # a shuffle of both sides back, and a plan with a shuffle is planned anew each step
    # (``ArrowCollect``): a step of a GROUP BY with max over a join of 3-row tables took
    # 0.5-0.7 s instead of 0.06 s
    "spark.sql.optimizer.excludedRules":
        "org.apache.spark.sql.catalyst.optimizer.PushDownLeftSemiAntiJoin",
    # a lookup of a delta's keys in a batch arranged by key filters it by ``key IN (...)``,
    # which Parquet tests against each page's key range only up to this many values
    # (Spark's default 10; more are tested as one range, which skips nothing)
    "spark.sql.parquet.pushdown.inFilterThreshold": "1000",
    "spark.log.level": "OFF",
    "spark.cleaner.periodicGC.interval": "1min",
    "spark.driver.memory": "4g",
    # every sort, hash aggregate and hash join of a task reserves memory a page at a time;
    # the default page (up to 64 MB, from the driver's memory and cores) let a large step's
    # plan of a GROUP BY with array_agg (its sorts, aggregates and joins all in one task)
    # exhaust the task's share before its last join: UNABLE_TO_ACQUIRE_MEMORY in
    # tests/features/test_ordered_aggregates.py, which passes with pages of 4 or 8 MB
    "spark.buffer.pageSize": "8m",
    # Spark converts, analyzes and optimizes expressions recursively: the default 1 MB
    # thread stack overflows at a sum of about 150 terms whose overflow is checked; the
    # binder allows a few hundred
    "spark.driver.extraJavaOptions": "-Xss32m",
    "spark.executor.extraJavaOptions": "-Xss32m",
    # Spark keeps the classes it compiled for generated code in a cache of 100 by default:
    # a refresh of six TPC-H views runs more plans than that, so each step compiled its code
    # again (0.2-0.4 s a plan); the classes take a few MB of metaspace (bench/README.md)
    "spark.sql.codegen.cache.maxEntries": "1000",
    # PySpark otherwise records the Python call site with five JVM calls per DataFrame or
    # Column function, which doubled the cost of building a step's plans (bench/README.md)
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}

SESSION_CONFIG = ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled",
                  "spark.sql.session.timeZone", "spark.sql.ansi.enabled",
                  "spark.sql.constraintPropagation.enabled",
                  "spark.sql.maxSinglePartitionBytes", "spark.sql.optimizer.excludedRules",
                  "spark.sql.parquet.pushdown.inFilterThreshold")


class JavaMissingError(RuntimeError):
    """No Java runtime was found to start Spark."""


class SparkUnreachableError(RuntimeError):
    """The Spark Connect server a session was to reach does not answer."""


def _check_reachable(url: str, seconds: float = 5.0) -> None:
    """Spark Connect's client retries a server that does not answer for minutes before its
    first statement fails, saying nothing: a server that cannot be reached (nothing
    listening there, no such host) is refused at once instead."""
    parsed = urllib.parse.urlparse(url)
    host, port = parsed.hostname or "localhost", parsed.port or 15002
    try:
        with socket.create_connection((host, port), timeout=seconds):
            pass
    except OSError as error:
        raise SparkUnreachableError(f"cannot reach the Spark Connect server at {host}:{port}: "
                                    f"{error.strerror or error}") from None


def _check_java() -> None:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return
    if shutil.which("java") is None:
        raise JavaMissingError(
            "matview runs on Apache Spark, which needs a Java runtime (Java 17 or 21), and "
            "none was found: install one (e.g. `apt-get install openjdk-17-jre-headless`) or "
            "set JAVA_HOME"
        )


def start_session(master: str | None = None, config: Mapping[str, str] | None = None,
                  connect: bool = False) -> SparkSession:
    """A SparkSession on ``master`` (default ``local[2]``; ``sc://host:port`` for a Spark
    Connect server), configured for small incremental jobs; ``config`` overrides the
    defaults. ``connect`` starts a local master behind a Spark Connect server of its own."""
    settings = {**DEFAULT_CONFIG, **(config or {})}
    if not (master and master.startswith("sc://")) and SparkContext._active_spark_context is None:
        # a driver JVM starts: it maps the archive of its classes (or writes it), and logs
        # nothing unless asked to
        java = settings.get("spark.driver.extraJavaOptions", "")
        settings["spark.driver.extraJavaOptions"] = " ".join(
            o for o in (java, archive_options(java), _logging(java)) if o)
    if (master or "local").startswith("local") and not (
            {"spark.driver.bindAddress", "spark.driver.host"} & settings.keys()):
        # a driver on this machine listens on loopback only, as matview's SQL port does
        settings.update({"spark.driver.bindAddress": "127.0.0.1",
                         "spark.driver.host": "127.0.0.1"})
    if master and master.startswith("sc://"):
        # Spark Connect's own builder, as SparkSession.builder.remote would, but also beside a
        # classic session of this process (which that one refuses), e.g. one whose
        # SparkContext serves the server (``SparkConnectPlugin``)
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        _check_reachable(master)
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        builder = ConnectSession.builder.remote(master)
        settings = {k: v for k, v in settings.items() if k in SESSION_CONFIG}
    elif connect:
        _check_java()
        builder = SparkSession.builder.remote(master or "local[2]")
    else:
        _check_java()
        builder = SparkSession.builder.master(master or "local[2]").appName("matview")
    for key, value in settings.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():
        # a local Spark Connect server takes the static settings at start; the client then
        # warns that it cannot set them on the session
        warnings.filterwarnings("ignore", message="Failed to set")
        return builder.getOrCreate()


def _logging(java_options: str) -> str:
    """The JVM options giving a driver about to start matview's logging settings
    (``log4j2.properties`` beside this module: nothing logged, so that Spark's start prints
    none of its warnings and notices), unless ``java_options`` names a logging
    configuration of the user's; ``MATVIEW_SPARK_LOG`` names the level shown instead
    (``default``: Spark's own settings)."""
    level = os.environ.get("MATVIEW_SPARK_LOG", "off").strip().lower()
    if "log4j2.configurationFile" in java_options or level == "default":
        return ""
    path = Path(__file__).with_name("log4j2.properties")
    return f"-Dlog4j2.configurationFile={path.as_uri()} -Dmatview.spark.log={level}"


def isolated(spark: SparkSession) -> SparkSession:
    """A session for matview's plans beside the user's ``spark``: ``spark.newSession()`` (the
    same SparkContext, or Spark Connect server, with a SQL conf of its own) holding the
    session-level settings matview relies on, so that the user's session is left exactly as
    it was."""
    own = spark.newSession()
    for key in SESSION_CONFIG:
        own.conf.set(key, DEFAULT_CONFIG[key])
    return own


def spark_lost(spark: SparkSession) -> bool:
    """Whether ``spark`` is gone: a classic session whose context stopped or whose JVM does
    not answer, a Spark Connect session that was stopped."""
    try:
        if type(spark).__module__.startswith("pyspark.sql.connect"):  # no context to ask
            return bool(spark.is_stopped)  # type: ignore[attr-defined]
        jsc = spark.sparkContext._jsc
        return jsc is None or bool(jsc.sc().isStopped())
    except Exception:  # no JVM (or server) to answer
        return True


def without_read_check(spark: SparkSession) -> None:
    """``spark``'s analyzer without Spark's ``PreReadCheck``, which rebuilds every expression
    of a plan at each Dataset made over it, looking for ``input_file_name()`` over two
    sources, a function matview's plans never call (``AnalyzerChecks.java``). Only in
    sessions matview's plans run in (its own, or its ``isolated`` one beside a user's); not
    in Spark Connect sessions, which build no Dataset here."""
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        jvm_helper(spark, "AnalyzerChecks").withoutReadCheck(spark._jsparkSession)

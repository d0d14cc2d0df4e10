"""Stopping a running statement (``matview.interrupts``): ``Connection.interrupt`` from
another thread, and on the server psycopg's cancel and ``statement_timeout``; the statement
fails with SQLSTATE 57014 within seconds and the connection goes on working."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import errors as pg_errors
from pyspark.sql import SparkSession

import matview
from matview.server import Server, serve

LONG = "SELECT count(*) FROM t x, t y, t z WHERE x.a + y.a + z.a = 7"
"""A query whose one Spark job runs for minutes (27 billion joined rows)."""


@pytest.fixture(scope="module")
def con(spark: SparkSession) -> Iterator[matview.Connection]:
    connection = matview.connect(spark=spark, max_join_rows=10**12)
    connection.execute("CREATE TABLE t (a INT)")
    connection.insert("t", [(i,) for i in range(3000)])
    yield connection
    connection.close()


def _running(con: matview.Connection, sql: str) -> tuple[threading.Thread, dict[str, object]]:
    """``sql`` started on another thread, once its Spark job runs."""
    outcome: dict[str, object] = {}
    tracker = con.spark.sparkContext.statusTracker()  # (con.spark waits for a statement)

    def run() -> None:
        started = time.monotonic()
        try:
            outcome["rows"] = con.execute(sql).fetchall()
        except matview.Error as error:
            outcome["error"] = error
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while not tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.05)
    return thread, outcome


def test_an_interrupted_query_fails_and_the_connection_goes_on(con: matview.Connection) -> None:
    con.interrupt()  # nothing runs: nothing happens, and no later statement is stopped
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(3000,)]
    thread, outcome = _running(con, LONG)
    asked = time.monotonic()
    con.interrupt()
    thread.join(timeout=60)
    assert not thread.is_alive() and time.monotonic() - asked < 10
    error = outcome.get("error")
    assert isinstance(error, matview.QueryCanceled), outcome
    assert str(error) == "canceling statement due to user request"
    assert con.execute("SELECT count(*) FROM t WHERE a < 10").fetchall() == [(10,)]


@pytest.fixture(scope="module")
def server(con: matview.Connection) -> Iterator[Server]:
    running = serve(con, port=0, poll=0.05)
    yield running
    running.close()


def _client(server: Server) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=server.port, user="u", dbname="matview",
                           autocommit=True, connect_timeout=10)


def test_a_cancel_request_stops_a_query(server: Server) -> None:
    with _client(server) as client:
        # cancel_safe: cancel() holds the GIL while libpq waits for this in-process server
        threading.Timer(3.0, client.cancel_safe).start()
        started = time.monotonic()
        with pytest.raises(pg_errors.QueryCanceled,
                           match="canceling statement due to user request"):
            client.execute(LONG)
        assert time.monotonic() - started < 15
        assert client.execute("SELECT count(*) FROM t").fetchone() == (3000,)


def test_statement_timeout_stops_a_query(server: Server) -> None:
    with _client(server) as client:
        with pytest.raises(pg_errors.InvalidParameterValue,
                           match='invalid value for parameter "statement_timeout": "soon"'):
            client.execute("SET statement_timeout = 'soon'")
        client.execute("SET statement_timeout = '2s'")
        assert client.execute("SHOW statement_timeout").fetchone() == ("2s",)
        assert client.execute("SELECT count(*) FROM t").fetchone() == (3000,)  # in time
        started = time.monotonic()
        with pytest.raises(pg_errors.QueryCanceled,
                           match="canceling statement due to statement timeout"):
            client.execute(LONG)
        assert time.monotonic() - started < 15
        client.execute("SET statement_timeout = 0")
        assert client.execute("SELECT count(*) FROM t WHERE a = 1").fetchone() == (1,)

"""``now()``, ``current_timestamp [(p)]``, ``statement_timestamp()``,
``transaction_timestamp()``, ``localtimestamp [(p)]``, ``current_date``, ``current_time
[(p)]`` (a TIMETZ, as PostgreSQL's) and ``localtime [(p)]`` (``sql/statement_time.py``): one
constant per statement, the wall clock (UTC) when it started; a column's ``DEFAULT now()``
is each INSERT's; refused in views, with a pointer to ``mz_now()``."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import SparkSession

import matview


def _utc() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


@pytest.fixture
def con(spark: SparkSession) -> matview.Connection:
    return matview.connect(spark=spark, clock=0)


def test_every_spelling_is_the_statements_start(con: matview.Connection) -> None:
    before = datetime.now(UTC)
    cursor = con.execute(
        "SELECT now(), current_timestamp, statement_timestamp(), transaction_timestamp(), "
        "localtimestamp, current_date, now() - INTERVAL '1 day' < now(), current_time, "
        "localtime, current_time::text")
    [row] = cursor.fetchall()
    after = datetime.now(UTC)
    assert [d[1] for d in cursor.description] == ["timestamptz"] * 4 + [
        "timestamp", "date", "boolean", "timetz", "time", "text"]
    assert before <= row[0] <= after and len(set(row[:4])) == 1  # TIMESTAMPTZ: aware, UTC
    assert row[4] == row[0].replace(tzinfo=None)  # localtimestamp: the same, in the zone (UTC)
    assert row[5] == row[0].date() and row[6] is True
    assert row[7] == row[0].timetz() and row[7].utcoffset() == timedelta(0)  # at +00
    assert row[8] == row[0].time() and row[9].endswith("+00")


def test_a_precision_rounds_down_to_its_digits(con: matview.Connection) -> None:
    [(whole, hundredths, clock, tenths)] = con.execute(
        "SELECT current_timestamp(0), localtimestamp(2), current_time(0), localtime(1)"
    ).fetchall()
    assert whole.microsecond == 0 and hundredths.microsecond % 10_000 == 0
    assert clock.microsecond == 0 and tenths.microsecond % 100_000 == 0


def test_a_default_is_each_inserts_time(con: matview.Connection) -> None:
    con.execute("CREATE TABLE t (id INT, at TIMESTAMP DEFAULT now())")
    spans = []
    for i in (1, 2):
        before = _utc()
        con.execute(f"INSERT INTO t (id) VALUES ({i})")
        spans.append((before, _utc()))
        time.sleep(0.01)
    rows = con.execute("SELECT id, at FROM t ORDER BY id").fetchall()
    assert [r[0] for r in rows] == [1, 2]
    assert all(low <= at <= high for (_, at), (low, high) in zip(rows, spans))
    assert rows[0][1] < rows[1][1]
    assert con.execute("SELECT count(*) FROM t WHERE at <= now()").fetchall() == [(2,)]


@pytest.mark.parametrize("sql, error, message", [
    ("CREATE MATERIALIZED VIEW v AS SELECT id FROM t WHERE at > now() - INTERVAL '1 hour'",
     matview.NotSupportedError, "now cannot be used in a view.*compare mz_now\\(\\) in WHERE"),
    ("CREATE VIEW w AS SELECT current_date AS d", matview.NotSupportedError,
     "current_date cannot be used in a view"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id FROM t WHERE at::time < current_time",
     matview.NotSupportedError, "current_time cannot be used in a view"),
    ("CREATE VIEW w AS SELECT localtime AS d", matview.NotSupportedError,
     "localtime cannot be used in a view"),
    ("SELECT now(1)", matview.ProgrammingError, "function now takes 0 arguments \\(1 given\\)"),
    ("SELECT statement_timestamp(1)", matview.ProgrammingError,
     "function statement_timestamp takes 0 arguments"),
    ("SELECT current_timestamp(9)", matview.ProgrammingError,
     "precision must be an integer from 0 to 6"),
])
def test_misuse_is_refused_and_changes_nothing(con: matview.Connection, sql: str,
                                               error: type[Exception], message: str) -> None:
    con.execute("CREATE TABLE t (id INT, at TIMESTAMP)")
    with pytest.raises(error, match=message):
        con.execute(sql)
    shown = [con.execute(f"SHOW {what}").fetchall()
             for what in ("TABLES", "VIEWS", "MATERIALIZED VIEWS")]
    assert shown == [[("t",)], [], []]

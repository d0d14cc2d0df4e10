"""``mz_now()`` in one-shot queries (``ir.mz_now``): a value, the time the query reads at,
anywhere in the query (as in Materialize's peeks), agreeing to the microsecond with what a
temporal filter keeps at that time; still refused in views' SELECT lists and in writes."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview

START = 1_700_000_000_000
"""The manual clock's first time (milliseconds: 2023-11-14 22:13:20 UTC)."""


def _moment(ms: int) -> datetime:
    return datetime(1970, 1, 1) + timedelta(milliseconds=ms)


@pytest.fixture(scope="module")
def con(spark: SparkSession) -> matview.Connection:
    con = matview.connect(spark=spark, clock=START, settings={"retain_history": 1 << 40})
    con.execute("CREATE TABLE ev (id INT, ts TIMESTAMP, d DATE, n BIGINT)")
    rng = random.Random(7)
    rows = []
    for i in range(40):  # times around the clock's, to the microsecond, some on the edge
        ts = _moment(START + rng.randrange(-3, 4) * 1000) + timedelta(
            microseconds=rng.choice([0, 0, 1, 500, 999_999]))
        rows.append((i, ts, ts.date(), START + rng.randrange(-3000, 3000)))
    rows.append((99, None, None, None))
    con.insert("ev", rows)
    con.execute("CREATE MATERIALIZED VIEW live AS SELECT id FROM ev "
                "WHERE mz_now() <= ts + INTERVAL '1 second' AND mz_now() >= n")
    return con


def _duckdb(con: matview.Connection, sql: str, at: int) -> list[tuple[object, ...]]:
    """``sql`` over ``ev``'s rows in DuckDB, ``mz_now()`` written as the time ``at``."""
    db = duckdb.connect()
    db.execute("CREATE TABLE ev (id INT, ts TIMESTAMP, d DATE, n BIGINT)")
    db.executemany("INSERT INTO ev VALUES (?, ?, ?, ?)", con.execute("SELECT * FROM ev").fetchall())
    db.execute(f"CREATE MACRO now_ts() AS TIMESTAMP '{_moment(at)}'")
    return db.execute(sql.replace("mz_now_ts", "now_ts()").replace("mz_now_ms", str(at)))\
        .fetchall()


def test_mz_now_is_the_time_read_at_in_every_type(con: matview.Connection) -> None:
    for at in (START + 1_500, START + 2_000):
        con.advance_time(at)
        assert con.execute(
            "SELECT mz_now(), mz_now()::timestamp, mz_now()::text, mz_now()::bigint, "
            "mz_now()::numeric, mz_now()::date, mz_now()::timestamptz").fetchall() == [
            (at, _moment(at), str(at), at, Decimal(at), _moment(at).date(),
             _moment(at).replace(tzinfo=UTC))]
    con.advance_time(START + 2_500)
    assert con.execute(f"SELECT DISTINCT mz_now() FROM ev AS OF {START + 10}").fetchall() == [
        (START + 10,)]


@pytest.mark.parametrize("at", [START + 500, START + 1_000, START + 2_001, START + 3_500])
def test_comparisons_equal_a_timestamp_written_in_their_place(con: matview.Connection,
                                                              at: int) -> None:
    """In the SELECT list, WHERE (under OR, NOT, <>), GROUP BY and subqueries, against
    DuckDB with the time written as a literal; and the one-shot's rows equal what the
    maintained temporal filter keeps at that time."""
    con.advance_time(max(at, START + 3_000))
    as_of = f" AS OF {at}" if at < START + 3_000 else ""
    shots = {
        "SELECT id, mz_now() >= ts, ts < mz_now(), mz_now() > d, mz_now() >= n FROM ev{}":
            "SELECT id, mz_now_ts >= ts, ts < mz_now_ts, mz_now_ts > d, mz_now_ms >= n FROM ev",
        "SELECT id FROM ev WHERE NOT (mz_now() < ts) OR mz_now() <> n OR id = 99{}":
            "SELECT id FROM ev WHERE NOT (mz_now_ts < ts) OR mz_now_ms <> n OR id = 99",
        "SELECT mz_now() > ts, count(*) FROM ev GROUP BY 1{}":
            "SELECT mz_now_ts > ts, count(*) FROM ev GROUP BY 1",
        "SELECT id FROM ev WHERE ts > (SELECT mz_now()::timestamp - INTERVAL '1 second'){}":
            "SELECT id FROM ev WHERE ts > mz_now_ts - INTERVAL '1 second'",
    }
    for ours, theirs in shots.items():
        got = con.execute(ours.format(as_of)).fetchall()
        assert sorted(got, key=repr) == sorted(_duckdb(con, theirs, at), key=repr), ours
    kept = con.execute(f"SELECT id FROM live{as_of}").fetchall()
    read = con.execute("SELECT id FROM ev WHERE mz_now() <= ts + INTERVAL '1 second' "
                       f"AND (mz_now() >= n OR false){as_of}").fetchall()
    assert sorted(kept) == sorted(read)


def test_a_transaction_reads_mz_now_at_its_time(con: matview.Connection) -> None:
    con.advance_time(START + 4_000)
    [(before,)] = con.execute("SELECT mz_now()").fetchall()
    with con.transaction():
        con.execute("INSERT INTO ev VALUES (100, NULL, NULL, NULL)")
        first = con.execute("SELECT mz_now(), count(*) FROM ev WHERE id = 100").fetchall()
        second = con.execute("SELECT mz_now()").fetchall()
    assert first[0][0] > before and first[0][1] == 1 and second == [(first[0][0],)]
    con.execute("DELETE FROM ev WHERE id = 100")


@pytest.mark.parametrize("sql, message", [
    ("CREATE VIEW w AS SELECT id, mz_now() FROM ev", "not in the SELECT list"),
    ("CREATE MATERIALIZED VIEW w AS SELECT id FROM ev WHERE mz_now() < ts OR id = 1",
     "under OR the view cannot be maintained"),
    ("INSERT INTO ev SELECT 1, mz_now()::timestamp, NULL, NULL",
     "mz_now\\(\\) cannot be used in INSERT, UPDATE or DELETE"),
    ("DELETE FROM ev WHERE mz_now() > ts", "cannot be used in INSERT, UPDATE or DELETE"),
    ("SELECT mz_now()::boolean", "cannot cast type mz_timestamp to boolean"),
    ("SELECT mz_now(1)", "function mz_now\\(\\) takes no arguments"),
])
def test_where_mz_now_is_no_value_it_is_refused(con: matview.Connection, sql: str,
                                                message: str) -> None:
    before = con.execute("SELECT count(*) FROM ev").fetchall()
    with pytest.raises(matview.Error, match=message):
        con.execute(sql)
    assert con.execute("SELECT count(*) FROM ev").fetchall() == before
    assert con.execute("SHOW VIEWS").fetchall() == []

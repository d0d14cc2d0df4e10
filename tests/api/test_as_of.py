"""``SELECT ... AS OF t`` and ``SUBSCRIBE x AS OF t`` (``sql.as_of``, ``Engine.read_time``):
reads at an earlier time equal DuckDB on the tables replayed to that time, while the
``retain_history`` setting keeps it; compaction forgets older times, and a read of one names
the earliest time it can read."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview
from matview.errors import DataError, NotSupportedError, ProgrammingError

VIEWS = {"totals": "SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k",
         "joined": "SELECT t.k, t.v, u.w FROM t JOIN u ON t.k = u.k WHERE t.v > 2"}
QUERY = "SELECT u.w, max(t.v) AS top FROM t LEFT JOIN u ON t.k = u.k GROUP BY u.w"


def _write(con: matview.Connection, oracle: duckdb.DuckDBPyConnection,
           rng: random.Random) -> None:
    """One random transaction, applied to both."""
    kind = rng.randrange(4)
    if kind == 0:
        rows = ", ".join(f"({rng.randrange(5)}, {rng.randrange(9)})" for _ in range(3))
        sql = f"INSERT INTO t VALUES {rows}"
    elif kind == 1:
        sql = f"INSERT INTO u VALUES ({rng.randrange(5)}, '{rng.choice('xyz')}')"
    elif kind == 2:
        sql = f"DELETE FROM t WHERE v = {rng.randrange(9)}"
    else:
        sql = f"UPDATE t SET v = v + 1 WHERE k = {rng.randrange(5)}"
    for db in (con, oracle):
        db.execute(sql)


def _at(tables: dict[str, list[tuple[object, ...]]], sql: str) -> list[tuple[object, ...]]:
    """``sql`` evaluated by DuckDB over ``tables``' rows (a replay to one time)."""
    db = duckdb.connect()
    db.execute("CREATE TABLE t (k INT, v INT)")
    db.execute("CREATE TABLE u (k INT, w TEXT)")
    for name, rows in tables.items():
        if rows:
            db.executemany(f"INSERT INTO {name} VALUES (?, ?)", rows)
    return sorted(db.execute(sql).fetchall(), key=repr)


@pytest.mark.parametrize("seed", [1, 2])
def test_reads_as_of_earlier_times_equal_duckdb_replayed(spark: SparkSession,
                                                         seed: int) -> None:
    rng = random.Random(seed)
    con = matview.connect(clock=0, spark=spark, settings={"retain_history": 1 << 40})
    oracle = duckdb.connect()
    for db in (con, oracle):
        db.execute("CREATE TABLE t (k INT, v INT)")
        db.execute("CREATE TABLE u (k INT, w TEXT)")
    for name, sql in VIEWS.items():
        con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    history = []
    for step in range(12):
        _write(con, oracle, rng)
        if step % 3 == 0:  # the views step (and their inputs compact) now and then
            con.execute("SELECT * FROM totals").fetchall()
        history.append((con.now, {n: oracle.execute(f"SELECT * FROM {n}").fetchall()
                                  for n in ("t", "u")}))
    con.execute("SELECT * FROM joined").fetchall()
    for time, tables in history[::2] + history[-1:]:
        for name, sql in [*VIEWS.items(), ("t", "SELECT * FROM t")]:
            got = con.execute(f"SELECT * FROM {name} AS OF {time}").fetchall()
            assert sorted(got, key=repr) == _at(tables, sql), (time, name)
        got = con.execute(f"{QUERY} AS OF {time}").fetchall()
        assert sorted(got, key=repr) == _at(tables, QUERY), time


def test_compacted_times_and_later_times_are_refused(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.execute("CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k")
    for i in range(4):
        con.execute(f"INSERT INTO t VALUES ({i % 2}, {i})")
        con.execute("SELECT * FROM m").fetchall()  # steps, and compacts what no one reads
    now = con.now
    assert sorted(con.execute(f"SELECT * FROM m AS OF {now}").fetchall()) == [(0, 2), (1, 4)]
    with pytest.raises(ProgrammingError, match=f'AS OF 1 is earlier than the earliest time '
                                               f'"m" can be read at, {now}'):
        con.execute("SELECT * FROM m AS OF 1")
    with pytest.raises(ProgrammingError, match=f"AS OF {now + 5} is later than the latest"):
        con.execute(f"SELECT k FROM t AS OF {now + 5}")
    refusals = [
        ("SELECT * FROM t AS OF 1.5", DataError, "a whole number of milliseconds"),
        ("SELECT * FROM t AS OF 'soon'", DataError, "invalid input syntax for type timestamp"),
        ("SELECT * FROM t AS OF (1 + 1)", NotSupportedError, "AS OF takes a constant time"),
        ("INSERT INTO t SELECT * FROM t AS OF 1", NotSupportedError,
         "AS OF applies to a query, not to INSERT"),
        ("SUBSCRIBE m WITH (PROGRESS)", NotSupportedError, "takes a name and AS OF alone"),
    ]
    for sql, error, message in refusals:
        with pytest.raises(error, match=message):
            con.execute(sql)
    # OF stays a name where no time follows it
    assert con.execute("SELECT k AS of FROM t AS of WHERE of.k = 0 ORDER BY 1").fetchall() \
        == [(0,), (0,)]
    wall = matview.connect(spark=spark, settings={"retain_history": 1 << 40})
    wall.execute("CREATE TABLE w (a INT)")
    wall.execute("INSERT INTO w VALUES (1)")
    assert wall.execute("SELECT * FROM w AS OF TIMESTAMP '2000-01-01 00:00:00'").fetchall() \
        == []


def test_subscribe_as_of_starts_from_that_times_snapshot(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark, settings={"retain_history": 1 << 40})
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.execute("CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k")
    con.execute("INSERT INTO t VALUES (1, 10)")
    first = con.now
    con.execute("INSERT INTO t VALUES (1, 5), (2, 7)")
    second = con.now
    cur = con.cursor()
    cur.execute(f"SUBSCRIBE m AS OF {first}")
    assert cur.fetchall() == [(first, 1, 1, 10), (second, -1, 1, 10), (second, 1, 1, 15),
                              (second, 1, 2, 7)]
    con.execute("INSERT INTO t VALUES (2, 1)")
    assert cur.fetchall() == [(con.now, -1, 2, 7), (con.now, 1, 2, 8)]


def test_a_reopened_database_reads_its_retained_history(spark: SparkSession,
                                                        tmp_path: Path) -> None:
    retained = {"retain_history": 1 << 40}
    with matview.connect(tmp_path / "db", clock=0, spark=spark, settings=retained) as con:
        con.execute("CREATE TABLE t (k INT, v INT)")
        con.execute("CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k")
        con.execute("INSERT INTO t VALUES (1, 10)")
        first = con.now
        con.execute("INSERT INTO t VALUES (1, 5), (2, 7)")
        assert sorted(con.execute("SELECT * FROM m").fetchall()) == [(1, 15), (2, 7)]
    with matview.connect(tmp_path / "db", clock=0, spark=spark, settings=retained) as con:
        assert con.execute(f"SELECT * FROM m AS OF {first}").fetchall() == [(1, 10)]
        assert con.execute(f"SELECT * FROM t AS OF {first}").fetchall() == [(1, 10)]

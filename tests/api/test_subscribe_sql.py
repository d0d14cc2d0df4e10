"""``SUBSCRIBE [TO] name`` run by a cursor of the Python API: its fetches return the
changes there are when they run (the snapshot first), as ``(mz_timestamp, mz_diff,
*columns)`` rows; the next statement on the cursor, or closing it, ends the subscription."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

import matview


def test_a_cursor_follows_a_materialized_views_changes(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (k INT, s TEXT)")
    con.execute("INSERT INTO t VALUES (1, 'a')")
    con.execute("CREATE MATERIALIZED VIEW m AS SELECT s, count(*) AS n FROM t GROUP BY s")
    engine = con._engine_for_use()
    cur = con.cursor().execute("SUBSCRIBE TO m")
    assert [d[0] for d in cur.description or []] == ["mz_timestamp", "mz_diff", "s", "n"]
    [snapshot] = cur.fetchall()
    start = snapshot[0]
    assert snapshot[1:] == (1, "a", 1)
    assert cur.fetchall() == [] and cur.fetchone() is None
    con.execute("INSERT INTO t VALUES (2, 'a'), (3, 'b')")
    changes = cur.fetchmany(10)
    assert sorted(row[1:] for row in changes) == [(-1, "a", 1), (1, "a", 2), (1, "b", 1)]
    assert len({row[0] for row in changes}) == 1 and changes[0][0] > start
    con.execute("DELETE FROM t WHERE k = 3")
    assert [row[1:] for row in cur] == [(-1, "b", 1)]
    assert len(engine.cursors) == 1
    assert cur.execute("SELECT count(*) FROM m").fetchall() == [(1,)]
    assert not engine.cursors  # the subscription ended with the statement after it
    other = con.cursor().execute('SUBSCRIBE "t"')
    assert sorted(row[1:] for row in other.fetchall()) == [(1, 1, "a"), (1, 2, "a")]
    other.close()
    assert not engine.cursors


def test_what_cannot_be_subscribed_to(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (k INT)")
    con.execute("CREATE VIEW v AS SELECT k FROM t")
    with pytest.raises(matview.ProgrammingError, match='cannot subscribe to view "v"'):
        con.execute("SUBSCRIBE v")
    with pytest.raises(matview.ProgrammingError, match='relation "nope" does not exist'):
        con.execute("SUBSCRIBE nope")

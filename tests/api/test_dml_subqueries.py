"""DELETE and UPDATE with subqueries (correlated or not) in WHERE and SET, ``DELETE ...
USING`` and ``UPDATE ... FROM``, run on Spark: after each statement the tables equal
DuckDB's after the same one, the statement's row count is DuckDB's (PostgreSQL's), and a
view over the table follows. A failing statement (a scalar subquery of several rows)
changes nothing."""

from __future__ import annotations

from collections import Counter

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview

TABLES = {"t": "CREATE TABLE t (k INT, s TEXT, n BIGINT)",
          "u": "CREATE TABLE u (k INT, label TEXT)"}
ROWS = {"t": [(1, "a", 10), (2, "b", 20), (2, "b", 20), (3, None, 30), (4, "d", None),
              (None, "e", 50)],
        "u": [(2, "two"), (3, "three"), (3, "drei"), (9, "nine"), (None, "none")]}

STATEMENTS = [
    "UPDATE t SET s = u.label, n = n + 1 FROM u WHERE t.k = u.k AND u.label <> 'drei'",
    "UPDATE t AS x SET n = w.k * 100 FROM u, u AS w "
    "WHERE x.k = u.k AND w.k = u.k + 6 AND u.label = 'three'",
    "DELETE FROM t WHERE k IN (SELECT k FROM u WHERE label LIKE 't%')",
    "UPDATE t SET n = (SELECT count(*) FROM u WHERE u.k = t.k) WHERE k IS NOT NULL",
    "UPDATE t SET s = 'big' WHERE n > (SELECT min(n) FROM t)",
    "INSERT INTO t VALUES (5, 'f', 1), (6, 'g', 2), (7, 'h', 3)",
    "UPDATE t SET s = upper(s), n = n + (SELECT max(k) FROM u) "
    "WHERE EXISTS (SELECT 1 FROM u WHERE u.k < t.k)",
    "DELETE FROM t AS x USING u WHERE x.k = u.k + 3 AND u.label <> 'none'",
    "DELETE FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.k >= t.k) AND k > 5",
    "DELETE FROM t USING u, u AS w WHERE t.n = u.k + w.k",
    "DELETE FROM t USING u",
]


def _contents(con: matview.Connection | duckdb.DuckDBPyConnection, table: str) -> Counter:
    return Counter(con.execute(f"SELECT * FROM {table}").fetchall())


def test_dml_with_subqueries_matches_duckdb(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    db = duckdb.connect()
    for name, ddl in TABLES.items():
        con.execute(ddl)
        db.execute(ddl)
        con.insert(name, ROWS[name])
        db.executemany(f"INSERT INTO {name} VALUES (?, ?{', ?' * (len(ROWS[name][0]) - 2)})",
                       ROWS[name])
    con.execute("CREATE MATERIALIZED VIEW totals AS SELECT s, count(*) AS c, sum(n) AS n "
                "FROM t GROUP BY s")
    for sql in STATEMENTS:
        [[count]] = db.execute(sql).fetchall()
        assert con.execute(sql).rowcount == count, sql
        assert _contents(con, "t") == _contents(db, "t"), sql
        assert _contents(con, "totals") == Counter(db.execute(
            "SELECT s, count(*), sum(n) FROM t GROUP BY s").fetchall()), sql
    assert _contents(con, "u") == Counter(ROWS["u"])


def test_a_failing_subquery_changes_nothing(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    for name, ddl in TABLES.items():
        con.execute(ddl)
        con.insert(name, ROWS[name])
    with pytest.raises(matview.DataError,
                       match="more than one row returned by a subquery used as an expression"):
        con.execute("UPDATE t SET s = (SELECT label FROM u WHERE u.k = t.k)")
    assert _contents(con, "t") == Counter(ROWS["t"])
    with pytest.raises(matview.ProgrammingError, match="column u.nope does not exist"):
        con.execute("DELETE FROM t USING u WHERE u.nope = t.k")


def test_update_from_sets_each_row_from_one_matching_row(spark: SparkSession) -> None:
    """Row 3 matches two rows of ``u``: every assignment takes the same one (PostgreSQL
    does not say which); a name both tables hold is ambiguous, as in PostgreSQL."""
    con = matview.connect(clock=0, spark=spark)
    for name, ddl in TABLES.items():
        con.execute(ddl)
        con.insert(name, ROWS[name])
    count = con.execute("UPDATE t SET s = u.label, n = length(u.label) FROM u "
                        "WHERE t.k = u.k").rowcount
    assert count == 3
    assert sorted(con.execute("SELECT k, s, n FROM t WHERE k IN (2, 3)").fetchall()) in (
        [(2, "two", 3), (2, "two", 3), (3, "drei", 4)],
        [(2, "two", 3), (2, "two", 3), (3, "three", 5)])
    with pytest.raises(matview.ProgrammingError, match='column reference "k" is ambiguous'):
        con.execute("UPDATE t SET s = label FROM u WHERE k = 2")

"""Intervals are equal by their length wherever SQL compares them, as in PostgreSQL
(``'1 mon' = '30 days' = '720 hours'``): INTERSECT and EXCEPT [ALL], ``nullif``, ``x op
ANY/ALL (subquery)``, IN, a window's PARTITION BY and ORDER BY (peers), DISTINCT ON and the
UNION of a recursive query. A set operation shows each group of equal intervals as its
smallest (the least months, then days), whatever order rows arrive in.

One-shot queries give PostgreSQL's values; maintained views match DuckDB, which also
compares intervals by length, under random writes (results compare as ``timedelta``s,
months as 30 days, so the interval a group shows does not matter there)."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from pyspark.sql import SparkSession

import matview
from tests.support.mirror import Mirror
from tests.support.seeds import seeds

A = [(1, "1 mon"), (2, "30 days"), (3, "1 day"), (4, None), (5, "1 mon"), (6, "2 mons")]
B = [(1, "720 hours"), (2, "24 hours"), (3, None), (4, "2 days")]


@pytest.fixture(scope="module")
def con(spark: SparkSession) -> matview.Connection:
    con = matview.connect(spark=spark, clock=0)
    con.execute("CREATE TABLE a (id INT, d INTERVAL)")
    con.execute("CREATE TABLE b (id INT, d INTERVAL)")
    con.insert("a", A)
    con.insert("b", B)
    return con


def texts(con: matview.Connection, sql: str) -> list[tuple[object, ...]]:
    """The rows of ``sql``, sorted with NULLs first."""
    return sorted(con.execute(sql).fetchall(), key=lambda r: [(v is not None, v) for v in r])


@pytest.mark.parametrize("sql, expected", [
    # '1 mon', '30 days' and '720 hours' are one row, shown as the smallest: '720:00:00'
    ("SELECT d FROM a INTERSECT SELECT d FROM b", [None, "24:00:00", "720:00:00"]),
    ("SELECT d FROM a INTERSECT ALL SELECT d FROM b", [None, "24:00:00", "720:00:00"]),
    ("SELECT d FROM a EXCEPT SELECT d FROM b", ["2 mons"]),
    ("SELECT d FROM a EXCEPT ALL SELECT d FROM b", ["2 mons", "720:00:00", "720:00:00"]),
    ("SELECT d FROM b EXCEPT SELECT d FROM a", ["2 days"]),
    ("SELECT d FROM (SELECT d FROM a UNION ALL SELECT d FROM b) u "
     "INTERSECT ALL SELECT d FROM a",
     [None, "2 mons", "24:00:00", "720:00:00", "720:00:00", "720:00:00"]),
])
def test_set_operations_keep_one_row_per_length(con: matview.Connection, sql: str,
                                                expected: list[str | None]) -> None:
    assert [t for t, in texts(con, f"SELECT d::text FROM ({sql}) s(d)")] == expected


def test_nullif_and_quantified_comparisons_compare_lengths(con: matview.Connection) -> None:
    assert texts(con, "SELECT id, nullif(d, INTERVAL '30 days')::text FROM a") == [
        (1, None), (2, None), (3, "1 day"), (4, None), (5, None), (6, "2 mons")]
    assert texts(con, "SELECT a.id, nullif(a.d, b.d) IS NULL FROM a JOIN b ON a.id = b.id"
                 ) == [(1, True), (2, False), (3, False), (4, True)]

    def ids(where: str) -> list[int]:
        return [i for i, in texts(con, f"SELECT id FROM a WHERE {where}")]

    assert ids("d = ANY (SELECT d FROM b)") == [1, 2, 3, 5]
    assert ids("d IN (SELECT d FROM b)") == [1, 2, 3, 5]
    assert ids("d IN (INTERVAL '720 hours', INTERVAL '24 hours')") == [1, 2, 3, 5]
    assert ids("d > ANY (SELECT d FROM b WHERE id = 1)") == [6]
    assert ids("d >= ALL (SELECT d FROM b WHERE id = 1)") == [1, 2, 5, 6]
    assert ids("d <> ALL (SELECT d FROM b WHERE id < 3)") == [6]
    assert ids("d <> ANY (SELECT d FROM b WHERE id = 1)") == [3, 6]
    assert ids("d < ALL (SELECT d FROM b WHERE id = 1)") == [3]


def test_windows_partition_and_rank_by_length(con: matview.Connection) -> None:
    assert texts(con, "SELECT id, rank() OVER (ORDER BY d), dense_rank() OVER (ORDER BY d), "
                      "count(*) OVER (PARTITION BY d), sum(id) OVER (ORDER BY d), "
                      "max(id) OVER (PARTITION BY d ORDER BY d) FROM a") == [
        (1, 2, 2, 3, 11, 5), (2, 2, 2, 3, 11, 5), (3, 1, 1, 1, 3, 3), (4, 6, 4, 1, 21, 4),
        (5, 2, 2, 3, 11, 5), (6, 5, 3, 1, 17, 6)]
    # PostgreSQL's DISTINCT ON keeps the first row of each group in the ORDER BY: '1 mon'
    # and '30 days' tie on d, so id decides
    rows = con.execute("SELECT DISTINCT ON (d) id, d, d::text AS t FROM a ORDER BY d, id")
    assert [(i, t) for i, _, t in rows.fetchall()] == [
        (3, "1 day"), (1, "1 mon"), (6, "2 mons"), (4, None)]


def test_a_recursive_union_keeps_one_row_per_length(con: matview.Connection) -> None:
    rows = con.execute(
        "WITH RECURSIVE r(d) AS (SELECT d FROM a WHERE id IN (1, 2) UNION "
        "SELECT d + INTERVAL '1 day' FROM r WHERE d < INTERVAL '32 days') "
        "SELECT d, d::text AS t FROM r ORDER BY d").fetchall()
    assert rows == [(timedelta(30), "30 days"), (timedelta(31), "31 days"),
                    (timedelta(32), "32 days")]


VIEWS = {
    "common": "SELECT d FROM a INTERSECT SELECT e FROM b",
    "common_all": "SELECT d, g FROM a INTERSECT ALL SELECT e, g FROM b",
    "only_a": "SELECT d FROM a EXCEPT SELECT e FROM b",
    "only_a_all": "SELECT d FROM a EXCEPT ALL SELECT e FROM b",
    "cleared": "SELECT id, nullif(d, e) AS n FROM a",
    "matched": "SELECT id FROM a WHERE d = ANY (SELECT e FROM b)",
    "longest": "SELECT id FROM a WHERE d >= ALL (SELECT e FROM b WHERE e IS NOT NULL)",
    "shorter": "SELECT id FROM a WHERE d < ANY (SELECT e FROM b)",
    "ranked": "SELECT id, rank() OVER (ORDER BY d) AS r, count(*) OVER (PARTITION BY d) AS n, "
              "sum(g) OVER (PARTITION BY e ORDER BY d) AS s FROM a",
    "first_of": "SELECT DISTINCT ON (d) d, id FROM a ORDER BY d, id",
}


def test_unique_keys_over_intervals_are_refused(con: matview.Connection) -> None:
    """A key checked by values would take '1 mon' and '30 days' as two: refused, at CREATE
    TABLE and at ALTER TABLE, rather than kept wrong."""
    for sql in ["CREATE TABLE ik_a (d INTERVAL PRIMARY KEY)",
                "CREATE TABLE ik_b (a INT, d INTERVAL, UNIQUE (a, d))"]:
        with pytest.raises(matview.NotSupportedError, match='interval column "d"'):
            con.execute(sql)
    con.execute("CREATE TABLE ik_c (a INT, d INTERVAL)")
    with pytest.raises(matview.NotSupportedError, match='interval column "d"'):
        con.execute("ALTER TABLE ik_c ADD PRIMARY KEY (d)")
    con.execute("ALTER TABLE ik_c ADD PRIMARY KEY (a)")


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Rows with intervals of equal lengths spelled apart come and go on both sides of set
    operations, ``nullif``, quantified comparisons and windows."""
    rng = random.Random(seed)
    mirror = Mirror(spark)
    for table in ("a", "b"):
        mirror.execute(f"CREATE TABLE {table} (id INT, g INT, d INTERVAL, e INTERVAL)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def span() -> str:
        return "NULL" if rng.random() < 0.1 else "'" + rng.choice([
            "1 month", "30 days", "720 hours", "1 day", "24 hours", "1 mon 1 day",
            "31 days", "2 days"]) + "'"

    def change() -> str:
        table, roll = rng.choice("ab"), rng.random()
        if roll < 0.55:
            rows = ", ".join(f"({rng.randint(1, 8)}, {rng.randint(1, 3)}, {span()}, {span()})"
                             for _ in range(rng.randint(1, 3)))
            return f"INSERT INTO {table} VALUES {rows}"
        if roll < 0.8:
            return f"DELETE FROM {table} WHERE id = {rng.randint(1, 8)}"
        return f"UPDATE {table} SET d = {span()} WHERE id = {rng.randint(1, 8)}"

    mirror.steps_grouped([change() for _ in range(8)], rng)

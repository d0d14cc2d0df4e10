"""Evaluation errors are data: a row that makes a view's expression fail (division by zero,
overflow, a bad cast) puts an error into the view, which reading the view reports while it
holds and which the row's retraction takes away again.

Deterministic cases first, then a randomized workload checked against DuckDB after every
transaction: every view equals DuckDB's result whenever DuckDB's query succeeds on the
current tables, and reading it fails exactly when DuckDB's query does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview
from tests.support.oracle.compare import canonical
from tests.support.seeds import seeds


@pytest.fixture()
def db(spark: SparkSession) -> matview.Connection:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE z (k INT, v INT, s TEXT)")
    return con


def rows(con: matview.Connection, sql: str) -> list[tuple[object, ...]]:
    return sorted(con.execute(sql).fetchall(), key=repr)


def test_a_bad_row_does_not_poison_a_view(db: matview.Connection) -> None:
    db.execute("CREATE MATERIALIZED VIEW mv AS SELECT k, 100 / v AS q FROM z")
    db.execute("INSERT INTO z VALUES (1, 0, 'a'), (2, 5, 'b')")
    with pytest.raises(matview.DataError, match=r'"mv".*division by zero.*\(1, 0, a\)'):
        db.execute("SELECT * FROM mv")
    db.execute("INSERT INTO z VALUES (3, 4, 'c')")  # a valid write does not clear it
    with pytest.raises(matview.DataError, match="division by zero"):
        db.execute("SELECT * FROM mv")
    db.execute("DELETE FROM z WHERE v = 0")
    assert rows(db, "SELECT * FROM mv") == [(2, 20), (3, 25)]
    assert rows(db, "SELECT k, 100 / v FROM z") == [(2, 20), (3, 25)]


def test_update_fixes_the_row_and_con_insert_can_break_it(db: matview.Connection) -> None:
    db.execute("CREATE MATERIALIZED VIEW mv AS SELECT k, v * 1000000 AS big FROM z")
    db.insert("z", [(1, 5000, "x")])
    with pytest.raises(matview.DataError, match="integer out of range"):
        db.execute("SELECT * FROM mv")
    db.execute("UPDATE z SET v = 5 WHERE k = 1")
    assert rows(db, "SELECT * FROM mv") == [(1, 5000000)]


def test_bad_cast_in_a_filter_and_an_aggregate(db: matview.Connection) -> None:
    db.execute("CREATE MATERIALIZED VIEW f AS SELECT k FROM z WHERE CAST(s AS INT) > 1")
    db.execute("CREATE MATERIALIZED VIEW g AS SELECT k % 2 AS p, sum(CAST(s AS INT)) AS t "
               "FROM z GROUP BY k % 2")
    db.execute("INSERT INTO z VALUES (1, 1, '2'), (2, 1, '3'), (3, 1, 'x')")
    for view in ("f", "g"):
        with pytest.raises(matview.DataError, match='invalid input syntax for type integer: "x"'):
            db.execute(f"SELECT * FROM {view}")
    db.execute("UPDATE z SET s = '7' WHERE k = 3")
    assert rows(db, "SELECT * FROM f") == [(1,), (2,), (3,)]
    assert rows(db, "SELECT * FROM g") == [(0, 3), (1, 9)]


def test_a_view_created_over_failing_data_reports_on_read(db: matview.Connection) -> None:
    db.execute("INSERT INTO z VALUES (1, 0, 'a')")
    db.execute("CREATE MATERIALIZED VIEW mv AS SELECT k, 10 / v AS q FROM z")
    db.execute("CREATE MATERIALIZED VIEW above AS SELECT count(*) AS n FROM mv")
    for view in ("mv", "above"):
        with pytest.raises(matview.DataError, match="division by zero"):
            db.execute(f"SELECT * FROM {view}")
    db.execute("UPDATE z SET v = 2 WHERE k = 1")
    assert rows(db, "SELECT * FROM mv") == [(1, 5)]
    assert rows(db, "SELECT * FROM above") == [(1,)]


def test_errors_in_join_predicates(db: matview.Connection) -> None:
    db.execute("CREATE TABLE w (k INT, v INT)")
    db.execute("CREATE MATERIALIZED VIEW j AS SELECT z.k, w.v FROM z JOIN w "
               "ON z.k = w.k AND 10 / (z.v - w.v) > 0")
    db.execute("INSERT INTO z VALUES (1, 3, 'a'), (2, 1, 'b')")
    db.execute("INSERT INTO w VALUES (1, 3), (2, 0), (5, 5)")
    with pytest.raises(matview.DataError, match="division by zero"):
        db.execute("SELECT * FROM j")
    db.execute("DELETE FROM w WHERE k = 1")
    assert rows(db, "SELECT * FROM j") == [(2, 0)]


def test_lazy_expressions_do_not_fail(db: matview.Connection) -> None:
    db.execute("INSERT INTO z VALUES (1, 0, NULL), (2, 4, 'x')")
    assert rows(db, "SELECT CASE WHEN v = 0 THEN -1 ELSE 8 / v END FROM z") == [(-1,), (2,)]
    assert rows(db, "SELECT coalesce(k, 1 / v) FROM z") == [(1,), (2,)]
    assert rows(db, "SELECT k FROM z WHERE v <> 0 AND 8 / v = 2") == [(2,)]
    with pytest.raises(matview.DataError, match="division by zero"):
        db.execute("SELECT k FROM z WHERE 8 / v = 2")


def test_failed_insert_select_changes_nothing(db: matview.Connection) -> None:
    db.execute("CREATE TABLE t (q INT)")
    db.execute("INSERT INTO z VALUES (1, 0, 'a'), (2, 5, 'b')")
    with pytest.raises(matview.DataError, match="division by zero"):
        db.execute("INSERT INTO t SELECT 10 / v FROM z")
    assert rows(db, "SELECT * FROM t") == []


def test_subscribe_reports_errors_while_they_hold(db: matview.Connection) -> None:
    db.execute("CREATE MATERIALIZED VIEW mv AS SELECT k, 100 / v AS q FROM z")
    sub = db.subscribe("mv")
    assert sub.fetch() == []
    db.execute("INSERT INTO z VALUES (1, 0, 'a')")
    with pytest.raises(matview.DataError, match="division by zero"):
        sub.fetch()
    db.execute("INSERT INTO z VALUES (2, 50, 'b')")
    db.execute("DELETE FROM z WHERE k = 1")
    assert [r[1:] for r in sub.fetch()] == [(1, 2, 2)]


# --- randomized against DuckDB --------------------------------------------------------

@dataclass(frozen=True)
class View:
    name: str
    sql: str
    """matview's text."""
    duck: str
    """The same query for DuckDB, whose integer division by zero gives NULL instead of an
    error: written with ``//`` and an explicit ``error()``."""


def _div(a: str, b: str) -> str:
    return f"(CASE WHEN ({b}) = 0 THEN error('division by zero') ELSE ({a}) // ({b}) END)"


VIEWS = (
    View("v_div", "SELECT k, 100 / v AS q FROM z", f"SELECT k, {_div('100', 'v')} FROM z"),
    View("v_filter", "SELECT k, s FROM z WHERE 1000 / v > 20",
         f"SELECT k, s FROM z WHERE {_div('1000', 'v')} > 20"),
    View("v_cast", "SELECT k, CAST(s AS INT) AS n FROM z WHERE v > 2",
         "SELECT k, CAST(s AS INT) FROM z WHERE v > 2"),
    View("v_overflow", "SELECT k, v * 1000000 AS big FROM z", "SELECT k, v * 1000000 FROM z"),
    View("v_agg", "SELECT k % 3 AS g, count(*) AS n, sum(60 / v) AS t FROM z GROUP BY k % 3",
         f"SELECT k % 3, count(*), sum({_div('60', 'v')}) FROM z GROUP BY k % 3"),
    View("v_global", "SELECT count(*) AS n, sum(v) AS t FROM z WHERE v > 3",
         "SELECT count(*), sum(v) FROM z WHERE v > 3"),
    View("v_join", "SELECT z.k, w.v FROM z JOIN w ON z.k = w.k AND 12 / (z.v - w.v) > 1",
         f"SELECT z.k, w.v FROM z JOIN w ON z.k = w.k AND {_div('12', 'z.v - w.v')} > 1"),
)

TEXTS = ("1", "42", "-3", "x", "7y", None)


def _row(rng: random.Random, k: int) -> tuple[int, int, str | None]:
    v = rng.choice([0, 0, 1, 2, 3, 4, 5, 6, 3000, -2])
    return (k, v, rng.choice(TEXTS))


def _literal(value: object) -> str:
    return "NULL" if value is None else f"'{value}'" if isinstance(value, str) else str(value)


def _transaction(rng: random.Random, keys: list[int], next_key: int) -> list[str]:
    """One random write statement (as SQL both engines take)."""
    choice = rng.random()
    if choice < 0.45 or not keys:
        new = [_row(rng, next_key + i) for i in range(rng.randint(1, 3))]
        values = ", ".join("(" + ", ".join(_literal(x) for x in r) + ")" for r in new)
        return [f"INSERT INTO z VALUES {values}"]
    k = rng.choice(keys)
    if choice < 0.7:
        return [f"DELETE FROM z WHERE k = {k}"]
    if choice < 0.85:
        return [f"UPDATE z SET v = {rng.choice([0, 1, 2, 5, 3000])} WHERE k = {k}"]
    return [f"INSERT INTO w VALUES ({k}, {rng.choice([0, 1, 2, 4, 5])})"]


def _expected(duck: duckdb.DuckDBPyConnection, view: View) -> list[tuple[object, ...]] | None:
    """DuckDB's result, or None when its query fails."""
    try:
        return duck.execute(view.duck).fetchall()
    except duckdb.Error:
        return None


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_errors_match_duckdb_under_random_transactions(spark: SparkSession, seed: int) -> None:
    rng = random.Random(seed)
    con = matview.connect(clock=0, spark=spark)
    duck = duckdb.connect()
    for sql in ("CREATE TABLE z (k INT, v INT, s TEXT)", "CREATE TABLE w (k INT, v INT)"):
        con.execute(sql)
        duck.execute(sql)
    early = rng.sample(VIEWS, len(VIEWS) // 2)
    log: list[str] = []

    def create(views: list[View]) -> None:
        for view in views:
            con.execute(f"CREATE MATERIALIZED VIEW {view.name} AS {view.sql}")
            log.append(f"CREATE MATERIALIZED VIEW {view.name}")

    create(early)
    next_key = 1
    for step in range(12):
        for sql in _transaction(rng, [r[0] for r in duck.execute("SELECT k FROM z").fetchall()],
                                next_key):
            con.execute(sql)
            duck.execute(sql)
            log.append(sql)
        next_key += 3
        if step == 3:
            create([v for v in VIEWS if v not in early])
        for view in VIEWS:
            if step < 3 and view not in early:
                continue
            expected = _expected(duck, view)
            context = f"seed {seed}, view {view.name} ({view.sql}) after:\n  " + "\n  ".join(log)
            if expected is None:
                with pytest.raises(matview.DataError):
                    con.execute(f"SELECT * FROM {view.name}")
                continue
            actual = con.execute(f"SELECT * FROM {view.name}").fetchall()
            assert canonical(actual) == canonical(expected), context

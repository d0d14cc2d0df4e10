"""Per-operator recompute (``runtime.operator_recompute``): in a view's incremental step, an
operator owning its output arrangement whose own inputs changed beyond the bound recomputes
its output from their snapshots and diffs it, while the rest of the plan steps
incrementally. Under random transactions (small writes to every table, reloads of one
table) the views recomputing per operator equal DuckDB after every transaction (and one of
them the same view under ``REFRESH POLICY = INCREMENTAL``), their errors come and go with the rows
causing them, the refresh history names the operators recomputed, and a durable database
reopened after such steps goes on from the state they left."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview
from tests.support.oracle.compare import difference
from tests.support.seeds import seeds

VIEWS = {
    # two GROUP BYs joined: the one over the table reloaded recomputes (its max needs the
    # (key, value) arrangement, taken over from the fresh subplan too)
    "sums": "SELECT x.k, x.s, y.m, y.n FROM (SELECT k, sum(v) AS s FROM a GROUP BY k) x "
            "JOIN (SELECT k, max(w) AS m, count(*) AS n FROM b GROUP BY k) y ON x.k = y.k",
    # a TopK a join looks up, over a GROUP BY
    "top": "SELECT t.k, t.s, b.w FROM (SELECT k, sum(v) AS s FROM a GROUP BY k "
           "ORDER BY s DESC, k LIMIT 3) t JOIN b ON t.k = b.k",
    # a window a join looks up
    "ranked": "SELECT r.k, r.v, r.pos, b.w FROM (SELECT k, v, row_number() OVER "
              "(PARTITION BY k ORDER BY v) AS pos FROM a) r JOIN b ON r.k = b.k",
}
FAILING = ("SELECT x.k, x.q, y.n FROM (SELECT k, sum(100 / v) AS q FROM a GROUP BY k) x "
           "LEFT JOIN (SELECT k, count(*) AS n FROM b GROUP BY k) y ON x.k = y.k")
"""Fails (division by zero) while ``a`` holds a row whose ``v`` is 0: errors are data, the
recomputed operator's errors the difference of its subplan's."""


def _rows(rng: random.Random, n: int, zero: bool) -> list[tuple[int, int]]:
    return [(rng.randrange(5), rng.randrange(0 if zero else 1, 20)) for _ in range(n)]


def _write(con: matview.Connection, db: duckdb.DuckDBPyConnection, rng: random.Random,
           step: int) -> None:
    """One random transaction: a reload of ``a`` (every row deleted, new ones inserted), a
    few rows of ``a`` or ``b`` inserted or deleted, or both tables written. Steps 1 and 2
    reload ``a``, step 1 with a row whose ``v`` is 0 (``FAILING`` fails), step 2 without
    (its error is retracted)."""
    statements: list[str] = []
    kind = "reload" if step in (1, 2) else rng.choice(["reload", "reload", "small", "both"])
    if kind in ("reload", "both"):
        rows = _rows(rng, rng.randrange(4, 12), step % 3 == 1)
        values = ", ".join(map(str, rows + ([(rng.randrange(5), 0)] if step == 1 else [])))
        statements += ["DELETE FROM a", f"INSERT INTO a VALUES {values}"]
    if kind in ("small", "both"):
        table = rng.choice("ab")
        statements.append(f"DELETE FROM {table} WHERE k = {rng.randrange(5)}"
                          if rng.random() < 0.3 else
                          f"INSERT INTO {table} VALUES {_rows(rng, 1, False)[0]}")
    with con.transaction():
        for statement in statements:
            con.execute(statement)
    for statement in statements:
        db.execute(statement)


def _check(con: matview.Connection, db: duckdb.DuckDBPyConnection, names: list[str],
           sql: Callable[[str], str]) -> None:
    zero = db.execute("SELECT count(*) FROM a WHERE v = 0").fetchall()[0][0]
    for name in names:
        if name.startswith("failing"):
            if zero:
                with pytest.raises(matview.DataError, match="division by zero"):
                    con.execute(f"SELECT * FROM {name}")
                continue
        missing, extra = difference(con.execute(f"SELECT * FROM {name}").fetchall(),
                                    db.execute(sql(name)).fetchall())
        assert not missing and not extra, (name, missing, extra)


def _created(con: matview.Connection) -> list[str]:
    """Every view recomputing per operator (the connection's ``auto``), and ``sums`` again
    under ``REFRESH POLICY = INCREMENTAL`` (``sums_incr``)."""
    for name, sql in [*VIEWS.items(), ("failing", FAILING)]:
        con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    con.execute("CREATE MATERIALIZED VIEW sums_incr WITH (REFRESH POLICY = INCREMENTAL) AS "
                f"{VIEWS['sums']}")
    return [*VIEWS, "failing", "sums_incr"]


def _sql(name: str) -> str:
    base = name.removesuffix("_incr")
    return FAILING if base == "failing" else VIEWS[base]


@pytest.mark.parametrize("seed", seeds())
def test_recomputed_operators_equal_incremental_and_duckdb(
        spark: SparkSession, runtime_settings: Callable[..., None], seed: int) -> None:
    # in a step that is not small (a reload's), every operator whose inputs changed at all
    # recomputes; views step incrementally unless a step changes every row they held
    runtime_settings(operator_recompute_change=1e-9, refresh_small_change=1.0,
                     small_step_rows=10)
    rng = random.Random(seed)
    db = duckdb.connect()
    db.execute("SET integer_division = true")  # 100 / v as PostgreSQL divides
    with matview.connect(clock=0, spark=spark) as con:
        for statement in ("CREATE TABLE a (k INT, v INT)", "CREATE TABLE b (k INT, w INT)",
                          f"INSERT INTO a VALUES {', '.join(map(str, _rows(rng, 8, False)))}",
                          f"INSERT INTO b VALUES {', '.join(map(str, _rows(rng, 40, False)))}"):
            con.execute(statement)
            db.execute(statement)
        names = _created(con)
        for step in range(4):
            _write(con, db, rng, step)
            _check(con, db, names, _sql)
            assert sorted(con.execute("SELECT * FROM sums").fetchall()) == sorted(
                con.execute("SELECT * FROM sums_incr").fetchall())
        history = con.execute("SELECT name, recomputed_operators FROM "
                              "matview_refresh_history").fetchall()
    recomputed = {name: said for name, said in history if said is not None}
    assert set(recomputed) >= {"sums", "top", "ranked", "failing"}, history
    assert not any(name.endswith("_incr") for name in recomputed), history
    assert recomputed["sums"].startswith("%") and " Reduce: " in recomputed["sums"]


def test_a_small_step_recomputes_no_operator(
        spark: SparkSession, runtime_settings: Callable[..., None]) -> None:
    """A small step computes every change in the refresh's one job: a recompute's own jobs
    would cost more."""
    runtime_settings(operator_recompute_change=1e-9, refresh_small_change=1.0)
    with matview.connect(clock=0, spark=spark) as con:
        con.execute("CREATE TABLE a (k INT, v INT)")
        con.execute("CREATE TABLE b (k INT, w INT)")
        con.execute("INSERT INTO b VALUES (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)")
        con.execute(f"CREATE MATERIALIZED VIEW sums AS {VIEWS['sums']}")
        con.execute("INSERT INTO a VALUES (1, 3), (1, 4)")
        assert con.execute("SELECT * FROM sums").fetchall() == [(1, 7, 2, 1)]
        assert con.execute("SELECT recomputed_operators FROM matview_refresh_history "
                           "WHERE strategy = 'incremental'").fetchall() == [(None,)]


def test_a_durable_database_goes_on_from_a_recomputed_operators_state(
        spark: SparkSession, runtime_settings: Callable[..., None], tmp_path: Path) -> None:
    """The arrangements an operator took over from its recompute are the ones saved."""
    runtime_settings(operator_recompute_change=0.5, refresh_small_change=1.0,
                     small_step_rows=0)
    rng = random.Random(3)
    db = duckdb.connect()
    db.execute("SET integer_division = true")  # 100 / v as PostgreSQL divides
    with matview.connect(tmp_path / "db", spark=spark) as con:
        for statement in ("CREATE TABLE a (k INT, v INT)", "CREATE TABLE b (k INT, w INT)",
                          f"INSERT INTO a VALUES {', '.join(map(str, _rows(rng, 30, False)))}",
                          f"INSERT INTO b VALUES {', '.join(map(str, _rows(rng, 30, False)))}"):
            con.execute(statement)
            db.execute(statement)
        con.execute(f"CREATE MATERIALIZED VIEW sums AS {VIEWS['sums']}")
        for statement in ("DELETE FROM a", "INSERT INTO a VALUES (1, 5), (2, 7), (1, 9)"):
            con.execute(statement)
            db.execute(statement)
            _check(con, db, ["sums"], _sql)
        said = con.execute("SELECT recomputed_operators FROM matview_refresh_history "
                           "WHERE recomputed_operators IS NOT NULL").fetchall()
        assert len(said) == 2 and all(" Reduce: " in s for s, in said), said
        analyzed = con.explain("MATERIALIZED VIEW sums", stage="analyze")
        assert f"\n  last change recomputed {said[-1][0]}\n" in analyzed, analyzed
    with matview.connect(tmp_path / "db", spark=spark) as con:
        for statement in ("INSERT INTO a VALUES (2, 1)", "DELETE FROM a WHERE v = 9",
                          "INSERT INTO b VALUES (1, 50)"):
            con.execute(statement)
            db.execute(statement)
            _check(con, db, ["sums"], _sql)

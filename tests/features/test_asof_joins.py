"""ASOF joins on data time (``L ASOF [LEFT] JOIN R ON k_L = k_R AND l θ r``), which the
binder lowers to ``Window``, ``Join`` and ``Union`` (``ir/asof_joins.py``).

Through the reference interpreter: each query's plan, raw, optimized and physical, denotes
what DuckDB's ``ASOF JOIN`` computes. Through ``matview.connect()``: maintained views for
each of ``>=``, ``>``, ``<=``, ``<`` (two inner, two LEFT), against DuckDB after every group
of one to three transactions of seeded random writes to both sides (in one transaction too);
the rule for ties, which DuckDB leaves open; and the conditions refused.
"""

from __future__ import annotations

import random

import pytest
from matview.sql.errors import SqlSyntaxError, UnsupportedError
from pyspark.sql import SparkSession

import matview
from tests.support.mirror import Mirror
from tests.support.oracle.workload import BulkInsert
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_denotes, assert_refused, setup  # noqa: F401 (a fixture)

# the rows of orders with equal (cust, id) are equal rows, so DuckDB's choice among ties
# (which it leaves open) cannot show
QUERIES = [
    "SELECT * FROM orders o ASOF JOIN orders p ON o.cust = p.cust AND o.id > p.id",
    "SELECT o.id, p.id, p.amount FROM orders o ASOF LEFT JOIN orders p "
    "ON p.cust = o.cust AND p.id >= o.id",
    "SELECT o.id, p.id FROM orders o ASOF LEFT JOIN orders p ON o.cust = p.cust AND o.id < p.id",
    "SELECT * FROM customers c ASOF LEFT JOIN orders o "
    "ON c.id = o.cust AND c.score * 10 <= o.amount",
    "SELECT t.tag, o.id FROM tags t ASOF JOIN orders o ON t.id >= o.id",
    "SELECT p.cust, count(*) FROM orders o ASOF JOIN orders p ON o.cust = p.cust "
    "AND o.id >= p.id GROUP BY p.cust",
    "SELECT * FROM tags t ASOF LEFT JOIN (SELECT cust, max(id) AS top FROM orders GROUP BY cust) m "
    "ON t.id + 1 = m.cust + 1 AND t.id <= m.top",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(
        sql: str, stage: str, setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_denotes(sql, stage, setup)


@pytest.mark.parametrize("sql, error, message", [
    ("SELECT * FROM orders o ASOF JOIN tags t ON o.id = t.id", UnsupportedError,
     "exactly one inequality"),
    ("SELECT * FROM orders o ASOF JOIN tags t ON o.id >= t.id AND o.cust <= t.id",
     UnsupportedError, "exactly one inequality"),
    ("SELECT * FROM orders o ASOF JOIN tags t ON o.id >= t.id OR o.cust = t.id",
     UnsupportedError, "ASOF JOIN's ON condition"),
    ("SELECT * FROM orders o ASOF LEFT JOIN tags t ON o.id >= t.id AND t.tag = 'x'",
     UnsupportedError, "ASOF LEFT JOIN's ON condition"),
    ("SELECT * FROM orders o ASOF JOIN tags t ON o.id + t.id >= 1", UnsupportedError,
     "between an expression of each side"),
    ("SELECT * FROM orders o ASOF JOIN tags t USING (id)", SqlSyntaxError,
     "ASOF JOIN needs an ON clause"),
    ("SELECT * FROM orders o ASOF RIGHT JOIN tags t ON o.id >= t.id", UnsupportedError,
     "ASOF RIGHT JOIN is not supported"),
])
def test_conditions_of_another_form_are_refused(
        sql: str, error: type[Exception], message: str,
        setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_refused(sql, error, message, setup)


def test_a_tie_takes_the_first_right_row_whatever_the_order_of_writes(
        spark: SparkSession) -> None:
    """Two prices at the best time: the least row is the match, inserted first or last, and
    when it goes the other takes its place."""
    views = []
    for order in ((5, 9), (9, 5)):
        con = matview.connect(clock=0, spark=spark, refresh="incremental")
        con.execute("CREATE TABLE t (k INT, ts INT)")
        con.execute("CREATE TABLE p (k INT, ts INT, px INT)")
        con.execute("CREATE MATERIALIZED VIEW v AS SELECT t.ts, p.px FROM t "
                    "ASOF JOIN p ON t.k = p.k AND t.ts >= p.ts")
        con.execute("INSERT INTO t VALUES (1, 10), (1, 20)")
        for px in order:
            con.execute(f"INSERT INTO p VALUES (1, 3, {px})")
        views.append(sorted(con.execute("SELECT * FROM v").fetchall()))
        con.execute("DELETE FROM p WHERE px = 5")
        assert sorted(con.execute("SELECT * FROM v").fetchall()) == [(10, 9), (20, 9)]
    assert views == [[(10, 5), (20, 5)], [(10, 5), (20, 5)]]


# each comparison, inner and LEFT between them (the lowering's LEFT part is the same for all)
VIEWS = {
    f"{name}_{'left' if left else 'inner'}":
        f"SELECT t.id, t.sym, t.ts, p.ts AS pts, p.px FROM trades t "
        f"ASOF {'LEFT ' if left else ''}JOIN prices p ON t.sym = p.sym AND t.ts {op} p.ts"
    for name, op, left in (("ge", ">=", False), ("gt", ">", True), ("le", "<=", True),
                           ("lt", "<", False))
}
TIMES = list(range(1, 11))
VIEWS["per_price"] = ("SELECT p.px, count(*), sum(t.id) FROM trades t "
                      "ASOF JOIN prices p ON t.sym = p.sym AND t.ts >= p.ts GROUP BY p.px")


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Trades and prices come and go on both sides (NULL symbols and times among them,
    duplicate trades), prices move between times, and a transaction may change both tables;
    views are read after one to three transactions. A price's value is a function of its
    symbol and time, so rows tied at a time are equal rows and DuckDB's pick among them
    cannot differ from matview's."""
    rng = random.Random(seed)
    mirror = Mirror(spark, "CREATE TABLE trades (id INT, sym INT, ts INT)",
                    "CREATE TABLE prices (sym INT, ts INT, px INT)")
    mirror.execute("INSERT INTO trades VALUES (1, 1, 5), (2, 1, 9), (3, 2, 4), (4, NULL, 5)")
    mirror.execute("INSERT INTO prices VALUES (1, 3, 103), (1, 5, 105), (2, 6, 206)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def value(domain: list[int]) -> str:
        return "NULL" if rng.random() < 0.1 else str(rng.choice(domain))

    def price() -> tuple[int, int, int]:
        sym, ts = rng.randint(1, 3), rng.randint(1, 10)
        return sym, ts, sym * 100 + ts

    def change() -> str | tuple:
        roll = rng.random()
        if roll < 0.3:
            rows = ", ".join(f"({rng.randint(1, 9)}, {value([1, 2, 3])}, {value(TIMES)})"
                             for _ in range(rng.randint(1, 3)))
            return f"INSERT INTO trades VALUES {rows}"
        if roll < 0.55:
            rows = ", ".join(str(price()) for _ in range(rng.randint(1, 3)))
            return f"INSERT INTO prices VALUES {rows}"
        if roll < 0.7:
            return (f"DELETE FROM prices WHERE sym = {rng.randint(1, 3)} "
                    f"AND ts <= {rng.randint(1, 10)}")
        if roll < 0.8:
            return f"DELETE FROM trades WHERE id = {rng.randint(1, 9)}"
        if roll < 0.9:
            return f"UPDATE trades SET ts = {rng.randint(1, 10)} WHERE id = {rng.randint(1, 9)}"
        return (BulkInsert("prices", (price(),)),
                BulkInsert("trades", ((rng.randint(1, 9), rng.randint(1, 3), rng.randint(1, 10)),)))

    changes = [change() for _ in range(14)]
    mirror.steps_grouped([*changes, "DELETE FROM prices WHERE sym = 1"], rng)


def test_a_price_changes_only_the_trades_it_matches(spark: SparkSession) -> None:
    """A new price between two trades' times replaces the match of the later trade only:
    the view's output changes by that trade's retraction and insertion, and a price of
    another symbol changes nothing."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE trades (id INT, sym INT, ts INT)")
    con.execute("CREATE TABLE prices (sym INT, ts INT, px INT)")
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT t.id, p.px FROM trades t "
                "ASOF JOIN prices p ON t.sym = p.sym AND t.ts >= p.ts")
    con.execute("INSERT INTO trades VALUES (1, 1, 5), (2, 1, 9), (3, 2, 9)")
    con.execute("INSERT INTO prices VALUES (1, 1, 10), (2, 1, 20)")
    changes = con.subscribe("v")
    changes.fetch()  # the snapshot
    con.execute("INSERT INTO prices VALUES (1, 7, 11), (3, 1, 30)")
    assert sorted((row[2:], row[1]) for row in changes.fetch()) == [
        ((2, 10), -1), ((2, 11), 1)]


def test_a_right_side_keyed_by_its_key_and_time_is_not_numbered(spark: SparkSession) -> None:
    """With a primary key on (sym, ts) no two prices tie, so the plan takes R's rows as they
    are (no ``row_number`` window); the view equals DuckDB's as prices come and go."""
    mirror = Mirror(spark, "CREATE TABLE trades (id INT, sym INT, ts INT)",
                    "CREATE TABLE prices (sym INT, ts INT, px INT, PRIMARY KEY (sym, ts))")
    sql = ("SELECT t.id, p.px FROM trades t ASOF LEFT JOIN prices p "
           "ON t.sym = p.sym AND t.ts > p.ts")
    plan = mirror.con.execute(f"EXPLAIN {sql}").fetchall()[0][0]
    assert "Window" in plan and "row_number" not in plan
    mirror.view("v", sql)
    mirror.steps([
        "INSERT INTO trades VALUES (1, 1, 5), (2, 1, 9), (3, 2, 4), (4, NULL, 5), (5, 1, NULL)",
        "INSERT INTO prices VALUES (1, 3, 13), (1, 5, 15), (2, 6, 26)",
        "UPDATE prices SET px = 16 WHERE sym = 1 AND ts = 5",
        "DELETE FROM prices WHERE ts = 3",
        "INSERT INTO prices VALUES (2, 1, 21), (1, 8, 18)",
    ])

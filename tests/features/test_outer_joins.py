"""Outer joins (``LEFT``, ``RIGHT``, ``FULL [OUTER] JOIN`` with ON, USING or NATURAL), which
the binder lowers to inner joins, ``Reduce``, ``Union`` and ``Linear`` (``ir/outer_joins.py``).

Through the reference interpreter: each query's plan, raw, optimized and physical, denotes
what DuckDB computes over tables with NULL keys and duplicate rows, so the optimizer's
transforms keep the lowering's meaning. Through ``matview.connect()``: maintained views
against DuckDB's answer after every change, for the edge cases (a deleted right row pads its
left row again, duplicates, NULL keys, ON FALSE and ON TRUE, FULL JOIN USING's merged
column, WHERE over the padded side), a lateral LEFT JOIN, and the binding errors.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark.sql import SparkSession

import matview
from tests.support.mirror import Mirror
from tests.support.oracle.compare import canonical
from tests.support.oracle.workload import BulkDelete, BulkInsert
from tests.support.sql_env import Environment, assert_denotes, environment

# ---- the lowering's meaning, through the reference interpreter ----------------------------

# orders.cust and customers.id and tags.id hold NULLs; orders holds a duplicate row, and
# customers two rows with id 3.
QUERIES = [
    # keyed: equalities between the sides, and conjuncts reading one side only
    "SELECT * FROM orders o LEFT JOIN customers c ON o.cust = c.id",
    "SELECT * FROM orders o RIGHT JOIN customers c ON o.cust = c.id",
    "SELECT * FROM orders o FULL JOIN customers c ON o.cust = c.id",
    "SELECT * FROM customers c LEFT JOIN tags t ON c.id = t.id AND c.name = 'carol'",
    "SELECT * FROM customers c FULL JOIN tags t "
    "ON c.id + 1 = t.id + 1 AND t.tag IS NOT NULL AND c.score IS NULL",
    "SELECT * FROM orders o LEFT JOIN customers c ON o.amount > 10",
    "SELECT * FROM orders o RIGHT JOIN customers c ON c.score > 1",
    "SELECT * FROM orders o LEFT JOIN customers c ON false",
    "SELECT * FROM orders o FULL JOIN customers c ON false",
    "SELECT * FROM orders o FULL JOIN customers c ON true",
    "SELECT * FROM orders o LEFT JOIN orders p ON o.id = p.id",
    # general: conditions over both sides that are no equality of the two
    "SELECT * FROM orders o FULL JOIN customers c ON o.cust = c.id AND o.amount > c.score",
    "SELECT * FROM orders o LEFT JOIN customers c ON o.cust < c.id",
    "SELECT * FROM orders o LEFT JOIN customers c ON o.cust = c.id OR o.id = c.id",
    # USING and NATURAL: the merged column is COALESCE(l, r) for FULL, r for RIGHT
    "SELECT * FROM tags FULL JOIN customers USING (id)",
    "SELECT id, tags.id, customers.id FROM tags FULL JOIN customers USING (id)",
    "SELECT id, tag, name FROM tags NATURAL FULL JOIN customers",
    "SELECT * FROM tags NATURAL LEFT JOIN customers",
    "SELECT * FROM tags NATURAL RIGHT OUTER JOIN customers",
    "SELECT * FROM tags FULL JOIN customers USING (id) FULL JOIN orders USING (id)",
    "SELECT id, count(*) FROM tags FULL JOIN customers USING (id) GROUP BY id",
    # chains (left-associative), parenthesized joins, subqueries and aggregates as inputs
    "SELECT o.id, c.name, t.tag FROM orders o JOIN customers c ON o.cust = c.id "
    "LEFT JOIN tags t ON t.id = o.id",
    "SELECT o.id, c.name, t.tag FROM orders o LEFT JOIN customers c ON o.cust = c.id "
    "LEFT JOIN tags t ON t.id = c.id",
    "SELECT o.id, c.name, t.tag FROM orders o LEFT JOIN customers c ON o.cust = c.id "
    "JOIN tags t ON t.id = c.id",
    "SELECT o.id, c.name, t.tag FROM orders o RIGHT JOIN customers c ON o.cust = c.id "
    "FULL JOIN tags t ON t.id = o.id",
    "SELECT o.id, c.name, t.tag FROM orders o "
    "LEFT JOIN (customers c JOIN tags t ON t.id = c.id) ON o.cust = c.id",
    "SELECT o.id, c.name, t.tag FROM orders o "
    "FULL JOIN (customers c LEFT JOIN tags t ON t.id = c.id AND t.tag <> 'x') ON o.cust = c.id",
    "SELECT * FROM (orders o LEFT JOIN tags t ON t.id = o.cust) RIGHT JOIN customers c "
    "ON o.cust = c.id",
    "SELECT c.id, p.n FROM customers c "
    "LEFT JOIN (SELECT cust, count(*) AS n FROM orders GROUP BY cust) p ON p.cust = c.id",
    "SELECT * FROM (SELECT * FROM orders o LEFT JOIN tags t ON t.id = o.cust) x "
    "FULL JOIN customers c ON x.cust = c.id",
    "SELECT * FROM tags t, customers c LEFT JOIN orders o ON o.cust = c.id AND o.amount > 6 "
    "WHERE t.id = c.id",
    # WHERE and GROUP BY above the join see the padded NULLs
    "SELECT * FROM customers c LEFT JOIN orders o ON o.cust = c.id WHERE o.id IS NULL",
    "SELECT * FROM customers c FULL JOIN orders o ON o.cust = c.id "
    "WHERE o.amount IS NULL OR c.score IS NULL OR c.region = 'north'",
    "SELECT c.region, count(o.id), sum(o.amount) FROM customers c "
    "LEFT JOIN orders o ON o.cust = c.id GROUP BY c.region",
    "SELECT * FROM (tags t0 LEFT JOIN customers c ON c.id = t0.id) "
    "FULL JOIN (orders o RIGHT JOIN tags t ON t.id = o.cust) ON o.cust = c.id",
    "SELECT * FROM tags t0 JOIN customers c ON c.id = t0.id AND t0.tag = 'x' "
    "RIGHT JOIN orders o ON o.cust = c.id",
    "SELECT * FROM tags t0, customers c JOIN orders o ON o.cust = c.id AND o.amount > 5 "
    "FULL JOIN tags t ON t.id = o.id WHERE t0.id = 1",
    "SELECT id FROM tags FULL JOIN customers USING (id) LEFT JOIN orders USING (id) "
    "RIGHT JOIN tags t2 USING (id)",
    "SELECT * FROM customers c FULL JOIN (SELECT DISTINCT cust FROM orders) d ON d.cust = c.id",
    "SELECT * FROM customers c LEFT JOIN per_cust p ON p.who = c.id",
    # table functions on either side, reading the left side or not, after other items
    "SELECT * FROM customers c LEFT JOIN generate_series(1, c.id) g ON g > 1",
    "SELECT * FROM customers c LEFT JOIN generate_series(1, 3) g ON g = c.id",
    "SELECT * FROM customers c RIGHT JOIN generate_series(1, 3) g ON g = c.id",
    "SELECT * FROM generate_series(1, 3) g FULL JOIN customers c ON g = c.id",
    "SELECT * FROM customers c, generate_series(1, c.id) g LEFT JOIN tags t ON t.id = g",
    "SELECT * FROM tags t0, customers c LEFT JOIN generate_series(1, t0.id) g ON g = c.id",
    "SELECT * FROM customers c LEFT JOIN LATERAL unnest(ARRAY[c.id, c.id + 1]) AS u(x) "
    "ON x = 2",
    "SELECT * FROM (customers c CROSS JOIN generate_series(1, c.id) g) "
    "FULL JOIN tags t ON t.id = g",
]


@pytest.fixture(scope="module")
def setup() -> Environment:
    return environment()


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(sql: str, stage: str, setup: Environment) -> None:
    assert_denotes(sql, stage, setup)


# ---- maintained views against DuckDB --------------------------------------------------------



SIDES = ("CREATE TABLE l (k INT, v TEXT)", "CREATE TABLE r (k INT, w TEXT)")


def test_rows_lose_and_regain_their_padding(spark: SparkSession) -> None:
    """Keyed and general lowerings on each side: a left row is padded while no right row
    matches it; duplicates on both sides, NULL keys (which match nothing), and a change of
    both sides in one transaction."""
    mirror = Mirror(spark, *SIDES)
    mirror.view("keyed_left", "SELECT * FROM l LEFT JOIN r ON l.k = r.k")
    mirror.view("keyed_full", "SELECT l.v, r.w FROM l FULL OUTER JOIN r "
                              "ON r.k = l.k AND r.w <> 'z'")
    mirror.view("general_left", "SELECT * FROM l LEFT JOIN r ON l.k = r.k AND l.v < r.w")
    mirror.view("general_full", "SELECT * FROM l FULL JOIN r ON l.k <= r.k OR l.v = r.w")
    mirror.view("anti", "SELECT l.* FROM l LEFT JOIN r ON l.k = r.k WHERE r.k IS NULL")
    mirror.steps([
        "INSERT INTO l VALUES (1, 'a'), (1, 'a'), (2, 'b'), (NULL, 'n'), (NULL, 'n')",
        "INSERT INTO r VALUES (1, 'x'), (1, 'x'), (NULL, 'n'), (3, 'z')",
        "DELETE FROM r WHERE k = 1",  # both copies: l's 1s are padded again
        "INSERT INTO r VALUES (2, 'c'), (2, 'a')",
        "UPDATE r SET k = 1 WHERE w = 'a'",  # moves a match from l's 2 to l's 1s
        "DELETE FROM l WHERE k = 1",
        (BulkInsert("l", ((3, "z"),)), BulkDelete("r", ((3, "z"),))),
        "INSERT INTO r VALUES (NULL, 'n'), (3, 'y')",
        "DELETE FROM l",
    ])


def test_on_false_and_on_true(spark: SparkSession) -> None:
    """ON FALSE pads every row; ON TRUE is a cross join while both sides hold rows, and pads
    every row of one side while the other is empty."""
    mirror = Mirror(spark, *SIDES)
    mirror.view("never_left", "SELECT * FROM l LEFT JOIN r ON FALSE")
    mirror.view("never_full", "SELECT * FROM l FULL JOIN r ON 1 = 0")
    mirror.view("always_full", "SELECT * FROM l FULL JOIN r ON TRUE")
    mirror.view("right_side_only", "SELECT * FROM l RIGHT JOIN r ON r.w = 'x'")
    mirror.steps([
        "INSERT INTO l VALUES (1, 'a'), (1, 'a')",
        "INSERT INTO r VALUES (2, 'x'), (NULL, NULL)",
        "DELETE FROM l",
        "UPDATE r SET w = 'x' WHERE k IS NULL",
    ])


def test_full_join_using_merges_the_columns(spark: SparkSession) -> None:
    """``FULL JOIN USING (k)`` shows ``k`` once, as COALESCE(l.k, r.k); RIGHT JOIN shows r.k;
    grouping by the merged column groups the rows of both sides."""
    mirror = Mirror(spark, *SIDES)
    mirror.view("merged", "SELECT * FROM l FULL JOIN r USING (k)")
    mirror.view("both", "SELECT k, l.k AS lk, r.k AS rk, v, w FROM l FULL JOIN r USING (k)")
    mirror.view("right_using", "SELECT * FROM l RIGHT JOIN r USING (k)")
    mirror.view("per_key", "SELECT k, count(*) AS n, count(v) AS vs, count(w) AS ws "
                           "FROM l NATURAL FULL JOIN (SELECT k, w FROM r) AS s GROUP BY k")
    mirror.steps([
        "INSERT INTO l VALUES (1, 'a'), (2, 'b'), (NULL, 'n')",
        "INSERT INTO r VALUES (2, 'x'), (3, 'y'), (3, 'y'), (NULL, 'm')",
        "DELETE FROM l WHERE k = 2",
        "INSERT INTO l VALUES (3, 'c')",
    ])
    cursor = mirror.con.execute("SELECT * FROM merged")
    assert [d[0] for d in cursor.description] == ["k", "v", "w"]


def test_outer_joins_of_joins_subqueries_and_aggregates(spark: SparkSession) -> None:
    mirror = Mirror(spark, *SIDES, "CREATE TABLE m (k INT, n INT)")
    mirror.view("chain", "SELECT l.v, r.w, m.n FROM l JOIN r ON l.k = r.k "
                         "LEFT JOIN m ON m.k = r.k AND m.n > 1")
    mirror.view("nested", "SELECT l.v, r.w, m.n FROM l "
                          "FULL JOIN (r LEFT JOIN m ON m.k = r.k) ON l.k = r.k")
    mirror.view("totals", "SELECT l.k, l.v, t.total FROM l "
                          "LEFT JOIN (SELECT k, sum(n) AS total FROM m GROUP BY k) AS t "
                          "ON t.k = l.k")
    mirror.steps([
        "INSERT INTO l VALUES (1, 'a'), (2, 'b'), (NULL, 'n')",
        "INSERT INTO r VALUES (1, 'x'), (2, 'y'), (2, 'y'), (4, 'q')",
        "INSERT INTO m VALUES (1, 5), (1, 1), (4, 2), (NULL, 3)",
        "DELETE FROM m WHERE n = 5",
        "DELETE FROM r WHERE k = 1",
    ])


def test_lateral_left_join_keeps_rows_the_function_expands_to_nothing(
        spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE a (id INT, xs INT[])")
    con.execute("CREATE MATERIALIZED VIEW u AS "
                "SELECT a.id, x FROM a LEFT JOIN LATERAL unnest(a.xs) AS x ON x > 1")
    con.execute("INSERT INTO a VALUES (1, '{1,2,3}'), (2, '{}'), (3, NULL), (4, '{1}')")
    assert canonical(con.execute("SELECT * FROM u").fetchall()) == canonical(
        [(1, 2), (1, 3), (2, None), (3, None), (4, None)])
    con.execute("DELETE FROM a WHERE id = 1")
    assert canonical(con.execute("SELECT * FROM u").fetchall()) == canonical(
        [(2, None), (3, None), (4, None)])


def test_temporal_on_condition(spark: SparkSession) -> None:
    """``mz_now()`` in ON: a row is matched exactly while the condition holds, and padded
    again once it stops holding, also with no writes."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE x (id INT, until TIMESTAMP)")
    con.execute("CREATE TABLE e (id INT, at TIMESTAMP)")
    con.execute("CREATE MATERIALIZED VIEW recent AS SELECT x.id, e.at FROM x "
                "LEFT JOIN e ON e.id = x.id AND mz_now() < e.at + INTERVAL '10 seconds'")
    con.execute("CREATE MATERIALIZED VIEW open AS SELECT x.id, e.at FROM x "
                "FULL JOIN e ON e.id = x.id AND mz_now() < x.until")
    con.insert("x", [(1, datetime(1970, 1, 1, 0, 0, 20)), (2, datetime(1970, 1, 1, 0, 0, 5))])
    con.insert("e", [(1, datetime(1970, 1, 1)), (1, datetime(1970, 1, 1, 0, 0, 15))])
    first, second = datetime(1970, 1, 1), datetime(1970, 1, 1, 0, 0, 15)
    expected = {  # the logical time in milliseconds: (recent, open)
        9_999: ([(1, first), (1, second), (2, None)], [(1, first), (1, second), (2, None)]),
        10_000: ([(1, second), (2, None)], [(1, first), (1, second), (2, None)]),
        20_000: ([(1, second), (2, None)], [(1, None), (2, None), (None, first),
                                            (None, second)]),
        25_000: ([(1, None), (2, None)], [(1, None), (2, None), (None, first),
                                          (None, second)]),
    }
    for now, (recent, open_) in expected.items():
        con.advance_time(now)
        assert canonical(con.execute("SELECT * FROM recent").fetchall()) == canonical(recent)
        assert canonical(con.execute("SELECT * FROM open").fetchall()) == canonical(open_)


@pytest.mark.parametrize(("sql", "message"), [
    ("SELECT * FROM l LEFT JOIN r ON l.k = m.k JOIN m ON true",
     'missing FROM-clause entry for table "m"'),
    ("SELECT * FROM m, l LEFT JOIN r ON r.k = m.k",
     'invalid reference to FROM-clause entry for table "m"'),
    ("SELECT * FROM l RIGHT JOIN generate_series(1, l.k) AS g ON true",
     'invalid reference to FROM-clause entry for table "l": the right side of a RIGHT JOIN '
     "cannot read its left side"),
    ("SELECT * FROM l FULL JOIN r", "syntax error: FULL JOIN needs an ON or USING clause"),
    ("SELECT * FROM l LEFT JOIN r USING (v)",
     'column "v" specified in USING clause does not exist in right table'),
])
def test_binding_errors(spark: SparkSession, sql: str, message: str) -> None:
    con = matview.connect(clock=0, spark=spark)
    for ddl in (*SIDES, "CREATE TABLE m (k INT, n INT)"):
        con.execute(ddl)
    with pytest.raises(matview.ProgrammingError, match=f"^{message} \\(line 1"):
        con.execute(sql)

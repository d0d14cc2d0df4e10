"""Subqueries in expressions: ``[NOT] EXISTS``, ``x [NOT] IN (SELECT ...)`` and scalar
subqueries, uncorrelated and correlated, which the binder keeps in the RAW plan
(``scalar.Exists``, ``InSubquery``, ``ScalarSubquery`` with ``Outer`` references) and
``planner.decorrelate`` rewrites into joins and reductions.

Through the reference interpreter: each query's plan at every stage denotes what DuckDB
computes over tables with NULLs and duplicate rows (the RAW plan is interpreted with its
subqueries evaluated row by row). Through ``matview.connect()``: maintained views against
DuckDB after every change. Then the shapes that stay refused, with their positions.
"""

from __future__ import annotations

from collections import Counter

import pytest
from matview.ir.interpret import interpret
from matview.ir.parse import parse_plan
from matview.ir.render import render_plan
from matview.ir.subquery import has_subquery
from matview.planner.pipeline import at_stage
from matview.sql.errors import SqlError, UnsupportedError
from matview.sql.parse import parse
from matview.sql.statements import Query
from oracle.workload import BulkDelete, BulkInsert
from pyspark.sql import SparkSession
from test_outer_joins import Mirror
from test_sql_duckdb import Environment, _row, environment

# orders.cust, customers.id and tags.id hold NULLs; orders holds a duplicate row, customers
# two rows with id 3, tags two with id 1.
QUERIES = [
    # EXISTS / NOT EXISTS, correlated by equality, by inequality, uncorrelated
    "SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM customers c WHERE c.id = o.cust)",
    "SELECT * FROM orders o WHERE NOT EXISTS (SELECT 1 FROM customers c WHERE c.id = o.cust)",
    "SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM tags t WHERE t.id < o.cust)",
    "SELECT o.id FROM orders o WHERE NOT EXISTS "
    "(SELECT 1 FROM customers c WHERE c.id = o.cust AND c.score > o.amount)",
    "SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM tags WHERE tag = 'w')",
    "SELECT o.id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM tags WHERE tag = 'none')",
    "SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM tags t WHERE o.cust IS NULL)",
    # IN / NOT IN with NULLs on either side, empty sets, correlated
    "SELECT * FROM orders o WHERE o.cust IN (SELECT id FROM customers)",
    "SELECT * FROM orders o WHERE o.cust NOT IN (SELECT id FROM customers)",
    "SELECT * FROM orders o WHERE o.cust NOT IN (SELECT id FROM customers WHERE id IS NOT NULL)",
    "SELECT * FROM orders o WHERE o.cust NOT IN (SELECT id FROM tags WHERE tag = 'none')",
    "SELECT o.id FROM orders o WHERE o.cust NOT IN (SELECT id FROM tags t WHERE t.id > o.id)",
    "SELECT o.id, o.cust IN (SELECT id FROM tags t WHERE t.tag <> 'z') FROM orders o",
    "SELECT o.id, o.cust NOT IN (SELECT c.id FROM customers c WHERE c.region = 'north') "
    "FROM orders o",
    "SELECT o.id FROM orders o WHERE o.amount IN (SELECT score FROM customers)",
    # scalar subqueries in SELECT, WHERE and HAVING; count over no rows is 0
    "SELECT o.id, (SELECT max(score) FROM customers c WHERE c.id = o.cust) FROM orders o",
    "SELECT o.id, (SELECT count(*) FROM customers c WHERE c.id = o.cust) AS n FROM orders o",
    "SELECT o.id, (SELECT count(c.score) FROM customers c WHERE c.id = o.cust) FROM orders o",
    "SELECT o.id, (SELECT sum(coalesce(c.score, 1)) FROM customers c WHERE c.id = o.cust) "
    "FROM orders o",
    "SELECT o.id FROM orders o WHERE o.amount > "
    "(SELECT avg(amount) FROM orders p WHERE p.cust = o.cust)",
    "SELECT o.id, (SELECT count(*) FROM tags t WHERE t.id < o.cust) FROM orders o",
    "SELECT o.id FROM orders o WHERE o.amount > (SELECT min(amount) + 10 FROM orders)",
    "SELECT c.region, count(*) FROM customers c GROUP BY c.region "
    "HAVING count(*) > (SELECT count(*) FROM tags WHERE tags.id = 1)",
    "SELECT c.region, (SELECT count(*) FROM orders o WHERE o.cust IN "
    "(SELECT id FROM customers d WHERE d.region = c.region)) FROM customers c GROUP BY c.region",
    "SELECT (SELECT 1), (SELECT max(id) FROM tags)",
    "SELECT o.id, (SELECT o.amount * 2) FROM orders o",
    # under OR, NOT, CASE; nested and doubly correlated
    "SELECT o.id, EXISTS (SELECT 1 FROM tags t WHERE t.id = o.id) OR o.amount > 5 FROM orders o",
    "SELECT o.id FROM orders o WHERE NOT (o.amount > 10 AND "
    "EXISTS (SELECT 1 FROM customers c WHERE c.id = o.cust))",
    "SELECT o.id, CASE WHEN o.amount > 10 THEN (SELECT count(*) FROM tags t WHERE t.id = o.cust)"
    " ELSE -1 END FROM orders o",
    "SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM customers c WHERE c.id = o.cust AND "
    "EXISTS (SELECT 1 FROM tags t WHERE t.id = c.id AND t.id <> o.id))",
    "SELECT o.id FROM orders o WHERE o.cust IN (SELECT c.id FROM customers c WHERE c.score < "
    "(SELECT max(p.amount) FROM orders p WHERE p.cust = c.id))",
    # subqueries with joins, GROUP BY, DISTINCT and UNION inside
    "SELECT o.id FROM orders o WHERE o.cust IN "
    "(SELECT c.id FROM customers c JOIN tags t ON t.id = c.id WHERE t.tag = 'x')",
    "SELECT o.id FROM orders o WHERE o.amount > "
    "(SELECT count(*) FROM customers c JOIN tags t ON t.id = c.id WHERE c.id = o.cust)",
    "SELECT c.id FROM customers c WHERE c.id IN "
    "(SELECT cust FROM orders GROUP BY cust HAVING count(*) > 1)",
    "SELECT c.id FROM customers c WHERE c.id IN "
    "(SELECT id FROM tags UNION SELECT cust FROM orders)",
    "SELECT c.name FROM customers c WHERE EXISTS "
    "(SELECT DISTINCT t.tag FROM tags t WHERE t.id = c.id AND t.tag <> c.name)",
]


@pytest.fixture(scope="module")
def setup() -> Environment:
    return environment()


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "decorrelated", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(sql: str, stage: str, setup: Environment) -> None:
    catalog, tables, db = setup
    [query] = parse(sql, catalog)
    assert isinstance(query, Query)
    plan = at_stage(query.plan, stage)
    assert has_subquery(plan) == (stage == "raw")
    text = render_plan(plan)
    assert parse_plan(text) == plan
    expected = Counter(_row(r) for r in db.execute(sql).fetchall())
    assert Counter(_row(r) for r in interpret(plan, tables).elements()) == expected


# ---- maintained views against DuckDB --------------------------------------------------------

TABLES = ("CREATE TABLE l (k INT, v INT)", "CREATE TABLE r (k INT, w INT)")


def test_maintained_subqueries(spark: SparkSession) -> None:
    """Semi- and anti-joins, NOT IN with NULLs arriving and leaving, a correlated count that
    goes to 0 and back (the count bug), a scalar subquery in WHERE and in the select list."""
    mirror = Mirror(spark, *TABLES)
    mirror.view("semi", "SELECT * FROM l WHERE EXISTS (SELECT 1 FROM r WHERE r.k = l.k)")
    mirror.view("anti", "SELECT * FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.k = l.k)")
    mirror.view("not_in", "SELECT * FROM l WHERE l.v NOT IN (SELECT w FROM r)")
    mirror.view("in_corr", "SELECT l.k, l.v IN (SELECT w FROM r WHERE r.k = l.k) AS found "
                           "FROM l")
    mirror.view("counts", "SELECT l.k, (SELECT count(*) FROM r WHERE r.k = l.k) AS n FROM l")
    mirror.view("above", "SELECT * FROM l WHERE l.v > (SELECT avg(w) FROM r WHERE r.k = l.k)")
    mirror.view("uncorrelated", "SELECT * FROM l WHERE l.v >= (SELECT max(w) FROM r)")
    mirror.steps([
        "INSERT INTO l VALUES (1, 10), (1, 10), (2, 20), (NULL, 5), (3, NULL)",
        "INSERT INTO r VALUES (1, 10), (1, 3), (2, 30)",
        "INSERT INTO r VALUES (NULL, NULL)",  # NOT IN now NULL for every row
        "DELETE FROM r WHERE w IS NULL",
        "DELETE FROM r WHERE k = 1",  # the 1s lose their matches: count 0, anti-join again
        (BulkInsert("r", ((3, 7), (3, 7))), BulkDelete("l", ((2, 20),))),
        "UPDATE l SET v = 7 WHERE k = 3",
        "DELETE FROM r",
    ])


# ---- what stays refused ---------------------------------------------------------------------

REFUSED = [
    ("SELECT a, (SELECT d FROM u) FROM t", UnsupportedError,
     "scalar subqueries that may return more than one row are not supported yet", 1, 19),
    ("SELECT a FROM t GROUP BY (SELECT 1)", UnsupportedError,
     "subqueries in GROUP BY are not supported yet", 1, 34),
    ("SELECT sum((SELECT max(d) FROM u)) FROM t", UnsupportedError,
     "subqueries in aggregate arguments are not supported yet", 1, 20),
    ("SELECT a FROM t JOIN u ON EXISTS (SELECT 1 FROM u)", UnsupportedError,
     "subqueries are not supported in this clause yet", 1, 42),
    ("SELECT a FROM t WHERE a = ANY (SELECT d FROM u)", UnsupportedError,
     "subqueries in expressions with ANY or ALL are not supported yet", 1, 23),
    ("SELECT a FROM t WHERE a IN (SELECT d, d FROM u)", SqlError,
     "subquery must return only one column", 1, 36),
    ("SELECT a FROM t WHERE a IN (SELECT b FROM t)", SqlError,
     "operator does not exist: int = text", 1, 23),
    ("SELECT a FROM t GROUP BY a HAVING EXISTS (SELECT 1 FROM u WHERE u.d = t.c)", SqlError,
     'column "t.c" must appear in the GROUP BY clause or be used in an aggregate function',
     1, 71),
]


@pytest.mark.parametrize(("sql", "kind", "message", "line", "col"), REFUSED)
def test_refused(sql: str, kind: type[SqlError], message: str, line: int, col: int) -> None:
    from test_sql_bind import catalog

    with pytest.raises(kind) as caught:
        parse(sql, catalog())
    assert caught.value.message.startswith(message)
    assert (caught.value.line, caught.value.col) == (line, col)

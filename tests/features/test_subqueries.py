"""Subqueries in expressions: ``[NOT] EXISTS``, ``x [NOT] IN (SELECT ...)`` and scalar
subqueries, uncorrelated and correlated, which the binder keeps in the RAW plan
(``scalar.Exists``, ``InSubquery``, ``ScalarSubquery`` with ``Outer`` references) and
``ir.decorrelate`` rewrites into joins and reductions.

Through the reference interpreter: each query's plan at every stage denotes what DuckDB
computes over tables with NULLs and duplicate rows (the RAW plan is interpreted with its
subqueries evaluated row by row). Through ``matview.connect()``: maintained views against
DuckDB after every change; a scalar subquery returning several rows as an error of the view.
Then the shapes that stay refused, with their positions.
"""

from __future__ import annotations

from collections import Counter

import pytest
from matview.ir.functions import EvalError
from matview.ir.interpret import interpret
from matview.ir.parse import parse_plan
from matview.ir.relation import Relation
from matview.ir.render import render_plan
from matview.ir.subquery import has_subquery
from matview.planner.pipeline import at_stage
from matview.sql.errors import SqlError, UnsupportedError
from matview.sql.parse import parse
from matview.sql.statements import Query
from pyspark.sql import SparkSession

import matview
from tests.support.mirror import Mirror
from tests.support.oracle.workload import BulkDelete, BulkInsert
from tests.support.sql_env import Environment, environment, normal_row

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
    # subqueries in an inner join's ON, which filters the joined row as WHERE does
    "SELECT o.id, c.name FROM orders o JOIN customers c "
    "ON c.id = o.cust AND EXISTS (SELECT 1 FROM tags t WHERE t.id = c.id)",
    "SELECT o.id, c.id FROM orders o JOIN customers c "
    "ON o.amount > (SELECT avg(p.amount) FROM orders p WHERE p.cust = c.id)",
    "SELECT o.id FROM orders o JOIN customers c ON c.id = o.cust "
    "AND o.cust NOT IN (SELECT id FROM tags WHERE tag = 'w')",
    # ... and in an outer join's ON, reading either side or both
    "SELECT o.id, c.id FROM orders o LEFT JOIN customers c ON c.id = o.cust "
    "AND EXISTS (SELECT 1 FROM tags t WHERE t.id = c.id)",
    "SELECT o.id, c.id FROM orders o LEFT JOIN customers c ON c.id = o.cust "
    "AND o.amount > (SELECT avg(p.amount) FROM orders p WHERE p.cust = o.cust)",
    "SELECT o.id, c.id FROM orders o FULL JOIN customers c ON c.id = o.cust "
    "AND c.id NOT IN (SELECT id FROM tags WHERE tag = 'w')",
    "SELECT o.id, c.id FROM orders o RIGHT JOIN customers c "
    "ON o.amount > (SELECT min(p.amount) FROM orders p WHERE p.cust = c.id)",
    "SELECT o.id, c.id FROM orders o LEFT JOIN customers c ON c.id = o.cust "
    "AND c.score > (SELECT count(*) FROM tags t WHERE t.id = c.id AND t.id <> o.id)",
    "SELECT o.id, c.id FROM orders o FULL JOIN customers c "
    "ON EXISTS (SELECT 1 FROM tags t WHERE t.id = c.id AND t.id = o.cust)",
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
    # x op ANY | SOME | ALL (SELECT ...): NULLs on either side, empty sets, correlated
    "SELECT o.id, o.cust = ANY (SELECT id FROM customers) FROM orders o",
    "SELECT o.id, o.cust <> ALL (SELECT id FROM tags) FROM orders o",
    "SELECT o.id, o.cust < ANY (SELECT id FROM customers), o.cust < ALL (SELECT id FROM tags), "
    "o.cust >= SOME (SELECT id FROM tags), o.cust >= ALL (SELECT id FROM tags) FROM orders o",
    "SELECT o.id, o.cust <> ANY (SELECT id FROM tags), o.cust = ALL (SELECT id FROM tags), "
    "o.cust <= ALL (SELECT id FROM tags WHERE id IS NOT NULL) FROM orders o",
    "SELECT o.id, o.amount > ALL (SELECT c.score FROM customers c WHERE c.id = o.cust), "
    "o.amount <= ANY (SELECT c.score FROM customers c WHERE c.id = o.cust) FROM orders o",
    "SELECT o.id, o.cust > ALL (SELECT id FROM tags WHERE tag = 'none'), "
    "o.cust > ANY (SELECT id FROM tags WHERE tag = 'none') FROM orders o",
    "SELECT o.id FROM orders o WHERE o.amount > ALL "
    "(SELECT p.amount FROM orders p WHERE p.cust = o.cust AND p.id <> o.id)",
    "SELECT o.id FROM orders o WHERE NOT (o.cust < ANY (SELECT t.id FROM tags t WHERE "
    "t.tag > 'w'))",
    "SELECT c.name FROM customers c WHERE c.name = ANY (SELECT t.tag FROM tags t "
    "WHERE t.id <> c.id)",
    # LATERAL (SELECT ...) in FROM: comma, CROSS JOIN, JOIN ... ON, LEFT JOIN ... ON
    "SELECT o.id, x.n FROM orders o, LATERAL (SELECT count(*) AS n FROM customers c "
    "WHERE c.id = o.cust) x",
    "SELECT o.id, x.q FROM orders o CROSS JOIN LATERAL (SELECT c.name FROM customers c "
    "WHERE c.id = o.cust) AS x(q)",
    "SELECT o.id, x.tag FROM orders o JOIN LATERAL (SELECT t.tag FROM tags t "
    "WHERE t.id < o.cust) x ON x.tag <> 'z'",
    "SELECT o.id, x.tag FROM orders o LEFT JOIN LATERAL (SELECT t.tag FROM tags t "
    "WHERE t.id = o.cust) x ON true",
    "SELECT o.id, x.m, x.n FROM orders o LEFT JOIN LATERAL (SELECT max(c.score) AS m, "
    "count(*) AS n FROM customers c WHERE c.id = o.cust) x ON x.n > o.id - 3",
    "SELECT c.id, t.tag, x.s FROM customers c, tags t, LATERAL (SELECT sum(o.amount) AS s "
    "FROM orders o WHERE o.cust = c.id AND o.id > t.id) x",
    "SELECT o.id, x.name FROM orders o, LATERAL (SELECT c.name FROM customers c "
    "WHERE c.id = o.cust AND EXISTS (SELECT 1 FROM tags t WHERE t.id = c.id)) x",
    "SELECT o.id, x.region, x.n FROM orders o, LATERAL (SELECT c.region, count(*) AS n "
    "FROM customers c WHERE c.id <= o.cust GROUP BY c.region) x",
    "SELECT o.id, x.k, y.d FROM orders o, LATERAL (SELECT max(id) AS k FROM tags) x, "
    "LATERAL (SELECT o.amount * 2 + x.k AS d) y",
    "SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM tags t, LATERAL "
    "(SELECT c.name FROM customers c WHERE c.id = t.id AND c.id = o.cust) x)",
    "SELECT x.n FROM LATERAL (SELECT count(*) AS n FROM tags) x",
    # scalar subqueries that may return several rows (customers has two with id 3), on rows
    # where they return at most one: no error
    "SELECT o.id, (SELECT c.name FROM customers c WHERE c.id = o.cust) FROM orders o "
    "WHERE o.cust <> 3",
    "SELECT o.id FROM (SELECT * FROM orders WHERE cust < 3) o WHERE o.amount > "
    "(SELECT c.score FROM customers c WHERE c.id = o.cust)",
    "SELECT o.id, (SELECT t.tag FROM tags t WHERE t.id = 9) FROM orders o",
    "SELECT t.id, (SELECT o.id FROM orders o WHERE o.cust = 4) FROM tags t WHERE t.id > 100",
    "SELECT t.id, (SELECT c.name FROM customers c WHERE c.id = t.id) FROM tags t",
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
    assert stage == "raw" or not has_subquery(plan)
    text = render_plan(plan)
    assert parse_plan(text) == plan
    expected = Counter(normal_row(r) for r in db.execute(sql).fetchall())
    assert Counter(normal_row(r) for r in interpret(plan, tables).elements()) == expected


MANY = "SELECT o.id, (SELECT c.name FROM customers c WHERE c.id = o.cust) FROM orders o"
"""A scalar subquery returning two rows (customers with id 3) on the order of customer 3."""


@pytest.mark.parametrize("stage", ["raw", "decorrelated", "optimized", "physical"])
def test_a_scalar_subquery_of_several_rows_fails_where_it_is_evaluated(
        stage: str, setup: Environment) -> None:
    """The error PostgreSQL raises, at every stage; not once a row goes, nor in a CASE branch
    not taken."""
    catalog, tables, db = setup

    def plan(sql: str) -> Relation:
        [query] = parse(sql, catalog)
        assert isinstance(query, Query)
        return at_stage(query.plan, stage)

    def duckdb_rows(sql: str) -> Counter:
        return Counter(normal_row(r) for r in db.execute(sql).fetchall())

    def rows(sql: str, contents: dict[str, Counter]) -> Counter:
        return Counter(normal_row(r) for r in interpret(plan(sql), contents).elements())

    with pytest.raises(EvalError, match="^more than one row returned by a subquery used as an "
                                        "expression$"):
        interpret(plan(MANY), tables)
    one = "(SELECT * FROM customers WHERE name <> 'carol2')"
    fewer = {**tables, "customers": Counter({r: m for r, m in tables["customers"].items()
                                             if r[1] != "carol2"})}
    assert rows(MANY, fewer) == duckdb_rows(MANY.replace("customers", one))
    lazy = ("SELECT o.id, CASE WHEN o.cust = 3 THEN 'many' ELSE (SELECT c.name FROM customers c"
            " WHERE c.id = o.cust) END FROM orders o")
    assert rows(lazy, tables) == duckdb_rows(lazy.replace("customers", one))


# ---- maintained views against DuckDB --------------------------------------------------------

TABLES = ("CREATE TABLE l (k INT, v INT)", "CREATE TABLE r (k INT, w INT)")


def test_maintained_subqueries(spark: SparkSession) -> None:
    """Semi- and anti-joins, NOT IN with NULLs arriving and leaving, a correlated count that
    goes to 0 and back (the count bug), a scalar subquery in WHERE, in the select list and
    in an inner and an outer join's ON."""
    mirror = Mirror(spark, *TABLES)
    mirror.view("semi", "SELECT * FROM l WHERE EXISTS (SELECT 1 FROM r WHERE r.k = l.k)")
    mirror.view("anti", "SELECT * FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.k = l.k)")
    mirror.view("not_in", "SELECT * FROM l WHERE l.v NOT IN (SELECT w FROM r)")
    mirror.view("in_corr", "SELECT l.k, l.v IN (SELECT w FROM r WHERE r.k = l.k) AS found "
                           "FROM l")
    mirror.view("counts", "SELECT l.k, (SELECT count(*) FROM r WHERE r.k = l.k) AS n FROM l")
    mirror.view("above", "SELECT * FROM l WHERE l.v > (SELECT avg(w) FROM r WHERE r.k = l.k)")
    mirror.view("uncorrelated", "SELECT * FROM l WHERE l.v >= (SELECT max(w) FROM r)")
    mirror.view("joined", "SELECT a.k, b.v FROM l a JOIN l b ON a.k = b.k "
                          "AND b.v > (SELECT min(w) FROM r WHERE r.k = a.k)")
    mirror.view("padded", "SELECT l.k, l.v, r.w FROM l LEFT JOIN r ON r.k = l.k "
                          "AND r.w > (SELECT avg(x.w) FROM r x WHERE x.k = r.k)")
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


def test_maintained_quantified_and_lateral(spark: SparkSession) -> None:
    """ANY and ALL with NULLs and empty sets arriving and leaving; LATERAL subqueries whose
    count goes to 0 and back, with rows, and LEFT JOIN LATERAL padding."""
    mirror = Mirror(spark, *TABLES)
    mirror.view("any_lt", "SELECT l.k, l.v, l.v < ANY (SELECT w FROM r WHERE r.k = l.k) AS t "
                          "FROM l")
    mirror.view("all_ge", "SELECT l.k, l.v >= ALL (SELECT w FROM r) AS t FROM l")
    mirror.view("ne_any", "SELECT l.k, l.v <> SOME (SELECT w FROM r WHERE r.k = l.k) AS t "
                          "FROM l")
    mirror.view("eq_all", "SELECT * FROM l WHERE l.v = ALL (SELECT w FROM r WHERE r.k = l.k)")
    mirror.view("lateral_count", "SELECT l.k, x.n, x.m FROM l, LATERAL (SELECT count(*) AS n, "
                                 "max(w) AS m FROM r WHERE r.k = l.k) x")
    mirror.view("lateral_rows", "SELECT l.k, x.w FROM l CROSS JOIN LATERAL (SELECT r.w FROM r "
                                "WHERE r.k = l.k AND r.w > l.v) x")
    mirror.view("lateral_left", "SELECT l.k, l.v, x.w FROM l LEFT JOIN LATERAL (SELECT r.w "
                                "FROM r WHERE r.k = l.k) x ON x.w > l.v")
    mirror.steps([
        "INSERT INTO l VALUES (1, 10), (1, 10), (2, 20), (NULL, 5), (3, NULL)",
        "INSERT INTO r VALUES (1, 10), (1, 30), (2, 3), (3, 1)",
        "INSERT INTO r VALUES (1, NULL), (NULL, NULL)",
        "DELETE FROM r WHERE w IS NULL",
        "DELETE FROM r WHERE k = 1",
        (BulkInsert("r", ((2, 20), (2, 20))), BulkDelete("l", ((1, 10),))),
        "UPDATE l SET v = 0 WHERE k = 3",
        "DELETE FROM r",
    ])


def test_a_scalar_subquery_of_several_rows_is_an_error_of_the_view(
        spark: SparkSession) -> None:
    """The error is in the view while a row it is evaluated on has several, and goes with
    them; a CASE branch not taken and keys no row has do not fail."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    for ddl in TABLES:
        con.execute(ddl)
    con.execute("CREATE MATERIALIZED VIEW one AS "
                "SELECT l.k, (SELECT r.w FROM r WHERE r.k = l.k) AS w FROM l")
    con.execute("CREATE MATERIALIZED VIEW lazy AS SELECT l.k, CASE WHEN l.v > 0 THEN "
                "(SELECT r.w FROM r WHERE r.k = l.k) END AS w FROM l")
    con.execute("CREATE MATERIALIZED VIEW flat AS "
                "SELECT l.k, (SELECT r.w FROM r WHERE r.k = 3) AS w FROM l")
    many = "^materialized view \"{}\" holds an error: more than one row returned by a " \
           "subquery used as an expression"

    def read(view: str) -> list[tuple[object, ...]]:
        return sorted(con.execute(f"SELECT * FROM {view}").fetchall(), key=repr)

    con.execute("INSERT INTO l VALUES (1, 10), (2, -1)")
    con.execute("INSERT INTO r VALUES (1, 5), (3, 8), (3, 9)")
    assert read("one") == read("lazy") == [(1, 5), (2, None)]
    with pytest.raises(matview.DataError, match=many.format("flat")):
        read("flat")
    con.execute("INSERT INTO r VALUES (2, 6), (2, 7)")
    with pytest.raises(matview.DataError, match=many.format("one")):
        read("one")
    assert read("lazy") == [(1, 5), (2, None)]
    con.execute("INSERT INTO r VALUES (1, 6)")
    for view in ("one", "lazy"):
        with pytest.raises(matview.DataError, match=many.format(view)):
            read(view)
    con.execute("DELETE FROM r WHERE w IN (6, 7, 9)")
    assert read("one") == read("lazy") == [(1, 5), (2, None)]
    assert read("flat") == [(1, 8), (2, 8)]


# ---- what stays refused ---------------------------------------------------------------------

REFUSED = [
    ("SELECT a FROM t GROUP BY (SELECT 1)", UnsupportedError,
     "subqueries in GROUP BY are not supported yet", 1, 34),
    ("SELECT sum((SELECT max(d) FROM u)) FROM t", UnsupportedError,
     "subqueries in aggregate arguments are not supported yet", 1, 20),
    ("SELECT a FROM t, generate_series(1, (SELECT max(d) FROM u)) g", UnsupportedError,
     "subqueries are not supported in this clause yet", 1, 45),
    ("SELECT a FROM t WHERE a = ANY (ARRAY['x'])", SqlError,
     "operator does not exist: int = ANY (text[])", 1, 23),
    ("SELECT a FROM t WHERE a < ALL (SELECT b FROM t)", SqlError,
     "operator does not exist: int < text", 1, 23),
    ("SELECT a FROM t WHERE a >= SOME (SELECT d, d FROM u)", SqlError,
     "subquery must return only one column", 1, 41),
    ("SELECT a FROM t GROUP BY a < ANY (SELECT d FROM u)", UnsupportedError,
     "subqueries in GROUP BY are not supported yet", 1, 42),
    ("SELECT a FROM t, LATERAL (SELECT d FROM u WHERE u.d = z.a) x, t AS z", SqlError,
     'invalid reference to FROM-clause entry for table "z"', 1, 55),
    ("SELECT a FROM t, LATERAL (SELECT ARRAY[d] AS x FROM u WHERE u.d = t.a LIMIT 1) y",
     UnsupportedError, 'LIMIT and OFFSET in a LATERAL subquery with an array column ("x") are '
     "not supported yet", 1, 77),
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
    from tests.support.bind_catalog import catalog

    with pytest.raises(kind) as caught:
        parse(sql, catalog())
    assert caught.value.message.startswith(message)
    assert (caught.value.line, caught.value.col) == (line, col)

"""VALUES lists as relations (``sql.values``): alone as a query, in FROM with an alias naming
its columns, joined with tables and in set operations; columns named ``column1``.. and of
their expressions' common type, as PostgreSQL has them; lists of different lengths and
types without a common one refused at their position. A view joining a table with a VALUES
list is maintained on Spark."""

from __future__ import annotations

import pytest
from matview.ir.relation import Constant, Union
from matview.ir.types import INT, TEXT, Kind, SqlType
from matview.sql.errors import SqlError, SqlTypeError
from matview.sql.parse import parse
from matview.sql.statements import Query
from pyspark.sql import SparkSession

import matview
from tests.support.sql_env import Environment, assert_denotes, assert_refused_at, environment

TABLE = "CREATE TABLE t (k INT, s TEXT)"
ROWS = [(1, "a"), (2, "b"), (3, None), (None, "d")]


@pytest.fixture(scope="module")
def env() -> Environment:
    return environment({"t": TABLE}, {"t": ROWS}, ())


DUCKDB_QUERIES = [
    "VALUES (1, 'a'), (2, 'b'), (2, 'b')",
    "SELECT * FROM (VALUES (1, 2.5), (3, NULL), (NULL, 4)) AS v(x, y)",
    "SELECT v.y, t.s FROM t JOIN (VALUES (1, 'one'), (3, 'three'), (9, 'nine')) AS v(x, y) "
    "ON t.k = v.x",
    "SELECT t.k, v.x FROM t LEFT JOIN (VALUES (2), (2)) AS v(x) ON t.k = v.x",
    "SELECT x + 1, upper(y) FROM (VALUES (1 + 1, 'p' || 'q'), (5, lower('R'))) AS v(x, y)",
    "VALUES (1) UNION VALUES (1), (2) EXCEPT SELECT k FROM t WHERE k = 2",
    "SELECT k FROM t WHERE k IN (SELECT x FROM (VALUES (1), (3)) AS v(x))",
    "SELECT count(*), sum(x) FROM (VALUES (1), (2), (NULL)) AS v(x)",
]


@pytest.mark.parametrize("sql", DUCKDB_QUERIES)
def test_matches_duckdb(sql: str, env: Environment) -> None:
    assert_denotes(sql, "raw", env)


def _query(sql: str, env: Environment) -> Query:
    [query] = parse(sql, env[0])
    assert isinstance(query, Query)
    return query


def test_columns_are_named_and_typed_as_postgres_does(env: Environment) -> None:
    """``column1``.. unless an alias names them; each column of its values' common type (an
    untyped string takes the others', text when all are strings or NULL)."""
    query = _query("VALUES (1, 'x', NULL, 2), (NULL, 'y', NULL, 2.5)", env)
    assert query.column_names == ("column1", "column2", "column3", "column4")
    assert query.plan.types == (INT, TEXT, TEXT, SqlType(Kind.NUMERIC, 20, 1))
    aliased = _query("SELECT * FROM (VALUES (1, 2)) AS v(a)", env)
    assert aliased.column_names == ("a", "column2")
    assert isinstance(query.plan, Constant)
    assert isinstance(_query("VALUES (1), (upper('a')::int)", env).plan, Union)


ERRORS = [
    ("VALUES (1, 2), (3)", SqlError, "VALUES lists must all be the same length", 1, 17),
    ("SELECT * FROM (VALUES (1), ('a'), (DATE '2024-01-01')) AS v(x)", SqlTypeError,
     "VALUES types int and date cannot be matched", 1, 24),
    ("SELECT * FROM (VALUES (k)) AS v(x)", SqlError, 'column "k" does not exist', 1, 24),
    ("SELECT * FROM (VALUES (1), (2)) AS v(x, y)", SqlError,
     'table "v" has 1 columns available but 2 columns specified', 1, 24),
]


@pytest.mark.parametrize(("sql", "kind", "message", "line", "col"), ERRORS)
def test_errors(sql: str, kind: type[SqlError], message: str, line: int, col: int,
                env: Environment) -> None:
    assert_refused_at(sql, kind, message, line, col, env)


def test_a_view_joining_a_values_list_is_maintained_on_spark(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute(TABLE)
    con.execute("CREATE MATERIALIZED VIEW labelled AS SELECT t.k, m.label FROM t "
                "JOIN (VALUES (1, 'one'), (2, 'two'), (2, 'deux')) AS m(k, label) "
                "ON t.k = m.k")
    con.insert("t", ROWS)
    assert sorted(con.execute("SELECT * FROM labelled").fetchall()) == [
        (1, "one"), (2, "deux"), (2, "two")]
    con.execute("DELETE FROM t WHERE k = 2")
    con.execute("INSERT INTO t VALUES (1, 'again')")
    assert sorted(con.execute("SELECT * FROM labelled").fetchall()) == [
        (1, "one"), (1, "one")]
    assert sorted(con.execute("VALUES (2, 'x'), (1, 'y')").fetchall()) == [
        (1, "y"), (2, "x")]

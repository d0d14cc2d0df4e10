"""``string_agg`` and ``array_agg`` (``ir/aggregates.py``: EXTREME aggregates of the values in
order; a ``Reduce`` arranges each group's values with their ORDER BY keys and takes a
touched group's value again).

Through the reference interpreter at every stage, against DuckDB; then maintained views on
Spark against DuckDB after every group of one to three transactions of seeded random
workloads.
"""

from __future__ import annotations

import random

import pytest
from matview.ir.parse import parse_plan
from matview.ir.render import render_plan
from matview.sql.errors import SqlTypeError, UnsupportedError
from pyspark.sql import SparkSession

from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_denotes, assert_refused, setup  # noqa: F401 (a fixture)

QUERIES = [
    "SELECT cust, string_agg(note, ', ' ORDER BY id DESC) FROM orders GROUP BY cust",
    "SELECT cust, array_agg(amount ORDER BY id), array_agg(note ORDER BY note NULLS FIRST, id) "
    "FROM orders GROUP BY cust",
    "SELECT string_agg(name, '' ORDER BY name), array_agg(score ORDER BY score DESC, id) "
    "FROM customers",
    "SELECT string_agg(note, '-' ORDER BY note) FROM orders WHERE id < 0",  # NULL over no rows
    "SELECT cust, array_agg(amount ORDER BY amount, id) FILTER (WHERE amount > 5), "
    "string_agg(note, ';' ORDER BY id) FILTER (WHERE id > 2) FROM orders GROUP BY cust",
    "SELECT cust, count(DISTINCT amount), string_agg(note, ',' ORDER BY id) FROM orders "
    "GROUP BY cust",
    "SELECT c.name, (SELECT array_agg(o.id ORDER BY o.id) FROM orders o WHERE o.cust = c.id) "
    "FROM customers c",  # a correlated global aggregate: NULL where no order matches
    "SELECT cust, string_agg(note, ' ' ORDER BY note) FROM orders GROUP BY ROLLUP (cust)",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(
        sql: str, stage: str, setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_denotes(sql, stage, setup)


@pytest.mark.parametrize("sql, error, message", [
    ("SELECT string_agg(amount, ',') FROM orders", SqlTypeError,
     r"function string_agg\(bigint\) does not exist"),
    ("SELECT string_agg(note, note) FROM orders", UnsupportedError,
     "string_agg's separator must be a text constant"),
    ("SELECT string_agg(DISTINCT note, ',') FROM orders", UnsupportedError,
     r"string_agg\(DISTINCT ...\) is not supported yet"),
    ("SELECT array_agg(ARRAY[id]) FROM orders", UnsupportedError,
     "multidimensional arrays are not supported"),
    ("SELECT string_agg(note, ',') OVER () FROM orders", UnsupportedError,
     "string_agg over a window is not supported yet"),
])
def test_misuse_is_refused(sql: str, error: type[Exception], message: str,
                           setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_refused(sql, error, message, setup)


def test_an_ordered_aggregate_prints_and_parses_back() -> None:
    text = ("Reduce group_key=(#0) aggregates=(string_agg(#1, ', ' order by #2 desc, #0 nulls "
            "first), array_agg(array(#2) order by #2), count(*))\n"
            "  Get t (a int, b text, c int)")
    assert render_plan(parse_plan(text)) == text


VIEWS = {
    "joined": "SELECT p, string_agg(x, ', ' ORDER BY o DESC, x) FROM t GROUP BY p",
    "arrays": "SELECT p, array_agg(o ORDER BY o, x), array_agg(x ORDER BY x NULLS FIRST, o) "
              "FROM t GROUP BY p",
    "total": "SELECT string_agg(x, '' ORDER BY x), count(*) FROM t",
    "filtered": "SELECT o, array_agg(p ORDER BY p, x) FILTER (WHERE x <> 'b') FROM t GROUP BY o",
}


TEXTS = ["'a'", "'b'", "'c'", "NULL"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Duplicates, NULL values and keys; groups empty and fill again; views read after one
    to three transactions (a step over several times)."""
    rng = random.Random(seed)
    mirror = Mirror(spark, "CREATE TABLE t (p INT, o INT, x TEXT)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def row() -> str:
        p, o, x = rng.choice(["1", "2", "NULL"]), rng.randint(1, 3), rng.choice(TEXTS)
        return f"({p}, {o}, {x})"

    def change() -> str:
        if rng.random() < 0.6:
            return f"INSERT INTO t VALUES {', '.join(row() for _ in range(rng.randint(1, 3)))}"
        return f"DELETE FROM t WHERE o = {rng.randint(1, 3)} AND x = '{rng.choice('abc')}'"

    mirror.steps_grouped([change() for _ in range(12)] + ["DELETE FROM t"], rng)

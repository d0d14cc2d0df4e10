"""``GROUP BY ROLLUP``, ``CUBE`` and ``GROUPING SETS`` with ``grouping()`` (``sql/grouping.py``:
one ``Reduce`` per grouping set, rows padded with NULL keys and marked with their set).

Through the reference interpreter at every stage, against DuckDB; then maintained views on
Spark against DuckDB after every write of seeded random workloads.
"""

from __future__ import annotations

import random

import pytest
from matview.sql.errors import SqlError, UnsupportedError
from pyspark.sql import SparkSession

from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_denotes, assert_refused, setup  # noqa: F401 (a fixture)

QUERIES = [
    "SELECT cust, note, count(*), sum(amount) FROM orders GROUP BY ROLLUP (cust, note)",
    "SELECT cust, note, grouping(cust, note), count(*) FROM orders GROUP BY CUBE (cust, note)",
    "SELECT cust, note, grouping(note), max(amount) FROM orders "
    "GROUP BY GROUPING SETS ((cust, note), (cust), ())",
    "SELECT cust, note, count(*) FROM orders GROUP BY cust, ROLLUP (note)",
    "SELECT cust, count(*) FROM orders GROUP BY GROUPING SETS ((cust), (cust))",  # twice
    "SELECT cust % 2 AS parity, count(DISTINCT amount), avg(amount) FROM orders "
    "GROUP BY ROLLUP (cust % 2)",
    "SELECT region, count(*), grouping(region) FROM customers GROUP BY ROLLUP (region) "
    "HAVING count(*) > 1 OR grouping(region) = 1",
    "SELECT count(*), sum(amount) FROM orders WHERE id < 0 GROUP BY ROLLUP (cust)",
    "SELECT o.cust, c.region, sum(o.amount) FROM orders o JOIN customers c ON c.id = o.cust "
    "GROUP BY GROUPING SETS (ROLLUP (o.cust), (c.region))",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(
        sql: str, stage: str, setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_denotes(sql, stage, setup)


@pytest.mark.parametrize("sql, message", [
    ("SELECT grouping(amount) FROM orders GROUP BY ROLLUP (cust)",
     "arguments to GROUPING must be grouping expressions"),
    ("SELECT grouping(cust) FROM orders", "arguments to GROUPING must be grouping expressions"),
    ("SELECT count(*) FROM orders GROUP BY CUBE (id, cust, amount, note, price, day), "
     "CUBE (id, cust, amount, note, price, day, id)", "too many grouping sets"),
])
def test_misuse_is_refused(sql: str, message: str,
                           setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_refused(sql, SqlError, message, setup)


def test_distinct_sets_are_refused(setup: Environment) -> None:  # noqa: F811 (the fixture)
    """``GROUP BY DISTINCT`` drops repeated grouping sets: not built, so refused rather than
    answered with the repeats."""
    assert_refused("SELECT cust FROM orders GROUP BY DISTINCT ROLLUP (cust), ROLLUP (cust)",
                   UnsupportedError, "GROUP BY DISTINCT with grouping sets", setup)


VIEWS = {
    "rollup": "SELECT a, b, count(*), sum(v), grouping(a, b) FROM t GROUP BY ROLLUP (a, b)",
    "cube": "SELECT a, b, min(v), count(v) FROM t GROUP BY CUBE (a, b)",
    "sets": "SELECT a, count(*) FROM t GROUP BY GROUPING SETS ((a), ())",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Rows with NULL keys and values come and go; the grand total row stays (count 0)
    when the table empties; views are read after one to three transactions."""
    rng = random.Random(seed)
    mirror = Mirror(spark, "CREATE TABLE t (a INT, b TEXT, v INT)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def row() -> str:
        a, b, v = rng.choice([1, 2, None]), rng.choice(["x", "y", None]), rng.choice([1, 4])
        return f"({'NULL' if a is None else a}, {'NULL' if b is None else repr(b)}, {v})"

    changes = [f"INSERT INTO t VALUES {', '.join(row() for _ in range(rng.randint(1, 4)))}"
               if rng.random() < 0.6 else f"DELETE FROM t WHERE a = {rng.choice([1, 2])}"
               for _ in range(10)] + ["DELETE FROM t"]
    mirror.steps_grouped(changes, rng)

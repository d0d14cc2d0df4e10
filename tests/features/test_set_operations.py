"""INTERSECT, INTERSECT ALL, EXCEPT and EXCEPT ALL (``sql/query.py``): each row's copies on
either side counted by one ``Reduce``, then repeated as many times as the operation keeps.

Through the reference interpreter at every stage, against DuckDB; then maintained views on
Spark against DuckDB after every write of seeded random workloads (duplicates, NULLs, rows
deleted from either side).
"""

from __future__ import annotations

import random

import pytest
from matview.sql.errors import SqlError, SqlTypeError
from pyspark.sql import SparkSession

from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_denotes, assert_refused, setup  # noqa: F401 (a fixture)

QUERIES = [
    "SELECT cust FROM orders INTERSECT SELECT id FROM customers",
    "SELECT cust FROM orders INTERSECT ALL SELECT id FROM customers",
    "SELECT cust FROM orders EXCEPT SELECT id FROM customers WHERE region = 'eu'",
    "SELECT cust FROM orders EXCEPT ALL SELECT id FROM customers",
    "SELECT cust, note FROM orders EXCEPT ALL SELECT id, name FROM customers",
    "SELECT note FROM orders INTERSECT SELECT name FROM customers",  # NULLs are equal
    "SELECT id FROM orders UNION SELECT id FROM customers INTERSECT SELECT id FROM tags",
    "SELECT id FROM orders EXCEPT SELECT id FROM tags EXCEPT ALL SELECT cust FROM orders",
    "(SELECT cust FROM orders UNION ALL SELECT cust FROM orders) INTERSECT ALL "
    "SELECT cust FROM orders",
    "SELECT amount FROM orders INTERSECT SELECT score FROM customers",  # bigint and double
    "SELECT x FROM (SELECT cust AS x FROM orders EXCEPT SELECT 1) AS s WHERE x > 0",
    "SELECT id FROM tags INTERSECT SELECT id FROM tags WHERE id < 0",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(
        sql: str, stage: str, setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_denotes(sql, stage, setup)


@pytest.mark.parametrize("sql, error, message", [
    ("SELECT id, cust FROM orders EXCEPT SELECT id FROM tags", SqlError,
     "each EXCEPT query must have the same number of columns"),
    ("SELECT note FROM orders INTERSECT ALL SELECT id FROM tags", SqlTypeError,
     "INTERSECT types text and int cannot be matched"),
])
def test_mismatched_operands_are_refused(
        sql: str, error: type[Exception], message: str,
        setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_refused(sql, error, message, setup)


VIEWS = {
    "both": "SELECT k, s FROM l INTERSECT SELECT k, s FROM r",
    "both_all": "SELECT k, s FROM l INTERSECT ALL SELECT k, s FROM r",
    "only_left": "SELECT k, s FROM l EXCEPT SELECT k, s FROM r",
    "left_beyond": "SELECT k, s FROM l EXCEPT ALL SELECT k, s FROM r",
    "chained": "SELECT k FROM l EXCEPT ALL SELECT k FROM r UNION SELECT k FROM r "
               "INTERSECT SELECT k + 1 FROM l",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Both sides gain and lose copies of a few rows (NULLs in both columns): a row's last
    copy on the right leaving brings it back into EXCEPT, its copies on the left bound
    INTERSECT ALL; views are read after one to three transactions."""
    rng = random.Random(seed)
    mirror = Mirror(spark, "CREATE TABLE l (k INT, s TEXT)", "CREATE TABLE r (k INT, s TEXT)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def row() -> str:
        k, s = rng.choice([1, 2, 3, None]), rng.choice(["a", "b", None])
        return f"({'NULL' if k is None else k}, {'NULL' if s is None else repr(s)})"

    changes: list[str] = []
    for _ in range(14):
        side = rng.choice(["l", "r"])
        if rng.random() < 0.6:
            changes.append(f"INSERT INTO {side} VALUES "
                           + ", ".join(row() for _ in range(rng.randint(1, 4))))
        else:
            changes.append(f"DELETE FROM {side} WHERE k = {rng.choice([1, 2, 3])}")
    changes += ["DELETE FROM r", "DELETE FROM l"]
    mirror.steps_grouped(changes, rng)

"""``ORDER BY ... LIMIT / OFFSET`` inside queries (issue 16, "TopK anywhere"): a subquery in
FROM, a scalar subquery, a WITH query or a set operation's operand ending in LIMIT or OFFSET
is a ``TopK``; correlated (``LATERAL``, a scalar subquery over the outer row) it is
decorrelated into the top rows of each outer value (a ``Window`` numbering the rows of
each); a ``TopK`` that a join looks up arranges its output.

Through the reference interpreter at every stage, against DuckDB; then maintained views on
Spark against DuckDB after every group of one to three transactions of seeded random
workloads.
"""

from __future__ import annotations

import random

import pytest
from pyspark.sql import SparkSession

from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_denotes, setup  # noqa: F401 (a fixture)

QUERIES = [
    "SELECT * FROM (SELECT id, amount FROM orders ORDER BY amount DESC NULLS LAST, id LIMIT 3) s",
    "SELECT count(*) FROM (SELECT * FROM orders ORDER BY id LIMIT 4 OFFSET 2) s",
    "SELECT o.id, t.x FROM orders o JOIN (SELECT id AS x FROM customers ORDER BY id OFFSET 1) t "
    "ON t.x = o.cust",
    "SELECT c.name, x.id FROM customers c, LATERAL (SELECT o.id, o.amount FROM orders o "
    "WHERE o.cust = c.id ORDER BY o.amount DESC, o.id LIMIT 2) x",  # the top two per customer
    "SELECT c.name, (SELECT o.id FROM orders o WHERE o.cust = c.id ORDER BY o.id DESC LIMIT 1) "
    "FROM customers c",
    "WITH recent AS (SELECT * FROM orders ORDER BY day DESC NULLS LAST, id LIMIT 2) "
    "SELECT id FROM recent",
    "SELECT id FROM (SELECT id FROM orders ORDER BY id LIMIT 3) a "
    "UNION ALL SELECT id FROM (SELECT id FROM orders ORDER BY id DESC LIMIT 1) b",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(
        sql: str, stage: str, setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_denotes(sql, stage, setup)


VIEWS = {
    "top": "SELECT * FROM (SELECT p, o, x FROM t ORDER BY x DESC NULLS LAST, o, p LIMIT 3) s",
    "joined": "SELECT t.p, s.x FROM t JOIN (SELECT x FROM t ORDER BY x LIMIT 2) s ON s.x = t.x",
    "per_group": "SELECT g.p, y.o FROM (SELECT DISTINCT p FROM t) g, LATERAL (SELECT o, x "
                 "FROM t WHERE t.p = g.p ORDER BY o DESC, x LIMIT 2) y",
    "scalar": "SELECT p, (SELECT t2.x FROM t t2 WHERE t2.p = t.p ORDER BY t2.x DESC NULLS "
              "LAST LIMIT 1) FROM t",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    rng = random.Random(seed)
    mirror = Mirror(spark, "CREATE TABLE t (p INT, o INT, x INT)")
    mirror.execute("INSERT INTO t VALUES (1, 1, 5), (1, 2, 7), (2, 1, 3), (NULL, 2, 1)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def row() -> str:
        p, o, x = rng.choice([1, 2, 3, None]), rng.randint(1, 4), rng.choice([1, 3, 5, 7, None])
        return ", ".join("NULL" if v is None else str(v) for v in (p, o, x))

    def change() -> str:
        if rng.random() < 0.6:
            return f"INSERT INTO t VALUES ({row()})"
        return f"DELETE FROM t WHERE o = {rng.randint(1, 4)} AND p = {rng.randint(1, 3)}"

    mirror.steps_grouped([change() for _ in range(12)], rng)

"""Aggregates of distinct values: ``count/sum/avg(DISTINCT x)`` beside plain aggregates, with
and without GROUP BY, over NULL keys and NULL arguments (``sql.grouping``: one Reduce over a
union of the rows and each argument's distinct (key, value) pairs).

Through the reference interpreter at every stage, against DuckDB; then maintained views on
Spark against DuckDB after every write of seeded random workloads.
"""

from __future__ import annotations

import random

import pytest
from matview.sql.errors import UnsupportedError
from matview.sql.parse import parse
from pyspark.sql import SparkSession

from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_denotes, environment

QUERIES = [
    "SELECT count(DISTINCT cust) FROM orders",
    "SELECT cust, count(DISTINCT amount) FROM orders GROUP BY cust",
    "SELECT cust, count(DISTINCT amount), count(*), sum(amount) FROM orders GROUP BY cust",
    "SELECT cust, sum(DISTINCT amount), avg(DISTINCT amount), count(amount) FROM orders "
    "GROUP BY cust",
    "SELECT cust, count(DISTINCT amount), count(DISTINCT note), max(DISTINCT note) "
    "FROM orders GROUP BY cust",
    "SELECT count(DISTINCT amount % 10), sum(DISTINCT price), count(*) FROM orders",
    "SELECT region, count(DISTINCT score) FROM customers GROUP BY region "
    "HAVING count(DISTINCT score) > 0",
    "SELECT c.region, count(DISTINCT o.cust), count(o.id) FROM orders o "
    "JOIN customers c ON c.id = o.cust GROUP BY c.region",
    "SELECT cust % 2, count(DISTINCT cust), count(DISTINCT amount) + 1 FROM orders "
    "WHERE amount > 1 GROUP BY cust % 2",
    "SELECT count(DISTINCT id) FROM orders WHERE id < 0",
]


@pytest.fixture(scope="module")
def setup() -> Environment:
    return environment()


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(sql: str, stage: str, setup: Environment) -> None:
    assert_denotes(sql, stage, setup)


def test_several_arguments_are_refused(setup: Environment) -> None:
    catalog, _, _ = setup
    with pytest.raises(UnsupportedError, match="several arguments"):
        parse("SELECT count(DISTINCT id, cust) FROM orders", catalog)


VIEWS = {
    "per_key": "SELECT k, count(DISTINCT v), sum(DISTINCT v), count(*), sum(v) FROM t "
               "GROUP BY k",
    "overall": "SELECT count(DISTINCT k), count(DISTINCT v), avg(DISTINCT v) FROM t",
    "texts": "SELECT v % 3, count(DISTINCT s), min(DISTINCT s) FROM t GROUP BY v % 3",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Rows come and go with duplicates and NULLs in keys, values and texts: a value's last
    copy leaving a group changes its distinct count, another copy leaving does not."""
    rng = random.Random(seed)
    mirror = Mirror(spark, "CREATE TABLE t (k INT, v INT, s TEXT)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def value(choices: list[object]) -> str:
        pick = rng.choice(choices)
        return "NULL" if pick is None else repr(pick)

    changes: list[str] = []
    for _ in range(8):
        if rng.random() < 0.6:
            rows = ", ".join(f"({value([1, 2, 3, None])}, {value([1, 2, 5, None])}, "
                             f"{value(['a', 'b', None])})" for _ in range(rng.randint(1, 4)))
            changes.append(f"INSERT INTO t VALUES {rows}")
        else:
            changes.append(f"DELETE FROM t WHERE k = {rng.choice([1, 2, 3])} "
                           f"AND v = {rng.choice([1, 2, 5])}")
    changes.append("DELETE FROM t")
    mirror.steps(changes)

"""The aggregate registry (``ir/aggregates.py``) and the aggregates it brought: ``bool_and``,
``bool_or``, ``var_samp``/``variance``, ``var_pop``, ``stddev_samp``/``stddev``,
``stddev_pop``, and ``FILTER (WHERE ...)`` on every aggregate.

Through the reference interpreter at every stage, against DuckDB; then maintained views on
Spark against DuckDB after every write of seeded random workloads (groups emptied and
refilled, NULL arguments, one-row groups where the sample variance is NULL).
"""

from __future__ import annotations

import random

import pytest
from matview.ir import aggregates
from matview.ir.aggregate_call import AGGREGATES
from matview.ir.aggregates import Maintenance
from matview.sql.call_names import CALL_NAMES
from matview.sql.errors import SqlError, SqlTypeError, UnsupportedError
from matview.sql.scalars import AGGREGATES as AGGREGATE_NODES
from pyspark.sql import SparkSession

from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_denotes, assert_refused, setup  # noqa: F401 (a fixture)

QUERIES = [
    "SELECT cust, bool_and(amount > 10), bool_or(amount > 10) FROM orders GROUP BY cust",
    "SELECT bool_and(note IS NULL), bool_or(price > 5) FROM orders",
    "SELECT cust, var_samp(amount), var_pop(amount), stddev_samp(amount), stddev_pop(amount) "
    "FROM orders GROUP BY cust",
    "SELECT variance(price), stddev(price), variance(score), stddev_pop(score) "
    "FROM orders JOIN customers ON customers.id = orders.cust",
    "SELECT region, stddev(score), count(*) FROM customers GROUP BY region",
    "SELECT cust, count(*) FILTER (WHERE amount > 10), sum(amount) FILTER (WHERE note IS NULL), "
    "count(*) FROM orders GROUP BY cust",
    "SELECT count(DISTINCT cust) FILTER (WHERE amount > 5), avg(amount) FILTER (WHERE id > 1), "
    "max(note) FILTER (WHERE amount < 100), bool_or(id > 2) FILTER (WHERE cust = 1) FROM orders",
    "SELECT cust, var_pop(amount) FILTER (WHERE price IS NOT NULL) FROM orders GROUP BY cust "
    "HAVING bool_and(amount > 0)",
    "SELECT bool_and(DISTINCT amount > 1), var_samp(amount) FROM orders WHERE id < 0",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(
        sql: str, stage: str, setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_denotes(sql, stage, setup)


def test_every_aggregate_sql_binds_is_registered() -> None:
    """Each name the dialect binds an aggregate node under is in the registry, and the IR's
    ``Reduce`` aggregates are exactly the registry's maintained ones."""
    for node in AGGREGATE_NODES:
        for name in CALL_NAMES[node]:
            assert aggregates.lookup(name).name in aggregates.REGISTRY
    assert set(AGGREGATES) == {"count", "sum", "min", "max", "string_agg", "array_agg",
                               "jsonb_agg"}
    assert {aggregates.lookup(n).maintenance for n in AGGREGATES} == {
        Maintenance.SUMMED, Maintenance.EXTREME}


@pytest.mark.parametrize("sql, error, message", [
    ("SELECT bool_and(amount) FROM orders", SqlTypeError,
     r"function bool_and\(bigint\) does not exist"),
    ("SELECT stddev(note) FROM orders", SqlTypeError, r"function stddev\(text\) does not exist"),
    ("SELECT var_samp(DISTINCT amount) FROM orders", UnsupportedError,
     r"var_samp\(DISTINCT \.\.\.\) is not supported yet"),
    ("SELECT count(*) FILTER (WHERE count(*) > 1) FROM orders", SqlError,
     "aggregate functions are not allowed in FILTER"),
    ("SELECT sum(amount) FILTER (WHERE note) FROM orders", SqlTypeError,
     "argument of FILTER must be type boolean"),
])
def test_misuse_is_refused_by_name(
        sql: str, error: type[Exception], message: str,
        setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_refused(sql, error, message, setup)


VIEWS = {
    "per_key": "SELECT k, bool_and(b), bool_or(b), var_samp(v), var_pop(v), stddev(v), "
               "stddev_pop(v), count(*) FROM t GROUP BY k",
    "filtered": "SELECT k, count(*) FILTER (WHERE b), sum(v) FILTER (WHERE v > 2), "
                "count(DISTINCT v) FILTER (WHERE b), min(v) FILTER (WHERE NOT b), "
                "avg(v) FILTER (WHERE v IS NOT NULL) FROM t GROUP BY k",
    "overall": "SELECT bool_and(v > 0), variance(x), stddev_samp(x), "
               "var_pop(v) FILTER (WHERE k = 1) FROM t",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Rows come and go with NULLs in keys, booleans and values; a group left with one row
    has a NULL sample variance, an emptied group disappears and comes back; the views are
    read after one to three transactions, so a step may carry several."""
    rng = random.Random(seed)
    mirror = Mirror(spark, "CREATE TABLE t (k INT, b BOOLEAN, v BIGINT, x DOUBLE)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def value(choices: list[object]) -> str:
        pick = rng.choice(choices)
        return "NULL" if pick is None else str(pick)

    changes: list[str] = []
    for _ in range(10):
        if rng.random() < 0.6:
            rows = ", ".join(
                f"({value([1, 2, 3, None])}, {value(['TRUE', 'FALSE', None])}, "
                f"{value([1, 2, 5, -7, None])}, {value([0.5, 2.25, -3.0, None])})"
                for _ in range(rng.randint(1, 4)))
            changes.append(f"INSERT INTO t VALUES {rows}")
        else:
            changes.append(f"DELETE FROM t WHERE k = {rng.choice([1, 2, 3])} "
                           f"AND v = {rng.choice([1, 2, 5, -7])}")
    changes.append("DELETE FROM t")
    changes.append("INSERT INTO t VALUES (1, TRUE, 4, 1.5)")
    mirror.steps_grouped(changes, rng)

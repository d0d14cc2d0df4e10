"""Window functions and ``SELECT DISTINCT ON`` (``sql/windows.py``: ``Window`` nodes over the
select list's row; ``runtime/operators/window.py``: the partitions a step touches computed again).

Through the reference interpreter at every stage, against DuckDB; then maintained views on
Spark against DuckDB after every group of one to three transactions of seeded random
workloads (a view then steps over several times at once: each partition's interesting
times).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from matview.ir.parse import parse_plan
from matview.ir.render import render_plan
from matview.runtime.operators import keyed_state
from matview.runtime.operators.keyed_state import StateRead
from matview.sql.errors import SqlError, UnsupportedError
from pyspark.sql import SparkSession

from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_denotes, assert_refused, setup  # noqa: F401 (a fixture)

QUERIES = [
    "SELECT id, cust, row_number() OVER (PARTITION BY cust ORDER BY id) FROM orders",
    "SELECT id, rank() OVER (ORDER BY amount DESC), dense_rank() OVER (ORDER BY amount), "
    "percent_rank() OVER (ORDER BY amount), cume_dist() OVER (PARTITION BY cust ORDER BY amount) "
    "FROM orders",
    "SELECT id, amount, sum(amount) OVER (PARTITION BY cust ORDER BY id), "
    "count(*) OVER (PARTITION BY cust), avg(amount) OVER (PARTITION BY cust) FROM orders",
    "SELECT id, lag(amount) OVER (ORDER BY id), lead(amount, 2, -1) OVER (ORDER BY id) "
    "FROM orders",
    "SELECT id, first_value(note) OVER (PARTITION BY cust ORDER BY id), last_value(note) OVER "
    "(PARTITION BY cust ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), "
    "nth_value(amount, 2) OVER (ORDER BY id) FROM orders",
    "SELECT id, sum(amount) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), "
    "min(amount) OVER (ORDER BY id ROWS 2 PRECEDING), max(price) OVER (PARTITION BY day) "
    "FROM orders",
    "SELECT cust, sum(amount), rank() OVER (ORDER BY sum(amount) DESC NULLS LAST), "
    "sum(sum(amount)) OVER () FROM orders GROUP BY cust",
    "SELECT DISTINCT ON (cust) cust, id, amount FROM orders ORDER BY cust, amount DESC, id",
    "SELECT DISTINCT ON (cust % 2) id FROM orders",  # no ORDER BY: cust % 2 has one id each
    "SELECT id, ntile(3) OVER (ORDER BY id), count(amount) FILTER (WHERE amount > 5) "
    "OVER (PARTITION BY cust) FROM orders",
    "SELECT id, sum(amount) OVER (ORDER BY cust), last_value(id) OVER (PARTITION BY cust "
    "ORDER BY id RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), "
    "first_value(id) OVER (ORDER BY id RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) "
    "FROM orders",
    "SELECT o.id, c.name, row_number() OVER (PARTITION BY c.region ORDER BY o.id) "
    "FROM orders o JOIN customers c ON c.id = o.cust",
    "SELECT DISTINCT cust, count(*) OVER (PARTITION BY cust) FROM orders",
    "SELECT id, bool_or(amount > 10) OVER (PARTITION BY cust), "
    "stddev_pop(amount) OVER (PARTITION BY cust ORDER BY id) FROM orders",
    # in subqueries: decorrelated with the correlated columns as one more partition key
    "SELECT id, (SELECT max(r) FROM (SELECT rank() OVER (ORDER BY amount) AS r FROM orders o2 "
    "WHERE o2.cust = o.cust) s) FROM orders o",
    "SELECT c.id, x.id FROM customers c, LATERAL (SELECT o.id, row_number() OVER "
    "(ORDER BY o.amount DESC, o.id) AS rn FROM orders o WHERE o.cust = c.id) x "
    "WHERE x.rn <= 2",  # the top two orders of each customer
    "SELECT c.id, x.v, x.s FROM customers c, LATERAL (SELECT o.id + c.id AS v, sum(o.amount) "
    "OVER (ORDER BY o.id) AS s FROM orders o WHERE o.cust < c.id) x",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(
        sql: str, stage: str, setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_denotes(sql, stage, setup)


@pytest.mark.parametrize("sql, error, message", [
    ("SELECT id FROM orders WHERE row_number() OVER () > 1", SqlError,
     "window functions are only allowed in the select list"),
    ("SELECT rank() FROM orders", SqlError, "window function rank requires an OVER clause"),
    ("SELECT sum(rank() OVER ()) OVER () FROM orders", SqlError, "cannot be nested"),
    ("SELECT lag(amount, cust) OVER () FROM orders", UnsupportedError,
     "lag's offset must be a constant"),
    ("SELECT ntile(0) OVER () FROM orders", SqlError, "greater than zero"),
    ("SELECT sum(amount) OVER (ORDER BY id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) "
     "FROM orders", UnsupportedError, "RANGE frames with an offset"),
    ("SELECT DISTINCT ON (cust) id FROM orders ORDER BY id", SqlError,
     "DISTINCT ON expressions must match initial ORDER BY"),
    ("SELECT count(DISTINCT amount) OVER () FROM orders", UnsupportedError,
     "DISTINCT is not implemented for window functions"),
    ("SELECT rank() OVER w FROM orders WINDOW w AS (ORDER BY id)", UnsupportedError,
     "WINDOW"),
    ("SELECT cust FROM orders GROUP BY cust HAVING rank() OVER (ORDER BY cust) = 1",
     SqlError, "window functions are only allowed in the select list"),
])
def test_misuse_is_refused(sql: str, error: type[Exception], message: str,
                           setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_refused(sql, error, message, setup)


def test_a_window_prints_and_parses_back() -> None:
    text = ("Window partition_by=(#0) calls=(rank() order_by=(#1 desc), sum(#2) order_by=(#1) "
            "rows between 2 preceding and 1 following, lag(#2, 1::bigint, null::int) "
            "order_by=(), last_value(#2) order_by=(#1) range between unbounded preceding and "
            "current row)\n  Get t (a int, b int, c int)")
    assert render_plan(parse_plan(text)) == text


VIEWS = {
    "numbered": "SELECT p, o, x, row_number() OVER (PARTITION BY p ORDER BY o, x) FROM t",
    "ranked": "SELECT p, x, rank() OVER (PARTITION BY p ORDER BY x DESC), "
              "sum(x) OVER (PARTITION BY p ORDER BY x) FROM t",
    "shifted": "SELECT o, x, lag(x, 1, -1) OVER (ORDER BY o, x, p), "
               "lead(p) OVER (ORDER BY o, x, p) FROM t",
    "first": "SELECT DISTINCT ON (p) p, o, x FROM t ORDER BY p, o DESC, x",
    "groups": "SELECT p, count(*), dense_rank() OVER (ORDER BY count(*) DESC) FROM t GROUP BY p",
    "framed": "SELECT p, avg(x) OVER (PARTITION BY p), min(x) OVER (PARTITION BY p ORDER BY o, "
              "x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), "
              "last_value(x) OVER (PARTITION BY p ORDER BY o, x) FROM t",
    "top_two": "SELECT * FROM (SELECT p, x, row_number() OVER (PARTITION BY p ORDER BY x DESC, "
               "o) AS rn FROM t) s WHERE rn <= 2",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Rows with NULL partition keys and duplicates come and go, partitions empty and fill
    again; views are read after one to three transactions."""
    rng = random.Random(seed)
    mirror = Mirror(spark, "CREATE TABLE t (p INT, o INT, x INT)")
    mirror.execute("INSERT INTO t VALUES (1, 1, 10), (1, 2, 20), (2, 1, 5), (NULL, 3, 7)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def row() -> str:
        p, o, x = rng.choice([1, 2, 3, None]), rng.randint(1, 4), rng.choice([1, 5, 9, None])
        return ", ".join("NULL" if v is None else str(v) for v in (p, o, x))

    def change() -> str:
        roll = rng.random()
        if roll < 0.55:
            rows = ", ".join(f"({row()})" for _ in range(rng.randint(1, 3)))
            return f"INSERT INTO t VALUES {rows}"
        if roll < 0.85:
            return f"DELETE FROM t WHERE p = {rng.randint(1, 3)} AND o = {rng.randint(1, 4)}"
        return f"UPDATE t SET x = {rng.choice([2, 6])} WHERE o = {rng.randint(1, 4)}"

    mirror.steps_grouped([change() for _ in range(12)] + ["DELETE FROM t WHERE p = 1"], rng)


def test_a_step_reads_the_touched_partitions_rows_by_key(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``whole_state_rows`` arranged rows a step reads only the rows of the partitions
    its changes touch (by key, in the driver), not every arranged row, and the values
    equal DuckDB's."""
    found: list[int] = []
    read_matching = keyed_state.read_matching

    def spied(*args: Any) -> StateRead | None:
        read = read_matching(*args)
        if args[3] == "touched values":  # the window's slot
            found.append(0 if read is None or read.table is None else read.table.num_rows)
        return read

    monkeypatch.setattr(keyed_state, "read_matching", spied)
    mirror = Mirror(spark, "CREATE TABLE t (p INT, o INT, x INT)", whole_state_rows=10)
    rows = ", ".join(f"({p}, {o}, {o})" for p in [*range(1, 6), "NULL"] for o in range(1, 7))
    mirror.execute(f"INSERT INTO t VALUES {rows}")
    mirror.view("numbered", VIEWS["numbered"])
    found.clear()  # what CREATE read (and a rehearsal, ``Dataflow.rehearse``, if one ran)
    mirror.steps(["INSERT INTO t VALUES (2, 9, 1)", "DELETE FROM t WHERE p = 3 AND o < 3",
                  "INSERT INTO t VALUES (NULL, 0, 7)"])
    assert found == [6, 6, 6]  # partition 2's rows, 3's, then NULL's, of the 36 arranged

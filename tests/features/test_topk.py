"""``ORDER BY ... LIMIT ... OFFSET`` at the top of a materialized view, kept as a ``TopK``.

Through the reference interpreter: each view's plan, raw, optimized and physical, denotes
the rows DuckDB returns for the query ordered by its keys and then by every column (the
TopK's tie-break), so ties, duplicates, NULLs first or last, OFFSET and LIMIT 0 agree
exactly. Through ``matview.connect()``: views over a table changing at random (inserts,
deletes reaching into the first rows, updates, deleting everything, several transactions
read in one step) read in their order equal to DuckDB's ordered answer after every change,
and a subscription sees every timestamp of a step. A step that deletes nothing in the first
rows does not read the input's contents again. EXPLAIN shows the TopK and its state.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime

import pytest
from matview.ir.interpret import interpret
from matview.ir.relation import TopK
from matview.planner.pipeline import at_stage
from matview.runtime.operators.top_k import TopKOp
from matview.sql.errors import UnsupportedError
from matview.sql.parse import parse
from matview.sql.statements import CreateView
from pyspark.sql import SparkSession

import matview
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, environment, normal_row
from tests.support.topk_views import (
    Mirror,
    check_views_after_changes,
    random_change,
    view_sqls,
)

# ---- meaning, through the reference interpreter ----------------------------------------

# (select, ORDER BY by position or None, LIMIT/OFFSET); orders.amount holds a NULL and ties
# (15 three times, a duplicate row among them), orders.cust a NULL and duplicates.
SHAPES = [
    ("SELECT id, amount FROM orders", "2 DESC", "LIMIT 3"),
    ("SELECT id, amount FROM orders", "2", "LIMIT 3"),
    ("SELECT id, amount FROM orders", "2 NULLS FIRST", "LIMIT 2"),
    ("SELECT id, amount FROM orders", "2 DESC NULLS LAST", "LIMIT 4 OFFSET 1"),
    ("SELECT cust FROM orders", "1", "LIMIT 5 OFFSET 2"),
    ("SELECT id, note FROM orders", "2", "LIMIT 0"),
    ("SELECT id, amount FROM orders", "1 DESC", "OFFSET 3"),
    ("SELECT cust, amount FROM orders", None, "LIMIT 3"),
    ("SELECT name, score FROM customers", "2 DESC", "LIMIT 3"),
    ("SELECT cust, count(*), sum(amount) FROM orders GROUP BY cust", "3 DESC", "LIMIT 2"),
    ("SELECT o.id, c.name FROM orders o JOIN customers c ON o.cust = c.id", "2 DESC, 1",
     "LIMIT 3"),
    ("SELECT id FROM orders UNION SELECT id FROM tags", "1 DESC", "LIMIT 4 OFFSET 1"),
]


@pytest.fixture(scope="module")
def setup() -> Environment:
    return environment()


@pytest.mark.parametrize(("select", "order", "tail"), SHAPES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(select: str, order: str | None, tail: str,
                                           stage: str, setup: Environment) -> None:
    catalog, tables, db = setup
    arity = len(db.execute(select).description)
    mine, theirs = view_sqls(select, order, tail, arity)
    [view] = parse(f"CREATE MATERIALIZED VIEW v AS {mine}", catalog)
    assert isinstance(view, CreateView) and isinstance(view.plan, TopK)
    expected = Counter(normal_row(r) for r in db.execute(theirs).fetchall())
    got = interpret(at_stage(view.plan, stage), tables)
    assert Counter(normal_row(r) for r in got.elements()) == expected


def test_binding() -> None:
    """LIMIT and OFFSET make the view a TopK (its text keeps ORDER BY and LIMIT); a view
    that is not materialized and a LIMIT over an array column (in a view or a subquery)
    are refused (tests/features/test_subquery_limits.py has LIMIT in subqueries)."""
    catalog, _, _ = environment()
    [view] = parse("CREATE MATERIALIZED VIEW v AS SELECT id, amount FROM orders "
                   "ORDER BY amount DESC, id LIMIT 3 OFFSET 1", catalog)
    assert isinstance(view, CreateView)
    assert view.plan == TopK(view.plan.input, ((1, True, True), (0, False, False)), 3, 1)
    assert view.query_sql.endswith("ORDER BY amount DESC, id LIMIT 3 OFFSET 1")
    [plain] = parse("CREATE MATERIALIZED VIEW v AS SELECT id FROM orders ORDER BY id",
                    catalog)
    assert isinstance(plain, CreateView) and not isinstance(plain.plan, TopK)
    assert "ORDER" not in plain.query_sql
    refused = {
        "CREATE VIEW v AS SELECT id FROM orders LIMIT 1":
            "LIMIT and OFFSET in a view that is not materialized are not supported yet",
        "CREATE MATERIALIZED VIEW v AS SELECT ARRAY[id] AS a FROM orders LIMIT 1":
            'LIMIT and OFFSET in a view with an array column ("a") are not supported yet',
        "CREATE MATERIALIZED VIEW v AS SELECT * FROM (SELECT ARRAY[id] AS a FROM orders "
        "LIMIT 1) s":
            'LIMIT and OFFSET in a subquery in FROM with an array column ("a") are not '
            "supported yet",
    }
    for sql, message in refused.items():
        with pytest.raises(UnsupportedError, match=re.escape(message)):
            parse(sql, catalog)


# ---- maintained views against DuckDB -----------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize(("seed", "held", "changes"),
                         [(seed, "driver", 16) for seed in seeds()] + [(2, "spark", 8)])
def test_views_equal_duckdb_after_every_change(
        spark: SparkSession, runtime_settings: Callable[..., None], seed: int, held: str,
        changes: int) -> None:
    """The views equal DuckDB after every random write, their inputs held in the driver or
    (``held="spark"``, fewer changes) in Spark."""
    check_views_after_changes(spark, runtime_settings, seed, held, changes)


def test_a_step_of_several_transactions_shows_each_to_a_subscriber(
        spark: SparkSession) -> None:
    """Writes read in one step (several timestamps): the views equal DuckDB after them, and
    each subscription's changes summed up to each write's time equal DuckDB's answer then."""
    rng = random.Random(7)
    mirror = Mirror(spark)
    mirror.execute("INSERT INTO t VALUES (1, 3, 'a'), (2, 8, 'b'), (3, 12, 'c'), "
                   "(4, 12, 'c'), (5, 7, 'd'), (0, 9, 'a'), (2, 1, 'b'), (3, 10, 'a')")
    subs = {name: mirror.con.subscribe(name) for name in ("top", "window", "groups", "rest")}
    state = {name: Counter(normal_row(tuple(r[2:])) for r in sub.fetch())
             for name, sub in subs.items()}
    for _ in range(3):
        at: list[tuple[int, dict[str, list[tuple]]]] = []
        for change in ["DELETE FROM t WHERE v >= 10"] + [random_change(rng) for _ in range(3)]:
            mirror.execute(change)
            at.append((mirror.con.now, mirror.contents()))
        for name, sub in subs.items():
            fetched = sorted(sub.fetch(), key=lambda r: r[0])
            for time, expected in at:
                while fetched and fetched[0][0] <= time:
                    _, diff, *row = fetched.pop(0)
                    state[name][normal_row(tuple(row))] += diff
                assert +state[name] == Counter(expected[name]), (name, time, mirror.log)
        mirror.check()


def test_a_step_deleting_nothing_in_the_first_rows_reads_no_input(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inserts, and deletes of rows after the first k, change the prefix in place; a
    delete inside the first k with spare rows in the prefix too; only deletes that exhaust
    them read the input's contents again (and find the replacements)."""
    reads: list[int] = []
    read = TopKOp._read

    def counted(self: TopKOp, *args: object) -> object:
        reads.append(1)
        return read(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(TopKOp, "_read", counted)
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.insert("t", [(i, i) for i in range(100)])
    con.execute("CREATE MATERIALIZED VIEW top AS SELECT k, v FROM t ORDER BY v DESC LIMIT 3")

    def top() -> list[tuple]:
        return con.execute("SELECT * FROM top").fetchall()

    assert top() == [(99, 99), (98, 98), (97, 97)] and not reads
    for step in (lambda: con.insert("t", [(200, 50), (201, 98)]),
                 lambda: con.execute("DELETE FROM t WHERE v < 40"),
                 lambda: con.execute("DELETE FROM t WHERE k = 99")):
        step()
        top()
    assert top() == [(98, 98), (201, 98), (97, 97)] and not reads
    con.execute("DELETE FROM t WHERE v >= 95")  # leaves 2 of the 6 rows the prefix holds
    assert top() == [(94, 94), (93, 93), (92, 92)] and len(reads) == 1


@pytest.mark.parametrize("held", ["driver", "spark"])
def test_timestamps_nan_and_nulls_in_the_order(spark: SparkSession,
                                               runtime_settings: Callable[..., None],
                                               held: str) -> None:
    """Timestamps and doubles order the same in Arrow and in Spark: NULLs where the key
    says, a NaN above every number; the replacements of deleted first rows come back."""
    if held == "spark":
        runtime_settings(small_step_rows=2, fetched_batch_rows=2)
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE e (id INT, at TIMESTAMP, x DOUBLE)")
    con.execute("CREATE MATERIALIZED VIEW late AS SELECT id, at FROM e "
                "ORDER BY at DESC NULLS LAST LIMIT 2")
    con.execute("CREATE MATERIALIZED VIEW big AS SELECT id, x FROM e ORDER BY x DESC LIMIT 2")
    day = [datetime(2024, 1, d) for d in range(1, 6)]
    con.insert("e", [(1, day[0], 1.5), (2, day[3], float("nan")), (3, None, None),
                     (4, day[4], 2.0), (5, day[1], -1.0), (6, day[2], 0.0)])

    def read(view: str) -> list[tuple]:
        return [tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in row)
                for row in con.execute(f"SELECT * FROM {view}").fetchall()]

    assert read("late") == [(4, day[4]), (2, day[3])]
    assert read("big") == [(3, None), (2, "nan")]
    con.execute("DELETE FROM e WHERE id IN (2, 3, 4)")
    assert read("late") == [(6, day[2]), (5, day[1])]
    assert read("big") == [(1, 1.5), (6, 0.0)]


def test_reads_and_explain(spark: SparkSession) -> None:
    """A plain read returns the rows in the view's order, a read with its own ORDER BY or
    LIMIT in that; EXPLAIN shows the TopK and its state."""
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.insert("t", [(1, 5), (2, None), (3, 7), (4, 7), (5, 1)])
    con.execute("CREATE MATERIALIZED VIEW top AS SELECT k, v FROM t ORDER BY v DESC LIMIT 4")
    assert con.execute("SELECT * FROM top").fetchall() == [(2, None), (3, 7), (4, 7), (1, 5)]
    assert con.execute("SELECT * FROM top ORDER BY k DESC").fetchall() == [
        (4, 7), (3, 7), (2, None), (1, 5)]
    assert con.execute("SELECT * FROM top LIMIT 2").fetchall() == [(2, None), (3, 7)]
    physical = con.explain("MATERIALIZED VIEW top", stage="physical")
    assert "TopK order_by=(#1 desc) limit=4" in physical
    assert "creates %1.values" in physical and "creates %1.prefix" in physical
    raw = con.explain("MATERIALIZED VIEW top", stage="raw", options=["humanized expressions"])
    assert raw.startswith("TopK order_by=(#1{v} desc) limit=4")
    doc = con.explain("MATERIALIZED VIEW top", stage="physical", format="json")
    assert '"operator": "TopK"' in doc and '"%1.prefix"' in doc

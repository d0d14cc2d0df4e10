"""The runtime against the reference interpreter, without SQL.

Random update histories over two tables are fed to dataflows for join, reduce (with
min/max under deletions and a global aggregate) and union plans. The key property (the
architecture's section 2): one step over a batch holding many timestamps gives exactly the
per-time output of stepping one timestamp at a time, and the accumulated output at every
time equals the interpreter's answer on the tables at that time.
"""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest
from matview.ir.aggregate_call import Aggregate
from matview.ir.interpret import interpret
from matview.ir.relation import Field, Get, Join, Linear, Reduce, Relation, Union
from matview.ir.scalar import Call, Col, Lit
from matview.ir.steps import Filter, Map, Project
from matview.ir.types import BIGINT, INT, TEXT
from matview.planner.lower import lower
from matview.planner.pipeline import physical
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import Leaf
from matview.runtime.dataflow import Dataflow
from matview.runtime.lowering.types import update_schema

from tests.support.seeds import seeds

A = Get("a", (Field("k", INT), Field("x", BIGINT)))
B = Get("b", (Field("k", INT), Field("tag", TEXT)))

PLANS: dict[str, Relation] = {
    "join": Join((A, B), ((Col(0), Col(2)),)),
    "join_reduce_minmax": Reduce(
        Linear(Join((A, B), ((Col(0), Col(2)),)),
               (Filter((Call("gt", (Col(1), Lit(0, BIGINT))),)),)),
        (Col(3),),
        (Aggregate("count", None), Aggregate("sum", Col(1)), Aggregate("min", Col(1)),
         Aggregate("max", Col(1)), Aggregate("count", Col(1)))),
    "join_where": Join((A, B), ((Col(0), Col(2)),), predicates=(
        Call("gt", (Col(1), Lit(0, BIGINT))),
        Call("ne", (Col(3), Lit("q", TEXT))),
        Call("lt", (Col(1), Call("add", (Col(2), Lit(5, INT))))))),
    "cross_where": Join((A, B), (), predicates=(Call("eq", (Col(0), Col(2))),)),
    "global": Reduce(A, (), (Aggregate("count", None), Aggregate("sum", Col(1)),
                             Aggregate("max", Col(1)))),
    "union_map": Union((
        Linear(A, (Map((Call("add", (Col(1), Lit(1, BIGINT))),)), Project((0, 2)))),
        Linear(A, (Filter((Call("is_null", (Col(1),)),)), Project((0, 1)))))),
}


def _history(seed: int, steps: int) -> list[tuple[int, str, tuple[object, ...], int]]:
    """Random (time, table, row, diff) updates that keep every multiplicity >= 0."""
    rng = random.Random(seed)
    live: dict[str, Counter[tuple[object, ...]]] = {"a": Counter(), "b": Counter()}
    out = []
    for time in range(1, steps + 1):
        for _ in range(rng.randint(1, 4)):
            table = rng.choice("ab")
            present = [r for r, m in live[table].items() if m > 0]
            if present and rng.random() < 0.4:
                row, diff = rng.choice(present), -1
            elif table == "a":
                row, diff = (rng.choice([1, 2, 3, None]), rng.choice([-5, 1, 7, 9, None])), 1
            else:
                row, diff = (rng.choice([1, 2, 3, None]), rng.choice(["p", "q"])), 1
            live[table][row] += diff
            out.append((time, table, row, diff))
    return out


def _traces(spark, updates) -> dict[str, Trace]:  # type: ignore[no-untyped-def]
    traces = {"a": Trace(spark, 2), "b": Trace(spark, 2)}
    for name, get in (("a", A), ("b", B)):
        schema = update_schema(get.types)
        for time in sorted({u[0] for u in updates if u[1] == name}):
            rows = [u[2] + (time, u[3]) for u in updates if u[1] == name and u[0] == time]
            columns = list(zip(*rows))
            table = pa.table([pa.array(list(c), f.type) for c, f in zip(columns, schema)],
                             schema=schema)
            traces[name].append(Leaf(spark.createDataFrame(table), table.num_rows), time, time)
    return traces


def _run(spark, plan: Relation, traces: dict[str, Trace], uppers: list[int]
         ) -> Counter[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    """Per-(row, time) output updates of stepping the dataflow to each of ``uppers``."""
    flow = Dataflow(lower(physical(plan)), spark, traces.__getitem__, as_of=0)
    out: Counter[tuple[object, ...]] = Counter()
    for upper in [0] + uppers:
        step = flow.prepare(upper)
        if step.output is not None:
            for row in step.output.toArrow().to_pylist():
                key = tuple(v for k, v in row.items() if k not in ("_diff",))
                out[key] += row["_diff"]
        step.commit()
    return Counter({k: v for k, v in out.items() if v})


def _snapshot(updates, upto: int) -> dict[str, Counter[tuple[object, ...]]]:  # type: ignore[no-untyped-def]
    tables: dict[str, Counter[tuple[object, ...]]] = {"a": Counter(), "b": Counter()}
    for time, table, row, diff in updates:
        if time <= upto:
            tables[table][row] += diff
    return tables


@pytest.mark.parametrize("name", sorted(PLANS))
@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds(1))
def test_one_step_equals_step_per_time_and_interpreter(spark, name: str, seed: int) -> None:  # type: ignore[no-untyped-def]
    steps = 6
    updates = _history(seed, steps)
    plan = PLANS[name]
    together = _run(spark, plan, _traces(spark, updates), [steps])
    apart = _run(spark, plan, _traces(spark, updates), list(range(1, steps + 1)))
    assert together == apart
    for upto in range(0, steps + 1):
        accumulated: Counter[tuple[object, ...]] = Counter()
        for key, diff in together.items():
            if key[-1] <= upto:
                accumulated[key[:-1]] += diff
        expected = interpret(plan, _snapshot(updates, upto))
        assert +accumulated == expected, f"time {upto}"

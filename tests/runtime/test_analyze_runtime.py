"""What a running dataflow records per operator for EXPLAIN ANALYZE (``Dataflow.analyze``):
committed steps, exact output and input update rows (counted without Spark jobs: sizes known
for free, else observed), exclusive time, and the size of the arrangements it reads or owns.
Numbers are hand-computed from the updates written; a step that is abandoned (not committed,
or failed) counts nothing; counting adds no Spark job to a step."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pyarrow as pa
import pytest
from matview.ir.aggregate_call import Aggregate
from matview.ir.relation import Field, Get, Join, Linear, Reduce
from matview.ir.scalar import Call, Col, Lit
from matview.ir.steps import Filter, FlatMap
from matview.ir.types import BIGINT, INT, TEXT
from matview.planner.lower import lower
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import Leaf, stored
from matview.runtime.dataflow import Dataflow
from matview.runtime.lowering.types import update_schema
from matview.runtime.operators.metering import ArrangementStats, OperatorStats, drain_listeners
from matview.runtime.render import operators

A = Get("a", (Field("k", INT), Field("x", BIGINT)))
B = Get("b", (Field("k", INT), Field("tag", TEXT)))
POSITIVE = Filter((Call("gt", (Col(1), Lit(0, BIGINT))),))
FILTER_REDUCE = Reduce(Linear(A, (POSITIVE,)), (Col(0),),
                       (Aggregate("count", None), Aggregate("sum", Col(1))))
JOIN = Join((A, B), ((Col(0), Col(2)),))


def _write(spark, trace: Trace, get: Get, time: int, rows: list[tuple[object, ...]],  # type: ignore[no-untyped-def]
           arrow: bool) -> None:
    """Append ``rows`` (values..., diff) at ``time``: held as Arrow in the driver, or in Spark."""
    schema = update_schema(get.types)
    columns = list(zip(*[r[:-1] + (time, r[-1]) for r in rows]))
    table = pa.table([pa.array(list(c), f.type) for c, f in zip(columns, schema)],
                     schema=schema)
    leaf = stored(spark, table) if arrow else Leaf(spark.createDataFrame(table), table.num_rows)
    trace.append(leaf, time, time)


def _step(flow: Dataflow, upper: int) -> Leaf | None:
    """One step as the engine runs it: prepare, keep the output, commit."""
    step = flow.prepare(upper)
    leaf, _ = step.materialized()
    step.commit()
    return leaf


def _counts(stats: list[OperatorStats]) -> list[tuple[str, int, int, int]]:
    return [(s.kind, s.steps, s.rows_in, s.rows_out) for s in stats]


def _jobs(spark, action: Callable[[], object]) -> int:  # type: ignore[no-untyped-def]
    """The number of Spark jobs ``action`` runs."""
    sc = spark.sparkContext
    group = f"analyze-{uuid.uuid4()}"
    sc.setJobGroup(group, "jobs of one step")
    try:
        action()
    finally:
        sc._jsc.clearJobGroup()
    drain_listeners(spark)  # the status tracker hears of jobs through the listener bus
    return len(sc.statusTracker().getJobIdsForGroup(group))


def _filter_reduce(spark, measure: bool = True) -> tuple[Dataflow, Trace]:  # type: ignore[no-untyped-def]
    a = Trace(spark, 2)
    _write(spark, a, A, 1, [(1, 5, 1), (1, -3, 1), (2, 7, 1), (3, 0, 1)], arrow=False)
    return Dataflow(lower(FILTER_REDUCE), spark, {"a": a}.__getitem__, as_of=1, measure=measure), a


def test_filter_reduce_counts_steps_rows_and_state(spark) -> None:  # type: ignore[no-untyped-def]
    flow, a = _filter_reduce(spark)
    assert _counts(flow.analyze()) == [("Get", 0, 0, 0), ("Linear", 0, 0, 0),
                                       ("Reduce", 0, 0, 0)]
    # step 1 (snapshot): 4 rows read, 2 pass x > 0, groups 1 and 2 inserted
    _step(flow, 1)
    assert _counts(flow.analyze()) == [("Get", 1, 4, 4), ("Linear", 1, 4, 2),
                                       ("Reduce", 1, 2, 2)]
    # step 2: 3 rows read, 2 pass; group 1 retracted and reinserted, group 2 retracted
    _write(spark, a, A, 2, [(1, 4, 1), (2, 7, -1), (3, -1, 1)], arrow=False)
    _step(flow, 2)
    # step 3: a deletion the filter drops: an empty delta, no output
    _write(spark, a, A, 3, [(1, -3, -1)], arrow=False)
    _step(flow, 3)
    # step 4, abandoned twice (its output computed, not committed; prepared and dropped),
    # then committed: counted once
    _write(spark, a, A, 4, [(4, 10, 1)], arrow=False)
    flow.prepare(4).output.toArrow()  # type: ignore[union-attr]
    flow.prepare(4)
    _step(flow, 3)  # nothing to do: commits no operator's work
    _step(flow, 4)
    stats = flow.analyze()
    assert _counts(stats) == [("Get", 4, 9, 9), ("Linear", 4, 9, 5), ("Reduce", 4, 5, 6)]
    assert all(s.seconds >= 0 for s in stats) and stats[2].seconds > 0
    get, linear, reduce = list(operators(flow.root))
    assert stats[0].arrangements == (ArrangementStats(
        "a", "shared", 9, 9 * (4 + 8 + 8 + 8), len(a.batches), "executors"),)
    assert stats[1].arrangements == ()
    (output,) = stats[2].arrangements
    state = reduce.output  # type: ignore[attr-defined]
    assert (output.name, output.role, output.rows) == ("%2.output", "owned", state.rows)
    assert output.rows == 2 + 3 + 1
    assert output.bytes == sum(b.leaf.table.nbytes for b in state.batches) > 0


def test_failed_step_counts_nothing(spark) -> None:  # type: ignore[no-untyped-def]
    a = Trace(spark, 2)
    _write(spark, a, A, 1, [(1, 5, 1), (2, 7, 1)], arrow=True)
    # a table function asking for more rows than the limit fails the step (evaluation
    # errors such as a division by zero are data instead, and do not)
    series = FlatMap((Call("generate_series", (Lit(1, INT), Col(0))),))
    plan = Linear(A, (series,))
    flow = Dataflow(lower(plan), spark, {"a": a}.__getitem__, as_of=1, limit=3)
    _step(flow, 1)
    before = _counts(flow.analyze())
    assert before == [("Get", 1, 2, 2), ("Linear", 1, 2, 3)]
    _write(spark, a, A, 2, [(30, 0, 1), (3, 1, 1)], arrow=True)
    with pytest.raises(Exception, match="more than 3 rows"):
        _step(flow, 2)
    assert _counts(flow.analyze()) == before
    assert flow.frontier == 1


def test_join_counts_rows_as_produced(spark) -> None:  # type: ignore[no-untyped-def]
    a, b = Trace(spark, 2), Trace(spark, 2)
    _write(spark, a, A, 1, [(1, 10, 1), (2, 20, 1)], arrow=True)
    _write(spark, b, B, 1, [(1, "p", 1), (1, "q", 1), (3, "r", 1)], arrow=True)
    flow = Dataflow(lower(JOIN), spark, {"a": a, "b": b}.__getitem__, as_of=1)
    # step 1: only b's path meets a (Alt/Neu at one time): k=1 twice
    _step(flow, 1)
    assert _counts(flow.analyze()) == [("Get", 1, 2, 2), ("Get", 1, 3, 3), ("Join", 1, 5, 2)]
    # step 2: a's changes (1,10,-1), (3,30) meet b's history: 2 + 1; b's (2,s) meets a's
    # history and changes: 1
    _write(spark, a, A, 2, [(1, 10, -1), (3, 30, 1)], arrow=True)
    _write(spark, b, B, 2, [(2, "s", 1)], arrow=True)
    _step(flow, 2)
    # step 3: b's deletion of (1,p) meets a's unconsolidated history of k=1: +1 and -1,
    # two rows as produced
    _write(spark, b, B, 3, [(1, "p", -1)], arrow=True)
    _step(flow, 3)
    stats = flow.analyze()
    assert _counts(stats) == [("Get", 3, 4, 4), ("Get", 3, 5, 5), ("Join", 3, 9, 8)]
    assert [s.arrangements for s in stats[:2]] == [
        (ArrangementStats("a", "shared", a.rows, a.bytes, len(a.batches), "driver",
                          tuple(a.keys)),),
        (ArrangementStats("b", "shared", b.rows, b.bytes, len(b.batches), "driver",
                          tuple(b.keys)),)]
    assert a.keys == ["c0"] and b.keys == ["c0"]  # the join looks both up by their key
    assert (a.rows, b.rows) == (4, 5)
    assert a.bytes == sum(x.leaf.table.nbytes for x in a.batches) > 0
    assert stats[2].arrangements == ()


def test_large_step_join_counts(spark, runtime_settings) -> None:  # type: ignore[no-untyped-def]
    """The same join through the large-step path (no one-partition hash joins, outputs
    checkpointed): the counts are the same."""
    runtime_settings(small_step_rows=0)
    a, b = Trace(spark, 2), Trace(spark, 2)
    _write(spark, a, A, 1, [(1, 10, 1), (2, 20, 1)], arrow=False)
    _write(spark, b, B, 1, [(1, "p", 1), (1, "q", 1), (3, "r", 1)], arrow=False)
    flow = Dataflow(lower(JOIN), spark, {"a": a, "b": b}.__getitem__, as_of=1)
    _step(flow, 1)
    _write(spark, a, A, 2, [(1, 10, -1), (3, 30, 1)], arrow=False)
    _write(spark, b, B, 2, [(2, "s", 1)], arrow=False)
    _step(flow, 2)
    _write(spark, b, B, 3, [(1, "p", -1)], arrow=False)
    assert not flow.prepare(3).small
    _step(flow, 3)
    assert _counts(flow.analyze()) == [("Get", 3, 4, 4), ("Get", 3, 5, 5), ("Join", 3, 9, 8)]


def test_output_kept_as_is_is_counted_when_read(spark, runtime_settings) -> None:  # type: ignore[no-untyped-def]
    """A large step's filter output is kept lazily by the engine (a plan over stored
    batches): its rows are counted once a reader computes it, after the step committed."""
    runtime_settings(small_step_rows=0)
    a = Trace(spark, 2)
    _write(spark, a, A, 1, [(1, 5, 1), (2, -7, 1), (3, 9, 1)], arrow=True)
    flow = Dataflow(lower(Linear(A, (POSITIVE,))), spark, {"a": a}.__getitem__, as_of=1)
    leaf = _step(flow, 1)
    assert leaf is not None and leaf.rows == 3 and not leaf.exact
    assert _counts(flow.analyze()) == [("Get", 1, 3, 3), ("Linear", 1, 3, 0)]
    assert leaf.df.count() == 2
    assert _counts(flow.analyze()) == [("Get", 1, 3, 3), ("Linear", 1, 3, 2)]


def _join_flow(spark, measure: bool) -> tuple[Dataflow, Callable[[], None]]:  # type: ignore[no-untyped-def]
    a, b = Trace(spark, 2), Trace(spark, 2)
    _write(spark, a, A, 1, [(1, 10, 1), (2, 20, 1)], arrow=True)
    _write(spark, b, B, 1, [(1, "p", 1), (1, "q", 1), (3, "r", 1)], arrow=False)

    def more() -> None:
        _write(spark, a, A, 2, [(1, 10, -1), (3, 30, 1)], arrow=True)
        _write(spark, b, B, 2, [(2, "s", 1)], arrow=False)

    flow = Dataflow(lower(JOIN), spark, {"a": a, "b": b}.__getitem__, as_of=1, measure=measure)
    return flow, more


def _reduce_flow(spark, measure: bool) -> tuple[Dataflow, Callable[[], None]]:  # type: ignore[no-untyped-def]
    flow, a = _filter_reduce(spark, measure)
    return flow, lambda: _write(spark, a, A, 2, [(1, 4, 1), (2, 7, -1), (3, -1, 1)],
                                arrow=False)


@pytest.mark.parametrize("small", [True, False])
@pytest.mark.parametrize("make", [_reduce_flow, _join_flow], ids=["filter_reduce", "join"])
def test_counting_adds_no_spark_jobs(spark, runtime_settings, small: bool, make) -> None:  # type: ignore[no-untyped-def]
    if not small:
        runtime_settings(small_step_rows=0)
    jobs: dict[bool, list[int]] = {}
    for measure in (False, True):
        flow, more = make(spark, measure)
        counts = [_jobs(spark, lambda flow=flow: _step(flow, 1))]
        more()
        counts.append(_jobs(spark, lambda flow=flow: _step(flow, 2)))
        counts.append(_jobs(spark, flow.analyze))
        jobs[measure] = counts
    assert jobs[True] == jobs[False]
    if small:  # over rows the driver holds: computed there, observed metrics too
        assert jobs[True] == [0, 0, 0]
    else:
        assert jobs[True][0] > 0 and jobs[True][2] == 0

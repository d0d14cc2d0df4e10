"""Temporal filters at run time: future updates wait in the linear operator's state and are
released at their exact times when the frontier passes them, also with no writes; the state
shrinks as they are released, and a failed step changes nothing. Then the same through the
engine: ``advance_time`` and a read or a SUBSCRIBE fetch show the retraction."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from matview.ir.aggregate_call import Aggregate
from matview.ir.parse import parse_plan
from matview.ir.relation import Reduce, Relation
from matview.planner.lower import lower
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import stored
from matview.runtime.dataflow import Dataflow
from matview.runtime.lowering.types import update_schema

import matview

EVENTS = "Get e (id int, ts bigint)"
WINDOW = parse_plan("Linear [filter (mz_now() >= #1), (mz_now() < (#1 + 10::bigint))]\n  "
                    + EVENTS)
FAILING = parse_plan("Linear [filter (mz_now() >= #1), (mz_now() < (#1 + 10::bigint)); "
                     "flat_map generate_series(1, #0)]\n  " + EVENTS)
"""Fails on a row whose id asks for more rows than the dataflow's table function limit (3):
an error that still fails the step (evaluation errors such as 100 / 0 are data instead)."""


def _write(spark, trace: Trace, time: int, rows: list[tuple[int, int, int]]) -> None:  # type: ignore[no-untyped-def]
    schema = update_schema(WINDOW.input.types)  # type: ignore[attr-defined]
    columns = list(zip(*[(i, ts, time, d) for i, ts, d in rows]))
    table = pa.table([pa.array(list(c), f.type) for c, f in zip(columns, schema)],
                     schema=schema)
    trace.append(stored(spark, table), time, time)


def _step(flow: Dataflow, upper: int) -> Counter[tuple[object, ...]]:
    step = flow.prepare(upper)
    out: Counter[tuple[object, ...]] = Counter()
    if step.output is not None:
        for row in step.output.toArrow().to_pylist():
            out[tuple(v for k, v in row.items() if k != "_diff")] += row["_diff"]
    step.commit()
    return out


def _pending(flow: Dataflow) -> int:
    return sum(op.pending.rows for op in flow.temporal() if op.pending is not None)


def test_future_updates_wait_and_are_released_at_their_times(spark) -> None:  # type: ignore[no-untyped-def]
    trace = Trace(spark, 2)
    _write(spark, trace, 1, [(1, 5, 1), (2, 20, 1), (3, -4, 1)])
    flow = Dataflow(lower(WINDOW), spark, {"e": trace}.__getitem__, as_of=1)
    # row 3 is valid in [-4, 6): inserted at max(1, -4) = 1, retracted in the future
    assert _step(flow, 1) == Counter({(3, -4, 1): 1})
    assert _pending(flow) == 5  # (1: 5, 15), (2: 20, 30), (3: retraction at 6)
    before = sum(t.rows for t in flow.state())
    assert before == 5
    # the clock advances with no writes: each release at its exact time
    assert _step(flow, 5) == Counter({(1, 5, 5): 1})
    assert _step(flow, 7) == Counter({(3, -4, 6): -1})
    assert _pending(flow) == 3
    assert _step(flow, 14) == Counter()
    assert _step(flow, 40) == Counter({(1, 5, 15): -1, (2, 20, 20): 1, (2, 20, 30): -1})
    assert _pending(flow) == 0
    # a deletion before the window opened cancels the future updates
    _write(spark, trace, 41, [(4, 50, 1)])
    _write(spark, trace, 42, [(4, 50, -1)])
    assert _step(flow, 42) == Counter()
    assert _step(flow, 100) == Counter()


def test_first_step_emits_rows_already_valid(spark) -> None:  # type: ignore[no-untyped-def]
    trace = Trace(spark, 2)
    _write(spark, trace, 10, [(1, 5, 1), (2, 12, 2)])
    flow = Dataflow(lower(WINDOW), spark, {"e": trace}.__getitem__, as_of=10)
    assert _step(flow, 10) == Counter({(1, 5, 10): 1})
    assert _step(flow, 20) == Counter({(1, 5, 15): -1, (2, 12, 12): 2})


def test_one_step_over_many_releases_equals_step_per_time(spark) -> None:  # type: ignore[no-untyped-def]
    """A reduce above a temporal filter sees several times in one step (not single-time)."""
    plan: Relation = Reduce(WINDOW, (), (Aggregate("count", None),))

    def run(uppers: list[int]) -> Counter[tuple[object, ...]]:
        trace = Trace(spark, 2)
        _write(spark, trace, 1, [(1, 3, 1), (2, 6, 1), (3, 9, 1)])
        flow = Dataflow(lower(plan), spark, {"e": trace}.__getitem__, as_of=1)
        out: Counter[tuple[object, ...]] = Counter()
        for upper in [1] + uppers:
            out.update(_step(flow, upper))
        return Counter({k: v for k, v in out.items() if v})

    together = run([30])
    assert together == run(list(range(2, 31)))
    assert together[(3, 9)] == 1 and together[(2, 9)] == -1  # count 3 from 9, 2 before


def test_a_collapsed_step_puts_every_update_at_its_upper(spark) -> None:  # type: ignore[no-untyped-def]
    """With no reader of the times before ``upper`` (``collapse``), the releases of a step
    over many times and the reduce above them are at ``upper`` only: one output row per
    key, and the result at ``upper`` is the per-time steps' (and the next step goes on from
    there)."""
    plan: Relation = Reduce(WINDOW, (), (Aggregate("count", None),))
    trace = Trace(spark, 2)
    _write(spark, trace, 1, [(1, 3, 1), (2, 6, 1), (3, 9, 1)])
    flow = Dataflow(lower(plan), spark, {"e": trace}.__getitem__, as_of=1)
    assert _step(flow, 1) == Counter({(0, 1): 1})
    step = flow.prepare(10, collapse=True)  # per time: 0 -> 1 at 3, 2 at 6, 3 at 9
    assert step.output is not None
    rows = step.output.toArrow().to_pylist()
    step.commit()
    assert Counter({(r["c0"], r["_time"]): r["_diff"] for r in rows}) == Counter(
        {(0, 10): -1, (3, 10): 1})
    assert _step(flow, 14) == Counter({(3, 13): -1, (2, 13): 1})  # per time again


def test_failed_step_changes_nothing(spark) -> None:  # type: ignore[no-untyped-def]
    trace = Trace(spark, 2)
    _write(spark, trace, 1, [(1, 5, 1)])
    flow = Dataflow(lower(FAILING), spark, {"e": trace}.__getitem__, as_of=1, limit=3)
    _step(flow, 1)
    assert _pending(flow) == 2
    _write(spark, trace, 3, [(50, 2, 1)])  # 50 rows from one input row: over the limit
    with pytest.raises(Exception, match="more than 3 rows"):
        _step(flow, 6)
    assert _pending(flow) == 2 and flow.frontier == 1
    trace.batches.pop()  # forget the bad write: the retried step releases as before
    trace._reads = {}
    assert _step(flow, 6) == Counter({(1, 5, 1, 5): 1})
    assert _pending(flow) == 1


def test_pending_state_is_compacted(spark) -> None:  # type: ignore[no-untyped-def]
    trace = Trace(spark, 2)
    flow = Dataflow(lower(WINDOW), spark, {"e": trace}.__getitem__, as_of=0)
    _step(flow, 0)
    for time in range(1, 13):
        _write(spark, trace, time, [(time, time + 1, 1)])
        _step(flow, time)
        flow.compact(flow.frontier)
    pending = [op.pending for op in flow.temporal()][0]
    assert pending is not None and len(pending.batches) <= 8
    # row t is inserted at t + 1 and retracted at t + 11; at 12 the insertion of row 12 and
    # the retractions of rows 2..12 wait, the released updates are gone
    assert pending.rows == 12
    _step(flow, 100)
    assert pending.rows == 0 and not pending.batches


def _sql_temporal_supported(con: matview.Connection) -> bool:
    try:
        con.execute("CREATE TABLE probe (ts BIGINT)")
        con.execute("CREATE MATERIALIZED VIEW probe_v AS SELECT * FROM probe "
                    "WHERE mz_now() >= ts")
    except matview.Error:
        return False
    return True


def test_engine_releases_when_the_clock_advances(spark) -> None:  # type: ignore[no-untyped-def]
    con = matview.connect(spark=spark, clock=100)
    if not _sql_temporal_supported(con):
        pytest.skip("the SQL binder does not accept mz_now() yet")
    con.execute("CREATE TABLE events (id INT, ts BIGINT)")
    con.execute("CREATE MATERIALIZED VIEW recent AS SELECT id, ts FROM events "
                "WHERE mz_now() >= ts AND mz_now() < ts + 50")
    sub = con.subscribe("recent")
    assert sub.fetch() == []
    con.insert("events", [(1, 90), (2, 120)])
    at = con.now
    assert sorted(con.execute("SELECT * FROM recent").fetchall()) == [(1, 90)]
    con.advance_time(125)
    assert sorted(con.execute("SELECT * FROM recent").fetchall()) == [(1, 90), (2, 120)]
    con.advance_time(200)
    assert con.execute("SELECT * FROM recent").fetchall() == []
    assert sub.fetch() == [(at, 1, 1, 90), (120, 1, 2, 120), (140, -1, 1, 90),
                           (170, -1, 2, 120)]
    con.close()


def test_engine_negative_multiplicity_and_row_limit_are_errors(spark) -> None:  # type: ignore[no-untyped-def]
    con = matview.connect(spark=spark, clock=0, max_table_function_rows=5)
    con.execute("CREATE TABLE t (k INT, s TEXT)")
    try:
        con.execute("CREATE MATERIALIZED VIEW r AS SELECT t.s FROM t, repeat_row(t.k)")
        con.execute("CREATE MATERIALIZED VIEW g AS SELECT t.k, x FROM t, "
                    "generate_series(1, t.k) AS x")
    except matview.NotSupportedError:
        pytest.skip("the SQL binder does not accept table functions yet")
    con.insert("t", [(2, "a")])
    assert con.execute("SELECT * FROM r").fetchall() == [("a",), ("a",)]
    assert sorted(con.execute("SELECT * FROM g").fetchall()) == [(2, 1), (2, 2)]
    con.insert("t", [(-3, "a")])
    for query in ("SELECT * FROM r", "SELECT * FROM r ORDER BY s"):  # Arrow and Spark reads
        with pytest.raises(matview.DataError, match="negative multiplicity"):
            con.execute(query)
    con.insert("t", [(7, "c")])
    with pytest.raises(matview.DataError, match="more than 5 rows"):
        con.execute("SELECT * FROM g")
    con.close()

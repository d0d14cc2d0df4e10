"""Lowering (``planner.lower``): the physical plan names every operator's state and every
join's delta paths, and the runtime builds exactly that state."""

from __future__ import annotations

from matview.ir import physical
from matview.ir.parse import parse_plan
from matview.ir.scalar import Col
from matview.planner.lower import lower
from matview.runtime.arrangements.trace import Trace
from matview.runtime.dataflow import Dataflow
from pyspark.sql import SparkSession

NESTED = """\
Reduce group_key=(#0) aggregates=(count(*), max(#1))
  Join on=(#0 = #2) plan=delta[(1), (0)]
    Linear [project (#0, #1)]
      Join on=(#0 = #2) plan=delta[(1), (0)]
        Get a (x int, y int)
        Get b (x int, y int)
    Linear [filter (mz_now() < #1)]
      Get c (x int, y bigint)"""


def test_operators_are_numbered_in_post_order() -> None:
    plan = lower(parse_plan(NESTED))
    ops = list(physical.operators(plan))
    assert [op.id for op in ops] == list(range(8))
    assert [op.kind for op in ops] == ["Get", "Get", "Join", "Linear", "Get", "Linear", "Join",
                                       "Reduce"]
    assert physical.reads(plan) == {"a", "b", "c"}


def test_state_is_declared_once_per_operator() -> None:
    ops = list(physical.operators(lower(parse_plan(NESTED))))
    state = {op.id: [a.name for a in op.state()] for op in ops if op.state()}
    # the inner join is looked up by the outer one (through a Linear): it arranges its
    # output; the outer join is read by a Reduce only: it keeps nothing
    assert state == {2: ["%2.output"], 5: ["%5.pending"], 7: ["%7.output", "%7.values"]}
    inner, outer = ops[2], ops[6]
    assert isinstance(inner, physical.Join) and inner.output is not None
    assert not inner.output.reused
    assert isinstance(outer, physical.Join) and outer.output is None


def test_delta_paths_spell_out_keys_and_alt_neu_times() -> None:
    outer = list(physical.operators(lower(parse_plan(NESTED))))[6]
    assert isinstance(outer, physical.Join)
    assert outer.implementation.kind == "delta"
    assert outer.implementation.paths == (
        physical.DeltaPath(0, 3, (), (), (
            physical.Lookup(1, 5, (Col(0),), (Col(0),), "<", (), ()),)),
        physical.DeltaPath(1, 5, (), (), (
            physical.Lookup(0, 3, (Col(2),), (Col(0),), "<=", (), ()),)),
    )
    assert outer.inputs[0].history() == ("%2.output",)
    assert outer.inputs[1].history() == ("c",)


def test_a_dataflow_owns_a_trace_per_declared_arrangement(spark: SparkSession) -> None:
    plan = lower(parse_plan(NESTED))
    traces = {name: Trace(spark, 2) for name in "abc"}
    flow = Dataflow(plan, spark, traces.__getitem__, as_of=1)
    declared = [a for op in physical.operators(plan) for a in op.state()]
    assert len(flow.state()) == len(declared) == 4
    assert len({id(t) for t in flow.state()}) == 4
    assert not {id(t) for t in traces.values()} & {id(t) for t in flow.state()}


def test_a_reduce_layout_and_its_deferral_are_planned() -> None:
    """Counts and sums accumulate in hidden columns, min/max and ordered aggregates are
    recomputed from the values; a reduce is deferred to its reader's job only when nothing
    but Linears that rearrange columns lie between it and the output."""
    reduce = """Reduce group_key=(#0) aggregates=(count(*), sum(#1), min(#1), count(#1), \
string_agg(cast(#0 as text), ',' order by #1))
  Get a (x int, y int)"""
    ops = list(physical.operators(lower(parse_plan(reduce))))
    assert isinstance(ops[-1], physical.Reduce)
    assert ops[-1].layout == physical.ReduceLayout(
        accumulable=(1, 3), extremes=(2, 4), hidden=("cnt", "n1", "s1", "n3"), deferred=True)
    picked = lower(parse_plan("Linear [project (#1, #0)]\n" + _indented(reduce)))
    assert isinstance(picked, physical.Linear) and picked.copies == (1, 0)
    assert isinstance(picked.inputs[0], physical.Reduce) and picked.inputs[0].layout.deferred
    filtered = lower(parse_plan("Linear [filter (#1 > 0)]\n" + _indented(reduce)))
    assert isinstance(filtered, physical.Linear) and filtered.copies is None
    assert isinstance(filtered.inputs[0], physical.Reduce)
    assert not filtered.inputs[0].layout.deferred
    nested = list(physical.operators(lower(parse_plan(NESTED))))[-1]
    assert isinstance(nested, physical.Reduce)
    assert nested.layout == physical.ReduceLayout((), (1,), ("cnt",), deferred=True)


def _indented(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())

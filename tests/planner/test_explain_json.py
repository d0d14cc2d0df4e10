"""EXPLAIN ... AS JSON (``planner.explain.as_json``): the schema of plans, dataflows and traces."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from matview.ir.aggregate_call import Aggregate
from matview.ir.joins import JoinPlan
from matview.ir.parse import parse_plan, parse_scalar, with_subplans
from matview.ir.relation import Field, Get, Join, Linear, Reduce, Relation, TopK, Union
from matview.ir.render import render_line
from matview.ir.scalar import Call, Cast
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, Step
from matview.ir.types import SqlType
from matview.planner.dataflow_graph import dataflow_graph
from matview.planner.explain.as_json import (
    VERSION,
    dataflow_json,
    explain_document,
    plan_json,
    trace_json,
)
from matview.planner.lower import lower
from matview.planner.pipeline import physical, trace
from matview.runtime.arrangements.batch_files import FileReads

from tests.support.plan_corpus import SELF_JOIN, corpus

EVERY_OPERATOR = """\
Union
  Reduce group_key=((#0 + 1)) aggregates=(count(*), sum(#1))
    Join on=(#0 = #2) where=((#1 < #3)) plan=delta[(1), (0)]
      Linear [filter (#1 > 0); map lower(#2), 'x'; project (#0, #1); \
flat_map generate_series(1, #0) with ordinality; repeat_row #0; project (#0, #1)]
        Get "my table" (a int, b bigint, "c d" text)
      Constant (int, numeric(10,2)) [(1, 2.50) x2; (null, null) x-1]
  Constant (int, bigint) []"""


def assert_json_ready(value: object) -> None:
    """``value`` holds dicts with string keys, lists, str, int, bool and None only."""
    if isinstance(value, dict):
        assert all(isinstance(k, str) for k in value)
        for v in value.values():
            assert_json_ready(v)
    elif isinstance(value, list):
        for v in value:
            assert_json_ready(v)
    else:
        assert value is None or type(value) in (str, int, bool), repr(value)


# ---- plans -------------------------------------------------------------------------------


def test_plan_json_of_every_operator() -> None:
    doc = plan_json(parse_plan(EVERY_OPERATOR))
    assert doc["operator"] == "Union" and doc["arity"] == 3
    assert doc["types"] == ["int", "bigint", "numeric(38,0)"]
    reduce, empty = doc["inputs"]
    assert empty == {"operator": "Constant", "rows": [], "arity": 2,
                     "types": ["int", "bigint"], "inputs": []}
    assert {k: v for k, v in reduce.items() if k != "inputs"} == {
        "operator": "Reduce", "group_key": ["(#0 + 1)"],
        "aggregates": [{"func": "count", "expr": None}, {"func": "sum", "expr": "#1"}],
        "arity": 3, "types": ["int", "bigint", "numeric(38,0)"]}
    join = reduce["inputs"][0]
    assert {k: v for k, v in join.items() if k != "inputs"} == {
        "operator": "Join", "equivalences": [["#0", "#2"]], "predicates": ["(#1 < #3)"],
        "plan": {"kind": "delta", "orders": [[1], [0]]},
        "arity": 4, "types": ["int", "bigint", "int", "numeric(10,2)"]}
    linear, constant = join["inputs"]
    assert linear["steps"] == [
        {"step": "filter", "predicates": ["(#1 > 0)"]},
        {"step": "map", "exprs": ["lower(#2)", "'x'"]},
        {"step": "project", "columns": [0, 1]},
        {"step": "flat_map", "calls": ["generate_series(1, #0)"], "ordinality": True},
        {"step": "repeat_row", "count": "#0"},
        {"step": "project", "columns": [0, 1]},
    ]
    assert linear["inputs"][0] == {
        "operator": "Get", "name": "my table",
        "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "bigint"},
                   {"name": "c d", "type": "text"}],
        "arity": 3, "types": ["int", "bigint", "text"], "inputs": []}
    assert constant["rows"] == [{"values": ["1", "2.50"], "multiplicity": 2},
                                {"values": ["null", "null"], "multiplicity": -1}]


def test_join_without_plan_has_null_plan() -> None:
    doc = plan_json(parse_plan("Join on=()\n  Get t (a int)\n  Get t (a int)"))
    assert doc["plan"] is None and doc["equivalences"] == [] and doc["predicates"] == []


def _type(text: str) -> SqlType:
    cast = parse_scalar(f"cast(null as {text})")
    assert isinstance(cast, Cast)
    return cast.to


def _step(doc: dict[str, Any]) -> Step:
    scalars = [parse_scalar(s) for s in doc.get("predicates", doc.get("exprs", []))]
    kind = doc["step"]
    if kind == "flat_map":
        calls = tuple(parse_scalar(c) for c in doc["calls"])
        assert all(isinstance(c, Call) for c in calls)
        return FlatMap(calls, doc["ordinality"])  # type: ignore[arg-type]
    steps: dict[str, Step] = {
        "filter": Filter(tuple(scalars)), "map": Map(tuple(scalars)),
        "project": Project(tuple(doc.get("columns", ()))),
        "repeat_row": Repeat(parse_scalar(doc.get("count", "1"))),
    }
    return steps[kind]


def from_json(doc: dict[str, Any]) -> Relation:
    """The plan a PLAN object describes: proves the JSON form loses nothing."""
    rel = _operator_from_json(doc)
    return with_subplans(rel, [from_json(s) for s in doc["subqueries"]]) \
        if "subqueries" in doc else rel


def _operator_from_json(doc: dict[str, Any]) -> Relation:
    inputs = tuple(from_json(child) for child in doc["inputs"])
    op = doc["operator"]
    if op == "Get":
        return Get(doc["name"], tuple(Field(f["name"], _type(f["type"])) for f in doc["fields"]))
    if op == "Constant":
        rows = "; ".join(f"({', '.join(r['values'])}) x{r['multiplicity']}" for r in doc["rows"])
        return parse_plan(f"Constant ({', '.join(doc['types'])}) [{rows}]")
    if op == "Linear":
        return Linear(inputs[0], tuple(_step(s) for s in doc["steps"]))
    if op == "Join":
        plan = doc["plan"] and JoinPlan(doc["plan"]["kind"], tuple(
            tuple(tuple(s) if isinstance(s, list) else s for s in o)
            for o in doc["plan"]["orders"]))
        return Join(inputs, tuple(tuple(map(parse_scalar, c)) for c in doc["equivalences"]),
                    plan, tuple(map(parse_scalar, doc["predicates"])))
    if op == "Reduce":
        aggregates = tuple(Aggregate(a["func"], a["expr"] and parse_scalar(a["expr"]))
                           for a in doc["aggregates"])
        return Reduce(inputs[0], tuple(map(parse_scalar, doc["group_key"])), aggregates)
    if op == "TopK":
        keys = tuple((k["column"], k["descending"], k["nulls_first"]) for k in doc["order_by"])
        return TopK(inputs[0], keys, doc["limit"], doc["offset"])
    assert op == "Union"
    return Union(inputs)


def test_corpus_is_large() -> None:
    assert len(corpus()) >= 100


def test_plan_json_is_lossless_json_over_the_fixture_corpus() -> None:
    for plan in corpus():
        doc = plan_json(plan)
        assert_json_ready(doc)
        assert json.loads(json.dumps(doc)) == doc
        assert from_json(doc) == plan
        assert doc["arity"] == len(doc["types"]) == plan.arity


def test_from_json_notices_a_difference() -> None:
    """The lossless check above can fail: an altered document gives another plan."""
    plan = parse_plan(EVERY_OPERATOR)
    doc = plan_json(plan)
    doc["inputs"][0]["aggregates"][1]["func"] = "max"
    assert from_json(doc) != plan


# ---- dataflows ---------------------------------------------------------------------------


def test_dataflow_json_of_a_self_join() -> None:
    """The two reads of ``a`` are one Get (equal subplans are one operator): the temporal
    filter reads it and the join's third input is it."""
    doc = dataflow_json(dataflow_graph(lower(parse_plan(SELF_JOIN))))
    assert_json_ready(doc)
    assert doc["root"] == 5
    ops = doc["operators"]
    assert [(o["id"], o["operator"], o["inputs"]) for o in ops] == [
        (0, "Get", []), (1, "Linear", [0]), (2, "Get", []), (3, "Linear", [2]),
        (4, "Join", [1, 3, 0]), (5, "Reduce", [4])]
    assert ops[1]["text"] == "Linear [filter (mz_now() < #1)]"
    assert ops[5]["arrangements"] == ["%5.output", "%5.values"]
    assert all("paths" not in o for o in ops if o["operator"] != "Join")
    assert ops[4]["paths"][0] == {
        "input": 0, "operator": 1, "equalities": [], "closure": [], "lookups": [
            {"input": 1, "operator": 3, "key": ["#0"], "stream_key": ["#0"], "time": "<",
             "equalities": [], "closure": [], "arrangements": ["b"]},
            {"input": 2, "operator": 0, "key": ["#0"], "stream_key": ["#0"], "time": "<",
             "equalities": [], "closure": [], "arrangements": ["a"]}], "extensions": []}
    assert [[(lk["input"], lk["time"]) for lk in p["lookups"]] for p in ops[4]["paths"]] == [
        [(1, "<"), (2, "<")], [(0, "<="), (2, "<")], [(0, "<="), (1, "<=")]]
    arrangements = {a["name"]: a for a in doc["arrangements"]}
    assert [a["name"] for a in doc["arrangements"]] == [
        "a", "%1.pending", "b", "%5.output", "%5.values"]
    assert arrangements["a"] == {
        "name": "a", "role": "shared", "purpose": "the updates of a", "reused": True,
        "maintained_by": None,
        "read_by": [0], "looked_up_by": [{"operator": 4, "paths": [0, 1, 2]}]}
    assert arrangements["b"]["looked_up_by"] == [{"operator": 4, "paths": [0, 2]}]
    assert arrangements["%1.pending"]["maintained_by"] == 1
    assert arrangements["%1.pending"]["role"] == "owned"
    assert arrangements["%5.values"]["read_by"] == []


def test_dataflow_json_of_a_join_looking_up_a_join_and_a_reduce() -> None:
    plan = parse_plan("""\
Join on=(#0 = #2) plan=delta[(1), (0)]
  Join on=(#0 = #1) plan=delta[(1), (0)]
    Get a (x int)
    Get b (x int)
  Reduce group_key=(#0) aggregates=(count(*))
    Get c (x int)""")
    doc = dataflow_json(dataflow_graph(lower(plan)))
    names = {a["name"]: a for a in doc["arrangements"]}
    assert names["%2.output"]["maintained_by"] == 2
    assert names["%2.output"]["looked_up_by"] == [{"operator": 5, "paths": [1]}]
    assert names["%4.output"]["looked_up_by"] == [{"operator": 5, "paths": [0]}]
    assert doc["operators"][5]["paths"][1]["lookups"][0]["arrangements"] == ["%2.output"]


def test_dataflow_json_over_the_fixture_corpus() -> None:
    """Every physical dataflow: JSON-ready, deterministic, ids and names consistent."""
    for plan in corpus():
        graph = dataflow_graph(lower(physical(plan)))
        doc = dataflow_json(graph)
        assert_json_ready(doc)
        assert doc == dataflow_json(dataflow_graph(lower(physical(plan))))
        ids = [o["id"] for o in doc["operators"]]
        assert ids == list(range(len(ids))) and doc["root"] == ids[-1]
        names = [a["name"] for a in doc["arrangements"]]
        assert sorted(names) == sorted(n for n in graph.nodes if isinstance(n, str))
        for o in doc["operators"]:
            assert o["text"] == render_line(graph.nodes[o["id"]]["relation"])
            assert set(o["arrangements"]) <= set(names)
            assert all(i < o["id"] for i in o["inputs"])


@dataclass(frozen=True)
class Size:
    name: str
    rows: int
    bytes: int
    batches: int = 1
    held: str = "driver"
    keys: tuple[str, ...] = ()
    reads: FileReads = FileReads(by_key=1, files=1, pages=2, remembered=3, in_driver=1)


@dataclass(frozen=True)
class Stats:
    steps: int
    rows_in: int
    rows_out: int
    seconds: float
    arrangements: tuple[Size, ...] = ()


def test_dataflow_json_with_statistics() -> None:
    graph = dataflow_graph(lower(parse_plan(THREE_WAY_WITH_REDUCE)))
    stats = [Stats(2, 0, 5, 0.5), Stats(2, 0, 3, 0.25), Stats(2, 8, 4, 1.0),
             Stats(2, 4, 1, 0.125, (Size("%3.output", 1, 64),))]
    doc = dataflow_json(graph, stats)
    assert [o["statistics"]["rows_out"] for o in doc["operators"]] == [5, 3, 4, 1]
    assert doc["operators"][3]["statistics"] == {
        "steps": 2, "rows_in": 4, "rows_out": 1, "seconds": 0.125,
        "arrangements": [{"name": "%3.output", "rows": 1, "bytes": 64, "batches": 1,
                          "held": "driver", "keys": [], "reads": {
                              "by_key": 1, "files": 1, "pages": 2, "whole": 0,
                              "whole_rows": 0, "remembered": 3, "in_driver": 1}}]}
    assert json.loads(json.dumps(doc)) == doc
    assert all("statistics" not in o for o in dataflow_json(graph)["operators"])
    with pytest.raises(ValueError, match="3 statistics for 4 operators"):
        dataflow_json(graph, stats[:3])


THREE_WAY_WITH_REDUCE = """\
Reduce group_key=(#0) aggregates=(count(*))
  Join on=(#0 = #1) plan=delta[(1), (0)]
    Get a (x int)
    Get b (x int)"""


# ---- traces and documents ----------------------------------------------------------------


def test_trace_json() -> None:
    initial = parse_plan("""\
Reduce group_key=(#0) aggregates=(count(*))
  Linear [filter (#2 > 0)]
    Join on=(#0 = #2)
      Get a (x int, y bigint)
      Get b (x int, y bigint)""")
    steps, before = [], initial
    for name, plan in trace(initial):
        steps.append((name, plan, plan != before))
        before = plan
    doc = trace_json(steps)
    assert_json_ready(doc)
    assert list(doc) == ["steps"]
    assert [s["transform"] for s in doc["steps"]] == [name for name, _ in trace(initial)]
    for (_, plan, changed), step in zip(steps, doc["steps"], strict=True):
        assert step["changed"] is changed
        assert step["plan"] == (plan_json(plan) if changed else None)
    assert any(s["changed"] for s in doc["steps"]) and not all(
        s["changed"] for s in doc["steps"])
    assert trace_json([("raw", initial, True)])["steps"] == [
        {"transform": "raw", "changed": True, "plan": plan_json(initial)}]


def test_explain_document() -> None:
    plan = plan_json(parse_plan(SELF_JOIN))
    doc = explain_document("optimized", plan)
    assert list(doc)[:3] == ["version", "stage", "operator"]
    assert doc == {"version": VERSION, "stage": "optimized", **plan} and VERSION == 1
    with pytest.raises(ValueError, match="version"):
        explain_document("raw", {"version": 2})

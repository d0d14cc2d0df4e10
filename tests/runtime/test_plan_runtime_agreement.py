"""The runtime runs the plan EXPLAIN PHYSICAL prints: for the physical plan of every query
of the golden plan fixtures (``fixtures/plans.test``, ``optimized_plans.test``,
``explain_plans.test``), the dataflow built from it compiles, in every delta path of every
join, exactly the stream keys, lookup keys, time comparisons, equalities and closures the
plan names (``JoinOp.compiled``), its Spark lookup conditions compare the times and equate
the key columns the plan names, and the paths it compiled print as the golden EXPLAIN
PHYSICAL text prints them, and so does each join of a recursive query's body, run by the
same join operator over (transaction, round) times (``physical.LoopJoin``); every operator
holds exactly the arrangements its plan node names (``Operator.attach``), every Reduce the
layout (deferral included) and every Linear the copies it names; an operator of several
consumers in the plan (equal subplans) is one operator feeding them all."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from matview.ir import physical
from matview.ir.joins import input_at, offsets_of
from matview.ir.relation import Relation, inputs_of
from matview.ir.scalar import Col
from matview.planner.explain.physical_text import render_path
from matview.planner.lower import lower
from matview.planner.pipeline import at_stage
from matview.runtime.arrangements.trace import Trace
from matview.runtime.operators.base import Operator
from matview.runtime.operators.join import JoinOp
from matview.runtime.operators.linear import LinearOp
from matview.runtime.operators.reduce import ReduceOp
from matview.runtime.recursion.let_rec import LetRecOp
from matview.runtime.recursion.scope import body_operator
from matview.runtime.render import build, operators
from matview.sql.parse import parse
from matview.sql.statements import CreateView, Query
from pyspark.sql import SparkSession

import matview
from tests.support.catalogs import Catalog
from tests.support.golden import read_cases

FIXTURES = Path(__file__).parents[1] / "fixtures"
FILES = ("plans", "optimized_plans", "explain_plans")


def golden_plans() -> Iterator[tuple[str, physical.Operator, str]]:
    """``(where, physical plan, expected output)`` for every query case of the golden plan
    fixtures."""
    for name in FILES:
        catalog = Catalog()
        for case in read_cases((FIXTURES / f"{name}.test").read_text()):
            if case.directive.startswith("define"):
                catalog.define(case.input)
                continue
            (stmt,) = parse(case.input, catalog)
            assert isinstance(stmt, (Query, CreateView))
            yield (f"{name}.test:{case.line}", lower(at_stage(stmt.plan, "physical")),
                   case.expected)


def run_paths(join: JoinOp, planned: list[physical.DeltaPath]) -> tuple[physical.DeltaPath, ...]:
    """The delta paths ``join`` compiled (``planned``: the plan's, by input), as a plan. A
    path's worst-case optimal groups are the plan's, each order of them compiled
    (``JoinOp.extension_stages``; its first order is the path's own stages)."""
    paths, ids = [], [p.operator for p in planned]
    for i, op in enumerate(ids):
        join.stages(i)
        start = join.compiled[(i, None)]
        stages = [(j, stage) for (path, j), stage in join.compiled.items()
                  if path == i and j is not None]
        assert all(s.time is not None for _, s in stages)
        extensions = planned[i].extensions
        for n, extension in enumerate(extensions):
            orders = join.extension_stages(i, n)
            assert [len(o) for o in orders] == [len(o) for o in extension.orders]
            assert all(condition is not None for o in orders for condition, _ in o)
        paths.append(physical.DeltaPath(i, op, start.equalities, start.closure, tuple(
            physical.Lookup(j, ids[j], s.stream_key, s.key, str(s.time), s.equalities,
                            s.closure) for j, s in stages), extensions))
    return tuple(paths)


def check_conditions(join: JoinOp, plan: physical.Join | physical.LoopJoin) -> None:
    """Each lookup condition ``join`` compiled compares the looked-up update's time with the
    change's as the plan says and equates each plain stream-key column with its plain
    lookup-key column (Spark prints a condition as ``and(<(_t1, _t0), =(j0_c1, j1_c0))``).
    Inside a loop no condition compares times (the plan's ``<``/``<=`` is the input order,
    which decides which changes of the round a path sees)."""
    offsets = offsets_of([child.arity for child in plan.relation.inputs])
    for path in plan.implementation.paths:
        i = path.input
        _, *stages = join.stages(i)
        for lookup, (condition, _) in zip(path.lookups, stages, strict=True):
            j, text = lookup.input, str(condition)
            if join.rounds:
                assert "_t" not in text and (lookup.time == "<") == (j > i), (text, lookup)
            else:
                assert f"{lookup.time}(_t{j}, _t{i})" in text, (text, lookup)
            for stream, key in zip(lookup.stream_key, lookup.key, strict=True):
                if isinstance(stream, Col) and isinstance(key, Col):
                    k = input_at(offsets, stream.index)
                    equal = f"=(j{k}_c{stream.index - offsets[k]}, j{j}_c{key.index})"
                    assert re.search(rf"(?<![<>!]){re.escape(equal)}", text), (text, lookup)


def test_the_runtime_runs_the_delta_paths_the_plan_names(spark: SparkSession) -> None:
    joins = loop_joins = loop_reduces = 0
    for where, plan, expected in golden_plans():
        gets = {op.relation.name: op.relation.arity for op in physical.operators(plan)
                if isinstance(op, physical.Get)}
        flow = build(plan, spark, lambda name, gets=gets: Trace(spark, gets[name]))
        ran: dict[int, Operator] = {}
        for node, op in zip(physical.operators(plan), operators(flow), strict=True):
            assert op.kind == node.kind, where
            ran[node.id] = op  # one operator per plan node, fed by its inputs' operators
            assert [id(c) for c in op.children()] == [id(ran[c.id]) for c in node.inputs]
            held = {what for what in op.arranges if getattr(op, what) is not None}
            assert held == {a.what for a in node.state()}, where  # the plan's state, no more
            if isinstance(node, physical.Reduce):  # the plan's layout, deferral included
                assert isinstance(op, ReduceOp) and op.layout is node.layout, where
                assert op.arrangement_arity("output") == op.arity + len(node.layout.hidden)
            if isinstance(node, physical.Linear):
                assert isinstance(op, LinearOp) and op.copies == node.copies, where
            if isinstance(node, physical.LetRec):  # the body's joins: the ordinary operator
                assert isinstance(op, LetRecOp)
                for loop_join in node.joins:
                    join = body_operator(op, loop_join.relation)
                    assert isinstance(join, JoinOp) and join.rounds
                    assert join is body_operator(op, loop_join.relation)
                    check_paths(join, loop_join, where, expected)
                    loop_joins += 1
                for loop_reduce in node.reduces:  # the ordinary reduce, with the plan's layout
                    reduce = body_operator(op, loop_reduce.relation)
                    assert isinstance(reduce, ReduceOp), where
                    assert reduce.layout is loop_reduce.layout and reduce.output is None
                    loop_reduces += 1
            if not isinstance(node, physical.Join):
                continue
            assert isinstance(op, JoinOp) and not op.rounds
            joins += 1
            check_paths(op, node, where, expected)
    assert joins >= 19 and loop_joins >= 3 and loop_reduces >= 3


def check_paths(op: JoinOp, node: physical.Join | physical.LoopJoin, where: str,
                expected: str) -> None:
    """``op`` compiled exactly the delta paths of ``node``'s implementation, with the
    conditions they name, and EXPLAIN PHYSICAL prints them."""
    paths = node.implementation.paths
    compiled = run_paths(op, sorted(paths, key=lambda p: p.input))
    assert compiled == paths, where
    assert set(op.compiled) == {(p.input, j) for p in paths for j in (None, *p.order)}, where
    check_conditions(op, node)
    if "Explained Query:" in expected and "implementation: delta" in expected:
        for path in compiled:
            assert render_path(path) in expected, (where, render_path(path))


def test_an_operator_holds_only_the_arrangements_its_kind_owns(spark: SparkSession) -> None:
    [(_, plan, _)] = [case for case in golden_plans() if isinstance(case[1], physical.Linear)][:1]
    flow = build(plan, spark, lambda name: Trace(spark, 4))
    with pytest.raises(ValueError, match="Linear cannot own an arrangement of its output"):
        flow.attach("output", Trace(spark, flow.arity))



def test_equal_subplans_run_as_one_operator(spark: SparkSession) -> None:
    """``NOT IN`` decorrelates into copies of its outer query and of its subquery (for the
    NULL cases): the plan has each once, the dataflow one operator per plan node, and the
    view is right as the NULL that empties it comes and goes."""
    catalog = Catalog()
    catalog.define("table o (id int, cust int)\ntable c (id int, region text)")
    sql = "SELECT id FROM o WHERE cust NOT IN (SELECT id FROM c WHERE region <> 'z')"
    (stmt,) = parse(sql, catalog)
    assert isinstance(stmt, Query)
    tree = at_stage(stmt.plan, "physical")
    plan = lower(tree)
    nodes = list(physical.operators(plan))
    assert len(nodes) < _size(tree)  # copies in the tree, one node each in the plan
    consumers = Counter(child.id for node in nodes for child in node.inputs)
    assert max(consumers.values()) > 1
    flow = build(plan, spark, lambda name: Trace(spark, 2))
    assert len({id(op) for op in operators(flow)}) == len(nodes)

    con = matview.connect(spark=spark, clock=0)
    con.execute("CREATE TABLE o (id int, cust int)")
    con.execute("CREATE TABLE c (id int, region text)")
    con.execute("INSERT INTO o VALUES (1, 1), (2, NULL), (3, 3)")
    con.execute("INSERT INTO c VALUES (1, 'a'), (NULL, 'b')")
    con.execute(f"CREATE MATERIALIZED VIEW v AS {sql}")
    assert con.execute("SELECT * FROM v").fetchall() == []  # a NULL in the subquery
    con.execute("DELETE FROM c WHERE id IS NULL")
    assert con.execute("SELECT * FROM v").fetchall() == [(3,)]
    con.execute("INSERT INTO c VALUES (NULL, 'c')")
    assert con.execute("SELECT * FROM v").fetchall() == []


def _size(rel: Relation) -> int:
    """The nodes of the tree ``rel`` (a subtree used twice counted twice)."""
    return 1 + sum(_size(child) for child in inputs_of(rel))

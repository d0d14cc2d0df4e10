"""Tests of what EXPLAIN annotates a plan with: its unique keys (``matview.ir.keys``), checked
rule by rule and against the reference interpreter on generated plans and tables, and the
names of its columns (``matview.ir.column_names``)."""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matview.ir.aggregate_call import Aggregate
from matview.ir.column_names import column_names, linear_column_names
from matview.ir.functions import EvalError
from matview.ir.interpret import interpret
from matview.ir.keys import minimal_keys, unique_keys
from matview.ir.parse import parse_plan
from matview.ir.relation import Constant, Get, Join, Linear, Reduce, Relation
from matview.ir.scalar import Col
from matview.ir.steps import Filter, Step
from matview.ir.types import SqlType

from tests.support.typed_plans import (
    TABLES,
    TYPED,
    all_nodes,
    typed_constants,
    typed_joins,
    typed_linears,
    typed_plans,
    typed_steps,
    typed_values,
)

T = "Get t (a int, b text, c int)"
"""A table: no keys, three named columns."""
BY_A = "Reduce group_key=(#0) aggregates=(count(*))\n  " + T
"""Grouped by ``a``: the key ``(#0)``."""


def indented(text: str, depth: int = 1) -> str:
    """``text`` as an input ``depth`` levels below its consumer."""
    return "\n".join("  " * depth + line for line in text.split("\n"))


# ---- keys, rule by rule ------------------------------------------------------------------


@pytest.mark.parametrize(("text", "keys"), [
    (T, ()),
    ("Constant (int, text) [(1, 'a') x1; (2, 'a') x1]", ((0, 1),)),
    ("Constant (int, text) [(1, 'a') x1; (1, 'a') x1]", ()),
    ("Constant (int) [(1) x1; (2) x2]", ()),
    ("Constant (int) [(1) x1; (2) x-1]", ()),
    ("Constant (int) [(1) x0]", ()),
    ("Constant (int) [(1) x1]", ((),)),
    ("Constant (int) []", ((),)),
    ("Constant () [() x1]", ((),)),
    (BY_A, ((0,),)),
    ("Reduce group_key=((#0 + 1), #1) aggregates=(sum(#2))\n  " + T, ((0, 1),)),
    ("Reduce group_key=() aggregates=(count(*))\n  " + T, ((),)),
    ("Linear [filter (#0 > 1); map (#0 + 1), #0]\n" + indented(BY_A), ((0,),)),
    ("Linear [project (#1, #0)]\n" + indented(BY_A), ((1,),)),
    ("Linear [project (#1, #0, #0)]\n" + indented(BY_A), ((1,),)),
    ("Linear [project (#1)]\n" + indented(BY_A), ()),
    ("Linear [map 1; project (#2, #1); project (#1)]\n" + indented(BY_A), ()),
    ("Linear [flat_map generate_series(1, #0)]\n" + indented(BY_A), ()),
    ("Linear [repeat_row 1]\n" + indented(BY_A), ()),
    ("Linear []\n" + indented(BY_A), ((0,),)),
    ("Join on=()\n" + indented(BY_A) + "\n" + indented(BY_A), ((0, 2),)),
    ("Join on=(#0 = #2)\n" + indented(BY_A) + "\n  " + T, ()),
    ("Join on=()", ((),)),
    ("Join on=()\n  Constant (int) [(1) x1]\n" + indented(BY_A), ((1,),)),
    ("Union\n" + indented(BY_A), ()),
])
def test_keys_by_rule(text: str, keys: tuple[tuple[int, ...], ...]) -> None:
    assert unique_keys(parse_plan(text)) == keys


def test_a_join_combines_one_key_per_input() -> None:
    two_keys = "\n".join([
        "Linear [map #0, 5; project (#0, #1, #2)]",
        indented(BY_A),
    ])
    plan = parse_plan("\n".join(["Join on=()", indented(two_keys), indented(BY_A)]))
    assert unique_keys(parse_plan(two_keys)) == ((0,),)
    assert unique_keys(plan) == ((0, 3),)
    grouped = parse_plan("\n".join([
        "Join on=()",
        indented("Reduce group_key=(#0, #1) aggregates=()\n  " + T),
        indented("Reduce group_key=(#2) aggregates=(min(#1))\n  " + T),
    ]))
    assert unique_keys(grouped) == ((0, 1, 2),)


@pytest.mark.parametrize(("keys", "minimal"), [
    ([], ()),
    ([(2, 0), (0, 2), (1,)], ((0, 2), (1,))),
    ([(0, 1), (1,), (1, 2, 3)], ((1,),)),
    ([(3,), (), (0,)], ((),)),
    ([(0, 0, 1)], ((0, 1),)),
])
def test_minimal_keys(keys: list[tuple[int, ...]], minimal: tuple[tuple[int, ...], ...]) -> None:
    assert minimal_keys(keys) == minimal


# ---- keys against the reference interpreter ----------------------------------------------

Row = tuple[object, ...]


@st.composite
def tables(draw: st.DrawFn) -> dict[str, Counter[Row]]:
    """Contents of ``TABLES``: three to eight distinct rows of few values, some of them
    repeated, some negative."""
    out = {}
    for table in TABLES:
        row = st.tuples(*(typed_values(f.type) for f in table.fields))
        rows = draw(st.lists(row, min_size=3, max_size=8, unique=True))
        multiplicities = st.sampled_from([1, 2, -1])
        out[table.name] = Counter({r: draw(multiplicities) for r in rows})
    return out


@st.composite
def grouped(draw: st.DrawFn, table: Get) -> Reduce:
    """``table`` grouped by some of its columns: a key, and several rows."""
    columns = draw(st.lists(st.integers(0, table.arity - 1), min_size=1, max_size=2,
                            unique=True))
    return Reduce(table, tuple(map(Col, columns)), (Aggregate("count", None),))


def choose(*options: st.SearchStrategy[Relation]) -> st.SearchStrategy[Relation]:
    """A draw from one of ``options``, each as likely (``st.one_of`` flattens nested choices
    into one, which would give the branches of a nested choice more weight)."""
    return st.sampled_from(options).flatmap(lambda option: option)


grouped_tables = st.sampled_from(TABLES).flatmap(grouped)
keyed_leaves = choose(grouped_tables, grouped_tables,
                      typed_constants().filter(lambda c: len(c.rows) > 1))
keyed_inputs = st.lists(keyed_leaves, min_size=2, max_size=3)
keyed_joins = choose(
    keyed_leaves,
    keyed_inputs.map(lambda inputs: Join(tuple(inputs), ())),
    keyed_inputs.flatmap(typed_joins),
)


@cache
def steps_but_filters(types: tuple[SqlType, ...]) -> st.SearchStrategy[Step]:
    """Steps over rows of ``types`` other than filters (which would leave few rows to check)."""
    return typed_steps(types).filter(lambda step: not isinstance(step, Filter))


keyed_plans = choose(
    keyed_joins,
    keyed_joins.flatmap(lambda input: typed_linears(input, steps_but_filters)),
    keyed_joins.flatmap(typed_linears),
)
"""Keyed inputs, their products and joins, and steps over them: what the general
``typed_plans`` seldom makes (keyed nodes of several rows)."""


def assert_keys_hold(plan: Relation, result: Counter[Row]) -> None:
    """No two rows of ``result`` share the values of a key of ``plan``, and (when it has a key)
    each row is there once."""
    keys = unique_keys(plan)
    if keys:
        assert set(result.values()) <= {1}, result
    for key in keys:
        values = Counter(tuple(row[c] for c in key) for row in result)
        assert set(values.values()) <= {1}, (key, result)


@settings(TYPED, max_examples=300)
@given(plan=choose(keyed_plans, keyed_plans, typed_plans()), contents=tables())
def test_keys_hold_on_interpreted_plans(plan: Relation, contents: dict[str, Counter[Row]]
                                        ) -> None:
    """Every node's keys hold on what the reference interpreter makes of it (on plans that
    have keys two times in three)."""
    for node in all_nodes(plan):
        try:
            result = interpret(node, contents)
        except EvalError:
            continue
        assert_keys_hold(node, result)


@settings(TYPED, max_examples=300)
@given(constant=typed_constants())
def test_keys_of_constants_hold(constant: Constant) -> None:
    """Constants on their own: cheap to draw, so many more of them (with repeated rows, and
    multiplicities other than 1)."""
    assert_keys_hold(constant, interpret(constant, {}))


# ---- column names ------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "names"), [
    (T, ("a", "b", "c")),
    ('Get "odd table" ("two words" int, "" text)', ("two words", "")),
    ("Constant (int, text) [(1, 'a') x1]", (None, None)),
    ("Linear [filter (#0 > 1); map #1, (#0 + 1), #3, #9; repeat_row #0; "
     "project (#2, #5, #0, #4, #8)]\n  " + T, ("c", "b", "a", None, None)),
    ("Linear [flat_map generate_series(1, #0) with ordinality; map #4, #3]\n  " + T,
     ("a", "b", "c", None, None, None, None)),
    ("Join on=(#0 = #3)\n  " + T + "\n  Get u (d int)\n  Constant (text) []",
     ("a", "b", "c", "d", None)),
    ("Reduce group_key=(#1, (#0 + 1), #2) aggregates=(count(*), max(#0))\n  " + T,
     ("b", None, "c", None, None)),
    ("Union\n  Linear [project (#2, #1)]\n    " + T + "\n  Get u (x int, y text)", ("c", "b")),
    ("Union", ()),
    ("Join on=()", ()),
])
def test_column_names_by_rule(text: str, names: tuple[str | None, ...]) -> None:
    assert column_names(parse_plan(text)) == names


def test_linear_column_names_give_the_row_before_each_step() -> None:
    plan = parse_plan("Linear [map (#0 + 1), #1; project (#4, #0); filter #0]\n  " + T)
    assert isinstance(plan, Linear)
    assert linear_column_names(plan) == [
        ("a", "b", "c"),
        ("a", "b", "c", None, "b"),
        ("b", "a"),
        ("b", "a"),
    ]


def test_malformed_references_name_nothing() -> None:
    """A column the row does not have is nameless, rather than an error."""
    plan = parse_plan("Reduce group_key=(#7) aggregates=()\n  Linear [project (#5, #0)]\n    " + T)
    assert column_names(plan) == (None,)
    assert column_names(Get("t", ())) == ()


@settings(TYPED, max_examples=60)
@given(plan=typed_plans())
def test_one_name_per_column(plan: Relation) -> None:
    assert len(column_names(plan)) == plan.arity

"""The optimizer's transforms: golden fixtures (``fixtures/transforms/<transform>.test``, each
case ``transform NAME``, an input plan, ``----`` and the output plan; rewrite with ``pytest
--rewrite``) and the property every transform must have, checked with the reference
interpreter on fixture plans and on random plans over small random tables: the rewritten
plan has the same types and denotes the same multiset at every time, and raises no error
the original does not raise (``push_linear_into_joins`` may evaluate an input's expressions
on rows the join drops, so it may)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from matview.ir.decorrelate.semi_joins import semi_joins
from matview.ir.decorrelate.subquery_values import subquery_values
from matview.ir.functions import EvalError
from matview.ir.interpret import interpret
from matview.ir.linear_logic import BOTTOM, MZ_NOW
from matview.ir.parse import parse_plan
from matview.ir.relation import Field, Get, Join, Linear, Relation, Union, gets
from matview.ir.render import render_plan
from matview.ir.scalar import Call, Case, Col, Lit, Scalar
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, Step, step_types
from matview.ir.types import BIGINT, BOOLEAN, INT, NULLTYPE, TEXT, Kind, SqlType
from matview.planner.join_plan import join_plan
from matview.planner.pipeline import (
    DECORRELATE,
    LOGICAL,
    PHYSICAL,
    optimize,
    physical,
    trace,
)
from matview.planner.transforms.canonicalize_linear import canonicalize_linear
from matview.planner.transforms.factor_disjunctions import factor_disjunctions
from matview.planner.transforms.flat_map_to_map import flat_map_to_map
from matview.planner.transforms.flatten_joins import flatten_joins
from matview.planner.transforms.fold_constants import fold_constants
from matview.planner.transforms.fuse_linear import fuse_linear
from matview.planner.transforms.push_linear_into_joins import push_linear_into_joins

from tests.support.golden import run_golden

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transforms"

Transform = Callable[[Relation], Relation]
TRANSFORMS: dict[str, Transform] = {t.__name__: t for t in (
    fuse_linear, canonicalize_linear, push_linear_into_joins, flat_map_to_map,
    fold_constants, factor_disjunctions, flatten_joins, join_plan, optimize,
    semi_joins, subquery_values)}
LENIENT = {"push_linear_into_joins", "optimize"}
"""Transforms that may raise an error the original plan does not (see the module doc)."""
UNSIGNED = {"semi_joins", "subquery_values"}
"""Transforms whose rewrite holds over tables without negative multiplicities only (as
stored tables are): a subquery's domain is a ``Reduce``, which drops a key whose rows sum
to a multiplicity of 0 or less."""

Row = tuple[object, ...]
Tables = dict[str, Counter[Row]]
NOWS = (BOTTOM, -2, 0, 1, 3, 6, 1_704_067_200_000, 1_704_067_500_000, 1_704_070_000_000)
"""Times to read at: around the small BIGINT values of random rows, and around 2024-01-01
00:00 UTC for TIMESTAMP columns."""


# ---- random tables and the equivalence check -------------------------------------------------


def _value(rng: random.Random, t: SqlType) -> object:
    if rng.random() < 0.15:
        return None
    if t.kind in (Kind.INT, Kind.BIGINT):
        return rng.randint(-3, 6)
    if t.kind is Kind.TEXT:
        return rng.choice(["a", "b", "a,b", ""])
    if t.kind is Kind.BOOLEAN:
        return rng.random() < 0.5
    if t.kind is Kind.TIMESTAMP:
        return datetime(2024, 1, 1) + timedelta(minutes=rng.randint(-5, 40))
    if t.kind is Kind.ARRAY:
        assert t.element is not None
        return tuple(_value(rng, t.element) for _ in range(rng.randint(0, 3)))
    if t.kind is Kind.JSONB:
        return rng.choice(["[1,2]", "[]", '["x"]'])
    raise NotImplementedError(f"no random values of {t}")


def random_tables(plan: Relation, rng: random.Random, signed: bool = True) -> Tables:
    """Random contents for the tables ``plan`` reads; some rows have negative multiplicities
    unless not ``signed``."""
    tables: Tables = {}
    for get in gets(plan):
        rows: Counter[Row] = Counter()
        for _ in range(rng.randint(0, 5)):
            row = tuple(_value(rng, f.type) for f in get.fields)
            rows[row] += rng.choice([1, 1, 1, 2, -1] if signed else [1, 1, 2])
        tables[get.name] = Counter({r: m for r, m in rows.items() if m})
    return tables


def assert_equivalent(name: str, before: Relation, after: Relation, seed: int,
                      rounds: int = 12) -> None:
    """``after`` has ``before``'s types and denotes the same multisets on random tables."""
    assert after.types == before.types, f"{name} changed the types:\n{render_plan(after)}"
    rng = random.Random(seed)
    for _ in range(rounds):
        tables = random_tables(before, rng, signed=name not in UNSIGNED)
        for now in NOWS:
            try:
                want = interpret(before, tables, now)
            except EvalError:
                continue
            try:
                got = interpret(after, tables, now)
            except EvalError:
                if name in LENIENT:
                    continue
                raise
            assert got == want, (
                f"{name} changed the meaning at now={now} on {tables}:\n"
                f"{render_plan(before)}\n=>\n{render_plan(after)}\n{want} != {got}")


# ---- golden fixtures -------------------------------------------------------------------------


def _transform(directive: str, text: str) -> str:
    words = directive.split()
    assert words[0] == "transform" and len(words) == 2, directive
    plan = parse_plan(text)
    result = TRANSFORMS[words[1]](plan)
    assert_equivalent(words[1], plan, result, seed=len(text))
    out = render_plan(result)
    assert parse_plan(out) == result
    return out


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.test")), ids=lambda p: p.stem)
def test_transform_fixtures(path: Path, rewrite: bool) -> None:
    run_golden(path, _transform, rewrite)


def test_every_transform_has_fixtures() -> None:
    names = {t.__name__ for t in DECORRELATE + LOGICAL + PHYSICAL}
    assert names <= {p.stem for p in FIXTURES.glob("*.test")}


def test_trace_names_every_transform() -> None:
    plan = parse_plan("Linear [filter (#0 > 1)]\n  Linear [map (1 + 2)]\n    Get t (a int)")
    steps = trace(plan)
    assert [name for name, _ in steps] == [t.__name__ for t in DECORRELATE + LOGICAL] + [
        "join_plan"]
    assert steps[-1][1] == physical(plan)


# ---- random plans ----------------------------------------------------------------------------

T = Get("t", (Field("a", INT), Field("b", INT), Field("c", BIGINT)))
U = Get("u", (Field("d", INT), Field("e", BIGINT)))


def _int_lit(rng: random.Random) -> Lit:
    return Lit(rng.choice([-1, 0, 1, 2, 3, None]), INT)


def _int_expr(rng: random.Random, types: tuple[SqlType, ...], depth: int = 2) -> Scalar:
    ints = [i for i, t in enumerate(types) if t.kind in (Kind.INT, Kind.BIGINT)]
    choice = rng.randrange(8 if depth > 0 else 2)
    if choice == 0 or not ints:
        return _int_lit(rng)
    if choice == 1:
        return Col(rng.choice(ints))
    sub = [_int_expr(rng, types, depth - 1) for _ in range(2)]
    if choice == 2:
        return Call("add", tuple(sub))
    if choice == 3:
        return Call("mul", tuple(sub))
    if choice == 4:
        return Call("div", tuple(sub))
    if choice == 5:
        return Case(((_bool_expr(rng, types, depth - 1), sub[0]),), sub[1])
    if choice == 6:
        return Call("coalesce", tuple(sub))
    return Call("add", (Lit(1, INT), Lit(2, INT)))


def _bool_expr(rng: random.Random, types: tuple[SqlType, ...], depth: int = 2) -> Scalar:
    choice = rng.randrange(6 if depth > 0 else 2)
    if choice == 0:
        return Lit(rng.choice([True, False, None]), BOOLEAN if rng.random() < .8 else NULLTYPE)
    if choice <= 2:
        op = rng.choice(["eq", "lt", "ge", "ne"])
        return Call(op, (_int_expr(rng, types, depth - 1), _int_expr(rng, types, depth - 1)))
    if choice == 3:
        return Call("not", (_bool_expr(rng, types, depth - 1),))
    if choice == 4:
        return Call("is_null", (_int_expr(rng, types, depth - 1),))
    return Call(rng.choice(["and", "or"]),
                (_bool_expr(rng, types, depth - 1), _bool_expr(rng, types, depth - 1)))


def _step(rng: random.Random, types: tuple[SqlType, ...]) -> Step:
    kind = rng.choice(["filter", "filter", "temporal", "map", "map", "flat_map", "repeat",
                       "project"])
    bigints = [i for i, t in enumerate(types) if t.kind is Kind.BIGINT]
    ints = [i for i, t in enumerate(types) if t.kind is Kind.INT]
    if kind == "temporal" and bigints:
        op = rng.choice(["lt", "le", "gt", "ge", "eq"])
        bound: Scalar = Col(rng.choice(bigints))
        if rng.random() < 0.3:
            bound = Call("add", (bound, Lit(rng.randint(0, 3), BIGINT)))
        return Filter((Call(op, (MZ_NOW, bound)),))
    if kind in ("filter", "temporal"):
        return Filter(tuple(_bool_expr(rng, types) for _ in range(rng.randint(1, 2))))
    if kind == "map":
        return Map(tuple(_int_expr(rng, types) for _ in range(rng.randint(1, 2))))
    if kind == "flat_map":
        def call() -> Call:
            col = Col(rng.choice(ints)) if ints else Lit(1, INT)
            pick = rng.randrange(5)
            if pick == 0:
                return Call("generate_series", (col, Call("add", (col, Lit(rng.randint(-1, 2),
                                                                           INT)))))
            if pick == 1:
                n = Lit(rng.randint(0, 2), INT)
                return Call("generate_series", (n, Lit(rng.choice([n.value, 1]), INT)))
            if pick == 2:
                return Call("unnest", (Call("array", (col,)),))
            if pick == 3:
                return Call("unnest", (Call("array", (col, _int_lit(rng))),))
            return Call("generate_series", (Lit(5, INT), Lit(1, INT)))
        return FlatMap(tuple(call() for _ in range(rng.randint(1, 2))), rng.random() < 0.4)
    if kind == "repeat":
        return Repeat(Col(rng.choice(ints)) if ints and rng.random() < 0.5
                      else Lit(rng.choice([0, 1, 2, -1, None]), INT))
    width = len(types)
    return Project(tuple(rng.randrange(width) for _ in range(rng.randint(1, min(width, 4)))))


def _linear(rng: random.Random, input: Relation) -> Relation:
    steps: list[Step] = []
    types = input.types
    for _ in range(rng.randint(1, 5)):
        step = _step(rng, types)
        steps.append(step)
        types = step_types(step, types)
    return Linear(input, tuple(steps))


def random_plan(rng: random.Random) -> Relation:
    shape = rng.randrange(5)
    if shape == 0:
        return _linear(rng, T)
    if shape == 1:
        return _linear(rng, _linear(rng, T))
    if shape == 2:
        inner = _linear(rng, U) if rng.random() < 0.5 else U
        classes = ((Col(0), Col(3)),) if rng.random() < 0.5 and inner.types[0] == INT else ()
        return _linear(rng, Join((T, inner), classes))
    if shape == 3:
        return _linear(rng, Join((T, U, Get("v", (Field("f", INT), Field("g", TEXT)))),
                                 ((Col(1), Col(5)),)))
    return _linear(rng, Union((T, Linear(T, (Filter((Call("gt", (Col(0), Lit(0, INT))),)),)))))


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_random_plans_keep_their_meaning(name: str) -> None:
    rng = random.Random(name)
    for case in range(60):
        plan = random_plan(rng)
        try:
            assert plan.types is not None
        except (TypeError, KeyError):
            continue
        assert_equivalent(name, plan, TRANSFORMS[name](plan), seed=case, rounds=4)


def test_random_plans_reach_a_fixed_point() -> None:
    """A second optimization finds nothing more to do."""
    rng = random.Random(7)
    for _ in range(150):
        plan = optimize(random_plan(rng))
        assert optimize(plan) == plan, render_plan(plan)

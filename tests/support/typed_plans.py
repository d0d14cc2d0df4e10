"""Hypothesis strategies of well-typed plans over three small tables (``TABLES``): values,
expressions, linear steps, joins, reductions, unions and constants of the types their
inputs give (names and join plans arbitrary), and ``all_nodes`` of a plan; the IR text and
keys tests draw from them."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from matview.ir.relation import (
    Aggregate,
    Constant,
    Field,
    Get,
    Join,
    JoinPlan,
    Linear,
    Reduce,
    Relation,
    Step,
    Union,
    inputs_of,
    step_types,
)
from matview.ir.scalar import Call, Col, Lit, Scalar
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat
from matview.ir.types import (
    BIGINT,
    BOOLEAN,
    INT,
    TEXT,
    Kind,
    SqlType,
)

names = st.one_of(
    st.sampled_from(["t", "orders", "x1", "E", "map", "Get", "null", "delta", "a b", "it's"]),
    st.text(max_size=6),
)
join_plans = st.builds(JoinPlan, names, st.lists(
    st.lists(st.integers(0, 5), max_size=3).map(tuple), max_size=3).map(tuple))


TABLES = (
    Get("t", (Field("a", INT), Field("b", INT), Field("c", BIGINT))),
    Get("u", (Field("d", INT), Field("two words", TEXT))),
    Get("map", (Field("x//y", TEXT), Field("it's", BOOLEAN), Field("a}b", INT))),
)
"""The tables typed plans read: names that print bare and quoted (in ``#i{name}`` too)."""
TYPED_VALUES: dict[Kind, tuple[object, ...]] = {
    Kind.INT: (2, 1, 0, -1, 3),
    Kind.BIGINT: (2, 1, 0, -1, 3),
    Kind.TEXT: ("a", "b", "", "x // y"),
    Kind.BOOLEAN: (True, False),
}
"""Few values of each type, so that rows collide. (The strategies over a row's types are
cached: building and validating them anew for every draw would be most of the time taken.)"""
INTEGERS = (Kind.INT, Kind.BIGINT)


@cache
def typed_values(t: SqlType) -> st.SearchStrategy[object]:
    """A value of type ``t``, NULL now and then."""
    return st.sampled_from((*TYPED_VALUES[t.kind], None))


def columns_of(types: tuple[SqlType, ...], kinds: tuple[Kind, ...]) -> list[int]:
    return [i for i, t in enumerate(types) if t.kind in kinds]


@cache
def int_exprs(types: tuple[SqlType, ...], depth: int = 2) -> st.SearchStrategy[Scalar]:
    """Integer expressions over rows of ``types``."""
    leaves = st.builds(Lit, typed_values(INT), st.just(INT))
    if ints := columns_of(types, INTEGERS):
        leaves = leaves | st.sampled_from(ints).map(Col)
    if depth == 0:
        return leaves
    sub = int_exprs(types, depth - 1)
    return leaves | st.builds(lambda f, a, b: Call(f, (a, b)),
                              st.sampled_from(["add", "sub", "mul", "coalesce"]), sub, sub)


@cache
def bool_exprs(types: tuple[SqlType, ...], depth: int = 2) -> st.SearchStrategy[Scalar]:
    """Boolean expressions over rows of ``types``."""
    ints = int_exprs(types, 1)
    leaves = st.one_of(
        st.builds(lambda f, a, b: Call(f, (a, b)),
                  st.sampled_from(["eq", "lt", "ge", "ne"]), ints, ints),
        ints.map(lambda e: Call("is_null", (e,))),
        st.sampled_from(columns_of(types, (Kind.BOOLEAN,)) or [None]).map(
            lambda i: Lit(True, BOOLEAN) if i is None else Col(i)),
    )
    if depth == 0:
        return leaves
    sub = bool_exprs(types, depth - 1)
    return leaves | sub.map(lambda e: Call("not", (e,))) | st.builds(
        lambda f, a, b: Call(f, (a, b)), st.sampled_from(["and", "or"]), sub, sub)


@cache
def map_exprs(types: tuple[SqlType, ...]) -> st.SearchStrategy[Scalar]:
    """What a map appends: bare columns (which keep their names) and computed values."""
    texts = columns_of(types, (Kind.TEXT,))
    lowered = st.sampled_from(texts).map(lambda i: Call("lower", (Col(i),))) if texts \
        else st.nothing()
    bare = st.integers(0, len(types) - 1).map(Col) if types else st.nothing()
    return st.one_of(bare, int_exprs(types), bool_exprs(types, 1), lowered)


@cache
def table_calls(types: tuple[SqlType, ...]) -> st.SearchStrategy[Call]:
    ints = int_exprs(types, 1)
    return st.one_of(
        st.builds(lambda a, b: Call("generate_series", (a, b)), ints, typed_values(INT).map(
            lambda v: Lit(v, INT))),
        ints.map(lambda e: Call("unnest", (Call("array", (e, Lit(1, INT))),))),
    )


@cache
def typed_steps(types: tuple[SqlType, ...]) -> st.SearchStrategy[Step]:
    """One step of a Linear over rows of ``types``."""
    ints = columns_of(types, (Kind.INT,))
    counts = st.sampled_from(ints).map(Col) if ints else st.nothing()
    return st.one_of(
        st.lists(bool_exprs(types), min_size=1, max_size=2).map(lambda p: Filter(tuple(p))),
        st.lists(map_exprs(types), min_size=1, max_size=2).map(lambda e: Map(tuple(e))),
        st.lists(st.integers(0, len(types) - 1), max_size=4).map(lambda o: Project(tuple(o)))
        if types else st.just(Project(())),
        st.builds(FlatMap, st.lists(table_calls(types), min_size=1, max_size=2).map(tuple),
                  st.booleans()),
        st.builds(Repeat, counts | typed_values(INT).map(lambda v: Lit(v, INT))),
    )


@st.composite
def typed_linears(
    draw: st.DrawFn,
    input: Relation,
    steps_over: Callable[[tuple[SqlType, ...]], st.SearchStrategy[Step]] = typed_steps,
) -> Linear:
    """A Linear over ``input`` of one to four steps, each drawn from ``steps_over`` the
    types of the row before it."""
    steps: list[Step] = []
    types = input.types
    for _ in range(draw(st.integers(1, 4))):
        steps.append(draw(steps_over(types)))
        types = step_types(steps[-1], types)
    return Linear(input, tuple(steps))


@st.composite
def typed_joins(draw: st.DrawFn, inputs: list[Relation]) -> Join:
    types = tuple(t for i in inputs for t in i.types)
    ints = columns_of(types, INTEGERS)
    pair = st.lists(st.sampled_from(ints).map(Col), min_size=2, max_size=3).map(tuple)
    classes = draw(st.lists(pair, max_size=2)) if ints else []
    predicates = draw(st.lists(bool_exprs(types, 1), max_size=1))
    plan = draw(st.none() | join_plans)
    return Join(tuple(inputs), tuple(classes), plan, tuple(predicates))


@st.composite
def typed_reduces(draw: st.DrawFn, input: Relation) -> Reduce:
    types = input.types
    columns = st.integers(0, len(types) - 1) if types else st.nothing()
    ints = columns_of(types, INTEGERS)
    group_key = draw(st.lists(columns.map(Col) | int_exprs(types, 1), max_size=2))
    aggregates = draw(st.lists(st.one_of(
        st.just(Aggregate("count", None)),
        st.builds(Aggregate, st.sampled_from(["count", "min", "max"]), columns.map(Col)),
        st.sampled_from(ints).map(lambda i: Aggregate("sum", Col(i))) if ints else st.nothing(),
    ), max_size=3))
    return Reduce(input, tuple(group_key), tuple(aggregates))


@st.composite
def typed_unions(draw: st.DrawFn, input: Relation) -> Union:
    filtered = Linear(input, (Filter((draw(bool_exprs(input.types, 1)),)),))
    return Union(tuple(draw(st.lists(st.sampled_from([input, filtered]), min_size=1,
                                     max_size=3))))


@st.composite
def typed_constants(draw: st.DrawFn) -> Constant:
    """Constants, half of them of distinct rows of multiplicity 1 (which have a key), the
    others of rows from a pool of two (often repeated), of any multiplicity."""
    types = tuple(draw(st.lists(st.sampled_from([INT, BIGINT, TEXT, BOOLEAN]), max_size=3)))
    row = st.tuples(*(typed_values(t) for t in types))
    if draw(st.booleans()):
        rows = [(r, 1) for r in draw(st.lists(row, max_size=3, unique=True))]
    else:
        pool = st.sampled_from(draw(st.lists(row, min_size=1, max_size=2)))
        rows = draw(st.lists(st.tuples(pool, st.sampled_from([1, 1, 2, -1, 0])), max_size=3))
    return Constant(tuple(rows), types)


def typed_plans(depth: int = 3) -> st.SearchStrategy[Relation]:
    """Plans whose expressions type-check (``rel.types`` works) reading ``TABLES``; leaves
    include grouped tables, so that joins and the steps above them often have keys."""
    tables = st.sampled_from(TABLES)
    leaves = tables | typed_constants() | tables.flatmap(typed_reduces)
    if depth == 0:
        return leaves
    inner = typed_plans(depth - 1)
    return st.one_of(
        leaves,
        inner.flatmap(typed_linears),
        inner.flatmap(typed_reduces),
        st.lists(inner, max_size=3).flatmap(typed_joins),
        inner.flatmap(typed_unions),
    )


TYPED = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def all_nodes(rel: Relation) -> list[Relation]:
    return [rel, *(n for child in inputs_of(rel) for n in all_nodes(child))]

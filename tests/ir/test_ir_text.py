"""Tests of the IR's text form (``matview.ir.render``, ``matview.ir.parse``) and of the
golden-file helper."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from datetime import UTC, date, datetime
from decimal import Decimal
from itertools import product
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matview.ir.aggregate_call import AGGREGATES, Aggregate
from matview.ir.functions import REGISTRY
from matview.ir.joins import JoinPlan
from matview.ir.parse import PlanSyntaxError, parse_plan, parse_scalar
from matview.ir.relation import (
    Constant,
    Field,
    Get,
    Join,
    Linear,
    Reduce,
    Relation,
    Union,
)
from matview.ir.render import PLAIN, RenderOptions, render_line, render_plan
from matview.ir.render_scalars import render_scalar
from matview.ir.scalar import Call, Case, Cast, Col, Lit, Scalar
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat
from matview.ir.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    NULLTYPE,
    NUMERIC_MAX,
    TEXT,
    TIMESTAMP,
    Kind,
    SqlType,
    type_from_name,
)

from tests.support.golden import read_cases, run_golden, write_cases
from tests.support.typed_plans import TYPED, all_nodes, join_plans, names, typed_plans

FIXTURES = Path(__file__).parents[1] / "fixtures"
NUMERIC_10_2 = type_from_name("numeric", 10, 2)
ORDERS = Get("orders", (Field("id", INT), Field("cust", INT), Field("amount", BIGINT),
                        Field("note", TEXT)))
CUSTOMERS = Get("customers", (Field("id", INT), Field("region", TEXT)))


OPTIONS = [RenderOptions(*flags) for flags in product((False, True), repeat=4)]
"""Every combination of the render options."""
HUMANIZED = RenderOptions(humanized=True)
EVERYTHING = RenderOptions(arity=True, types=True, keys=True, humanized=True)


def options_id(options: RenderOptions) -> str:
    return "+".join(k for k, v in vars(options).items() if v) or "plain"


def assert_round_trip(plan: Relation, options: RenderOptions = PLAIN) -> str:
    """Check both round trips of ``plan`` rendered with ``options`` and return its text."""
    text = render_plan(plan, options)
    parsed = parse_plan(text)
    assert parsed == plan
    assert render_plan(parsed, options) == text
    return text


def assert_scalar_round_trip(expr: Scalar) -> str:
    text = render_scalar(expr)
    parsed = parse_scalar(text)
    assert parsed == expr
    assert render_scalar(parsed) == text
    return text


def call(func: str, *args: Scalar) -> Call:
    return Call(func, args)


# ---- the format, case by case ------------------------------------------------------------


def test_example_plan() -> None:
    join = Join((ORDERS, CUSTOMERS), ((Col(1), Col(4)),),
                JoinPlan("delta", ((1,), (0,))))
    linear = Linear(join, (
        Filter((call("gt", Col(2), Lit(0, INT)),)),
        Map((call("add", Col(0), Lit(1, INT)),)),
        Project((0, 1, 2, 5)),
    ))
    plan = Reduce(linear, (Col(3),), (Aggregate("count", None), Aggregate("sum", Col(2)),
                                      Aggregate("max", Col(2))))
    assert assert_round_trip(plan) == "\n".join([
        "Reduce group_key=(#3) aggregates=(count(*), sum(#2), max(#2))",
        "  Linear [filter (#2 > 0); map (#0 + 1); project (#0, #1, #2, #5)]",
        "    Join on=(#1 = #4) plan=delta[(1), (0)]",
        "      Get orders (id int, cust int, amount bigint, note text)",
        "      Get customers (id int, region text)",
    ])


@pytest.mark.parametrize(("plan", "text"), [
    (Get("t", ()), "Get t ()"),
    (Constant((), (INT, TEXT)), "Constant (int, text) []"),
    (Constant((((), 1),), ()), "Constant () [() x1]"),
    (Constant((((1, "a"), 1), ((2, None), 3), ((3, "c"), -1)), (INT, TEXT)),
     "Constant (int, text) [(1, 'a') x1; (2, null) x3; (3, 'c') x-1]"),
    (Linear(ORDERS, ()), "Linear []\n  " + render_plan(ORDERS)),
    (Linear(CUSTOMERS, (Filter(()), Map(()), Project(()))),
     "Linear [filter; map; project ()]\n  " + render_plan(CUSTOMERS)),
    (Linear(CUSTOMERS, (Filter((Col(0), call("not", Col(1)))), Map((Col(1), Col(0))),
                        Project((2, 2, 0)))),
     "Linear [filter #0, (NOT #1); map #1, #0; project (#2, #2, #0)]\n  "
     + render_plan(CUSTOMERS)),
    (Join((), ()), "Join on=()"),
    (Join((CUSTOMERS,), ((Col(0),),), JoinPlan("delta", ((),))),
     "Join on=(#0) plan=delta[()]\n  " + render_plan(CUSTOMERS)),
    (Join((), (), JoinPlan("linear", ())), "Join on=() plan=linear[]"),
    (Reduce(ORDERS, (), ()), "Reduce group_key=() aggregates=()\n  " + render_plan(ORDERS)),
    (Reduce(ORDERS, (call("mod", Col(0), Lit(7, INT)), Col(1)),
            (Aggregate("min", Col(2)), Aggregate("sum", call("mul", Col(2), Col(2))))),
     "Reduce group_key=((#0 % 7), #1) aggregates=(min(#2), sum((#2 * #2)))\n  "
     + render_plan(ORDERS)),
    (Union(()), "Union"),
    (Union((CUSTOMERS, CUSTOMERS)),
     "Union\n  " + render_plan(CUSTOMERS) + "\n  " + render_plan(CUSTOMERS)),
])
def test_every_node(plan: Relation, text: str) -> None:
    assert assert_round_trip(plan) == text


def test_nested_joins() -> None:
    inner = Join((ORDERS, CUSTOMERS), ((Col(1), Col(4)),))
    outer = Join(
        (CUSTOMERS, inner, Union((CUSTOMERS, Constant((((1, "x"), 2),), (INT, TEXT))))),
        ((Col(0), Col(3), Col(8)), (call("lower", Col(1)), Col(9))),
        JoinPlan("delta", ((1, 2), (0, 2), (0, 1))),
    )
    assert assert_round_trip(outer) == "\n".join([
        "Join on=(#0 = #3 = #8, lower(#1) = #9) plan=delta[(1, 2), (0, 2), (0, 1)]",
        "  Get customers (id int, region text)",
        "  Join on=(#1 = #4)",
        "    Get orders (id int, cust int, amount bigint, note text)",
        "    Get customers (id int, region text)",
        "  Union",
        "    Get customers (id int, region text)",
        "    Constant (int, text) [(1, 'x') x2]",
    ])


@pytest.mark.parametrize(("literal", "text"), [
    (Lit(5, INT), "5"),
    (Lit(-5, INT), "-5"),
    (Lit(2**70, INT), str(2**70)),
    (Lit(5, BIGINT), "5::bigint"),
    (Lit(1.5, DOUBLE), "1.5::double"),
    (Lit(-0.0, DOUBLE), "-0.0::double"),
    (Lit(1e300, DOUBLE), "1e+300::double"),
    (Lit(5e-324, DOUBLE), "5e-324::double"),
    (Lit(math.inf, DOUBLE), "'inf'::double"),
    (Lit(-math.inf, DOUBLE), "'-inf'::double"),
    (Lit(Decimal("1.50"), NUMERIC_10_2), "1.50::numeric(10,2)"),
    (Lit(Decimal("-1E+5"), NUMERIC_MAX), "-1E+5::numeric(38,0)"),
    (Lit(Decimal("Infinity"), NUMERIC_MAX), "'Infinity'::numeric(38,0)"),
    (Lit("it's", TEXT), "'it''s'"),
    (Lit("", TEXT), "''"),
    (Lit("caf\u00e9 \\%", TEXT), "'caf\u00e9 \\%'"),
    (Lit("a\nb'\\\u2028", TEXT), "E'a\\nb''\\\\\\u2028'"),
    (Lit(True, BOOLEAN), "true"),
    (Lit(False, BOOLEAN), "false"),
    (Lit(None, NULLTYPE), "null"),
    (Lit(None, INT), "null::int"),
    (Lit(None, BOOLEAN), "null::boolean"),
    (Lit(None, NUMERIC_10_2), "null::numeric(10,2)"),
    (Lit(date(2024, 1, 31), DATE), "'2024-01-31'::date"),
    (Lit(datetime(2024, 1, 31, 10), TIMESTAMP), "'2024-01-31 10:00:00'::timestamp"),
    (Lit(datetime(2024, 1, 31, 10, 0, 0, 5), TIMESTAMP),
     "'2024-01-31 10:00:00.000005'::timestamp"),
    (Lit(datetime(2024, 1, 31, tzinfo=UTC), TIMESTAMP),
     "'2024-01-31 00:00:00+00:00'::timestamp"),
])
def test_every_literal_type(literal: Lit, text: str) -> None:
    assert assert_scalar_round_trip(literal) == text


def test_nan_parses_as_math_nan() -> None:
    parsed = parse_scalar("'nan'::double")
    assert isinstance(parsed, Lit) and parsed.value is math.nan
    assert_scalar_round_trip(Lit(math.nan, DOUBLE))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_function(name: str) -> None:
    fn = REGISTRY[name]
    for arity in range(fn.arity[0], min(fn.arity[1], 3) + 1):
        expr = Call(name, tuple(Col(i) for i in range(arity)))
        text = assert_scalar_round_trip(expr)
        if fn.symbol is None:
            assert text.startswith(f"{name}(")
        else:
            assert fn.symbol in text and name not in text


@pytest.mark.parametrize(("expr", "text"), [
    (call("add", Col(0), Col(1)), "(#0 + #1)"),
    (call("sub", Col(0), Lit(-5, INT)), "(#0 - -5)"),
    (call("and", Col(0), Col(1)), "(#0 AND #1)"),
    (call("like", Col(0), Lit("a%", TEXT)), "(#0 LIKE 'a%')"),
    (call("concat", Col(0), Col(1)), "(#0 || #1)"),
    (call("neg", Col(0)), "(-#0)"),
    (call("neg", Lit(5, INT)), "(- 5)"),
    (call("neg", Lit(-5, INT)), "(--5)"),
    (call("neg", call("neg", Col(0))), "(-(-#0))"),
    (call("not", Col(0)), "(NOT #0)"),
    (call("lower", Col(0)), "lower(#0)"),
    (call("coalesce", Col(0), Lit(1, INT)), "coalesce(#0, 1)"),
    (call("is_null", Col(0)), "is_null(#0)"),
    (call("add", Col(0)), "add(#0)"),
    (call("neg", Col(0), Col(1)), "neg(#0, #1)"),
    (call("no_such_function"), "no_such_function()"),
    (call("case", Col(0)), '"case"(#0)'),
    (call("odd name", Col(0)), '"odd name"(#0)'),
    (Case(((Col(0), Lit(1, INT)), (call("gt", Col(1), Col(2)), Lit(2, INT))), Lit(None, INT)),
     "case when #0 then 1 when (#1 > #2) then 2 else null::int end"),
    (Case((), Col(0)), "case else #0 end"),
    (Cast(Col(0), NUMERIC_10_2), "cast(#0 as numeric(10,2))"),
    (Cast(Lit("1", TEXT), NULLTYPE), "cast('1' as null)"),
    (call("eq", call("add", Col(0), Lit(1, INT)), call("mul", Col(1), Lit(2.5, DOUBLE))),
     "((#0 + 1) = (#1 * 2.5::double))"),
])
def test_scalar_forms(expr: Scalar, text: str) -> None:
    assert assert_scalar_round_trip(expr) == text


@pytest.mark.parametrize(("name", "text"), [
    ("orders", "orders"),
    ("_x1", "_x1"),
    ("x1", "x1"),
    ("E", "E"),
    ("map", '"map"'),
    ("Get", '"Get"'),
    ("true", '"true"'),
    ("True", "True"),
    ("two words", '"two words"'),
    ('say "hi"', '"say ""hi"""'),
    ("db.t", '"db.t"'),
    ("", '""'),
    ("tab\there", 'E"tab\\there"'),
])
def test_names(name: str, text: str) -> None:
    plan = Get(name, (Field(name, INT),))
    assert assert_round_trip(plan) == f"Get {text} ({text} int)"


def test_other_spellings_render_in_normal_form() -> None:
    plan = parse_plan("Linear [ map  1::int,cast(#0 as DECIMAL(5, 2)) , 2::numeric ]\n\n"
                      "  Get t ( a integer , b float8 )\n")
    assert render_plan(plan) == "\n".join([
        "Linear [map 1, cast(#0 as numeric(5,2)), 2::numeric(38,0)]",
        "  Get t (a int, b double)",
    ])


# ---- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "line", "column", "message"), [
    ("", 1, 1, "no plan"),
    ("Get t (a int", 1, 13, "unexpected end of text"),
    ("Union\n  Get t (a int,)", 2, 16, "unexpected ')'"),
    ("Union\n  Get t (a in)", 2, 12, "unknown type 'in'"),
    ("Union\n Get t ()", 2, 2, "expected an indentation of 2 spaces, found 1"),
    ("Union\n  Get t ()\n     Get u ()", 3, 6, "expected an indentation of 4 spaces"),
    ("\tUnion", 1, 1, "unexpected character '\\t'"),
    ("Get t ()\nGet u ()", 2, 1, "a plan has one root operator"),
    ("Union\n  Linear []", 2, 3, "Linear takes one input, found 0"),
    ("Get t ()\n  Get u ()", 1, 1, "Get takes no inputs, found 1"),
    ("Constant (int, text) [(1) x1]", 1, 27, "a row needs 2 values, found 1"),
    ("Constant (int) [('a') x1]", 1, 18, "'a' is not a value of type int"),
    ("Linear [map 1.5]\n  Get t ()", 1, 13, "1.5 is not a value of type int"),
    ("Linear [map '2024-13-01'::date]\n  Get t ()", 1, 13, "is not a value of type date"),
    ("Linear [map cast(#0 as int(3,4))]\n  Get t ()", 1, 28, "type int takes no precision"),
    ("Linear [map E'\\x']\n  Get t ()", 1, 13, "bad escape"),
    ("Linear [map (#0 ++ #1)]\n  Get t ()", 1, 18, "unexpected '+'"),
])
def test_syntax_errors(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(PlanSyntaxError, match=f"^line {line}, column {column}: ") as error:
        parse_plan(text)
    assert message in str(error.value)
    assert (error.value.line, error.value.column) == (line, column)


@pytest.mark.parametrize(("text", "message"), [
    ("(#0 +", "line 1, column 6: unexpected end of text, expected '(', 'case', 'cast'"),
    ("(#0 + 1) + 2", "line 1, column 10: unexpected '+', expected end of text"),
    ("(#0 +\n 1)", "line 1, column 6: unexpected character '\\n'"),
])
def test_scalar_syntax_errors(text: str, message: str) -> None:
    with pytest.raises(PlanSyntaxError, match="^" + re.escape(message)):
        parse_scalar(text)


@pytest.mark.parametrize("plan", [
    Linear(CUSTOMERS, (Map((Lit("5", INT),)),)),
    Linear(CUSTOMERS, (Map((Lit(True, INT),)),)),
    Linear(CUSTOMERS, (Map((Lit(1, DOUBLE),)),)),
    Linear(CUSTOMERS, (Map((Lit(datetime(2024, 1, 1), DATE),)),)),
    Constant((((1,), 1),), (TEXT,)),
    Constant((((1, 2), 1),), (INT,)),
    Get("t", (Field("a", SqlType(Kind.NUMERIC)),)),
    Get("t", (Field("a", SqlType(Kind.INT, 10)),)),
    Join((CUSTOMERS,), ((),)),
])
def test_plans_without_a_text_form(plan: Relation) -> None:
    with pytest.raises(ValueError):
        render_plan(plan)


# ---- generated plans ---------------------------------------------------------------------

numeric_types = st.integers(0, 38).flatmap(
    lambda p: st.integers(0, p).map(lambda s: type_from_name("numeric", p, s))
)
sql_types = st.one_of(
    st.sampled_from([BOOLEAN, INT, BIGINT, DOUBLE, TEXT, DATE, TIMESTAMP, NULLTYPE]),
    numeric_types,
)
VALUES: dict[Kind, st.SearchStrategy[object]] = {
    Kind.BOOLEAN: st.booleans(),
    Kind.INT: st.integers(),
    Kind.BIGINT: st.integers(),
    Kind.DOUBLE: st.floats(allow_nan=False),
    Kind.NUMERIC: st.decimals(allow_nan=False),
    Kind.TEXT: st.text(),
    Kind.DATE: st.dates(),
    Kind.TIMESTAMP: st.datetimes(timezones=st.sampled_from([None, UTC])),
    Kind.NULL: st.nothing(),
}


def values_of(t: SqlType) -> st.SearchStrategy[object]:
    return st.none() | VALUES[t.kind]


literals = sql_types.flatmap(lambda t: values_of(t).map(lambda v: Lit(v, t)))
columns = st.integers(0, 40).map(Col)


@st.composite
def registered_calls(draw: st.DrawFn, args: st.SearchStrategy[Scalar]) -> Call:
    fn = REGISTRY[draw(st.sampled_from(sorted(REGISTRY)))]
    arity = draw(st.integers(fn.arity[0], min(fn.arity[1], 3)))
    return Call(fn.name, tuple(draw(args) for _ in range(arity)))


def compound_scalars(children: st.SearchStrategy[Scalar]) -> st.SearchStrategy[Scalar]:
    return st.one_of(
        registered_calls(children),
        st.builds(Call, names, st.lists(children, max_size=3).map(tuple)),
        st.builds(Case, st.lists(st.tuples(children, children), max_size=2).map(tuple), children),
        st.builds(Cast, children, sql_types),
    )


scalars = st.recursive(columns | literals, compound_scalars, max_leaves=8)
scalar_tuples = st.lists(scalars, max_size=3).map(tuple)


@st.composite
def constants(draw: st.DrawFn) -> Constant:
    types = tuple(draw(st.lists(sql_types, max_size=3)))
    row = st.tuples(*(values_of(t) for t in types))
    rows = draw(st.lists(st.tuples(row, st.integers(-3, 3)), max_size=3))
    return Constant(tuple(rows), types)


gets = st.builds(Get, names, st.lists(st.builds(Field, names, sql_types), max_size=3).map(tuple))
steps = st.one_of(
    st.builds(Filter, scalar_tuples),
    st.builds(Map, scalar_tuples),
    st.builds(Project, st.lists(st.integers(0, 40), max_size=4).map(tuple)),
)
aggregates = st.builds(Aggregate, st.sampled_from(AGGREGATES) | names, st.none() | scalars)
equivalences = st.lists(st.lists(scalars, min_size=1, max_size=3).map(tuple), max_size=2)


def compound_plans(children: st.SearchStrategy[Relation]) -> st.SearchStrategy[Relation]:
    inputs = st.lists(children, max_size=3).map(tuple)
    return st.one_of(
        st.builds(Linear, children, st.lists(steps, max_size=3).map(tuple)),
        st.builds(Join, inputs, equivalences.map(tuple), st.none() | join_plans),
        st.builds(Reduce, children, scalar_tuples, st.lists(aggregates, max_size=3).map(tuple)),
        st.builds(Union, inputs),
    )


plans = st.recursive(gets | constants(), compound_plans, max_leaves=6)


@pytest.mark.parametrize("options", [PLAIN, HUMANIZED], ids=options_id)
@settings(max_examples=100, deadline=None)
@given(plan=plans)
def test_generated_plans_round_trip(plan: Relation, options: RenderOptions) -> None:
    """Also humanized: column names need no types, so plans of any shape have them."""
    assert_round_trip(plan, options)


@settings(max_examples=200, deadline=None)
@given(scalars)
def test_generated_scalars_round_trip(expr: Scalar) -> None:
    assert_scalar_round_trip(expr)


# ---- generated well-typed plans: the annotations, and the keys' property test --------------



@TYPED
@given(plan=typed_plans())
def test_typed_plans_round_trip_with_every_option(plan: Relation) -> None:
    """With every combination of options, the text parses back to the plan and renders back
    to itself; without ``humanized`` each line is the plain line, then two spaces and the
    annotation. (One plan for all combinations: drawing a plan costs more than 16 renders.)"""
    plain = render_plan(plan).split("\n")
    for options in OPTIONS:
        text = assert_round_trip(plan, options)
        if not options.humanized:
            for line, bare in zip(text.split("\n"), plain, strict=True):
                rest = line.removeprefix(bare)
                assert rest == "" if options == PLAIN else re.fullmatch(r"  // \{ .* \}", rest)



@settings(TYPED, max_examples=30)
@given(plan=typed_plans())
def test_every_line_is_render_line(plan: Relation) -> None:
    """``render_plan`` is ``render_line`` of each node, indented by its depth, depth first."""
    depths = [len(line) - len(line.lstrip(" ")) for line in render_plan(plan).split("\n")]
    expected = [
        " " * depth + render_line(node, EVERYTHING)
        for node, depth in zip(all_nodes(plan), depths, strict=True)
    ]
    assert render_plan(plan, EVERYTHING).split("\n") == expected


# ---- annotations and humanized text ------------------------------------------------------


JOIN = Join((ORDERS, CUSTOMERS), ((Col(1), Col(4)),), JoinPlan("delta", ((1,), (0,))),
            (call("gt", Col(2), Col(0)),))


@pytest.mark.parametrize(("options", "line"), [
    (PLAIN, "Join on=(#1 = #4) where=((#2 > #0)) plan=delta[(1), (0)]"),
    (RenderOptions(arity=True), "Join on=(#1 = #4) where=((#2 > #0)) plan=delta[(1), (0)]"
                                "  // { arity: 6 }"),
    (RenderOptions(types=True, keys=True),
     "Join on=(#1 = #4) where=((#2 > #0)) plan=delta[(1), (0)]"
     "  // { types: (int, int, bigint, text, int, text), keys: () }"),
    (HUMANIZED, "Join on=(#1{cust} = #4{id}) where=((#2{amount} > #0{id})) plan=delta[(1), (0)]"),
])
def test_render_line(options: RenderOptions, line: str) -> None:
    assert render_line(JOIN, options) == line
    assert render_plan(JOIN, options).split("\n")[0] == line


@pytest.mark.parametrize(("plan", "annotation"), [
    (Reduce(ORDERS, (Col(1), Col(0)), (Aggregate("count", None),)),
     "arity: 3, types: (int, int, bigint), keys: ((#0{cust}, #1{id}))"),
    (Reduce(ORDERS, (), (Aggregate("sum", Col(2)),)),
     "arity: 1, types: (numeric(38,0)), keys: (())"),
    (Join((Reduce(ORDERS, (Col(1),), ()), Reduce(CUSTOMERS, (Col(0), Col(1)), ())), ()),
     "arity: 3, types: (int, int, text), keys: ((#0{cust}, #1{id}, #2{region}))"),
    (Constant((((1, "a"), 1), ((2, "a"), 1)), (INT, TEXT)),
     "arity: 2, types: (int, text), keys: ((#0, #1))"),
    (Constant((), ()), "arity: 0, types: (), keys: (())"),
    (ORDERS, "arity: 4, types: (int, int, bigint, text), keys: ()"),
])
def test_annotation_fields(plan: Relation, annotation: str) -> None:
    """Keys print as a list of keys, each a list of columns: none is ``()``, the empty key
    ``(())``; humanized, key columns carry the names of the operator's output columns."""
    assert render_line(plan, EVERYTHING).endswith(f"  // {{ {annotation} }}")


def test_humanized_names_follow_each_step() -> None:
    plan = Reduce(Linear(ORDERS, (
        Map((Col(3), call("lower", Col(3)), Col(4))),
        FlatMap((call("generate_series", Col(0), Col(1)),)),
        Filter((call("gt", Col(7), Col(2)),)),
        Project((6, 4, 1, 5, 7)),
        Repeat(Col(2)),
    )), (Col(1), Col(3), Col(4)), (Aggregate("max", Col(0)),))
    assert render_plan(plan, HUMANIZED).split("\n")[:2] == [
        "Reduce group_key=(#1{note}, #3, #4) aggregates=(max(#0{note}))",
        "  Linear [map #3{note}, lower(#3{note}), #4{note}; "
        "flat_map generate_series(#0{id}, #1{cust}); filter (#7 > #2{amount}); "
        "project (#6{note}, #4{note}, #1{cust}, #5, #7); repeat_row #2{cust}]",
    ]


@pytest.mark.parametrize(("text", "plan"), [
    ("Get t (a int)  // { arity: 1 }", Get("t", (Field("a", INT),))),
    ("Get t (a int)//", Get("t", (Field("a", INT),))),
    ("// a comment line\nUnion  // {\n  // another one\n\n  Get t ()   // x // y",
     Union((Get("t", ()),))),
    ("Linear [map '//', #0{\"//\"}, #0{a}, #0 { \"a b\" }, #0{E\"\\n\"}, #0{map}]\n  Get t ()",
     Linear(Get("t", ()), (Map((Lit("//", TEXT), Col(0), Col(0), Col(0), Col(0), Col(0))),))),
    ("Linear [project (#1{x}, #0)]\n  Get t ()", Linear(Get("t", ()), (Project((1, 0)),))),
    ("Get \"a//b\" (\"//\" int)", Get("a//b", (Field("//", INT),))),
])
def test_comments_and_column_names_are_ignored(text: str, plan: Relation) -> None:
    assert parse_plan(text) == plan


@pytest.mark.parametrize(("text", "line", "column", "message"), [
    ("Linear [map #0{a]\n  Get t ()", 1, 17, "unexpected ']'"),
    ("Linear [map #0{}]\n  Get t ()", 1, 16, "unexpected '}'"),
    ("Linear [map #0{1}]\n  Get t ()", 1, 16, "unexpected '1', expected name, quoted_name"),
    ("Linear [map {a}]\n  Get t ()", 1, 13, "unexpected '{'"),
    ("Get t (a int) / x", 1, 15, "unexpected '/'"),
    ("Union\n  // comment\n Get t ()", 3, 2, "expected an indentation of 2 spaces"),
])
def test_malformed_names_and_comments(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(PlanSyntaxError, match=f"^line {line}, column {column}: ") as error:
        parse_plan(text)
    assert message in str(error.value)


def test_exported_from_the_package_in_a_fresh_interpreter() -> None:
    """``matview.ir`` exports the text form, loaded on first use: other IR imports do not
    build its parser."""
    script = "\n".join([
        "import sys",
        "import matview.ir.relation",
        "assert 'matview.ir.parse' not in sys.modules and 'matview.ir.render' not in sys.modules",
        "import matview.ir",
        "plan = matview.ir.parse_plan('Get t (a int)')",
        "print(matview.ir.render_plan(plan, matview.ir.RenderOptions(arity=True)))",
        "from matview.ir import RenderOptions, parse_plan, render_plan",
        "assert render_plan(parse_plan('Union')) == 'Union' and RenderOptions().keys is False",
    ])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Get t (a int)  // { arity: 1 }\n"


# ---- golden files ------------------------------------------------------------------------


def roundtrip(directive: str, text: str) -> str:
    assert directive == "roundtrip"
    return render_plan(parse_plan(text))


def test_golden_roundtrip(rewrite: bool) -> None:
    run_golden(FIXTURES / "ir_text.test", roundtrip, rewrite)


def explain(directive: str, text: str) -> str:
    """``explain OPTION ...``: the plan rendered with the named ``RenderOptions`` (checking
    that the rendered text parses back to the plan)."""
    word, *flags = directive.split()
    assert word == "explain" and set(flags) <= set(vars(PLAIN)), directive
    plan = parse_plan(text)
    out = render_plan(plan, RenderOptions(**{flag: True for flag in flags}))
    assert parse_plan(out) == plan
    return out


def test_golden_explain(rewrite: bool) -> None:
    run_golden(FIXTURES / "ir_explain.test", explain, rewrite)


GOLDEN = """\
# a comment

# about the first case
roundtrip
Get t ()
----
Get t ()

roundtrip
Get  u (a integer)
----
Get u (a int)
"""


def test_golden_file_format() -> None:
    cases = read_cases(GOLDEN)
    assert [(c.directive, c.input, c.expected, c.line) for c in cases] == [
        ("roundtrip", "Get t ()", "Get t ()", 4),
        ("roundtrip", "Get  u (a integer)", "Get u (a int)", 9),
    ]
    assert cases[0].comments == ("# a comment", "", "# about the first case")
    assert write_cases(cases) == GOLDEN


def test_golden_reports_differences_and_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "case.test"
    path.write_text(GOLDEN.replace("Get u (a int)", "Get u (a bigint)"))
    with pytest.raises(AssertionError, match=r"(?s)case.test:9: roundtrip\n.*"
                                             r"\n-Get u \(a bigint\)\n\+Get u \(a int\)"):
        run_golden(path, roundtrip, rewrite=False)
    run_golden(path, roundtrip, rewrite=True)
    assert path.read_text() == GOLDEN


def test_golden_refuses_outputs_with_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "case.test"
    path.write_text(GOLDEN)
    with pytest.raises(ValueError, match="blank line"):
        run_golden(path, lambda directive, text: "a\n\nb", rewrite=True)

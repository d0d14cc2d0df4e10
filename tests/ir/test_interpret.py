"""Tests of the reference interpreter: scalar evaluation (``ir.evaluate``) by the golden file
``fixtures/scalar_eval.test`` (truth tables, NULLs, overflow, division, text functions,
CASE, casts; rewrite with ``pytest --rewrite``) and a few cases the text form cannot state,
and relational interpretation (``ir.interpret``) by hand-written cases; both against DuckDB
as an oracle."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matview.ir.aggregate_call import Aggregate
from matview.ir.casts import cast_value
from matview.ir.evaluate import evaluate
from matview.ir.functions import EvalError
from matview.ir.interpret import interpret
from matview.ir.relation import Constant, Field, Get, Join, Linear, Reduce, Relation, Union
from matview.ir.scalar import Call, Case, Cast, Col, Lit, Scalar, remap
from matview.ir.steps import Filter, Map, Project
from matview.ir.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    TEXT,
    TIMESTAMP,
    SqlType,
    type_from_name,
)

from tests.support.golden import run_golden
from tests.support.scalar_eval import eval_text

FIXTURES = Path(__file__).parents[1] / "fixtures"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
BIGINT_MAX = 2**63 - 1
NUMERIC_5_2 = type_from_name("numeric", 5, 2)


def call(func: str, *args: Scalar) -> Call:
    return Call(func, args)


def boolean(value: bool | None) -> Lit:
    return Lit(value, BOOLEAN)


def integer(value: int | None) -> Lit:
    return Lit(value, INT)


# --- scalar expressions: the golden file -----------------------------------------------------


def test_scalar_eval(rewrite: bool) -> None:
    run_golden(FIXTURES / "scalar_eval.test", eval_text, rewrite)


# --- scalar expressions the text form cannot state -----------------------------------------


def test_double_column_holding_int_divides_exactly() -> None:
    """An ``int`` in a DOUBLE column (or literal) is a double: the text form reads ``7`` of
    a DOUBLE as ``7.0``, so it cannot hold this value."""
    assert evaluate(call("div", Col(0), integer(2)), (7,), (DOUBLE,)) == 3.5
    assert evaluate(call("div", Col(0), Lit(2, DOUBLE)), (7,), (INT,)) == 3.5


def test_cast_of_a_value_of_no_sql_type() -> None:
    with pytest.raises(EvalError) as info:
        cast_value(1j, TEXT)  # bytes are a BYTEA's
    assert "cannot cast type complex to text" in str(info.value)


def test_unknown_scalar_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        evaluate(Scalar(), (), ())


# --- relational nodes --------------------------------------------------------------------

AB = (Field("a", INT), Field("b", INT))
T_AB = Get("t", AB)
U_AB = Get("u", AB)


def test_get() -> None:
    assert interpret(T_AB, {"t": Counter({(1, 2): 2, (3, 4): 0})}) == Counter({(1, 2): 2})


def test_constant_sums_duplicates_and_drops_zeros() -> None:
    const = Constant((((1,), 2), ((1,), 1), ((2,), -1), ((3,), 1), ((3,), -1)), (INT,))
    assert interpret(const, {}) == Counter({(1,): 3, (2,): -1})


def test_filter_keeps_only_true() -> None:
    rel = Linear(T_AB, (Filter((call("gt", Col(0), Col(1)),)),))
    table = Counter({(2, 1): 3, (1, 2): 1, (None, 1): 1, (2, None): 2})
    assert interpret(rel, {"t": table}) == Counter({(2, 1): 3})


def test_filter_requires_every_predicate() -> None:
    rel = Linear(T_AB, (Filter((call("gt", Col(0), integer(0)), call("gt", Col(1), integer(0)))),))
    table = Counter({(1, 1): 1, (1, -1): 1, (-1, 1): 1, (1, None): 1})
    assert interpret(rel, {"t": table}) == Counter({(1, 1): 1})


def test_filter_evaluates_every_predicate() -> None:
    rel = Linear(T_AB, (Filter((boolean(False), call("eq", call("div", Col(0), Col(1)), Col(0)))),))
    with pytest.raises(EvalError, match="division by zero"):
        interpret(rel, {"t": Counter({(1, 0): 1})})


def test_map_appends_and_sees_earlier_columns() -> None:
    rel = Linear(T_AB, (Map((call("add", Col(0), Col(1)), call("mul", Col(2), integer(10)))),))
    table = Counter({(1, 2): 2, (None, 1): 1})
    assert interpret(rel, {"t": table}) == Counter({(1, 2, 3, 30): 2, (None, 1, None, None): 1})


def test_map_of_double_column_is_float() -> None:
    rel = Linear(T_AB, (Map((Cast(Col(0), DOUBLE),)), Map((call("div", Col(2), integer(2)),))))
    result = interpret(rel, {"t": Counter({(3, 0): 1})})
    assert result == Counter({(3, 0, 3.0, 1.5): 1})


def test_project_reorders_repeats_and_merges() -> None:
    rel = Linear(T_AB, (Project((1, 1, 0)),))
    assert interpret(rel, {"t": Counter({(1, 2): 2})}) == Counter({(2, 2, 1): 2})
    merged = Linear(T_AB, (Project((1,)),))
    assert interpret(merged, {"t": Counter({(1, 2): 2, (3, 2): 1})}) == Counter({(2,): 3})


def test_steps_run_in_order() -> None:
    rel = Linear(
        T_AB,
        (
            Map((call("mul", Col(0), Col(1)),)),
            Filter((call("gt", Col(2), integer(5)),)),
            Project((2,)),
            Map((call("neg", Col(0)),)),
        ),
    )
    table = Counter({(2, 3): 1, (1, 1): 5, (3, 3): 2})
    assert interpret(rel, {"t": table}) == Counter({(6, -6): 1, (9, -9): 2})


def test_linear_keeps_negative_multiplicities() -> None:
    const = Constant((((1,), -2), ((2,), 1)), (INT,))
    rel = Linear(const, (Map((call("add", Col(0), integer(1)),)),))
    assert interpret(rel, {}) == Counter({(1, 2): -2, (2, 3): 1})


def test_join_multiplies_multiplicities() -> None:
    rel = Join((T_AB, U_AB), ())
    tables = {"t": Counter({(1, 1): 2, (2, 2): 1}), "u": Counter({(9, 9): 3})}
    assert interpret(rel, tables) == Counter({(1, 1, 9, 9): 6, (2, 2, 9, 9): 3})


def test_join_on_equal_keys_null_never_matches() -> None:
    rel = Join((T_AB, U_AB), ((Col(0), Col(2)),))
    tables = {
        "t": Counter({(1, 10): 2, (None, 11): 1, (2, 12): 1}),
        "u": Counter({(1, 20): 3, (None, 21): 1, (3, 22): 1}),
    }
    assert interpret(rel, tables) == Counter({(1, 10, 1, 20): 6})


def test_join_three_inputs_with_one_class() -> None:
    v = Get("v", (Field("c", INT),))
    rel = Join((T_AB, U_AB, v), ((Col(0), Col(2), Col(4)), (Col(1), Col(3))))
    tables = {
        "t": Counter({(1, 1): 1, (1, 2): 1, (2, 2): 1}),
        "u": Counter({(1, 1): 1, (1, 2): 2, (2, 1): 1}),
        "v": Counter({(1,): 2, (2,): 1}),
    }
    assert interpret(rel, tables) == Counter({(1, 1, 1, 1, 1): 2, (1, 2, 1, 2, 1): 4})


def test_join_on_expressions() -> None:
    rel = Join((T_AB, U_AB), ((call("add", Col(0), integer(1)), Col(2)),))
    tables = {"t": Counter({(1, 0): 1, (5, 0): 1}), "u": Counter({(2, 0): 1, (5, 0): 1})}
    assert interpret(rel, tables) == Counter({(1, 0, 2, 0): 1})


def test_join_date_with_timestamp_key() -> None:
    days = Get("d", (Field("day", DATE),))
    stamps = Get("s", (Field("at", TIMESTAMP),))
    rel = Join((days, stamps), ((Col(0), Col(1)),))
    tables = {
        "d": Counter({(date(2024, 1, 1),): 1}),
        "s": Counter({(datetime(2024, 1, 1),): 1, (datetime(2024, 1, 1, 12),): 1}),
    }
    assert interpret(rel, tables) == Counter({(date(2024, 1, 1), datetime(2024, 1, 1)): 1})


def test_union_sums_and_cancels() -> None:
    const = Constant((((1, 2), -1), ((5, 5), 1)), (INT, INT))
    rel = Union((T_AB, U_AB, const))
    tables = {"t": Counter({(1, 2): 1, (3, 4): 1}), "u": Counter({(3, 4): 2})}
    assert interpret(rel, tables) == Counter({(3, 4): 3, (5, 5): 1})


def test_reduce_groups_with_multiplicities_and_null_key() -> None:
    rel = Reduce(
        T_AB,
        (Col(0),),
        (
            Aggregate("count", None),
            Aggregate("count", Col(1)),
            Aggregate("sum", Col(1)),
            Aggregate("min", Col(1)),
            Aggregate("max", Col(1)),
        ),
    )
    table = Counter(
        {(1, 10): 2, (1, None): 1, (1, -3): 1, (None, 7): 1, (None, 8): 2, (2, None): 1}
    )
    assert interpret(rel, {"t": table}) == Counter(
        {(1, 4, 3, 17, -3, 10): 1, (None, 3, 3, 23, 7, 8): 1, (2, 1, 0, None, None, None): 1}
    )


def test_reduce_group_key_expression() -> None:
    rel = Reduce(T_AB, (call("mod", Col(0), integer(2)),), (Aggregate("sum", Col(0)),))
    table = Counter({(1, 0): 1, (3, 0): 2, (4, 0): 1, (-1, 0): 1})
    assert interpret(rel, {"t": table}) == Counter({(1, 7): 1, (0, 4): 1, (-1, -1): 1})


def test_global_aggregate_on_empty_input() -> None:
    aggregates = (
        Aggregate("count", None),
        Aggregate("count", Col(0)),
        Aggregate("sum", Col(0)),
        Aggregate("min", Col(0)),
        Aggregate("max", Col(1)),
    )
    rel = Reduce(T_AB, (), aggregates)
    assert interpret(rel, {"t": Counter()}) == Counter({(0, 0, None, None, None): 1})
    filtered = Reduce(Linear(T_AB, (Filter((boolean(False),)),)), (), aggregates)
    assert interpret(filtered, {"t": Counter({(1, 1): 1})}) == Counter(
        {(0, 0, None, None, None): 1}
    )


def test_global_aggregate_on_rows() -> None:
    rel = Reduce(T_AB, (), (Aggregate("count", None), Aggregate("sum", Col(1))))
    assert interpret(rel, {"t": Counter({(1, 5): 3, (2, None): 1})}) == Counter({(4, 15): 1})


def test_grouped_aggregate_on_empty_input_has_no_rows() -> None:
    rel = Reduce(T_AB, (Col(0),), (Aggregate("count", None),))
    assert interpret(rel, {"t": Counter()}) == Counter()


def test_reduce_drops_groups_without_positive_multiplicity() -> None:
    const = Constant((((1, 5), 1), ((1, 6), -1), ((2, 5), -1), ((3, 5), 2)), (INT, INT))
    rel = Reduce(const, (Col(0),), (Aggregate("count", None),))
    assert interpret(rel, {}) == Counter({(3, 2): 1})


@pytest.mark.parametrize(
    ("column_type", "values", "expected"),
    [
        (INT, [1, 2], 3),
        (BIGINT, [BIGINT_MAX, BIGINT_MAX], Decimal(2 * BIGINT_MAX)),
        (DOUBLE, [0.5, 2], 2.5),
        (NUMERIC_5_2, [Decimal("1.25"), Decimal("2.50")], Decimal("3.75")),
    ],
)
def test_sum_result_types(column_type: SqlType, values: list[object], expected: object) -> None:
    rel = Reduce(Get("t", (Field("x", column_type),)), (), (Aggregate("sum", Col(0)),))
    ((row, mult),) = interpret(rel, {"t": Counter((v,) for v in values)}).items()
    assert row == (expected,) and type(row[0]) is type(expected) and mult == 1
    assert rel.types == (Aggregate("sum", Col(0)).type((column_type,)),)


def test_sum_of_int_overflows_bigint() -> None:
    const = Constant((((INT_MAX,), 2**33),), (INT,))
    rel = Reduce(const, (), (Aggregate("sum", Col(0)),))
    with pytest.raises(EvalError, match="bigint out of range"):
        interpret(rel, {})


def test_double_sum_does_not_depend_on_row_order() -> None:
    rows = [(0.1,), (1e16,), (0.2,), (-1e16,), (0.3,)]
    field = (Field("x", DOUBLE),)
    sums = {
        next(iter(interpret(Reduce(Get("t", field), (), (Aggregate("sum", Col(0)),)),
                            {"t": Counter(dict.fromkeys(order, 1))})))
        for order in (rows, rows[::-1], sorted(rows))
    }
    assert len(sums) == 1


def test_unknown_relation_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        interpret(Relation(), {})


def test_unknown_step_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        interpret(Linear(T_AB, (object(),)), {"t": Counter({(1, 2): 1})})


# --- DuckDB as an oracle -------------------------------------------------------------------

COLUMNS = 3
FIELDS = tuple(Field(f"c{i}", INT) for i in range(COLUMNS))
ARITHMETIC = {"add": "+", "sub": "-", "mul": "*"}
COMPARISONS = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
Expr = tuple[Scalar, str]


@cache
def int_exprs(depth: int = 3, arithmetic_only: bool = False) -> st.SearchStrategy[Expr]:
    """INT expressions over ``c0..c2``, each with the same expression in DuckDB's SQL.
    (Cached: building a strategy costs more than drawing from it.)"""
    return _int_exprs(depth, arithmetic_only)


@cache
def bool_exprs(depth: int = 3) -> st.SearchStrategy[Expr]:
    """BOOLEAN expressions over ``c0..c2``, each with the same expression in DuckDB's SQL."""
    return _bool_exprs(depth)


@st.composite
def _int_exprs(draw: st.DrawFn, depth: int, arithmetic_only: bool) -> Expr:
    choices = 2 if depth == 0 else 4 if arithmetic_only else 7
    choice = draw(st.integers(0, choices - 1))
    sub = int_exprs(depth - 1, arithmetic_only)
    if choice == 0:
        i = draw(st.integers(0, COLUMNS - 1))
        return Col(i), f"c{i}"
    if choice == 1:
        # DuckDB folds an operator with a NULL literal operand to NULL without evaluating the
        # other operand, so its overflow goes unnoticed: arithmetic_only has no NULL literal.
        values = st.integers(-9, 9) if arithmetic_only else st.none() | st.integers(-9, 9)
        value = draw(values)
        return integer(value), f"CAST({'NULL' if value is None else value} AS INTEGER)"
    if choice == 2:
        func = draw(st.sampled_from(sorted(ARITHMETIC)))
        (a, a_sql), (b, b_sql) = draw(sub), draw(sub)
        return call(func, a, b), f"({a_sql} {ARITHMETIC[func]} {b_sql})"
    if choice == 3:
        a, a_sql = draw(sub)
        return call("neg", a), f"(-{a_sql})"
    if choice == 4:
        (a, a_sql), (b, b_sql) = draw(sub), draw(sub)
        return call("coalesce", a, b), f"COALESCE({a_sql}, {b_sql})"
    if choice == 5:
        (a, a_sql), (b, b_sql) = draw(sub), draw(sub)
        return call("nullif", a, b), f"NULLIF({a_sql}, {b_sql})"
    (c, c_sql), (a, a_sql), (b, b_sql) = draw(bool_exprs(depth - 1)), draw(sub), draw(sub)
    return Case(((c, a),), b), f"(CASE WHEN {c_sql} THEN {a_sql} ELSE {b_sql} END)"


@st.composite
def _bool_exprs(draw: st.DrawFn, depth: int) -> Expr:
    choice = draw(st.integers(0, 2 if depth == 0 else 5))
    if choice == 0:
        value = draw(st.sampled_from([True, False, None]))
        return boolean(value), f"CAST({'NULL' if value is None else value} AS BOOLEAN)"
    if choice in (1, 2):
        func = draw(st.sampled_from(sorted(COMPARISONS)))
        (a, a_sql), (b, b_sql) = draw(int_exprs(depth - 1)), draw(int_exprs(depth - 1))
        return call(func, a, b), f"({a_sql} {COMPARISONS[func]} {b_sql})"
    if choice == 3:
        a, a_sql = draw(int_exprs(depth - 1))
        return call("is_null", a), f"({a_sql} IS NULL)"
    if choice == 4:
        func = draw(st.sampled_from(["and", "or"]))
        (a, a_sql), (b, b_sql) = draw(bool_exprs(depth - 1)), draw(bool_exprs(depth - 1))
        return call(func, a, b), f"({a_sql} {func.upper()} {b_sql})"
    a, a_sql = draw(bool_exprs(depth - 1))
    return call("not", a), f"(NOT {a_sql})"


def _rows(values: st.SearchStrategy[int | None]) -> st.SearchStrategy[list[tuple[object, ...]]]:
    return st.lists(st.tuples(*[values] * COLUMNS), max_size=8)


SMALL = st.none() | st.integers(-4, 4)
WIDE = st.none() | st.integers(-9, 9) | st.sampled_from([INT_MIN, INT_MIN + 1, INT_MAX, 46341])
ORACLE = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.fixture(scope="module")
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect()
    # evaluate every expression as written, as PostgreSQL does at run time: DuckDB's optimizer
    # would fold e.g. ``0 * (x * -1)`` to 0 and hide the overflow of ``x * -1``
    connection.execute("PRAGMA disable_optimizer")
    yield connection
    connection.close()


def _load(duck: duckdb.DuckDBPyConnection, name: str, rows: list[tuple[object, ...]]) -> None:
    columns = ", ".join(f"{f.name} INTEGER" for f in FIELDS)
    duck.execute(f"CREATE OR REPLACE TABLE {name} (id INTEGER, {columns})")
    if rows:
        marks = ", ".join("?" * (COLUMNS + 1))
        numbered = [(i, *row) for i, row in enumerate(rows)]
        duck.executemany(f"INSERT INTO {name} VALUES ({marks})", numbered)


def _per_row(expr: Scalar, rows: list[tuple[object, ...]]) -> Counter[tuple[object, ...]]:
    """``(id, expr)`` on every row of a table ``t(id, c0, c1, c2)`` holding ``rows``."""
    get = Get("t", (Field("id", INT), *FIELDS))
    rel = Linear(get, (Map((remap(expr, lambda i: i + 1),)), Project((0, COLUMNS + 1))))
    return interpret(rel, {"t": Counter((i, *r) for i, r in enumerate(rows))})


def _duck_rows(duck: duckdb.DuckDBPyConnection, sql: str) -> Counter[tuple[object, ...]]:
    return Counter(duck.execute(sql).fetchall())


@ORACLE
@given(expr=int_exprs(arithmetic_only=True), rows=_rows(WIDE))
def test_integer_arithmetic_matches_duckdb(
    duck: duckdb.DuckDBPyConnection, expr: Expr, rows: list[tuple[object, ...]]
) -> None:
    scalar, sql = expr
    _load(duck, "t", rows)
    try:
        expected = _duck_rows(duck, f"SELECT id, {sql} FROM t")
    except duckdb.OutOfRangeException:
        with pytest.raises(EvalError, match="integer out of range"):
            _per_row(scalar, rows)
    else:
        assert _per_row(scalar, rows) == expected


@ORACLE
@given(expr=st.one_of(int_exprs(), bool_exprs()), rows=_rows(SMALL))
def test_expressions_match_duckdb(
    duck: duckdb.DuckDBPyConnection, expr: Expr, rows: list[tuple[object, ...]]
) -> None:
    scalar, sql = expr
    try:
        result = _per_row(scalar, rows)
    except EvalError:
        return  # DuckDB skips the right operand of a decided AND/OR, so it may not raise.
    _load(duck, "t", rows)
    assert result == _duck_rows(duck, f"SELECT id, {sql} FROM t")


GROUP_KEYS: list[tuple[tuple[Scalar, ...], list[str]]] = [
    ((), []),
    ((Col(0),), ["c0"]),
    ((Col(0), Col(1)), ["c0", "c1"]),
    ((Col(3),), ["d"]),
    ((call("mod", Col(1), integer(3)),), ["(c1 % 3)"]),
]


@ORACLE
@given(
    pred=bool_exprs(2),
    expr=int_exprs(2),
    key=st.sampled_from(GROUP_KEYS),
    rows=_rows(SMALL),
)
def test_filter_map_reduce_matches_duckdb(
    duck: duckdb.DuckDBPyConnection,
    pred: Expr,
    expr: Expr,
    key: tuple[tuple[Scalar, ...], list[str]],
    rows: list[tuple[object, ...]],
) -> None:
    (predicate, pred_sql), (mapped, expr_sql), (group_key, key_sql) = pred, expr, key
    aggregates = (
        Aggregate("count", None),
        Aggregate("count", Col(3)),
        Aggregate("sum", Col(3)),
        Aggregate("min", Col(3)),
        Aggregate("max", Col(3)),
        Aggregate("sum", Col(2)),
    )
    linear = Linear(Get("t", FIELDS), (Filter((predicate,)), Map((mapped,))))
    try:
        result = interpret(Reduce(linear, group_key, aggregates), {"t": Counter(rows)})
    except EvalError:
        return
    _load(duck, "t", rows)
    select = ", ".join([*key_sql, "count(*)", "count(d)", "sum(d)", "min(d)", "max(d)", "sum(c2)"])
    group_by = f" GROUP BY {', '.join(key_sql)}" if key_sql else ""
    source = f"SELECT c0, c1, c2, {expr_sql} AS d FROM t WHERE {pred_sql}"
    assert result == _duck_rows(duck, f"SELECT {select} FROM ({source}){group_by}")


JOINS: list[tuple[tuple[tuple[Scalar, ...], ...], str]] = [
    ((), "TRUE"),
    (((Col(0), Col(3)),), "t.c0 = u.c0"),
    (((Col(0), Col(3)), (Col(1), Col(4))), "t.c0 = u.c0 AND t.c1 = u.c1"),
    (((call("add", Col(0), Col(1)), Col(5)),), "t.c0 + t.c1 = u.c2"),
    (((Col(0), Col(3), Col(4)),), "t.c0 = u.c0 AND u.c0 = u.c1"),
]


@ORACLE
@given(join=st.sampled_from(JOINS), t_rows=_rows(SMALL), u_rows=_rows(SMALL))
def test_join_and_union_match_duckdb(
    duck: duckdb.DuckDBPyConnection,
    join: tuple[tuple[tuple[Scalar, ...], ...], str],
    t_rows: list[tuple[object, ...]],
    u_rows: list[tuple[object, ...]],
) -> None:
    equivalences, condition = join
    t, u = Get("t", FIELDS), Get("u", FIELDS)
    tables = {"t": Counter(t_rows), "u": Counter(u_rows)}
    _load(duck, "t", t_rows)
    _load(duck, "u", u_rows)
    columns = ", ".join(f"{name}.c{i}" for name in "tu" for i in range(COLUMNS))
    assert interpret(Join((t, u), equivalences), tables) == _duck_rows(
        duck, f"SELECT {columns} FROM t JOIN u ON {condition}"
    )
    each = [f"SELECT c0, c1, c2 FROM {name}" for name in "tut"]
    assert interpret(Union((t, u, t)), tables) == _duck_rows(duck, " UNION ALL ".join(each))


@settings(max_examples=100, deadline=None)
@given(pred=bool_exprs(2), expr=int_exprs(2), rows=_rows(SMALL))
def test_stacked_linear_equals_concatenated_steps(
    pred: Expr, expr: Expr, rows: list[tuple[object, ...]]
) -> None:
    first = (Map((expr[0],)), Filter((pred[0],)))
    second = (Project((3, 0)), Map((call("add", Col(0), Col(1)),)))
    get = Get("t", FIELDS)
    tables = {"t": Counter(rows)}
    try:
        stacked = interpret(Linear(Linear(get, first), second), tables)
    except EvalError:
        return
    assert stacked == interpret(Linear(get, first + second), tables)

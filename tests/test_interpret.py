"""Tests of the reference interpreter: scalar evaluation (``ir.evaluate``) and relational
interpretation (``ir.interpret``), by hand-written cases and against DuckDB as an oracle."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from functools import cache

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matview.ir.evaluate import cast_value, evaluate
from matview.ir.functions import EvalError
from matview.ir.interpret import interpret
from matview.ir.relation import (
    Aggregate,
    Constant,
    Field,
    Filter,
    Get,
    Join,
    Linear,
    Map,
    Project,
    Reduce,
    Relation,
    Union,
)
from matview.ir.scalar import Call, Case, Cast, Col, Lit, Scalar, remap
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
    SqlType,
    type_from_name,
)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1
NUMERIC_5_2 = type_from_name("numeric", 5, 2)
NUMERIC_2_2 = type_from_name("numeric", 2, 2)


def call(func: str, *args: Scalar) -> Call:
    return Call(func, args)


def boolean(value: bool | None) -> Lit:
    return Lit(value, BOOLEAN)


def integer(value: int | None) -> Lit:
    return Lit(value, INT)


def bigint(value: int | None) -> Lit:
    return Lit(value, BIGINT)


def text(value: str | None) -> Lit:
    return Lit(value, TEXT)


def numeric(value: str) -> Lit:
    return Lit(Decimal(value), NUMERIC_5_2)


def double(value: float) -> Lit:
    return Lit(value, DOUBLE)


def ev(expr: Scalar) -> object:
    """``expr`` evaluated on the empty row."""
    return evaluate(expr, (), ())


# --- three-valued logic and NULL ---------------------------------------------------------

T, F, N = True, False, None
AND_TABLE = {
    (T, T): T, (T, F): F, (T, N): N,
    (F, T): F, (F, F): F, (F, N): F,
    (N, T): N, (N, F): F, (N, N): N,
}
OR_TABLE = {
    (T, T): T, (T, F): T, (T, N): T,
    (F, T): T, (F, F): F, (F, N): N,
    (N, T): T, (N, F): N, (N, N): N,
}


@pytest.mark.parametrize(("a", "b"), list(AND_TABLE))
def test_and_truth_table(a: bool | None, b: bool | None) -> None:
    assert ev(call("and", boolean(a), boolean(b))) is AND_TABLE[a, b]


@pytest.mark.parametrize(("a", "b"), list(OR_TABLE))
def test_or_truth_table(a: bool | None, b: bool | None) -> None:
    assert ev(call("or", boolean(a), boolean(b))) is OR_TABLE[a, b]


@pytest.mark.parametrize(("a", "expected"), [(T, F), (F, T), (N, N)])
def test_not_truth_table(a: bool | None, expected: bool | None) -> None:
    assert ev(call("not", boolean(a))) is expected


def test_logic_over_columns() -> None:
    row, types = (None, False, True), (BOOLEAN, BOOLEAN, BOOLEAN)
    assert evaluate(call("and", Col(0), Col(1)), row, types) is False
    assert evaluate(call("or", Col(0), Col(2)), row, types) is True
    assert evaluate(call("or", Col(0), Col(1)), row, types) is None


@pytest.mark.parametrize(
    "expr",
    [
        call("add", integer(None), integer(1)),
        call("sub", integer(1), integer(None)),
        call("mul", integer(None), integer(None)),
        call("div", integer(1), integer(None)),
        call("div", integer(None), integer(0)),
        call("mod", integer(None), integer(2)),
        call("neg", integer(None)),
        call("abs", integer(None)),
        call("round", Lit(None, NUMERIC_5_2)),
        call("eq", integer(None), integer(None)),
        call("ne", integer(None), integer(1)),
        call("lt", integer(None), integer(1)),
        call("ge", text("a"), text(None)),
        call("like", text(None), text("%")),
        call("like", text("a"), text(None)),
        call("concat", text("a"), text(None)),
        call("lower", text(None)),
        call("upper", text(None)),
        call("length", text(None)),
        call("substr", text(None), integer(1)),
        call("substr", text("abc"), integer(None), integer(1)),
        call("add", call("mul", integer(None), integer(INT_MAX)), integer(INT_MAX)),
    ],
)
def test_null_propagates(expr: Scalar) -> None:
    assert ev(expr) is None


def test_null_of_type_null() -> None:
    assert ev(call("add", Lit(None, NULLTYPE), integer(1))) is None


def test_is_null() -> None:
    assert ev(call("is_null", integer(None))) is True
    assert ev(call("is_null", integer(0))) is False
    assert ev(call("is_null", boolean(False))) is False


def test_coalesce() -> None:
    assert ev(call("coalesce", integer(None), integer(None), integer(3), integer(4))) == 3
    assert ev(call("coalesce", integer(None), integer(None))) is None
    assert ev(call("coalesce", integer(0), integer(4))) == 0
    mixed = ev(call("coalesce", integer(None), integer(2), double(1.5)))
    assert mixed == 2.0 and isinstance(mixed, float)


def test_nullif() -> None:
    assert ev(call("nullif", integer(1), integer(1))) is None
    assert ev(call("nullif", integer(1), integer(2))) == 1
    assert ev(call("nullif", integer(None), integer(1))) is None
    assert ev(call("nullif", integer(1), integer(None))) == 1


# --- integer arithmetic --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (call("add", integer(INT_MAX), integer(1)), "integer out of range"),
        (call("sub", integer(INT_MIN), integer(1)), "integer out of range"),
        (call("mul", integer(65536), integer(65536)), "integer out of range"),
        (call("mul", integer(INT_MIN), integer(-1)), "integer out of range"),
        (call("div", integer(INT_MIN), integer(-1)), "integer out of range"),
        (call("neg", integer(INT_MIN)), "integer out of range"),
        (call("abs", integer(INT_MIN)), "integer out of range"),
        (call("add", bigint(BIGINT_MAX), bigint(1)), "bigint out of range"),
        (call("sub", bigint(BIGINT_MIN), integer(1)), "bigint out of range"),
        (call("mul", bigint(2**32), bigint(2**31)), "bigint out of range"),
        (call("mul", integer(-1), bigint(BIGINT_MIN)), "bigint out of range"),
        (call("neg", bigint(BIGINT_MIN)), "bigint out of range"),
        (call("eq", call("add", integer(INT_MAX), integer(1)), integer(0)), "integer out of range"),
    ],
)
def test_integer_overflow(expr: Scalar, message: str) -> None:
    with pytest.raises(EvalError, match=message):
        ev(expr)


def test_integer_results_at_the_bounds() -> None:
    assert ev(call("add", integer(INT_MAX - 1), integer(1))) == INT_MAX
    assert ev(call("sub", integer(INT_MIN + 1), integer(1))) == INT_MIN
    assert ev(call("mul", integer(-65536), integer(32768))) == INT_MIN
    assert ev(call("add", bigint(BIGINT_MAX - 1), integer(1))) == BIGINT_MAX
    assert ev(call("neg", integer(INT_MAX))) == -INT_MAX


def test_int_widened_to_bigint_does_not_overflow() -> None:
    assert ev(call("add", integer(INT_MAX), bigint(1))) == 2**31
    row, types = (INT_MAX, 2), (INT, BIGINT)
    assert evaluate(call("mul", Col(0), Col(1)), row, types) == 2**32 - 2


@pytest.mark.parametrize(
    ("a", "b", "quotient", "remainder"),
    [(7, 2, 3, 1), (-7, 2, -3, -1), (7, -2, -3, 1), (-7, -2, 3, -1), (6, 3, 2, 0), (1, 7, 0, 1)],
)
def test_integer_division_truncates_toward_zero(
    a: int, b: int, quotient: int, remainder: int
) -> None:
    assert ev(call("div", integer(a), integer(b))) == quotient
    assert ev(call("mod", integer(a), integer(b))) == remainder


def test_division_of_inexact_types() -> None:
    assert ev(call("div", integer(7), double(2.0))) == 3.5
    assert ev(call("div", double(-7.0), integer(2))) == -3.5
    assert ev(call("div", numeric("7"), integer(2))) == Decimal("3.5")


def test_double_column_holding_int_divides_exactly() -> None:
    assert evaluate(call("div", Col(0), integer(2)), (7,), (DOUBLE,)) == 3.5
    assert evaluate(call("div", Col(0), Lit(2, DOUBLE)), (7,), (INT,)) == 3.5


@pytest.mark.parametrize(
    "expr",
    [
        call("div", integer(1), integer(0)),
        call("mod", integer(1), integer(0)),
        call("div", double(1.0), double(0.0)),
        call("div", numeric("1"), numeric("0")),
        call("mod", bigint(5), integer(0)),
    ],
)
def test_division_by_zero(expr: Scalar) -> None:
    with pytest.raises(EvalError, match="division by zero"):
        ev(expr)


def test_mixed_numeric_and_double() -> None:
    result = ev(call("add", numeric("1.5"), double(0.25)))
    assert result == 1.75 and isinstance(result, float)
    assert ev(call("lt", numeric("1.5"), double(1.75))) is True
    exact = ev(call("add", numeric("1.5"), integer(2)))
    assert exact == Decimal("3.5") and isinstance(exact, Decimal)


def test_numeric_arithmetic_is_exact_at_38_digits() -> None:
    big = Lit(Decimal("9" * 37), NUMERIC_MAX)
    assert ev(call("add", big, Lit(Decimal(1), NUMERIC_MAX))) == Decimal(10**37)


def test_date_compared_with_timestamp() -> None:
    day = Lit(date(2024, 1, 31), DATE)
    assert ev(call("eq", day, Lit(datetime(2024, 1, 31), TIMESTAMP))) is True
    assert ev(call("lt", day, Lit(datetime(2024, 1, 31, 0, 0, 1), TIMESTAMP))) is True


# --- text functions, round -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "pattern", "expected"),
    [
        ("abc", "a%", True),
        ("abc", "%c", True),
        ("abc", "%b%", True),
        ("abc", "%", True),
        ("", "%", True),
        ("", "_", False),
        ("abc", "_b_", True),
        ("abc", "__", False),
        ("abc", "a_", False),
        ("abc", "abc", True),
        ("abc", "ABC", False),
        ("a\nb", "a%b", True),
        ("a.c", "a.c", True),
        ("abc", "a.c", False),
        ("a(c", "a(%", True),
        ("a%c", "a\\%c", True),
        ("abc", "a\\%c", False),
        ("a_c", "a\\_c", True),
        ("abc", "a\\_c", False),
        ("a\\c", "a\\\\c", True),
    ],
)
def test_like(value: str, pattern: str, expected: bool) -> None:
    assert ev(call("like", text(value), text(pattern))) is expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((2, 3), "ell"),
        ((2,), "ello"),
        ((1, 5), "hello"),
        ((1, 10), "hello"),
        ((0, 2), "h"),
        ((-1, 3), "h"),
        ((-5, 3), ""),
        ((10, 2), ""),
        ((3, 0), ""),
    ],
)
def test_substr(args: tuple[int, ...], expected: str) -> None:
    assert ev(call("substr", text("hello"), *(integer(a) for a in args))) == expected


def test_substr_negative_length() -> None:
    with pytest.raises(EvalError, match="negative substring length"):
        ev(call("substr", text("hello"), integer(1), integer(-1)))


def test_text_functions() -> None:
    assert ev(call("concat", text("ab"), text("cd"))) == "abcd"
    assert ev(call("lower", text("AbC"))) == "abc"
    assert ev(call("upper", text("AbC"))) == "ABC"
    assert ev(call("length", text("héllo"))) == 5
    assert ev(call("lt", text("abc"), text("abd"))) is True


@pytest.mark.parametrize(
    ("value", "digits", "expected"),
    [
        (Decimal("2.5"), None, Decimal("3")),
        (Decimal("-2.5"), None, Decimal("-3")),
        (Decimal("2.4"), None, Decimal("2")),
        (Decimal("1.245"), 2, Decimal("1.25")),
        (Decimal("-1.245"), 2, Decimal("-1.25")),
        (2.5, None, 3.0),
        (-2.5, None, -3.0),
        (0.5, None, 1.0),
        (0.125, 2, 0.13),
        (7, None, 7),
    ],
)
def test_round_half_away_from_zero(
    value: Decimal | float | int, digits: int | None, expected: object
) -> None:
    sql_type = {Decimal: NUMERIC_5_2, float: DOUBLE, int: INT}[type(value)]
    args: tuple[Scalar, ...] = (Lit(value, sql_type),)
    if digits is not None:
        args += (integer(digits),)
    result = ev(Call("round", args))
    assert result == expected and type(result) is type(expected)


# --- CASE ----------------------------------------------------------------------------------


def test_case_picks_first_true_when() -> None:
    expr = Case(
        (
            (call("gt", Col(0), integer(10)), text("big")),
            (call("gt", Col(0), integer(0)), text("pos")),
        ),
        text("other"),
    )
    assert evaluate(expr, (20,), (INT,)) == "big"
    assert evaluate(expr, (5,), (INT,)) == "pos"
    assert evaluate(expr, (-5,), (INT,)) == "other"
    assert evaluate(expr, (None,), (INT,)) == "other"


def test_case_skips_null_condition() -> None:
    expr = Case(((boolean(None), integer(1)), (boolean(True), integer(2))), integer(3))
    assert ev(expr) == 2


def test_case_evaluates_only_the_chosen_branch() -> None:
    guarded = Case(
        ((call("eq", Col(0), integer(0)), integer(None)),),
        call("div", integer(10), Col(0)),
    )
    assert evaluate(guarded, (0,), (INT,)) is None
    assert evaluate(guarded, (5,), (INT,)) == 2


def test_case_result_has_the_common_type() -> None:
    result = ev(Case(((boolean(True), integer(1)),), double(2.5)))
    assert result == 1.0 and isinstance(result, float)


# --- casts -------------------------------------------------------------------------------

CASTS: list[tuple[object, SqlType, object]] = [
    # to INT / BIGINT
    (5, INT, 5),
    (Decimal("2.5"), INT, 3),
    (Decimal("-2.5"), INT, -3),
    (Decimal("2.4999"), INT, 2),
    (2.5, INT, 3),
    (-2.5, INT, -3),
    (0.5, INT, 1),
    (1.4, BIGINT, 1),
    (" 42 ", INT, 42),
    ("-7", INT, -7),
    ("+7", INT, 7),
    ("2147483647", INT, INT_MAX),
    ("-2147483648", INT, INT_MIN),
    ("9223372036854775807", BIGINT, BIGINT_MAX),
    (2**40, BIGINT, 2**40),
    # to DOUBLE
    (3, DOUBLE, 3.0),
    (Decimal("1.5"), DOUBLE, 1.5),
    (2.25, DOUBLE, 2.25),
    ("1.5e3", DOUBLE, 1500.0),
    (" -0.25 ", DOUBLE, -0.25),
    (".5", DOUBLE, 0.5),
    ("-Infinity", DOUBLE, -math.inf),
    ("inf", DOUBLE, math.inf),
    # to NUMERIC(5,2)
    (Decimal("1.005"), NUMERIC_5_2, Decimal("1.01")),
    (Decimal("-1.005"), NUMERIC_5_2, Decimal("-1.01")),
    (Decimal("1.004"), NUMERIC_5_2, Decimal("1.00")),
    (1.005, NUMERIC_5_2, Decimal("1.01")),
    (12, NUMERIC_5_2, Decimal("12.00")),
    (" 3.14159 ", NUMERIC_5_2, Decimal("3.14")),
    (Decimal("999.994"), NUMERIC_5_2, Decimal("999.99")),
    (Decimal("-999.994"), NUMERIC_5_2, Decimal("-999.99")),
    (0, NUMERIC_2_2, Decimal("0.00")),
    (Decimal("0.994"), NUMERIC_2_2, Decimal("0.99")),
    (10**37, NUMERIC_MAX, Decimal(10**37)),
    # to TEXT
    (True, TEXT, "true"),
    (False, TEXT, "false"),
    (42, TEXT, "42"),
    (-42, TEXT, "-42"),
    (1.0, TEXT, "1"),
    (0.1, TEXT, "0.1"),
    (-1.5, TEXT, "-1.5"),
    (100.0, TEXT, "100"),
    (-0.0, TEXT, "-0"),
    (0.0001, TEXT, "0.0001"),
    (1e-05, TEXT, "1e-05"),
    (123456789012345.6, TEXT, "123456789012345.6"),
    (1e15, TEXT, "1e+15"),
    (1.2345678901234568e20, TEXT, "1.2345678901234568e+20"),
    (1e100, TEXT, "1e+100"),
    (2.5e-300, TEXT, "2.5e-300"),
    (math.nan, TEXT, "NaN"),
    (math.inf, TEXT, "Infinity"),
    (-math.inf, TEXT, "-Infinity"),
    (Decimal("1.50"), TEXT, "1.50"),
    (Decimal("1E+2"), TEXT, "100"),
    (date(2024, 1, 31), TEXT, "2024-01-31"),
    (datetime(2024, 1, 31, 12, 30), TEXT, "2024-01-31 12:30:00"),
    (datetime(2024, 1, 31, 12, 30, 5, 500000), TEXT, "2024-01-31 12:30:05.5"),
    (datetime(2024, 1, 31, 12, 30, 5, 123), TEXT, "2024-01-31 12:30:05.000123"),
    ("abc", TEXT, "abc"),
    # to BOOLEAN
    (True, BOOLEAN, True),
    (False, BOOLEAN, False),
    ("t", BOOLEAN, True),
    ("TRUE", BOOLEAN, True),
    (" yes ", BOOLEAN, True),
    ("On", BOOLEAN, True),
    ("1", BOOLEAN, True),
    ("f", BOOLEAN, False),
    ("False", BOOLEAN, False),
    ("NO", BOOLEAN, False),
    ("off", BOOLEAN, False),
    ("0", BOOLEAN, False),
    # to DATE
    ("2024-02-29", DATE, date(2024, 2, 29)),
    (" 2024-01-31 ", DATE, date(2024, 1, 31)),
    ("2024-01-31 10:11:12", DATE, date(2024, 1, 31)),
    (datetime(2024, 1, 31, 23, 59), DATE, date(2024, 1, 31)),
    (date(2024, 1, 31), DATE, date(2024, 1, 31)),
    # to TIMESTAMP
    ("2024-01-31 10:11:12", TIMESTAMP, datetime(2024, 1, 31, 10, 11, 12)),
    ("2024-01-31T10:11", TIMESTAMP, datetime(2024, 1, 31, 10, 11)),
    ("2024-01-31 10:11:12.5", TIMESTAMP, datetime(2024, 1, 31, 10, 11, 12, 500000)),
    ("2024-01-31", TIMESTAMP, datetime(2024, 1, 31)),
    (date(2024, 1, 31), TIMESTAMP, datetime(2024, 1, 31)),
    (datetime(2024, 1, 31, 1, 2, 3), TIMESTAMP, datetime(2024, 1, 31, 1, 2, 3)),
]


@pytest.mark.parametrize(("value", "to", "expected"), CASTS)
def test_cast(value: object, to: SqlType, expected: object) -> None:
    result = cast_value(value, to)
    assert result == expected and type(result) is type(expected)
    if isinstance(expected, Decimal):
        assert str(result) == str(expected)  # the scale, too


CAST_ERRORS: list[tuple[object, SqlType, str]] = [
    (2**31, INT, "integer out of range"),
    (-(2**31) - 1, INT, "integer out of range"),
    (2147483647.5, INT, "integer out of range"),
    (Decimal("-2147483648.5"), INT, "integer out of range"),
    ("2147483648", INT, "integer out of range"),
    (2**63, BIGINT, "bigint out of range"),
    (math.nan, INT, "integer out of range"),
    (math.inf, BIGINT, "bigint out of range"),
    ("abc", INT, 'invalid input syntax for type integer: "abc"'),
    ("1.5", INT, 'invalid input syntax for type integer: "1.5"'),
    ("", INT, 'invalid input syntax for type integer: ""'),
    ("1_000", INT, "invalid input syntax for type integer"),
    ("x", BIGINT, 'invalid input syntax for type bigint: "x"'),
    (True, INT, "cannot cast type boolean to int"),
    (date(2024, 1, 1), INT, "cannot cast type date to int"),
    ("abc", DOUBLE, 'invalid input syntax for type double precision: "abc"'),
    ("1e999", DOUBLE, "out of range for type double precision"),
    (True, DOUBLE, "cannot cast type boolean to double"),
    (Decimal("999.995"), NUMERIC_5_2, "numeric field overflow"),
    (1000, NUMERIC_5_2, "numeric field overflow"),
    (-1000.0, NUMERIC_5_2, "numeric field overflow"),
    (1, NUMERIC_2_2, "numeric field overflow"),
    (10**38, NUMERIC_MAX, "numeric field overflow"),
    (Decimal("1e100"), NUMERIC_5_2, "numeric field overflow"),
    ("abc", NUMERIC_5_2, 'invalid input syntax for type numeric: "abc"'),
    (math.inf, NUMERIC_5_2, "cannot cast double inf to numeric"),
    (False, NUMERIC_5_2, "cannot cast type boolean to numeric"),
    ("maybe", BOOLEAN, 'invalid input syntax for type boolean: "maybe"'),
    (1, BOOLEAN, "cannot cast type int to boolean"),
    (1.5, BOOLEAN, "cannot cast type double to boolean"),
    ("2023-02-29", DATE, 'date/time field value out of range: "2023-02-29"'),
    ("31/01/2024", DATE, 'invalid input syntax for type date: "31/01/2024"'),
    (5, DATE, "cannot cast type int to date"),
    ("2024-01-31 25:00", TIMESTAMP, "date/time field value out of range"),
    ("yesterday", TIMESTAMP, 'invalid input syntax for type timestamp: "yesterday"'),
    (1.5, TIMESTAMP, "cannot cast type double to timestamp"),
    (Decimal(1), TIMESTAMP, "cannot cast type numeric to timestamp"),
    (datetime(2024, 1, 1), BOOLEAN, "cannot cast type timestamp to boolean"),
    (b"x", TEXT, "cannot cast type bytes to text"),
]


@pytest.mark.parametrize(("value", "to", "message"), CAST_ERRORS)
def test_cast_error(value: object, to: SqlType, message: str) -> None:
    with pytest.raises(EvalError) as info:
        cast_value(value, to)
    assert message in str(info.value)


def test_cast_text_to_nan() -> None:
    assert math.isnan(cast_value(" NaN ", DOUBLE))


@pytest.mark.parametrize(
    "to", [INT, BIGINT, DOUBLE, NUMERIC_5_2, TEXT, BOOLEAN, DATE, TIMESTAMP]
)
def test_cast_of_null_is_null(to: SqlType) -> None:
    assert cast_value(None, to) is None
    assert ev(Cast(Lit(None, NULLTYPE), to)) is None


def test_cast_node() -> None:
    assert evaluate(Cast(Col(0), TEXT), (1.5,), (DOUBLE,)) == "1.5"
    assert evaluate(Cast(call("add", Col(0), integer(1)), NUMERIC_5_2), (2,), (INT,)) == Decimal(
        "3.00"
    )
    with pytest.raises(EvalError, match="integer out of range"):
        evaluate(Cast(Col(0), INT), (2**40,), (BIGINT,))


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

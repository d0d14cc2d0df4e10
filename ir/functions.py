"""The registry of scalar functions: each is declared once with its type rule, its Python
meaning (used by the reference interpreter) and its Spark lowering.

The Spark lowering is a function ``spark(F, *columns) -> Column`` that receives the
``pyspark.sql.functions`` module as ``F``, so this module never imports Spark. The type
rules are in ``function_types``, the date and time fields of ``extract`` and ``date_trunc``
in ``datetime_functions``, ``to_char``'s patterns in ``to_char``, the text functions'
meanings in ``text_functions``.
SQL NULL propagates through every function unless its Python meaning handles ``None`` itself
(``handles_null``); AND/OR follow three-valued logic.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from matview.ir import bytea, jsonb, timetz, to_char
from matview.ir.array_quantifiers import FUNCTIONS as QUANTIFIED_FUNCTIONS
from matview.ir.array_sizes import FUNCTIONS as SIZE_FUNCTIONS
from matview.ir.datetime_functions import (
    EXTRACT_FIELDS,
    TRUNCATIONS,
    extract_type,
    spark_truncation,
    truncation_type,
)
from matview.ir.eval_error import EvalError
from matview.ir.function_types import (
    additive,
    array_type,
    boolean,
    common,
    comparable,
    concatenation,
    decoded,
    digest,
    encoded,
    length,
    numeric,
    product,
    real,
    same,
    text,
    to_jsonb_type,
    two_dates,
)
from matview.ir.interval_scaling import FUNCTIONS as SCALING_FUNCTIONS
from matview.ir.interval_values import FUNCTIONS as INTERVAL_FUNCTIONS
from matview.ir.intervals import Interval, shift
from matview.ir.object_ids import FUNCTIONS as OID_FUNCTIONS
from matview.ir.regex_match import FUNCTIONS as MATCH_FUNCTIONS
from matview.ir.text_functions import (
    concat_ws,
    like,
    regexp_replace,
    replace,
    spark_concat_ws,
    spark_substr,
    split_part,
    strpos,
    substr,
)
from matview.ir.types import (
    BOOLEAN,
    INT,
    INTEGER_KINDS,
    MZ_TIMESTAMP,
    TEXT,
    UUID,
    Kind,
    SqlType,
)


@dataclass(frozen=True)
class Function:
    """A registered scalar function.

    ``symbol`` is set for operators printed infix (or prefix when ``arity`` is 1);
    ``returns`` maps argument types to the result type and raises ``TypeError`` when the
    arguments do not fit.
    """

    name: str
    returns: Callable[[list[SqlType]], SqlType]
    python: Callable[..., Any]
    spark: Callable[..., Any]
    arity: tuple[int, int]
    symbol: str | None = None
    handles_null: bool = False
    typed_spark: Callable[..., Any] | None = None
    """When set, the Spark lowering ``typed_spark(F, arg_types, *columns)`` replaces ``spark``."""
    may_fail: bool = False
    """Whether some argument values make it raise (overflow, division by zero, bad input)."""
    costly: bool = False
    """Whether its cost is unbounded in its input (pattern matching can backtrack without
    end): it runs only in Spark, never evaluated in the driver while planning."""
    volatile: bool = False
    """Whether each call gives a new value (``gen_random_uuid()``): never folded into a
    constant, computed once for each copy of a row, and refused in views (a view could not
    retract the values it gave)."""


REGISTRY: dict[str, Function] = {}


def register(fn: Function) -> Function:
    REGISTRY[fn.name] = fn
    return fn


def lookup(name: str) -> Function:
    if name not in REGISTRY:
        raise KeyError(f"unknown function {name}")
    return REGISTRY[name]


def by_symbol(symbol: str, arity: int) -> Function:
    for fn in REGISTRY.values():
        if fn.symbol == symbol and fn.arity[0] <= arity <= fn.arity[1]:
            return fn
    raise KeyError(f"unknown operator {symbol}")


def _int_divide(a: int, b: int) -> int:
    if b == 0:
        raise EvalError("division by zero")
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def _divide(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        return _int_divide(a, b)
    if b == 0:
        raise EvalError("division by zero")
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return Decimal(a) / Decimal(b)
    return a / b


def _modulo(a: Any, b: Any) -> Any:
    if b == 0:
        raise EvalError("division by zero")
    if isinstance(a, int) and isinstance(b, int):
        return a - b * _int_divide(a, b)
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a % b  # Decimal's remainder takes the dividend's sign, as SQL's
    return math.fmod(a, b)


def _spark_divide(F: Any, types: list[SqlType], a: Any, b: Any) -> Any:
    return F.call_function("div", a, b) if _is_integral(types) else a / b


def _spark_to_jsonb(F: Any, types: list[SqlType], a: Any) -> Any:
    """``jsonb.of_scalar`` on Spark: a number's text read as JSON and printed (Spark's
    VARIANT gives the canonical form), a string quoted by Spark's JSON writer (its array of
    one element, without the brackets)."""
    t = types[0]
    if t.kind is Kind.BOOLEAN:
        return F.when(a, F.lit("true")).when(~a, F.lit("false"))
    if t.kind is Kind.TEXT:
        quoted = F.to_json(F.array(a))
        return F.when(a.isNotNull(), quoted.substr(F.lit(2), F.length(quoted) - 2))
    if t.kind is Kind.NULL:
        return F.lit(None).cast("string")
    if t.kind in INTEGER_KINDS:
        return a.cast("string")
    number = F.to_json(F.parse_json(a.cast("string")))
    if t.kind is Kind.NUMERIC:
        return number
    return (F.when(F.isnan(a), F.lit('"NaN"')).when(a == float("inf"), F.lit('"Infinity"'))
            .when(a == float("-inf"), F.lit('"-Infinity"')).otherwise(number))


def _and(*values: Any) -> Any:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(*values: Any) -> Any:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _round(x: Any, digits: int = 0) -> Any:
    """Round half away from zero to ``digits`` decimal places (negative: tens, hundreds...)."""
    if isinstance(x, float) and not math.isfinite(x):
        return x
    exact = Decimal(repr(x)) if isinstance(x, float) else Decimal(x)
    if exact.adjusted() - digits > 60:
        return x  # no digit at that place: already a whole number of that unit
    rounded = exact.quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP)
    if isinstance(x, float):
        return float(rounded)
    return int(rounded) if isinstance(x, int) else rounded


def _is_integral(types: Sequence[SqlType]) -> bool:
    return all(t.kind in INTEGER_KINDS + (Kind.NULL,) for t in types)


def _shifted(moment: date, by: Interval | int) -> date:
    """``moment`` moved by the interval ``by`` (see ``intervals.shift``: months first, the
    day clamped to the month's length) or by ``by`` days; out of the representable years
    (1 to 9999) it is an error, as PostgreSQL's beyond its own range."""
    try:
        return shift(moment, by) if isinstance(by, Interval) else moment + timedelta(days=by)
    except (OverflowError, ValueError):
        kind = "date" if isinstance(by, int) else "timestamp"
        raise EvalError(f"{kind} out of range") from None


def _add(a: Any, b: Any) -> Any:
    return _shifted(a, b) if isinstance(a, date) else a + b


def _sub(a: Any, b: Any) -> Any:
    return _shifted(a, -b) if isinstance(a, date) else a - b


def _spark_additive(operator: Callable[[Any, Any], Any], on_dates: str) -> Callable[..., Any]:
    """A Spark ``+``/``-`` whose DATE and INT operands add days with ``on_dates``
    (``date_add``/``date_sub``); other operands take ``operator``."""
    def lowering(F: Any, types: list[SqlType], a: Any, b: Any) -> Any:
        if types[0].kind is Kind.DATE and types[1].kind is not Kind.INTERVAL:
            return getattr(F, on_dates)(a, b)
        return operator(a, b)
    return lowering


register(Function("add", additive, _add, lambda F, a, b: a + b, (2, 2), "+",
                  typed_spark=_spark_additive(lambda a, b: a + b, "date_add"), may_fail=True))
register(Function("sub", additive, _sub, lambda F, a, b: a - b, (2, 2), "-",
                  typed_spark=_spark_additive(lambda a, b: a - b, "date_sub"), may_fail=True))


for _name, _returns, _python, _spark, _arity in INTERVAL_FUNCTIONS + SCALING_FUNCTIONS:
    register(Function(_name, _returns, _python, _spark, _arity,
                      may_fail=_name in ("interval_add", "interval_sub", "interval_neg",
                                         "interval_mul", "interval_div", "interval_of")))
for _name, _returns, _python, _spark, _arity in timetz.FUNCTIONS:
    register(Function(_name, _returns, _python, _spark, _arity))

for _name, _returns, _python, _spark, _arity in QUANTIFIED_FUNCTIONS:
    register(Function(_name, _returns, _python, _spark, _arity, handles_null=True))

for _name, _returns, _python, _spark, _arity in [*OID_FUNCTIONS, *SIZE_FUNCTIONS]:
    register(Function(_name, _returns, _python, _spark, _arity,
                      handles_null=_name == "format_type"))

for _name, _returns, _python, _spark, _arity in MATCH_FUNCTIONS:
    register(Function(_name, _returns, _python, _spark, _arity, may_fail=True, costly=True))

register(Function("days_between", two_dates, lambda a, b: (a - b).days,
                  lambda F, a, b: F.datediff(a, b), (2, 2)))
register(Function("mul", product, lambda a, b: a * b, lambda F, a, b: a * b, (2, 2), "*",
                  may_fail=True))

register(Function("div", numeric, _divide, lambda F, a, b: a / b, (2, 2), "/",
                  typed_spark=_spark_divide, may_fail=True))


# The square root of a non-negative number, for stddev (ir/aggregates.py). SQL's sqrt() is not
# bound: Spark answers NaN for a negative argument where PostgreSQL raises an error.
register(Function("sqrt", real, math.sqrt, lambda F, a: F.sqrt(a), (1, 1)))
register(Function("mod", numeric, _modulo, lambda F, a, b: a % b, (2, 2), "%", may_fail=True))
register(Function("neg", same, lambda a: -a, lambda F, a: -a, (1, 1), "-", may_fail=True))

for _name, _symbol, _py, _sp in (
    ("eq", "=", lambda a, b: a == b, lambda F, a, b: a == b),
    ("ne", "<>", lambda a, b: a != b, lambda F, a, b: a != b),
    ("lt", "<", lambda a, b: a < b, lambda F, a, b: a < b),
    ("le", "<=", lambda a, b: a <= b, lambda F, a, b: a <= b),
    ("gt", ">", lambda a, b: a > b, lambda F, a, b: a > b),
    ("ge", ">=", lambda a, b: a >= b, lambda F, a, b: a >= b),
):
    register(Function(_name, comparable, _py, _sp, (2, 2), _symbol))

register(Function("and", boolean, _and, lambda F, a, b: a & b, (2, 2), "AND", True))
register(Function("or", boolean, _or, lambda F, a, b: a | b, (2, 2), "OR", True))
register(Function("not", boolean, lambda a: not a, lambda F, a: ~a, (1, 1), "NOT"))
register(Function("is_null", lambda t: BOOLEAN, lambda a: a is None,
                  lambda F, a: a.isNull(), (1, 1), handles_null=True))
register(Function("like", lambda t: BOOLEAN, like, lambda F, a, b: F.like(a, b), (2, 2), "LIKE",
                  may_fail=True, costly=True))
register(Function("concat", concatenation, lambda a, b: a + b,
                  lambda F, a, b: F.concat(a, b), (2, 2), "||"))
register(Function("concat_ws", text, concat_ws, spark_concat_ws, (1, 10_000),
                  handles_null=True))
register(Function("replace", text, replace, lambda F, s, old, new: F.replace(s, old, new),
                  (3, 3)))
register(Function("lower", text, str.lower, lambda F, a: F.lower(a), (1, 1)))
register(Function("upper", text, str.upper, lambda F, a: F.upper(a), (1, 1)))
register(Function("length", length, len, lambda F, a: F.char_length(a), (1, 1)))
register(Function("octet_length", length, bytea.octet_length,
                  lambda F, a: F.octet_length(a), (1, 1)))
register(Function("md5", digest, bytea.md5, lambda F, a: F.md5(a), (1, 1)))
for _format, (_encode, _spark_encode) in bytea.ENCODERS.items():
    register(Function(f"encode_{_format}", encoded, _encode, _spark_encode, (1, 1)))
for _format, (_decode, _spark_decode, _message) in bytea.DECODERS.items():
    register(Function(f"decode_{_format}", decoded, _decode, bytea.strict(_spark_decode, _message),
                      (1, 1), may_fail=True))
register(Function("substr", text, substr, spark_substr, (2, 3), may_fail=True))
register(Function("regexp_replace", text, regexp_replace,
                  lambda F, s, pattern, by: F.regexp_replace(s, pattern, by), (3, 3),
                  may_fail=True, costly=True))
register(Function("split_part", text, split_part,
                  lambda F, s, delimiter, n: F.split_part(s, delimiter, n), (3, 3),
                  may_fail=True))
register(Function("strpos", lambda t: INT, strpos, lambda F, s, sub: F.instr(s, sub), (2, 2)))
register(Function("to_jsonb", to_jsonb_type, jsonb.of_scalar, lambda F, a: a,
                  (1, 1), typed_spark=_spark_to_jsonb))
register(Function("jsonb_canonical", lambda t: TEXT, lambda a: a, lambda F, a: a, (1, 1)))
"""A JSONB value's canonical text (``ir.jsonb``), which is how it is held: the pieces of a
built object (``sql.json_objects``)."""
register(Function("abs", same, abs, lambda F, a: F.abs(a), (1, 1), may_fail=True))
register(Function("round", same, _round,
                  lambda F, a, d=None: F.round(a) if d is None else F.round(a, d), (1, 2),
                  may_fail=True))
register(Function("coalesce", common,
                  lambda *a: next((v for v in a if v is not None), None),
                  lambda F, *a: F.coalesce(*a), (1, 10_000), handles_null=True))
register(Function("nullif", lambda t: t[0], lambda a, b: None if a == b else a,
                  lambda F, a, b: F.nullif(a, b), (2, 2), handles_null=True))


def _ordered(value: Any) -> tuple[bool, Any]:
    """``value``'s place in SQL's order: NaN above every other number."""
    return (isinstance(value, float) and math.isnan(value), value)


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    """``greatest``/``least`` (``pick``: ``max``/``min``): of the values that are not
    NULL; NULL when all are."""
    def meaning(*values: Any) -> Any:
        present = [v for v in values if v is not None]
        return pick(present, key=_ordered) if present else None
    return meaning


for _name, _pick in (("greatest", max), ("least", min)):
    register(Function(_name, common, _extreme(_pick),
                      lambda F, *a, _n=_name: a[0] if len(a) == 1 else getattr(F, _n)(*a),
                      (1, 10_000), handles_null=True))

MORE_THAN_ONE_ROW = "more than one row returned by a subquery used as an expression"


def _single_row(rows: int | None, value: object) -> object:
    """``single_row(n, v)``: a scalar subquery's value ``v`` given its number of rows ``n``
    (see ``ir.decorrelate``): ``v``, or the error of a subquery returning several rows
    when ``n > 1``. Not callable from SQL."""
    if rows is not None and rows > 1:
        raise EvalError(MORE_THAN_ONE_ROW)
    return value


register(Function("single_row", lambda t: t[1], _single_row, lambda F, rows, value: value,
                  (2, 2), handles_null=True, may_fail=True))


for _field, _spec in EXTRACT_FIELDS.items():
    register(Function(f"extract_{_field}", extract_type(_field, _spec), _spec.python,
                      _spec.spark, (1, 1)))


for _unit, _truncate in TRUNCATIONS.items():
    register(Function(f"date_trunc_{_unit}", truncation_type, _truncate, spark_truncation(_unit),
                      (1, 1)))


for _name in to_char.PATTERNS:
    register(Function(f"to_char_{_name}", to_char.returns, to_char.python_meaning(_name),
                      to_char.PATTERNS[_name].spark, (1, 1)))


def _not_evaluable(*args: Any) -> Any:
    raise EvalError("mz_now() can only be evaluated in a temporal filter")


register(Function("mz_now", lambda t: MZ_TIMESTAMP, _not_evaluable, _not_evaluable, (0, 0),
                  handles_null=True))
register(Function("gen_random_uuid", lambda t: UUID, lambda: str(uuid.uuid4()),
                  lambda F: F.uuid(), (0, 0), volatile=True))


register(Function("array", array_type, lambda *a: tuple(a), lambda F, *a: F.array(*a),
                  (0, 10_000), handles_null=True))

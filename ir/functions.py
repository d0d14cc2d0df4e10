"""The registry of scalar functions: each is declared once with its type rule, its Python
meaning (used by the reference interpreter) and its Spark lowering.

The Spark lowering is a function ``spark(F, *columns) -> Column`` that receives the
``pyspark.sql.functions`` module as ``F``, so this module never imports Spark.
SQL NULL propagates through every function unless its Python meaning handles ``None`` itself
(``handles_null``); AND/OR follow three-valued logic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from matview.ir.intervals import Interval, shift
from matview.ir.types import (
    BOOLEAN,
    INT,
    INTEGER_KINDS,
    MZ_TIMESTAMP,
    NULLTYPE,
    TEXT,
    TIMESTAMP,
    Kind,
    SqlType,
    array_of,
    common_type,
)


class EvalError(Exception):
    """A scalar expression failed on a value (division by zero, overflow, bad cast)."""


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


def _numeric(types: list[SqlType]) -> SqlType:
    for t in types:
        if not (t.is_numeric or t.kind is Kind.NULL):
            raise TypeError(f"operator does not accept {t}")
    result = types[0]
    for t in types[1:]:
        result = common_type(result, t)
    return INT if result.kind is Kind.NULL else result


def _product(types: list[SqlType]) -> SqlType:
    """A product's type: as PostgreSQL, a NUMERIC product keeps every digit, its scale the
    sum of the operands' scales (precision capped at 38)."""
    result = _numeric(types)
    if result.kind is not Kind.NUMERIC:
        return result
    digits = [(t.precision or 38, t.scale or 0) if t.kind is Kind.NUMERIC
              else (10 if t.kind is Kind.INT else 19, 0) for t in types]
    scale = min(38, sum(s for _, s in digits))
    return SqlType(Kind.NUMERIC, min(38, max(sum(p for p, _ in digits), scale + 1)), scale)


def _comparable(types: list[SqlType]) -> SqlType:
    common_type(types[0], types[1])
    return BOOLEAN


def _boolean(types: list[SqlType]) -> SqlType:
    for t in types:
        if t.kind not in (Kind.BOOLEAN, Kind.NULL):
            raise TypeError(f"argument of boolean operator must be boolean, not {t}")
    return BOOLEAN


def _text(types: list[SqlType]) -> SqlType:
    return TEXT


def _same(types: list[SqlType]) -> SqlType:
    return _numeric(types[:1])


def _common(types: list[SqlType]) -> SqlType:
    result = types[0]
    for t in types[1:]:
        result = common_type(result, t)
    return result


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


def _like(text: str, pattern: str) -> bool:
    regex = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 == len(pattern):
                raise EvalError("LIKE pattern must not end with escape character")
            regex.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        regex.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(regex), text, re.DOTALL) is not None


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


def _substr(s: str, start: int, length: int | None = None) -> str:
    if length is not None and length < 0:
        raise EvalError("negative substring length not allowed")
    end = None if length is None else start + length - 1
    begin = max(start, 1) - 1
    return s[begin:] if end is None else s[begin:max(end, 0)]


def _is_integral(types: Sequence[SqlType]) -> bool:
    return all(t.kind in INTEGER_KINDS + (Kind.NULL,) for t in types)


def _additive(types: list[SqlType]) -> SqlType:
    """``+``/``-``: numbers, or a TIMESTAMP or DATE shifted by an INTERVAL (it second)."""
    kinds = [t.kind for t in types]
    if Kind.INTERVAL in kinds:
        if kinds[0] in (Kind.TIMESTAMP, Kind.DATE, Kind.NULL) and kinds[1] is Kind.INTERVAL:
            return TIMESTAMP
        raise TypeError(f"operator does not accept {types[0]} and {types[1]}")
    return _numeric(types)


def _add(a: Any, b: Any) -> Any:
    return shift(a, b) if isinstance(b, Interval) else a + b


def _sub(a: Any, b: Any) -> Any:
    return shift(a, -b) if isinstance(b, Interval) else a - b


register(Function("add", _additive, _add, lambda F, a, b: a + b, (2, 2), "+", may_fail=True))
register(Function("sub", _additive, _sub, lambda F, a, b: a - b, (2, 2), "-", may_fail=True))
register(Function("mul", _product, lambda a, b: a * b, lambda F, a, b: a * b, (2, 2), "*",
                  may_fail=True))

register(Function("div", _numeric, _divide, lambda F, a, b: a / b, (2, 2), "/",
                  typed_spark=_spark_divide, may_fail=True))
register(Function("mod", _numeric, _modulo, lambda F, a, b: a % b, (2, 2), "%", may_fail=True))
register(Function("neg", _same, lambda a: -a, lambda F, a: -a, (1, 1), "-", may_fail=True))

for _name, _symbol, _py, _sp in (
    ("eq", "=", lambda a, b: a == b, lambda F, a, b: a == b),
    ("ne", "<>", lambda a, b: a != b, lambda F, a, b: a != b),
    ("lt", "<", lambda a, b: a < b, lambda F, a, b: a < b),
    ("le", "<=", lambda a, b: a <= b, lambda F, a, b: a <= b),
    ("gt", ">", lambda a, b: a > b, lambda F, a, b: a > b),
    ("ge", ">=", lambda a, b: a >= b, lambda F, a, b: a >= b),
):
    register(Function(_name, _comparable, _py, _sp, (2, 2), _symbol))

register(Function("and", _boolean, _and, lambda F, a, b: a & b, (2, 2), "AND", True))
register(Function("or", _boolean, _or, lambda F, a, b: a | b, (2, 2), "OR", True))
register(Function("not", _boolean, lambda a: not a, lambda F, a: ~a, (1, 1), "NOT"))
register(Function("is_null", lambda t: BOOLEAN, lambda a: a is None,
                  lambda F, a: a.isNull(), (1, 1), handles_null=True))
register(Function("like", lambda t: BOOLEAN, _like, lambda F, a, b: F.like(a, b), (2, 2), "LIKE",
                  may_fail=True, costly=True))
register(Function("concat", _text, lambda a, b: a + b,
                  lambda F, a, b: F.concat(a, b), (2, 2), "||"))
register(Function("lower", _text, str.lower, lambda F, a: F.lower(a), (1, 1)))
register(Function("upper", _text, str.upper, lambda F, a: F.upper(a), (1, 1)))
register(Function("length", lambda t: INT, len, lambda F, a: F.char_length(a), (1, 1)))
register(Function("substr", _text, _substr,
                  lambda F, *a: F.substr(*a), (2, 3), may_fail=True))
register(Function("abs", _same, abs, lambda F, a: F.abs(a), (1, 1), may_fail=True))
register(Function("round", _same, _round,
                  lambda F, a, d=None: F.round(a) if d is None else F.round(a, d), (1, 2),
                  may_fail=True))
register(Function("coalesce", _common,
                  lambda *a: next((v for v in a if v is not None), None),
                  lambda F, *a: F.coalesce(*a), (1, 10_000), handles_null=True))
register(Function("nullif", lambda t: t[0], lambda a, b: None if a == b else a,
                  lambda F, a, b: F.nullif(a, b), (2, 2), handles_null=True))


def _not_evaluable(*args: Any) -> Any:
    raise EvalError("mz_now() can only be evaluated in a temporal filter")


register(Function("mz_now", lambda t: MZ_TIMESTAMP, _not_evaluable, _not_evaluable, (0, 0),
                  handles_null=True))


def _array_type(types: list[SqlType]) -> SqlType:
    element = NULLTYPE
    for t in types:
        element = common_type(element, t)
    return array_of(element)


register(Function("array", _array_type, lambda *a: tuple(a), lambda F, *a: F.array(*a),
                  (0, 10_000), handles_null=True))

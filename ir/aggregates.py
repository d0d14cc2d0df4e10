"""The registry of aggregate functions: each is declared once with the argument types it
takes, its result type, how it is maintained, and its meaning.

An aggregate is one of three kinds (``Maintenance``):

- ``SUMMED`` (``count``, ``sum``): invertible. A ``Reduce`` keeps per group running sums of
  what its rows contribute (how many non-NULL values, and their sum when ``sums_values``), so
  a change adds its rows' contributions and reads no other row. ``python`` is its meaning
  over a group's non-NULL ``(value, multiplicity)`` pairs (the reference interpreter's).
- ``EXTREME`` (``min``, ``max``, ``string_agg``, ``array_agg``, ``jsonb_agg``): not
  invertible. A ``Reduce`` arranges the group's ``(key, value)`` pairs (with the values of
  the call's ORDER BY), and a group whose rows changed takes its value again over them
  (``runtime/lowering/aggregates.py`` holds each one's Spark lowering, by name), or, for an
  aggregate of the values in order (``ordered``), from the array of its values sorted by
  the call's ORDER BY then by value, each as often as it occurs; ``python`` as above (for
  ``ordered`` ones: over the pairs in that order, and the call's separator).
  ``array_agg(x)`` aggregates ``ARRAY[x]`` (the binder writes it so), which is never NULL,
  so that NULL elements are kept while NULL arguments (a FILTER's, a decorrelated
  subquery's padding) are ignored as by every aggregate. So too ``jsonb_agg(x)``
  aggregates ``coalesce(to_jsonb(x), 'null'::jsonb)``: its value is ``[``, the JSONB texts
  in order joined by ``,``, then ``]`` (canonical, as its elements are).
- ``DERIVED`` (``avg``, ``bool_and``, ``bool_or``, the variances and standard deviations):
  not a ``Reduce`` aggregate. The SQL binder writes it as an expression over SUMMED
  aggregates (``derive``), so it is maintained as they are, by running sums:

      avg(x)      = sum(x) / count(x)
      bool_and(x) = NULL if count(x) = 0 else count(nullif(x, TRUE)) = 0
      bool_or(x)  = NULL if count(x) = 0 else count(nullif(x, FALSE)) > 0
      var_pop(x)  = m2 / n,  var_samp(x) = m2 / (n - 1),  m2 = Σx² - (Σx)² / n,  n = count(x)
      stddev_*(x) = sqrt(var_*(x))

  (NULL where the divisor is 0; integer and NUMERIC arguments are summed exactly, the last
  division is in DOUBLE, and ``m2`` is at least 0.)

Only SUMMED and EXTREME names appear in the IR (``aggregate_call.Aggregate.func``); the runtime
(``runtime/operators/reduce.py``), the planner and the interpreter dispatch on ``maintenance``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from matview.ir.scalar import Call, Case, Cast, Lit, Scalar
from matview.ir.types import (
    BIGINT,
    BOOLEAN,
    DOUBLE,
    INTEGER_KINDS,
    NUMERIC_MAX,
    TEXT,
    Kind,
    SqlType,
)


class Maintenance(Enum):
    """How a ``Reduce`` keeps an aggregate up to date (see the module docstring)."""

    SUMMED = "summed"
    EXTREME = "extreme"
    DERIVED = "derived"


Pairs = Sequence[tuple[Any, int]]
"""A group's non-NULL values of an aggregate's argument, each with its multiplicity."""

Add = Callable[[str, Scalar | None], Scalar]
"""Adds a SUMMED or EXTREME aggregate ``func(expr)`` to the ``Reduce`` being bound and returns
the column of its value in the ``Reduce``'s output."""


@dataclass(frozen=True)
class AggregateFunction:
    """A registered aggregate (see the module docstring for the kinds)."""

    name: str
    maintenance: Maintenance
    accepts: Callable[[SqlType], bool]
    """Whether it takes an argument of that type."""
    returns: Callable[[SqlType | None], SqlType]
    """Its result type for an argument type (None: ``count(*)``)."""
    python: Callable[[Pairs], Any] | None = None
    """SUMMED and EXTREME: its value over a group's pairs (a sum before its cast to the
    result type; the interpreter sums in an 80-digit decimal context)."""
    sums_values: bool = False
    """SUMMED: whether a group keeps the sum of its values beside their count."""
    ordered: bool = False
    """EXTREME: whether it is an aggregate of the values in order, its value taken from
    the array of a group's non-NULL values in order and the separator."""
    derive: Callable[[Scalar, SqlType, Add], Scalar] | None = None
    """DERIVED: its expression over aggregates added with ``Add``, for an argument and its
    type."""
    same_over_distinct: bool = False
    """Whether ``f(DISTINCT x)`` equals ``f(x)``, so DISTINCT is ignored."""
    distinct: bool = True
    """Whether ``f(DISTINCT x)`` is supported."""
    aliases: tuple[str, ...] = ()
    """Other names SQL calls it by."""


REGISTRY: dict[str, AggregateFunction] = {}


def register(fn: AggregateFunction) -> AggregateFunction:
    for name in (fn.name, *fn.aliases):
        REGISTRY[name] = fn
    return fn


def lookup(name: str) -> AggregateFunction:
    if name not in REGISTRY:
        raise KeyError(f"unknown aggregate {name}")
    return REGISTRY[name]


def _anything(t: SqlType) -> bool:
    return True


def _typed(t: SqlType) -> bool:
    return t.kind is not Kind.NULL


def _numeric(t: SqlType) -> bool:
    return t.is_numeric


def _boolean(t: SqlType) -> bool:
    return t.kind is Kind.BOOLEAN


def _same(t: SqlType | None) -> SqlType:
    assert t is not None
    return t


def _sum_type(t: SqlType | None) -> SqlType:
    """As PostgreSQL: a sum of INTs is a BIGINT, of BIGINTs a NUMERIC, of NUMERIC(p, s) a
    NUMERIC(38, s), of floats the float type."""
    assert t is not None
    if t.kind is Kind.INT:
        return BIGINT
    if t.kind is Kind.BIGINT:
        return NUMERIC_MAX
    if t.kind is Kind.NUMERIC:
        return replace(t, precision=38)
    return t


def _count(pairs: Pairs) -> int:
    return sum(mult for _, mult in pairs)


def _sum(pairs: Pairs) -> Any:
    if _count(pairs) == 0:
        return None
    # Sorted, so that a DOUBLE sum does not depend on the order of the rows.
    return sum(sorted(value * mult for value, mult in pairs))


def _present(pairs: Pairs) -> list[Any]:
    return [value for value, mult in pairs if mult > 0]


register(AggregateFunction("count", Maintenance.SUMMED, _anything, lambda t: BIGINT, _count))
register(AggregateFunction("sum", Maintenance.SUMMED, _numeric, _sum_type, _sum,
                           sums_values=True))
register(AggregateFunction("min", Maintenance.EXTREME, _typed, _same,
                           lambda pairs: min(_present(pairs), default=None),
                           same_over_distinct=True))
register(AggregateFunction("max", Maintenance.EXTREME, _typed, _same,
                           lambda pairs: max(_present(pairs), default=None),
                           same_over_distinct=True))


def _joined(pairs: Pairs, separator: str | None) -> Any:
    """``string_agg``: the values in order, joined by ``separator``."""
    values = [value for value, mult in pairs for _ in range(mult)]
    return (separator or "").join(values) if values else None


def _concatenated(pairs: Pairs, separator: str | None) -> Any:
    """``array_agg`` (over one-element arrays): their elements in order."""
    values = [item for value, mult in pairs for _ in range(mult) for item in value]
    return tuple(values) if pairs else None


def _json_array(pairs: Pairs, separator: str | None) -> Any:
    """``jsonb_agg`` (over JSONB texts, JSON ``null`` for NULL): the JSON array of them."""
    values = [value for value, mult in pairs for _ in range(mult)]
    return "[" + ",".join(values) + "]" if values else None


def _jsonb(t: SqlType) -> bool:
    return t.kind is Kind.JSONB


def _text(t: SqlType) -> bool:
    return t.kind is Kind.TEXT


def _one_element_array(t: SqlType) -> bool:
    return t.kind is Kind.ARRAY and t.element is not None and t.element.kind is not Kind.ARRAY


register(AggregateFunction("string_agg", Maintenance.EXTREME, _text, lambda t: TEXT, _joined,
                           ordered=True, distinct=False))
register(AggregateFunction("array_agg", Maintenance.EXTREME, _one_element_array, _same,
                           _concatenated, ordered=True, distinct=False))
register(AggregateFunction("jsonb_agg", Maintenance.EXTREME, _jsonb, _same, _json_array,
                           ordered=True, distinct=False))


def _double(expr: Scalar) -> Scalar:
    return Cast(expr, DOUBLE)


def _nonzero(expr: Scalar) -> Scalar:
    """``expr``, NULL where it is 0: a divisor."""
    return Call("nullif", (expr, Lit(0.0, DOUBLE)))


def _avg(x: Scalar, t: SqlType, add: Add) -> Scalar:
    total = _double(add("sum", x))
    return Call("div", (total, _double(Call("nullif", (add("count", x), Lit(0, BIGINT))))))


def _all_or_any(any_true: bool) -> Callable[[Scalar, SqlType, Add], Scalar]:
    """``bool_and`` (no FALSE value) or, when ``any_true``, ``bool_or`` (some TRUE value);
    NULL over no non-NULL value."""
    def derive(x: Scalar, t: SqlType, add: Add) -> Scalar:
        # nullif(x, TRUE) keeps the FALSE values, nullif(x, FALSE) the TRUE ones
        some = add("count", Call("nullif", (x, Lit(not any_true, BOOLEAN))))
        test = "gt" if any_true else "eq"
        empty = Call("eq", (add("count", x), Lit(0, BIGINT)))
        return Case(((empty, Lit(None, BOOLEAN)),), Call(test, (some, Lit(0, BIGINT))))
    return derive


def _exact(x: Scalar, t: SqlType) -> Scalar:
    """``x`` in a type whose square is exact: NUMERIC(19, 0) for integers (its square is a
    NUMERIC(38, 0)), DOUBLE for floats, NUMERIC as it is."""
    if t.kind in INTEGER_KINDS:
        return Cast(x, SqlType(Kind.NUMERIC, 19, 0))
    if t.kind is Kind.NUMERIC:
        return x
    return _double(x)


def _variance(sample: bool, root: bool) -> Callable[[Scalar, SqlType, Add], Scalar]:
    """``var_samp``/``var_pop`` (``sample``), their square roots when ``root``."""
    def derive(x: Scalar, t: SqlType, add: Add) -> Scalar:
        exact = _exact(x, t)
        n = _double(add("count", x))
        total = _double(add("sum", exact))
        squares = _double(add("sum", Call("mul", (exact, exact))))
        m2 = Call("sub", (squares, Call("div", (Call("mul", (total, total)), _nonzero(n)))))
        m2 = Case(((Call("lt", (m2, Lit(0.0, DOUBLE))), Lit(0.0, DOUBLE)),), m2)
        divisor = Call("sub", (n, Lit(1.0, DOUBLE))) if sample else n
        value = Call("div", (m2, _nonzero(divisor)))
        return Call("sqrt", (value,)) if root else value
    return derive


def _double_type(t: SqlType | None) -> SqlType:
    return DOUBLE


def _boolean_type(t: SqlType | None) -> SqlType:
    return BOOLEAN


register(AggregateFunction("avg", Maintenance.DERIVED, _numeric, _double_type, derive=_avg))
register(AggregateFunction("bool_and", Maintenance.DERIVED, _boolean, _boolean_type,
                           derive=_all_or_any(any_true=False),
                           same_over_distinct=True))
register(AggregateFunction("bool_or", Maintenance.DERIVED, _boolean, _boolean_type,
                           derive=_all_or_any(any_true=True),
                           same_over_distinct=True))
for _name, _sample, _root, _aliases in (("var_samp", True, False, ("variance",)),
                                        ("var_pop", False, False, ()),
                                        ("stddev_samp", True, True, ("stddev",)),
                                        ("stddev_pop", False, True, ())):
    register(AggregateFunction(_name, Maintenance.DERIVED, _numeric, _double_type,
                               derive=_variance(_sample, _root), distinct=False,
                               aliases=_aliases))


def maintained(name: str) -> AggregateFunction:
    """The SUMMED or EXTREME aggregate ``name`` (a ``Reduce``'s)."""
    fn = lookup(name)
    if fn.maintenance is Maintenance.DERIVED:
        raise KeyError(f"{name} is not maintained by a Reduce: it is derived from others")
    return fn


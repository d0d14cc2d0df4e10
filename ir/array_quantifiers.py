"""``x op ANY (array)`` and ``x op ALL (array)``: a comparison of ``x`` with each element.

As PostgreSQL, in three-valued logic: ANY is TRUE when some comparison is, else NULL when some
is NULL (``x`` or an element NULL), else FALSE (so FALSE over an empty array); ALL is FALSE
when some comparison is, else NULL when some is NULL, else TRUE. A NULL array gives NULL.
Spark's ``exists`` and ``forall`` follow the same logic.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from matview.ir.types import BOOLEAN, Kind, SqlType

OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge}
"""The comparisons, by the name of their function."""


def _returns(types: list[SqlType]) -> SqlType:
    value, array = types
    if array.kind is Kind.NULL:
        return BOOLEAN
    if array.kind is not Kind.ARRAY or array.element not in (value, None) and \
            value.kind is not Kind.NULL:
        raise TypeError(f"operator does not exist: {value} = ANY ({array})")
    return BOOLEAN


def _quantified(compare: Callable[[Any, Any], Any], every: bool) -> Callable[..., Any]:
    def meaning(value: Any, array: Sequence[Any] | None) -> bool | None:
        if array is None:
            return None
        result: bool | None = every
        for element in array:
            held = None if value is None or element is None else bool(compare(value, element))
            if held is not every and held is not None:
                return held
            if held is None:
                result = None
        return result
    return meaning


def _spark(compare: Callable[[Any, Any], Any], every: bool) -> Callable[..., Any]:
    def lowering(F: Any, value: Any, array: Any) -> Any:
        return (F.forall if every else F.exists)(array, lambda e: compare(value, e))
    return lowering


FUNCTIONS = [(f"{'all' if every else 'any'}_{name}", _returns, _quantified(compare, every),
              _spark(compare, every), (2, 2))
             for name, compare in OPERATORS.items() for every in (False, True)]
"""``any_eq(x, array)`` ... ``all_ge(x, array)``: name, type rule, Python meaning, Spark
lowering and arity (NULL arguments handled by the meaning)."""

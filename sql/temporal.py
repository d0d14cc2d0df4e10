"""Temporal filters: ``mz_now()`` compared with an expression of the row, in the AND-ed
conditions of WHERE (and of the ON of inner joins).

Each such comparison is normalized to ``mz_now() OP e`` with OP one of eq, lt, le, gt, ge
(``e <= mz_now()`` becomes ``mz_now() >= e``, ``mz_now() BETWEEN a AND b`` becomes
``mz_now() >= a`` and ``mz_now() <= b``), the form ``linear_logic.temporal_parts`` reads; ``e``
is a TIMESTAMP, TIMESTAMPTZ, DATE or integer (milliseconds since the Unix epoch). Any other use of
``mz_now()`` in a view is an error saying why and what to write instead (``misuse``). A
one-shot statement (``statement_time.one_shot``) reads at one time, so there ``mz_now()``
is a value like any other, anywhere (``value``), as in Materialize.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matview.ir.linear_logic import MZ_NOW
from matview.ir.scalar import Scalar
from matview.ir.types import INTEGER_KINDS, MZ_TIMESTAMP, TIMESTAMP, TIMESTAMP_KINDS, Kind
from matview.sql.coerce import TypedScalar, call, cast, is_string_literal
from matview.sql.errors import SqlError, SqlTypeError, UnsupportedError
from matview.sql.operators import binary
from matview.sql.statement_time import in_view, one_shot
from matview.sql.walk import chain, outside_queries
from sqlglot import exp

if TYPE_CHECKING:
    from matview.sql.scalars import ExprBinder

_COMPARISONS = {exp.EQ: "eq", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}
_FLIPPED = {"eq": "eq", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_ALLOWED = "mz_now() can only be compared (=, <, <=, >, >=, BETWEEN) in AND-ed conditions of WHERE"
_BOUND_KINDS = (Kind.DATE, Kind.NULL) + TIMESTAMP_KINDS + INTEGER_KINDS

_CLAUSE_HINTS = {
    "the SELECT list": "not in the SELECT list — a row of a view cannot change with time by "
                       "itself; keep rows only while a condition on mz_now() holds, in WHERE",
    "GROUP BY": "not in GROUP BY — filter the rows in WHERE, then group them",
    "HAVING": "not in HAVING — filter the rows in WHERE before grouping them",
    "ORDER BY": "not in ORDER BY",
    "FROM": "not in the arguments of a function in FROM",
    "DELETE or UPDATE": "not in DELETE or UPDATE — they change the rows at the current time; "
                        "write the condition with a timestamp literal instead",
    "this statement": "not in this statement",
}

_REASONS = {
    "or": "under OR the view cannot be maintained — write the conditions as separate views "
          "combined with UNION ALL",
    "not": "not under NOT — write the opposite comparison instead (NOT mz_now() < x is "
           "mz_now() >= x)",
    "ne": "<> is not a temporal filter — write mz_now() < x and mz_now() > x as two views "
          "combined with UNION ALL",
    "case": "under CASE the view cannot be maintained — write each case as a view with its "
            "condition in WHERE, combined with UNION ALL",
    "aggregate": "not inside an aggregate function — filter the rows in WHERE, then aggregate "
                 "them",
    "both": "not on both sides of a comparison — compare it with an expression of the row",
    "nested": "not with an expression that itself contains mz_now() — compare it with an "
              "expression of the row",
    "expression": "not inside another expression or function — move the rest of the "
                  "expression to the other side (mz_now() > ts + INTERVAL '1 hour', not "
                  "mz_now() - INTERVAL '1 hour' > ts)",
}


def is_mz_now(node: exp.Expr) -> bool:
    """Whether ``node`` is a call ``mz_now(...)``."""
    return isinstance(node, exp.Anonymous) and node.name.lower() == "mz_now"


def mz_now_calls(node: exp.Expr) -> list[exp.Expr]:
    """The ``mz_now()`` calls in ``node``, not looking into subqueries."""
    return [sub for sub in outside_queries(node) if is_mz_now(sub)]


def conditions(binder: ExprBinder, node: exp.Expr, clause: str) -> list[Scalar]:
    """The predicates of the condition ``node`` of ``clause`` (WHERE, JOIN/ON): the condition
    itself when it has no ``mz_now()``, else each AND-ed conjunct, temporal ones normalized."""
    if not mz_now_calls(node) or one_shot():
        return [binder.predicate(node, clause).expr]
    out: list[Scalar] = []
    for conjunct in _conjuncts(node):
        if not mz_now_calls(conjunct):
            out.append(binder.predicate(conjunct, "AND").expr)
            continue
        for left, op, right in _comparisons(conjunct):
            out.append(_normalized(binder, left, op, right, conjunct))
    return out


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    return [_unparen(c) for c in chain(node, exp.And)]


def _comparisons(node: exp.Expr) -> list[tuple[exp.Expr, str, exp.Expr]]:
    """The comparisons ``(left, op, right)`` a temporal conjunct stands for."""
    if type(node) in _COMPARISONS:
        return [(node.this, _COMPARISONS[type(node)], node.expression)]
    if isinstance(node, exp.Between) and not node.args.get("symmetric"):
        return [(node.this, "ge", node.args["low"]), (node.this, "le", node.args["high"])]
    raise misuse(mz_now_calls(node)[0])


def _normalized(binder: ExprBinder, left: exp.Expr, op: str, right: exp.Expr,
                node: exp.Expr) -> Scalar:
    if not mz_now_calls(left) and not mz_now_calls(right):
        return binary(binder, op, left, right, node).expr
    left, right = _unparen(left), _unparen(right)
    if is_mz_now(right) and not is_mz_now(left):
        left, op, right = right, _FLIPPED[op], left
    if not is_mz_now(left):
        raise misuse(mz_now_calls(left)[0] if mz_now_calls(left) else mz_now_calls(right)[0])
    if mz_now_calls(right):
        raise misuse(left)
    _check_no_arguments(left)
    bound = binder.bind(right)
    if is_string_literal(bound):
        bound = cast(bound, TIMESTAMP, right)
    if bound.type.kind not in _BOUND_KINDS:
        raise SqlTypeError.at(
            f"mz_now() cannot be compared with type {bound.type}: compare it with a timestamp, "
            "a date or an integer (milliseconds since the Unix epoch)", right)
    return call(op, [TypedScalar(MZ_NOW, MZ_TIMESTAMP), bound], node).expr


def _unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _check_no_arguments(node: exp.Expr) -> None:
    if node.expressions:
        raise SqlTypeError.at("function mz_now() takes no arguments", node)


def value(node: exp.Expr) -> TypedScalar:
    """``mz_now()`` as a value: in a one-shot statement the time it reads at (Materialize's
    peeks; substituted when that time is chosen, ``ir.mz_now``), in a view an error."""
    _check_no_arguments(node)
    if not (one_shot() or in_view()):
        raise UnsupportedError.at(
            "mz_now() cannot be used in INSERT, UPDATE or DELETE: they change the rows at the "
            "current time; write a timestamp instead (now())", node)
    if not one_shot():
        raise misuse(node)
    return TypedScalar(MZ_NOW, MZ_TIMESTAMP)


def misuse(node: exp.Expr) -> SqlError:
    """The error for ``mz_now()`` call ``node`` used where it is not a temporal filter."""
    _check_no_arguments(node)
    reason = _reason(node)
    return UnsupportedError.at(f"{_ALLOWED}; {reason}", node)


def _reason(node: exp.Expr) -> str:
    ancestors = []
    parent = node.parent
    while parent is not None:
        ancestors.append(parent)
        parent = parent.parent
    if any(isinstance(a, exp.AggFunc) for a in ancestors):
        return _REASONS["aggregate"]
    clause = _clause(node)
    if clause not in ("WHERE", "ON"):
        return _CLAUSE_HINTS[clause]
    child, at = node, 0
    while at < len(ancestors) and isinstance(ancestors[at], exp.Paren):
        child, at = ancestors[at], at + 1
    first = ancestors[at] if at < len(ancestors) else None
    if isinstance(first, exp.NEQ):
        return _REASONS["ne"]
    if type(first) in _COMPARISONS or isinstance(first, exp.Between):
        assert first is not None
        others = [c for c in first.iter_expressions() if c is not child]
        if any(is_mz_now(_unparen(o)) for o in others) or is_mz_now(_unparen(child)) and any(
                mz_now_calls(o) for o in others):
            nested = [o for o in others if mz_now_calls(o) and not is_mz_now(_unparen(o))]
            return _REASONS["nested" if nested else "both"]
        at += 1
        while at < len(ancestors) and isinstance(ancestors[at], (exp.Paren, exp.And)):
            at += 1
        first = ancestors[at] if at < len(ancestors) else None
    if isinstance(first, exp.Or):
        return _REASONS["or"]
    if isinstance(first, exp.Not):
        return _REASONS["not"]
    if isinstance(first, (exp.Case, exp.If)):
        return _REASONS["case"]
    if isinstance(first, (exp.Where, exp.Join)):
        return _CLAUSE_HINTS["DELETE or UPDATE"]
    return _REASONS["expression"]


def _clause(node: exp.Expr) -> str:
    """The clause ``node`` is in: WHERE, ON, the SELECT list, GROUP BY, ..."""
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, exp.Where):
            return "DELETE or UPDATE" if isinstance(parent.parent, (exp.Delete, exp.Update)) \
                else "WHERE"
        if isinstance(parent, exp.Join) and child.arg_key == "on":
            return "ON"
        for kind, name in ((exp.Having, "HAVING"), (exp.Group, "GROUP BY"),
                           (exp.Order, "ORDER BY"),
                           ((exp.Table, exp.Lateral, exp.Unnest), "FROM")):
            if isinstance(parent, kind):
                return name
        if isinstance(parent, exp.Select) and child.arg_key == "expressions":
            return "the SELECT list"
        child, parent = parent, parent.parent
    return "this statement"

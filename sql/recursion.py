"""Recursive WITH queries: PostgreSQL's ``WITH RECURSIVE`` and Materialize's ``WITH
MUTUALLY RECURSIVE``, both bound to a ``LetRec`` (``ir.relation``).

``WITH RECURSIVE r(cols) AS (base UNION [ALL] step)`` is the binding

    r = base ⊎ step(r)              (UNION ALL)
    r = distinct(base ⊎ step(r))    (UNION: intervals by length, ``interval_keys``)

iterated from empty to a fixed point. PostgreSQL evaluates it with a working table (each
iteration's step reads only the rows the previous one added); as it requires the step to be
linear in r (r read once, not under an aggregate, DISTINCT, a window or LIMIT), both reach
the same rows, and those requirements are checked here with PostgreSQL's messages. A WITH
query that does not read itself is an ordinary one.

``WITH MUTUALLY RECURSIVE [(RETURN | ERROR AT RECURSION LIMIT n)] a (x int, ...) AS (...),
b (...) AS (...) query``: every binding declares its columns' types and may read every
binding, any number of times and under anything; all start empty and are iterated together
until none changes. Without the option a query stops with an error after
``DEFAULT_RECURSION_LIMIT`` iterations.
"""

from __future__ import annotations

from collections.abc import Iterator

from matview.ir.linear_logic import is_temporal_steps
from matview.ir.recursion import DEFAULT_RECURSION_LIMIT
from matview.ir.relation import (
    AsOfJoin,
    Join,
    LetRec,
    Linear,
    Recur,
    Reduce,
    Relation,
    TopK,
    Union,
    Window,
    inputs_of,
)
from matview.ir.render import own_subplans
from matview.ir.subquery import outer_columns
from matview.ir.types import SqlType, common_type
from matview.sql import interval_keys
from matview.sql.coerce import cast_columns
from matview.sql.context import Context
from matview.sql.datatypes import column_type
from matview.sql.dialect_nodes import MutuallyRecursive, RecursiveBinding
from matview.sql.errors import SqlError, SqlTypeError, UnsupportedError
from matview.sql.from_items import rename
from matview.sql.names import normalize
from matview.sql.statements import Query
from sqlglot import exp


def reads_itself(node: exp.Expr, name: str) -> bool:
    """Whether WITH query ``node`` reads ``name``, its own name (then it is recursive)."""
    return next(_references(node, name), None) is not None


def recursive_query(body: exp.Expr, name: str, aliases: list[str], alias: exp.Expr,
                    ctx: Context) -> Query:
    """The ``LetRec`` of PostgreSQL's recursive query ``name`` (see the module docstring)."""
    from matview.sql.query import subquery

    if not isinstance(body, exp.Union):
        raise SqlError.at(f'recursive query "{name}" does not have the form '
                          "non-recursive-term UNION [ALL] recursive-term", body)
    for clause in ("order", "limit", "offset"):
        if body.args.get(clause) is not None:
            raise UnsupportedError.at(f'{"ORDER BY" if clause == "order" else clause.upper()}'
                                      " in a recursive query is not supported", body.args[clause])
    base_node, step_node = body.this, body.expression
    inner = next(_references(base_node, name), None)
    if inner is not None:
        raise SqlError.at(f'recursive reference to query "{name}" must not appear within its '
                          "non-recursive term", inner)
    base = subquery(base_node, ctx, "a recursive query's non-recursive term")
    names = rename(base.column_names, aliases, name, alias)
    types = base.plan.types
    reference = Query(Recur(0, name, types), names)
    step = subquery(step_node, ctx.with_cte(name, reference),
                    "a recursive query's recursive term")
    if len(step.column_names) != len(names):
        raise SqlError.at("each UNION query must have the same number of columns", step_node)
    first = next(_references(step_node, name))
    _check_linear(step.plan, name, first)
    value: Relation = Union((base.plan, _cast_to(step.plan, types, name, step_node,
                                                 "in non-recursive term")))
    if body.args.get("distinct"):
        value = interval_keys.distinct(value, types)
    _check_not_nested(value, first)
    _check_uncorrelated(value, first)
    _check_loop(value, step_node)
    return Query(LetRec((name,), (value,), 0), names)


def mutually_recursive(with_: MutuallyRecursive, ctx: Context) -> Context:
    """The bindings of ``WITH MUTUALLY RECURSIVE``, each a ``LetRec`` of them all."""
    from matview.sql.query import subquery

    limit, at_limit = DEFAULT_RECURSION_LIMIT, "error"
    if with_.args.get("limit") is not None:
        node = with_.args["limit"]
        limit, at_limit = int(node.name), str(with_.args["at_limit"])
        if limit < 1:
            raise SqlError.at("RECURSION LIMIT must be at least 1", node)
    bindings: list[RecursiveBinding] = list(with_.expressions)
    names: list[str] = []
    declared: list[tuple[tuple[str, ...], tuple[SqlType, ...]]] = []
    for binding in bindings:
        name = normalize(binding.args["alias"])
        if name in names:
            raise SqlError.at(f'WITH query name "{name}" specified more than once',
                              binding.args["alias"])
        names.append(name)
        columns = [normalize(c.this) for c in binding.args["columns"]]
        types = tuple(column_type(c.args["kind"], n)
                      for c, n in zip(binding.args["columns"], columns, strict=True))
        declared.append((tuple(columns), types))
    inner = ctx
    for index, (name, (columns, types)) in enumerate(zip(names, declared, strict=True)):
        inner = inner.with_cte(name, Query(Recur(index, name, types), columns))
    values = []
    for binding, name, (columns, types) in zip(bindings, names, declared, strict=True):
        query = subquery(binding.this, inner, "a WITH MUTUALLY RECURSIVE binding")
        if len(query.column_names) != len(columns):
            raise SqlError.at(f'binding "{name}" declares {len(columns)} columns but its '
                              f"query has {len(query.column_names)}", binding.this)
        values.append(_cast_to(query.plan, types, name, binding.this, "declared"))
    for value, binding in zip(values, bindings, strict=True):
        _check_not_nested(value, binding.this)
        _check_uncorrelated(value, binding.this)
        _check_loop(value, binding.this)
    for index, (name, (columns, _)) in enumerate(zip(names, declared, strict=True)):
        ctx = ctx.with_cte(name, Query(
            LetRec(tuple(names), tuple(values), index, limit, at_limit), columns))
    return ctx


def _references(node: exp.Expr, name: str) -> Iterator[exp.Table]:
    """The references of ``node`` to a relation ``name`` (unqualified table names)."""
    for table in node.find_all(exp.Table):
        if not table.args.get("db") and isinstance(table.this, exp.Identifier) and \
                normalize(table.this) == name:
            yield table


def _cast_to(plan: Relation, types: tuple[SqlType, ...], name: str, node: exp.Expr,
             where: str) -> Relation:
    """``plan`` with its columns cast to ``types``, which they must widen to."""
    for i, (t, to) in enumerate(zip(plan.types, types, strict=True)):
        try:
            fits = t == to or common_type(to, t) == to
        except TypeError:
            fits = False
        if not fits:
            raise SqlTypeError.at(f'recursive query "{name}" column {i + 1} has type {to} '
                                  f"{where} but type {t} overall", node)
    return plan if plan.types == types else cast_columns(plan, types)


_NOT_LINEAR = {Reduce: "an aggregate, DISTINCT, GROUP BY or a set operation",
               TopK: "ORDER BY with LIMIT or OFFSET", Window: "a window function"}


def _check_linear(plan: Relation, name: str, node: exp.Expr) -> bool:
    """Raise unless ``plan`` reads ``Recur`` ``name`` linearly (PostgreSQL's rules: once per
    join, not under an aggregate, a window, LIMIT or a subquery); returns whether it reads
    it at all."""
    if isinstance(plan, Recur):
        return True
    for sub in own_subplans(plan):
        if _check_linear(sub, name, node):
            raise SqlError.at(f'recursive reference to query "{name}" must not appear within '
                              "a subquery", node)
    reads = [_check_linear(child, name, node) for child in inputs_of(plan)]
    if not any(reads):
        return False
    if isinstance(plan, Join) and sum(reads) > 1:
        raise SqlError.at(f'recursive reference to query "{name}" must not appear more than '
                          "once", node)
    for kind, what in _NOT_LINEAR.items():
        if isinstance(plan, kind):
            raise UnsupportedError.at(
                f'recursive reference to query "{name}" must not appear within {what} in '
                "WITH RECURSIVE (write WITH MUTUALLY RECURSIVE, whose bindings are iterated "
                "to a fixed point, for such queries)", node)
    return True


def _check_loop(plan: Relation, node: exp.Expr) -> bool:
    """Refuse what the runtime does not compute over a recursive binding (a temporal
    filter); returns whether ``plan`` reads a binding."""
    reads = [_check_loop(child, node) for child in inputs_of(plan)]
    if not (isinstance(plan, Recur) or any(reads)):
        return False
    if isinstance(plan, Linear) and is_temporal_steps(plan.steps):
        raise UnsupportedError.at("mz_now() over a recursive query's rows inside its "
                                  "definition is not supported yet (use it in the query that "
                                  "reads the recursive query)", node)
    if isinstance(plan, AsOfJoin):
        raise UnsupportedError.at("JOIN ... FOR SYSTEM_TIME AS OF over a recursive query's "
                                  "rows inside its definition is not supported", node)
    return True


def _check_uncorrelated(plan: Relation, node: exp.Expr) -> None:
    """Refuse a recursive query, in a subquery, that reads the enclosing query's columns
    (decorrelation would have to run its loop once per outer row)."""
    if outer_columns(plan):
        raise UnsupportedError.at("a recursive query in a subquery cannot read the columns "
                                  "of the enclosing query", node)


def _check_not_nested(plan: Relation, node: exp.Expr) -> None:
    """Refuse a recursive query inside another's definition."""
    for child in inputs_of(plan):
        if isinstance(child, LetRec):
            raise UnsupportedError.at("a recursive query inside the definition of another is "
                                      "not supported yet", node)
        _check_not_nested(child, node)

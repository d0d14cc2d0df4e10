"""Query expressions: WITH, UNION, INTERSECT and EXCEPT [ALL], and parenthesized queries
around SELECT blocks and VALUES lists (``values``).

A chain of UNION ALL becomes one ``Union`` over all operands (each cast to the column types
common to all); UNION also removes duplicates with a ``Reduce`` over every column.

``A INTERSECT|EXCEPT [ALL] B`` counts each row's copies in ``A`` and in ``B`` with one
``Reduce`` over every column (NULLs equal, as SQL's set operations have them) and repeats
each row as many times as the operation keeps (``repeat_row``):

    n(r) = min(a, b)           INTERSECT ALL        a = copies of r in A,  b = in B
         = a - b               EXCEPT ALL           (kept when n(r) > 0)
         = 1 if a > 0 and b > 0 else 0              INTERSECT
         = 1 if a > 0 and b = 0 else 0              EXCEPT

    Linear[map n; filter n > 0; repeat_row(n); project r](
        Reduce_r,count(a),count(b)(π_{r, TRUE, NULL}(A) ⊎ π_{r, NULL, TRUE}(B)))

The ``Reduce`` keeps the two counts per row and the ``Linear`` is linear, so a change to
either side touches only the rows it changes, deletions included.

Every set operation tells rows apart as SQL's ``=`` does, intervals by length (``'1 mon'``
and ``'30 days'`` are one row): its ``Reduce`` groups an interval by its length and a
group shows its smallest interval (``interval_keys``), whatever order rows arrive in.
"""

from __future__ import annotations

import sqlglot
from matview.ir.aggregate_call import Aggregate
from matview.ir.plans import compute
from matview.ir.relation import Linear, Relation, TopK, Union
from matview.ir.scalar import Call, Case, Col, Lit, Scalar, conjoin
from matview.ir.steps import Filter, Map, Project, Repeat
from matview.ir.types import BIGINT, BOOLEAN, Kind, common_type
from matview.sql import interval_keys
from matview.sql.catalog import CatalogItem
from matview.sql.coerce import cast_columns
from matview.sql.context import Context
from matview.sql.dialect import Matview
from matview.sql.dialect_nodes import MutuallyRecursive
from matview.sql.errors import SqlError, SqlTypeError, UnsupportedError
from matview.sql.from_items import rename
from matview.sql.names import normalize
from matview.sql.order import limit_offset, order_by
from matview.sql.recursion import mutually_recursive, reads_itself, recursive_query
from matview.sql.select import bind_select
from matview.sql.statement_time import timeless
from matview.sql.statements import Query
from matview.sql.values import bind_values
from sqlglot import exp


def bind_query(node: exp.Expr, ctx: Context, sorting: bool = False) -> Query:
    """The query ``node`` denotes, with its ORDER BY, LIMIT and OFFSET; with ``sorting`` (a
    statement's query, whose rows are returned in order) it may keep columns it sorts by
    only (``Query.hidden``), else they are dropped (after its ``TopK`` if it has one)."""
    query = _bound(node, ctx)
    if sorting or not query.hidden:
        return query
    shown = len(query.column_names)
    plan = top_k(node, query, "a query") if query.limit is not None or query.offset else \
        query.plan
    return Query(compute(plan, [Col(i) for i in range(shown)]), query.column_names,
                 tuple(k for k in query.order_by if k[0] < shown))


def _bound(node: exp.Expr, ctx: Context) -> Query:
    ctx = _with_ctes(node, ctx)
    if isinstance(node, exp.Select):
        return bind_select(node, ctx)
    if isinstance(node, exp.Union):
        return _bind_union(node, ctx)
    if isinstance(node, (exp.Intersect, exp.Except)):
        return _bind_counted(node, ctx)
    if isinstance(node, exp.Values):
        return bind_values(node)
    if isinstance(node, exp.Subquery):
        inner = bind_query(node.this, ctx)
        if not any(node.args.get(k) for k in ("order", "limit", "offset")):
            return inner
        if inner.limit is not None or inner.offset is not None:
            raise UnsupportedError.at("nested LIMIT and OFFSET are not supported yet", node)
        return _ordered(node, inner.plan, inner.column_names)
    raise UnsupportedError.at(f"{node.key.upper()} is not supported as a query yet", node)


def subquery(node: exp.Expr, ctx: Context, where: str) -> Query:
    """A query used inside another statement (``where`` names the place, for errors): its
    ORDER BY is ignored unless it ends in LIMIT or OFFSET, which make it a ``TopK``."""
    query = bind_query(node, ctx)
    if query.limit is None and query.offset is None:
        return Query(query.plan, query.column_names)
    return Query(top_k(node, query, where), query.column_names)


def bind_view(item: CatalogItem, ctx: Context) -> Query:
    """The stored query of view ``item``, bound in a context without CTEs."""
    assert item.query_sql is not None
    try:
        with timeless():
            query = bind_query(sqlglot.parse_one(item.query_sql, dialect=Matview),
                               Context(ctx.catalog))
    except SqlError as error:
        raise type(error)(f'in view "{item.name}": {error.message}') from error
    return Query(query.plan, tuple(f.name for f in item.fields))


def top_k(node: exp.Expr, query: Query, where: str) -> TopK:
    """The ``TopK`` of ``query`` (``node``), which ends in LIMIT or OFFSET, in ``where``."""
    clause = node.args.get("limit") or node.args.get("offset") or node
    arrays = [name for name, t in zip(query.column_names, query.plan.types, strict=True)
              if t.kind is Kind.ARRAY]
    if arrays:
        raise UnsupportedError.at(f'LIMIT and OFFSET in {where} with an array column '
                                  f'("{arrays[0]}") are not supported yet', clause)
    return TopK(query.plan, query.order_by, query.limit, query.offset or 0)


def _with_ctes(node: exp.Expr, ctx: Context) -> Context:
    with_ = node.args.get("with_")
    if with_ is None:
        return ctx
    if isinstance(with_, MutuallyRecursive):
        return mutually_recursive(with_, ctx)
    defined: set[str] = set()
    for cte in with_.expressions:
        alias = cte.args["alias"]
        name = normalize(alias.this)
        if name in defined:
            raise SqlError.at(f'WITH query name "{name}" specified more than once', alias)
        defined.add(name)
        aliases = [normalize(c) for c in alias.columns]
        if with_.args.get("recursive") and reads_itself(cte.this, name):
            ctx = ctx.with_cte(name, recursive_query(cte.this, name, aliases, alias, ctx))
            continue
        query = subquery(cte.this, ctx, "a WITH query")
        ctx = ctx.with_cte(name, Query(query.plan, rename(query.column_names, aliases, name,
                                                          alias)))
    return ctx


def _bind_union(node: exp.Union, ctx: Context) -> Query:
    plans, names = _bound_operands(node, _operands(node), ctx)
    plan: Relation = Union(plans)
    if node.args.get("distinct"):
        plan = interval_keys.distinct(plan, plan.types)
    return _ordered(node, plan, names)


def _bind_counted(node: exp.Intersect | exp.Except, ctx: Context) -> Query:
    """INTERSECT or EXCEPT [ALL]: each row repeated as many times as the operation keeps it,
    from its copies on each side (the module docstring). Rows are equal as PostgreSQL
    compares them, intervals by length (``interval_keys.rows``): a group of rows equal so
    shows its smallest interval, so the result does not depend on the order rows arrive
    in (``'1 mon'`` INTERSECT ``'30 days'`` is ``'30 days'``)."""
    (left, right), names = _bound_operands(node, [node.this, node.expression], ctx)
    arity = len(names)
    row = [Col(i) for i in range(arity)]
    present, absent = Lit(True, BOOLEAN), Lit(None, BOOLEAN)
    tagged = Union((compute(left, [*row, present, absent]),
                    compute(right, [*row, absent, present])))
    counts, kept = interval_keys.rows(tagged, left.types, (
        Aggregate("count", Col(arity)), Aggregate("count", Col(arity + 1))))
    a, b = Col(arity), Col(arity + 1)
    zero, one = Lit(0, BIGINT), Lit(1, BIGINT)
    copies: Scalar
    if node.args.get("distinct"):
        other = Call("gt" if isinstance(node, exp.Intersect) else "eq", (b, zero))
        copies = Case(((conjoin([Call("gt", (a, zero)), other]), one),), zero)
    elif isinstance(node, exp.Intersect):
        copies = Case(((Call("lt", (a, b)), a),), b)
    else:
        copies = Call("sub", (a, b))
    n = Col(counts.arity)
    plan = Linear(counts, (Map((copies,)), Filter((Call("gt", (n, zero)),)), Repeat(n),
                           Project(kept)))
    return _ordered(node, plan, names)


def _bound_operands(node: exp.Expr, nodes: list[exp.Expr], ctx: Context
                    ) -> tuple[tuple[Relation, ...], tuple[str, ...]]:
    """The operands of a set operation, each cast to the column types common to all, and
    the first's column names."""
    word = node.key.upper()
    operands = [subquery(op, ctx, f"a {word} operand") for op in nodes]
    arity = len(operands[0].column_names)
    for op, query in zip(nodes, operands, strict=True):
        if len(query.column_names) != arity:
            raise SqlError.at(f"each {word} query must have the same number of columns", op)
    types = list(operands[0].plan.types)
    for query in operands[1:]:
        for i, t in enumerate(query.plan.types):
            try:
                types[i] = common_type(types[i], t)
            except TypeError:
                raise SqlTypeError.at(f"{word} types {types[i]} and {t} cannot be matched",
                                      node) from None
    return tuple(cast_columns(q.plan, types) for q in operands), operands[0].column_names


def _operands(node: exp.Union) -> list[exp.Expr]:
    """The operands of a UNION chain: nested unions of the same kind without their own ORDER
    BY or LIMIT are flattened, and so are UNION ALLs under a UNION (it removes duplicates)."""
    out: list[exp.Expr] = []
    for child in (node.this, node.expression):
        flat = isinstance(child, exp.Union) and (
            bool(child.args.get("distinct")) == bool(node.args.get("distinct"))
            or node.args.get("distinct")
        ) and not any(child.args.get(k) for k in ("order", "limit", "offset", "with_"))
        out.extend(_operands(child) if flat else [child])
    return out


def _ordered(node: exp.Expr, plan: Relation, names: tuple[str, ...]) -> Query:
    """``plan`` with the ORDER BY (by output name or position), LIMIT and OFFSET of ``node``."""
    keys = order_by(node.args.get("order"), names, range(len(names)), lambda _: None)
    limit, offset = limit_offset(node)
    return Query(plan, names, keys, limit, offset)

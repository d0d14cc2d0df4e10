"""Query expressions: WITH, UNION [ALL] and parenthesized queries around SELECT blocks.

A chain of UNION ALL becomes one ``Union`` over all operands (each cast to the column types
common to all); UNION also removes duplicates with a ``Reduce`` over every column.
"""

from __future__ import annotations

from matview.ir.plans import compute
from matview.ir.relation import Reduce, Relation, Union
from matview.ir.scalar import Col
from matview.ir.types import SqlType, common_type
from matview.sql.coerce import TypedScalar, cast
from matview.sql.context import Context
from matview.sql.errors import SqlError, SqlTypeError, UnsupportedError
from matview.sql.from_clause import rename
from matview.sql.names import normalize
from matview.sql.order import limit_offset, order_by
from matview.sql.select import bind_select
from matview.sql.statements import Query
from sqlglot import exp


def bind_query(node: exp.Expr, ctx: Context) -> Query:
    """The query ``node`` denotes, with its ORDER BY, LIMIT and OFFSET."""
    ctx = _with_ctes(node, ctx)
    if isinstance(node, exp.Select):
        return bind_select(node, ctx)
    if isinstance(node, exp.Union):
        return _bind_union(node, ctx)
    if isinstance(node, (exp.Intersect, exp.Except)):
        raise UnsupportedError.at(f"{node.key.upper()} is not supported yet", node)
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
    ORDER BY is ignored and LIMIT or OFFSET are not supported."""
    query = bind_query(node, ctx)
    if query.limit is not None or query.offset is not None:
        clause = node.args.get("limit") or node.args.get("offset") or node
        raise UnsupportedError.at(f"LIMIT and OFFSET in {where} are not supported yet", clause)
    return Query(query.plan, query.column_names)


def _with_ctes(node: exp.Expr, ctx: Context) -> Context:
    with_ = node.args.get("with_")
    if with_ is None:
        return ctx
    if with_.args.get("recursive"):
        raise UnsupportedError.at("WITH RECURSIVE is not supported yet", with_)
    defined: set[str] = set()
    for cte in with_.expressions:
        alias = cte.args["alias"]
        name = normalize(alias.this)
        if name in defined:
            raise SqlError.at(f'WITH query name "{name}" specified more than once', alias)
        defined.add(name)
        query = subquery(cte.this, ctx, "a WITH query")
        names = rename(query.column_names, [normalize(c) for c in alias.columns], name, alias)
        ctx = ctx.with_cte(name, Query(query.plan, names))
    return ctx


def _bind_union(node: exp.Union, ctx: Context) -> Query:
    nodes = _operands(node)
    operands = [subquery(op, ctx, "a UNION operand") for op in nodes]
    arity = len(operands[0].column_names)
    for op, query in zip(nodes, operands, strict=True):
        if len(query.column_names) != arity:
            raise SqlError.at("each UNION query must have the same number of columns", op)
    types = list(operands[0].plan.types)
    for query in operands[1:]:
        for i, t in enumerate(query.plan.types):
            try:
                types[i] = common_type(types[i], t)
            except TypeError:
                raise SqlTypeError.at(f"UNION types {types[i]} and {t} cannot be matched",
                                      node) from None
    plans = tuple(_cast_columns(q.plan, types) for q in operands)
    plan: Relation = Union(plans)
    if node.args.get("distinct"):
        plan = Reduce(plan, tuple(Col(i) for i in range(arity)), ())
    return _ordered(node, plan, operands[0].column_names)


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


def _cast_columns(plan: Relation, types: list[SqlType]) -> Relation:
    exprs = [cast(TypedScalar(Col(i), t), to).expr
             for i, (t, to) in enumerate(zip(plan.types, types, strict=True))]
    return compute(plan, exprs)


def _ordered(node: exp.Expr, plan: Relation, names: tuple[str, ...]) -> Query:
    """``plan`` with the ORDER BY (by output name or position), LIMIT and OFFSET of ``node``."""
    keys = order_by(node.args.get("order"), names, range(len(names)), lambda _: None)
    limit, offset = limit_offset(node)
    return Query(plan, names, keys, limit, offset)

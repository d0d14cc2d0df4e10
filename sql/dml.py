"""Data manipulation: INSERT, DELETE and UPDATE of a table.

``INSERT ... VALUES`` of constants (arrays of constants included: Python tuples) becomes one
``Constant`` of converted values; any other
source is a plan yielding whole rows of the table (omitted columns NULL).

DELETE and UPDATE are plans of their changes over the table ``t`` they write:

    DELETE FROM t WHERE p       =>  Linear(Get t, [filter p; repeat_row -1])
    UPDATE t SET c = e WHERE p  =>  Union(Linear(Get t, [filter p; repeat_row -1]),
                                          Linear(Get t, [filter p; map e; project (.., #e, ..)]))

``p`` and ``e`` may hold subqueries, correlated with ``t``'s row or not (the optimizer
decorrelates them as a query's). ``DELETE FROM t USING u WHERE p`` deletes each row of ``t``
once when some row of ``u`` satisfies ``p`` with it: ``p`` is ``EXISTS (SELECT 1 FROM u
WHERE p)``. ``UPDATE t SET c1 = e1, .. FROM u WHERE p`` updates those rows, each from one
row of ``u`` that satisfies ``p`` with it (PostgreSQL: which one is not said), the same for
every assignment: the one of least ``(e1, ..)``,

    ci = (SELECT value_i FROM (SELECT e1 AS value1, .. FROM u WHERE p
                               ORDER BY 1, .. LIMIT 1) AS chosen)

its names checked as ``SELECT e1, .., p FROM t, u`` (a name both hold is ambiguous).
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.plans import compute, negated
from matview.ir.relation import Get, Linear, Relation, Union
from matview.ir.scalar import Col, Scalar
from matview.ir.steps import Filter
from matview.sql.assignments import assigned, bind_assignments, column_index, is_default
from matview.sql.catalog import CatalogItem
from matview.sql.coerce import TypedScalar, assignment_cast
from matview.sql.constraints import default_value
from matview.sql.context import Context
from matview.sql.errors import DuplicateObjectError, SqlError, UnknownObjectError, UnsupportedError
from matview.sql.names import normalize, relation_name
from matview.sql.query import subquery
from matview.sql.scalars import ExprBinder
from matview.sql.scope import FromItem, RangeVar, Scope
from matview.sql.statements import Delete, Insert, Update, Upsert
from matview.sql.upsert import bind_upsert
from matview.sql.values import rows_relation
from sqlglot import exp


def bind_insert(node: exp.Insert, ctx: Context) -> Insert | Upsert:
    """``INSERT INTO table [(columns)] VALUES ... | query | DEFAULT VALUES [ON CONFLICT
    ...]`` (``sql.upsert``); a column given no value, or ``DEFAULT``, gets its default
    (``constraints.default_value``)."""
    _reject(node, {"returning": "RETURNING"})
    target = node.this
    table_node = target.this if isinstance(target, exp.Schema) else target
    item = _table(table_node, ctx, "insert into")
    names = [f.name for f in item.fields]
    if isinstance(target, exp.Schema):
        targets = [column_index(item, c, c) for c in target.expressions]
        for i, index in enumerate(targets):
            if index in targets[:i]:
                raise DuplicateObjectError.at(
                    f'column "{names[index]}" specified more than once', target.expressions[i])
    else:
        targets = list(range(len(names)))
    source = node.expression
    defaults = [default_value(item, i) for i in range(len(item.fields))]
    if node.args.get("default"):
        rows: Relation = rows_relation([_row(item, defaults, [], [], [], node)], [{}], [node])
    elif isinstance(source, exp.Values):
        rows = _values(source, item, defaults, targets)
    else:
        query = subquery(source, ctx, "INSERT ... SELECT")
        columns = [TypedScalar(Col(i), t) for i, t in enumerate(query.plan.types)]
        items = source.expressions if isinstance(source, exp.Select) else []
        nodes = items if len(items) == len(columns) else [source] * len(columns)
        row = _row(item, defaults, targets, columns, nodes, source)
        rows = compute(query.plan, [v.expr for v in row])
    conflict = node.args.get("conflict")
    if conflict is not None:
        alias = table_node.args.get("alias")
        return bind_upsert(conflict, item, rows, normalize(alias.this) if alias else item.name,
                           ctx)
    return Insert(item.name, rows)


def bind_delete(node: exp.Delete, ctx: Context) -> Delete:
    """``DELETE FROM table [WHERE predicate]``."""
    _reject(node, {"returning": "RETURNING"})
    item = _table(node.this, ctx, "delete from")
    using = node.args.get("using") or []
    return Delete(item.name, negated(_matching(item, _where(node, item, ctx, using))))


def bind_update(node: exp.Update, ctx: Context) -> Update:
    """``UPDATE table SET column = value, ... [FROM items] [WHERE predicate]``."""
    _reject(node, {"returning": "RETURNING"})
    item = _table(node.this, ctx, "update")
    from_ = node.args.get("from_")
    using = [] if from_ is None else [from_.this]
    if from_ is not None:
        node = _from_chosen(node, using, ctx)
    binder = ExprBinder(_scope(item, node.this, ctx),
                        "aggregate functions are not allowed in UPDATE")
    assignments = bind_assignments(node.expressions, item, binder)
    matched = _matching(item, _where(node, item, ctx, using))
    updated = assigned(matched, assignments, len(item.fields))
    return Update(item.name, Union((negated(matched), updated)), matched)


def _reject(node: exp.Expr, clauses: dict[str, str]) -> None:
    for arg, word in clauses.items():
        if node.args.get(arg):
            raise UnsupportedError.at(f"{word} is not supported yet", node)


def _table(node: exp.Table, ctx: Context, verb: str) -> CatalogItem:
    name = relation_name(node)
    item = ctx.catalog.lookup(name)
    if item is None:
        raise UnknownObjectError.at(f'relation "{name}" does not exist', node)
    if item.kind != "table":
        raise SqlError.at(f'cannot {verb} {item.kind} "{name}"', node)
    return item


def _scope(item: CatalogItem, node: exp.Table, ctx: Context) -> Scope:
    """The row of table ``item`` (named by ``node``'s alias), its subqueries bound in
    ``ctx``."""
    alias = node.args.get("alias")
    table = RangeVar(normalize(alias.this) if alias else item.name,
                     tuple(f.name for f in item.fields), 0)
    return Scope((FromItem(table.columns(), (table,)),), tuple(f.type for f in item.fields),
                 ctx=ctx)


def _matching(item: CatalogItem, predicate: Scalar | None) -> Relation:
    """The rows of table ``item`` that satisfy ``predicate`` (all of them when None)."""
    rows = Get(item.name, item.fields)
    return rows if predicate is None else Linear(rows, (Filter((predicate,)),))


def _from_chosen(node: exp.Update, items: list[exp.Expr], ctx: Context) -> exp.Update:
    """``node`` (``UPDATE ... FROM items``, its names checked) with each assignment's value
    from the one row of ``items`` chosen for the row it updates (the module's rule)."""
    node = node.copy()
    values = [a.expression for a in node.expressions]
    where = node.args.get("where")
    subquery(_selecting([node.this, *items], where, values), ctx, "UPDATE ... FROM")
    names = [f"value{i}" for i in range(1, len(values) + 1)]
    for assignment, name in zip(node.expressions, names, strict=True):
        chosen = _selecting(items, where, [exp.Alias(this=v, alias=exp.to_identifier(n))
                                           for v, n in zip(values, names, strict=True)])
        chosen.set("order", exp.Order(expressions=[
            exp.Ordered(this=exp.Literal.number(i)) for i in range(1, len(values) + 1)]))
        chosen.set("limit", exp.Limit(expression=exp.Literal.number(1)))
        table = exp.Subquery(this=chosen, alias=exp.TableAlias(this=exp.to_identifier("chosen")))
        picked = exp.Select(expressions=[exp.column(name)], from_=exp.From(this=table))
        assignment.set("expression", exp.Subquery(this=picked))
    return node


def _where(node: exp.Delete | exp.Update, item: CatalogItem, ctx: Context,
           using: list[exp.Expr]) -> Scalar | None:
    """The predicate of the rows ``node`` changes: its WHERE, and with ``using`` items
    (USING, UPDATE's FROM), whether some row of them satisfies it (``EXISTS (SELECT 1 FROM
    using WHERE ...)``)."""
    where = node.args.get("where")
    if where is None and not using:
        return None
    binder = ExprBinder(_scope(item, node.this, ctx),
                        "aggregate functions are not allowed in WHERE")
    if not using:
        return binder.predicate(where.this, "WHERE").expr
    select = _selecting(using, where, [exp.Literal.number(1)])
    return binder.predicate(exp.Exists(this=select), "WHERE").expr


def _selecting(items: Sequence[exp.Expr], where: exp.Where | None,
               columns: Sequence[exp.Expr]) -> exp.Select:
    """``SELECT columns FROM items WHERE ...`` (items the first of a FROM list and the
    others, each with the joins it holds), of copies of them."""
    first, *others = (i.copy() for i in items)
    joins = [*(first.args.pop("joins", None) or [])]
    for other in others:
        joins += [exp.Join(this=other), *(other.args.pop("joins", None) or [])]
    return exp.Select(expressions=[c.copy() for c in columns], from_=exp.From(this=first),
                      joins=joins, where=where.copy() if where is not None else None)


def _row(
    item: CatalogItem,
    defaults: Sequence[TypedScalar],
    targets: Sequence[int],
    values: Sequence[TypedScalar],
    nodes: Sequence[exp.Expr],
    statement: exp.Expr,
) -> list[TypedScalar]:
    """A whole table row from ``values`` for the ``targets`` columns: each value cast to its
    column's type, the other columns their ``defaults``."""
    if len(values) != len(targets):
        more = "expressions than target columns" if len(values) > len(targets) else (
            "target columns than expressions")
        raise SqlError.at(f"INSERT has more {more}", statement)
    row = list(defaults)
    for index, value, node in zip(targets, values, nodes, strict=True):
        field = item.fields[index]
        row[index] = assignment_cast(value, field.type, field.name, node)
    return row


def _values(source: exp.Values, item: CatalogItem, defaults: Sequence[TypedScalar],
            targets: Sequence[int]) -> Relation:
    binder = ExprBinder(Scope((), ()), "aggregate functions are not allowed in VALUES")
    rows, nodes = [], []
    for values in source.expressions:
        given = values.expressions
        bound = [defaults[index] if is_default(n) else binder.bind(n)
                 for index, n in zip(targets, given, strict=False)] + [
                     binder.bind(n) for n in given[len(targets):]]
        rows.append(_row(item, defaults, targets, bound, given, values))
        nodes.append(dict(zip(targets, given, strict=True)))
    return rows_relation(rows, nodes, source.expressions)

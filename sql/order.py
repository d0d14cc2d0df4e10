"""ORDER BY, LIMIT and OFFSET of a query, resolved against its output columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from matview.sql.errors import SqlError, UnknownObjectError, UnsupportedError
from matview.sql.names import normalize
from sqlglot import exp

OrderKey = tuple[int, bool, bool]


def order_by(
    order: exp.Order | None,
    names: Sequence[str],
    outputs: Sequence[object],
    match: Callable[[exp.Expr], int | None],
) -> tuple[OrderKey, ...]:
    """(output column, descending, nulls first) for each ORDER BY item, which may be an output
    column's name or position, or (via ``match``) an expression equal to a select item.
    ``outputs`` identify the output columns' expressions: a name shared by output columns with
    equal ``outputs`` is not ambiguous. Unspecified null order is PostgreSQL's: last when
    ascending, first when descending."""
    if order is None:
        return ()
    keys = []
    for item in order.expressions:
        index = _output_column(item.this, names, outputs, match)
        descending = bool(item.args.get("desc"))
        nulls_first = item.args.get("nulls_first")
        keys.append((index, descending, descending if nulls_first is None else nulls_first))
    return tuple(keys)


def _output_column(
    node: exp.Expr,
    names: Sequence[str],
    outputs: Sequence[object],
    match: Callable[[exp.Expr], int | None],
) -> int:
    if isinstance(node, exp.Literal) and node.is_int:
        position = int(node.this)
        if not 1 <= position <= len(names):
            raise UnknownObjectError.at(
                f"ORDER BY position {position} is not in select list", node)
        return position - 1
    if isinstance(node, exp.Column) and not node.args.get("table"):
        name = normalize(node.this)
        found = [i for i, n in enumerate(names) if n == name]
        if any(outputs[i] != outputs[found[0]] for i in found):
            raise SqlError.at(f'ORDER BY "{name}" is ambiguous', node)
        if found:
            return found[0]
    index = match(node)
    if index is None:
        raise UnsupportedError.at(
            "ORDER BY expressions that are not in the select list are not supported yet", node)
    return index


def limit_offset(query: exp.Expr) -> tuple[int | None, int | None]:
    """The query's LIMIT (None: no limit) and OFFSET (None: none)."""
    limit, offset = query.args.get("limit"), query.args.get("offset")
    if limit is not None and not isinstance(limit, exp.Limit):
        raise UnsupportedError.at(f"{limit.key.upper()} is not supported yet", limit)
    return _count(limit, "LIMIT"), _count(offset, "OFFSET")


def _count(clause: exp.Expr | None, word: str) -> int | None:
    if clause is None:
        return None
    value = clause.expression
    if isinstance(value, exp.Var) and value.name.upper() == "ALL" and word == "LIMIT":
        return None
    if not (isinstance(value, exp.Literal) and value.is_int):
        raise UnsupportedError.at(f"{word} must be an integer constant", value)
    return int(value.this)

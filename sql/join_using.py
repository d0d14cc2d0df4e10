"""``JOIN ... USING (columns)`` and ``NATURAL JOIN``: the columns of the two sides
equated, each named once in the joined item (``using_join``).
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.scalar import Col, Scalar
from matview.ir.types import INTERVAL, SqlType
from matview.sql.coerce import TypedScalar, call, unify
from matview.sql.errors import SqlError, UnknownObjectError
from matview.sql.scope import FromItem
from sqlglot import exp


def using_join(left: FromItem, right: FromItem, names: Sequence[str], node: exp.Join,
               side: str | None, types: Sequence[SqlType]
               ) -> tuple[FromItem, list[Scalar], list[TypedScalar]]:
    """``left`` JOIN ``right`` USING (``names``), the FROM clause's row so far of ``types``:
    the item it makes, the predicates of its condition, and (FULL JOIN) the merged columns to
    compute after the row. The merged column is the left one (the right one for RIGHT JOIN,
    their COALESCE for FULL JOIN)."""
    if len(set(names)) < len(names):
        raise SqlError.at("a column appears more than once in USING clause", node)
    merged, conditions, computed = [], [], []
    for name in names:
        left_col = _using_column(left, name, "left", node)
        right_col = _using_column(right, name, "right", node)
        operands = unify([TypedScalar(Col(i), types[i]) for i in (left_col, right_col)],
                         node, lambda a, b: f'JOIN/USING types {a} and {b} cannot be matched')
        keys = [call("interval_key", [o], node) if o.type == INTERVAL else o for o in operands]
        conditions.append(call("eq", keys, node).expr)  # intervals: by length
        if side == "FULL":
            computed.append(call("coalesce", operands, node))
            merged.append((name, len(types) + len(computed) - 1))
        else:
            merged.append((name, right_col if side == "RIGHT" else left_col))
    rest = tuple(c for c in left.columns + right.columns if c[0] not in names)
    return FromItem(tuple(merged) + rest, left.tables + right.tables), conditions, computed

def _using_column(item: FromItem, name: str, side: str, node: exp.Join) -> int:
    found = [i for n, i in item.columns if n == name]
    if not found:
        raise UnknownObjectError.at(
            f'column "{name}" specified in USING clause does not exist in {side} table', node)
    if len(found) > 1:
        raise SqlError.at(
            f'common column name "{name}" appears more than once in {side} table', node)
    return found[0]

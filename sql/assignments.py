"""The ``SET column = value, ...`` lists of UPDATE and of INSERT ... ON CONFLICT DO UPDATE:
bound against the target table's row (``DEFAULT``: the column's default), and applied to
rows as a map and a projection.

    rows with SET c = e  =>  Linear(rows, [map e; project (.., #e, ..)])
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.relation import Linear, Relation
from matview.ir.scalar import Scalar
from matview.ir.steps import Map, Project
from matview.sql.catalog import CatalogItem
from matview.sql.coerce import assignment_cast
from matview.sql.constraints import default_value
from matview.sql.errors import SqlError, UnknownObjectError, UnsupportedError
from matview.sql.names import normalize
from matview.sql.scalars import ExprBinder
from sqlglot import exp


def column_index(item: CatalogItem, identifier: exp.Identifier, node: exp.Expr) -> int:
    """The position of the column ``identifier`` names in table ``item``."""
    name = normalize(identifier)
    for i, field in enumerate(item.fields):
        if field.name == name:
            return i
    raise UnknownObjectError.at(f'column "{name}" of relation "{item.name}" does not exist',
                                node)


def bind_assignments(assignments: Sequence[exp.Expr], item: CatalogItem,
                     binder: ExprBinder) -> dict[int, Scalar]:
    """Each assigned column's position in ``item`` and its value (cast to the column's
    type), bound by ``binder``."""
    bound: dict[int, Scalar] = {}
    for assignment in assignments:
        column = assignment.this
        if isinstance(column, exp.Column) and column.args.get("table"):
            raise UnsupportedError.at(f"qualified assignment targets are not supported: write "
                                      f"SET {column.name} = ...", column)
        if not isinstance(column, (exp.Column, exp.Identifier)):
            raise UnsupportedError.at("multiple-column assignments (SET (a, b) = ...) are not "
                                      "supported yet", column)
        index = column_index(item, column.this if isinstance(column, exp.Column) else column,
                             column)
        if index in bound:
            raise SqlError.at(f'multiple assignments to same column "{item.fields[index].name}"',
                              column)
        field = item.fields[index]
        value = default_value(item, index) if is_default(assignment.expression) else \
            binder.bind(assignment.expression)
        bound[index] = assignment_cast(value, field.type, field.name,
                                       assignment.expression).expr
    return bound


def is_default(node: exp.Expr) -> bool:
    """Whether ``node`` is the keyword ``DEFAULT`` (in VALUES or a SET list)."""
    return (isinstance(node, exp.Var) or isinstance(node, exp.Column) and not node.table
            and not node.this.quoted) and node.name.upper() == "DEFAULT"


def assigned(rows: Relation, assignments: dict[int, Scalar], arity: int) -> Relation:
    """``rows`` (whose first ``arity`` columns are a row of the table, the assignments'
    values read from all of them) as rows of the table with ``assignments`` made."""
    order = sorted(assignments)
    positions = {index: rows.arity + k for k, index in enumerate(order)}
    return Linear(rows, (Map(tuple(assignments[i] for i in order)),
                         Project(tuple(positions.get(i, i) for i in range(arity)))))

"""Name resolution: which column of the FROM clause's row a column reference denotes.

The FROM clause's relations are joined into one row; each relation is a ``RangeVar`` (its
alias, column names and first column in the row). Top-level FROM items (``FromItem``) group
the range variables joined together and list the columns an unqualified name or ``*`` sees:
``a JOIN b USING (c)`` shows ``c`` once, as PostgreSQL does. A FULL JOIN's merged USING
column, ``COALESCE(a.c, b.c)``, is a column of the row that belongs to no range variable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from matview.ir.types import SqlType
from matview.sql.errors import SqlError, UnknownObjectError
from matview.sql.names import normalize
from sqlglot import exp

if TYPE_CHECKING:
    from matview.sql.context import Context


@dataclass(frozen=True)
class RangeVar:
    """A relation of the FROM clause, known as ``alias`` ("" for a subquery without alias),
    whose columns ``names`` start at column ``offset`` of the joined row."""

    alias: str
    names: tuple[str, ...]
    offset: int

    def columns(self) -> tuple[tuple[str, int], ...]:
        """Each column's name and its index in the joined row."""
        return tuple((name, self.offset + i) for i, name in enumerate(self.names))


@dataclass(frozen=True)
class FromItem:
    """A top-level FROM item: the ``columns`` (name, row index) unqualified names and ``*`` see,
    in ``*`` order, and the range variables it joins."""

    columns: tuple[tuple[str, int], ...]
    tables: tuple[RangeVar, ...]


@dataclass(frozen=True)
class Scope:
    """The names visible in one SELECT (or one JOIN's ON condition): its FROM items over a row
    of ``types``. ``hidden`` are the range variables of the FROM clause that this part of the
    query cannot reference (for an ON condition, the FROM items outside its join). ``ctx``
    binds the subqueries of its expressions; None where they are not supported."""

    items: tuple[FromItem, ...]
    types: tuple[SqlType, ...]
    hidden: frozenset[str] = frozenset()
    ctx: Context | None = None

    def table(self, identifier: exp.Identifier) -> RangeVar:
        """The range variable ``identifier`` names."""
        alias = normalize(identifier)
        for item in self.items:
            for table in item.tables:
                if table.alias == alias:
                    return table
        if alias in self.hidden:
            raise SqlError.at(f'invalid reference to FROM-clause entry for table "{alias}"',
                              identifier)
        raise UnknownObjectError.at(f'missing FROM-clause entry for table "{alias}"', identifier)

    def resolve(self, column: exp.Column) -> int:
        """The row index of the column ``column`` references."""
        name = normalize(column.this)
        if column.args.get("table"):
            table = self.table(column.args["table"])
            matches = [i for n, i in table.columns() if n == name]
            if not matches:
                raise UnknownObjectError.at(f"column {table.alias}.{name} does not exist", column)
        else:
            matches = [i for item in self.items for n, i in item.columns if n == name]
            if not matches:
                raise UnknownObjectError.at(f'column "{name}" does not exist', column)
        if len(matches) > 1:
            raise SqlError.at(f'column reference "{name}" is ambiguous', column)
        return matches[0]

    def star(self, qualifier: exp.Identifier | None) -> tuple[tuple[str, int], ...]:
        """The columns ``*`` (or ``qualifier.*``) expands to."""
        if qualifier is not None:
            return self.table(qualifier).columns()
        return tuple(c for item in self.items for c in item.columns)

    def qualified_name(self, index: int) -> str:
        """``alias.column`` for row column ``index``, as error messages show it (the bare name
        for a column of no relation, the merged column of a FULL JOIN USING)."""
        for item in self.items:
            for table in item.tables:
                if table.offset <= index < table.offset + len(table.names):
                    name = table.names[index - table.offset]
                    return f"{table.alias}.{name}" if table.alias else name
        for item in self.items:
            for name, column in item.columns:
                if column == index:
                    return name
        raise IndexError(index)

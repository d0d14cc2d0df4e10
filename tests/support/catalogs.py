"""Catalogs declared by golden files: the ``define`` directive.

A ``define`` case declares stored objects for the cases after it in the same file, one
object per input line (as Materialize's ``.spec`` files declare their tables)::

    define
    table orders (id int, cust int, amount bigint)
    view big_orders AS SELECT id, amount FROM orders WHERE amount > 100
    materialized view totals (cust int, total bigint)
    ----
    table orders (id int, cust int, amount bigint)
    view big_orders (id int, amount bigint)
    materialized view totals (cust int, total bigint)

- ``table NAME (COLUMN TYPE, ...)``: a table; the column list is read as ``CREATE TABLE``
  reads it.
- ``view NAME AS SELECT ...``: a view, re-bound at each use; its columns are those of the
  query, bound against the objects defined before it.
- ``materialized view NAME (COLUMN TYPE, ...)``: a materialized view, which queries read as a
  stored collection with these columns (the binder needs no defining query).

The output lists the objects the case defines, one a line, with their columns.
"""

from __future__ import annotations

import re

from matview.ir.relation import Field
from matview.sql.catalog import CatalogItem
from matview.sql.parse import parse
from matview.sql.statements import CreateTable, CreateView

_OBJECT = re.compile(r"(table|view|materialized view)\s+(\S+)\s*(.*)", re.IGNORECASE)
_AS = re.compile(r"AS\s+(.*)", re.IGNORECASE | re.DOTALL)


class Catalog:
    """The objects a golden file has defined so far, by normalized name."""

    def __init__(self) -> None:
        self.items: dict[str, CatalogItem] = {}

    def lookup(self, name: str) -> CatalogItem | None:
        return self.items.get(name)

    def define(self, text: str) -> str:
        """Add the objects of a ``define`` case's input ``text``; its output."""
        out = []
        for line in text.split("\n"):
            if not line.strip():
                continue
            item = self._item(line.strip())
            if item.name in self.items:
                raise ValueError(f"{item.name} is defined twice")
            self.items[item.name] = item
            out.append(describe(item))
        return "\n".join(out)

    def _item(self, line: str) -> CatalogItem:
        match = _OBJECT.fullmatch(line)
        if match is None:
            raise ValueError(f"not a table or view definition: {line!r}")
        kind, name, rest = match.group(1).lower(), match.group(2), match.group(3)
        if kind == "view":
            query = _AS.fullmatch(rest)
            if query is None:
                raise ValueError(f"a view needs AS SELECT ...: {line!r}")
            (view,) = parse(f"CREATE VIEW {name} AS {query.group(1)}", self)
            assert isinstance(view, CreateView)
            fields = tuple(Field(n, t) for n, t in zip(view.column_names, view.plan.types,
                                                       strict=True))
            return CatalogItem(view.name, "view", fields, view.query_sql)
        (table,) = parse(f"CREATE TABLE {name} {rest}", self)
        assert isinstance(table, CreateTable)
        return CatalogItem(table.name, "table" if kind == "table" else "materialized view",
                           table.fields)


def describe(item: CatalogItem) -> str:
    """``KIND NAME (COLUMN TYPE, ...)``."""
    columns = ", ".join(f"{f.name} {f.type}" for f in item.fields)
    return f"{item.kind} {item.name} ({columns})"

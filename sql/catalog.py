"""What the binder needs to know about stored objects: the ``Catalog`` protocol.

Names are case-insensitive as in PostgreSQL: the binder lowercases unquoted identifiers and
looks objects up by the resulting name, so a catalog stores names in that normalized form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol

from matview.ir.relation import Field
from matview.sql.dialect import Matview
from sqlglot import exp

ObjectKind = Literal["table", "view", "materialized view"]


@dataclass(frozen=True)
class CatalogItem:
    """A stored object: a table, a view (``query_sql`` is its defining SELECT, re-bound at each
    use) or a materialized view (read as a stored collection, ``query_sql`` kept for display)."""

    name: str
    kind: ObjectKind
    fields: tuple[Field, ...]
    query_sql: str | None = None

    def create_sql(self) -> str:
        """The statement creating this object as it is (``SHOW CREATE``): a table's columns
        and types, a view's column names and query."""
        name, columns = quoted_name(self.name), [quoted_name(f.name) for f in self.fields]
        if self.kind == "table":
            listed = ", ".join(f"{c} {f.type}" for c, f in zip(columns, self.fields,
                                                                strict=True))
            return f"CREATE TABLE {name} ({listed})"
        return (f"CREATE {self.kind.upper()} {name} ({', '.join(columns)}) AS "
                f"{self.query_sql}")


def quoted_name(name: str) -> str:
    """``name`` as SQL text: quoted unless it reads back as itself (lower case, no keyword)."""
    plain = re.fullmatch(r"[a-z_][a-z0-9_$]*", name) is not None
    quoted = not plain or name.upper() in Matview.tokenizer_class.KEYWORDS
    return exp.to_identifier(name, quoted=quoted).sql(dialect=Matview)


class Catalog(Protocol):
    """Looks objects up by normalized name."""

    def lookup(self, name: str) -> CatalogItem | None:
        """The object called ``name``, or None."""
        ...


class Recording:
    """A ``Catalog`` that remembers the names of the objects found through it (``found``):
    what a statement bound through it depends on."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.found: set[str] = set()

    def lookup(self, name: str) -> CatalogItem | None:
        item = self.catalog.lookup(name)
        if item is not None:
            self.found.add(item.name)
        return item

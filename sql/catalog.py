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

ObjectKind = Literal["table", "view", "materialized view", "source", "system catalog"]


@dataclass(frozen=True)
class UniqueKey:
    """A ``PRIMARY KEY`` or ``UNIQUE`` constraint ``name``: no two rows of the table hold
    equal values in all of ``columns`` (positions); a row with NULL in one of them is
    exempt, as in PostgreSQL. A primary key's columns are NOT NULL as well."""

    name: str
    columns: tuple[int, ...]
    primary: bool

    def sql(self, fields: tuple[Field, ...]) -> str:
        """The constraint as a table constraint of ``CREATE TABLE``."""
        listed = ", ".join(quoted_name(fields[i].name) for i in self.columns)
        kind = "PRIMARY KEY" if self.primary else "UNIQUE"
        return f"CONSTRAINT {quoted_name(self.name)} {kind} ({listed})"


@dataclass(frozen=True)
class CatalogItem:
    """A stored object: a table, a view (``query_sql`` is its defining SELECT, re-bound at each
    use), a materialized view (read as a stored collection, ``query_sql`` kept for display), a
    source (a stored collection following a lake table, ``origin``) or a system catalog
    (``pg_catalog.pg_class``: a constant of the catalog's state)."""

    name: str
    kind: ObjectKind
    fields: tuple[Field, ...]
    query_sql: str | None = None
    keys: tuple[UniqueKey, ...] = ()
    """A table's unique keys (``PRIMARY KEY``, ``UNIQUE``), enforced at every write."""
    not_null: frozenset[int] = frozenset()
    """The positions of a table's ``NOT NULL`` columns (a primary key's among them)."""
    defaults: tuple[tuple[int, str], ...] = ()
    """A table's column defaults: (position, SQL text of the expression)."""
    comment: str | None = None
    """Its comment (``COMMENT ON``), if it has one."""
    column_comments: tuple[tuple[int, str], ...] = ()
    """Its columns' comments: (position, text)."""
    refresh: str | None = None
    """A materialized view's ``REFRESH POLICY`` as written (None: the connection's)."""
    origin: str | None = None
    """What a source follows, as its ``CREATE SOURCE`` writes it (``DELTA 'uri'``,
    ``PARQUET 'folder'``, ``STREAM``); a source's progress relation has ``PROGRESS OF
    name``."""
    rows: tuple[tuple[tuple[object, ...], int], ...] = ()
    """A system catalog's rows, with their multiplicities (``matview.system_catalog``): it
    is read as a constant, made when the statement reading it is bound."""

    def known_keys(self) -> tuple[tuple[int, ...], ...]:
        """The columns of each unique key no NULL can break (its columns NOT NULL): what
        the planner knows no two rows share (``ir.keys``)."""
        return tuple(key.columns for key in self.keys if set(key.columns) <= self.not_null)

    def create_sql(self) -> str:
        """The statement creating this object as it is (``SHOW CREATE``): a table's columns,
        types and constraints, a view's column names and query."""
        name, columns = quoted_name(self.name), [quoted_name(f.name) for f in self.fields]
        if self.kind == "table":
            defaults = dict(self.defaults)
            listed = [f"{c} {f.type}" + (f" DEFAULT {defaults[i]}" if i in defaults else "")
                      + (" NOT NULL" if i in self.not_null else "")
                      for i, (c, f) in enumerate(zip(columns, self.fields, strict=True))]
            listed += [key.sql(self.fields) for key in self.keys]
            return f"CREATE TABLE {name} ({', '.join(listed)})"
        if self.kind == "source":
            listed = ", ".join(f"{c} {f.type}" for c, f in zip(columns, self.fields))
            return f"CREATE SOURCE {name} ({listed}) FROM {self.origin}"
        policy = "" if self.refresh is None else f" WITH (REFRESH POLICY = {self.refresh})"
        return (f"CREATE {self.kind.upper()} {name} ({', '.join(columns)}){policy} AS "
                f"{self.query_sql}")

    def comment_sql(self) -> list[str]:
        """The ``COMMENT ON`` statements giving it its comments (a durable database's
        saved catalog replays them)."""
        name = quoted_name(self.name)
        said = [] if self.comment is None else [(f"{self.kind.upper()} {name}", self.comment)]
        said += [(f"COLUMN {name}.{quoted_name(self.fields[i].name)}", text)
                 for i, text in self.column_comments]
        return [f"COMMENT ON {what} IS {exp.Literal.string(text).sql(dialect=Matview)}"
                for what, text in said]


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
    what a statement bound through it depends on; and the system catalogs (``system``)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.found: set[str] = set()
        self.system: set[str] = set()
        """The system catalogs found (not objects anything can depend on)."""

    def lookup(self, name: str) -> CatalogItem | None:
        item = self.catalog.lookup(name)
        if item is not None:
            (self.system if item.kind == "system catalog" else self.found).add(item.name)
        return item

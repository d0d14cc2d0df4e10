"""A read of the engine's catalog for the server: relations with their kind, columns (with
their defaults and nullability), defining SQL and indexes, and each one's OID
(``ir.object_ids.name_oid``, as the system catalogs give it)."""

from __future__ import annotations

from dataclasses import dataclass

import matview
from matview.ir.object_ids import name_oid


@dataclass(frozen=True)
class IndexOf:
    """An index of a relation: its name and key columns, whether it backs the primary key
    or a unique key (``UNIQUE``)."""

    name: str
    columns: tuple[str, ...]
    primary: bool = False
    unique: bool = False


@dataclass(frozen=True)
class Relation:
    """A stored relation: name, ``table`` / ``view`` / ``materialized view``, columns as
    ``(name, matview type name)``, defining SQL of a view, and its OID."""

    name: str
    kind: str
    columns: list[tuple[str, str]]
    sql: str | None
    oid: int
    comment: str | None = None
    column_comments: tuple[str | None, ...] = ()
    """Its columns' comments (``COMMENT ON``), None where a column has none."""
    defaults: tuple[str | None, ...] = ()
    """Its columns' defaults (SQL text), None where a column has none."""
    not_null: tuple[bool, ...] = ()
    """Whether each of its columns is NOT NULL."""
    indexes: tuple[IndexOf, ...] = ()
    """Its indexes, by name."""


def relations(connection: matview.Connection) -> list[Relation]:
    """Every relation of ``connection``'s catalog, by name."""
    with connection._using(beside=True) as engine:
        items = [entry.item for entry in engine.catalog.entries.values()]
        indexes = list(engine.catalog.indexes.values())
    found: dict[str, list[IndexOf]] = {}
    for index in sorted(indexes, key=lambda i: i.name):
        item = next(i for i in items if i.name == index.on)
        key = next((k for k in item.keys if k.name == index.name), None)
        found.setdefault(index.on, []).append(IndexOf(
            index.name, index.columns, key is not None and key.primary, key is not None))
    return sorted((Relation(item.name, item.kind, [(f.name, str(f.type)) for f in item.fields],
                            item.query_sql, name_oid(item.name), item.comment,
                            _by_column(item.column_comments, len(item.fields)),
                            _by_column(item.defaults, len(item.fields)),
                            tuple(i in item.not_null for i in range(len(item.fields))),
                            tuple(found.get(item.name, ())))
                   for item in items),
                  key=lambda r: r.name)


def _by_column(given: tuple[tuple[int, str], ...], count: int) -> tuple[str | None, ...]:
    """Per column of ``count``, the text ``given`` (position, text) gives it, or None."""
    return tuple(map(dict(given).get, range(count)))


def relation(connection: matview.Connection, name: str) -> Relation | None:
    """Relation ``name`` of ``connection``'s catalog, or None."""
    return next((r for r in relations(connection) if r.name == name), None)

"""A read of the engine's catalog for the server: relations with their kind, columns and
defining SQL, and a stable OID for each name (what pg_catalog emulation reports)."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

import matview

FIRST_OID = 16384
"""PostgreSQL's first OID for user objects."""

_oids: dict[str, int] = {}
_counter = itertools.count(FIRST_OID)
_lock = threading.Lock()


def oid_of(name: str) -> int:
    """A stable OID for relation ``name`` (given on first sight, kept for the process)."""
    with _lock:
        if name not in _oids:
            _oids[name] = next(_counter)
        return _oids[name]


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


def relations(connection: matview.Connection) -> list[Relation]:
    """Every relation of ``connection``'s catalog, by name."""
    with connection._using(beside=True) as engine:
        items = [entry.item for entry in engine.catalog.entries.values()]
    return sorted((Relation(item.name, item.kind, [(f.name, str(f.type)) for f in item.fields],
                            item.query_sql, oid_of(item.name), item.comment,
                            tuple(map(dict(item.column_comments).get, range(len(item.fields)))))
                   for item in items),
                  key=lambda r: r.name)


def relation(connection: matview.Connection, name: str) -> Relation | None:
    """Relation ``name`` of ``connection``'s catalog, or None."""
    return next((r for r in relations(connection) if r.name == name), None)

"""``COMMENT ON TABLE | VIEW | MATERIALIZED VIEW | COLUMN``: comments kept in the catalog
(and in a durable database's saved catalog: ``CatalogItem.comment_sql``), read with ``SHOW
COMMENTS`` (as Materialize's ``mz_internal.mz_comments``) and shown by psql's ``\\d+``
through the server."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import pyarrow as pa

from matview.errors import ProgrammingError
from matview.ir.types import TEXT
from matview.result import Result
from matview.sql.statements import CommentOn

if TYPE_CHECKING:
    from matview.engine import Engine


def comment(engine: Engine, stmt: CommentOn) -> Result:
    """Set (or, with NULL, remove) the comment of a relation or of one of its columns."""
    entry = engine.catalog.entries.get(stmt.name)
    if entry is None:
        raise ProgrammingError(f'relation "{stmt.name}" does not exist')
    item = entry.item
    if stmt.column is None:
        if item.kind != stmt.kind:
            raise ProgrammingError(f'"{stmt.name}" is not a {stmt.kind}')
        item = dataclasses.replace(item, comment=stmt.text)
    else:
        names = [f.name for f in item.fields]
        if stmt.column not in names:
            raise ProgrammingError(f'column "{stmt.column}" of relation "{stmt.name}" does '
                                   "not exist")
        said = dict(item.column_comments)
        said.pop(names.index(stmt.column), None)
        if stmt.text is not None:
            said[names.index(stmt.column)] = stmt.text
        item = dataclasses.replace(item, column_comments=tuple(sorted(said.items())))
    engine.catalog.entries[stmt.name] = dataclasses.replace(entry, item=item)
    return Result()


def show(engine: Engine) -> Result:
    """``SHOW COMMENTS``: every comment, by relation (``column`` NULL for the relation's
    own) then column position."""
    rows: list[tuple[str, str, str | None, str]] = []
    for name in sorted(engine.catalog.entries):
        item = engine.catalog.entries[name].item
        if item.comment is not None:
            rows.append((name, item.kind, None, item.comment))
        rows += [(name, item.kind, item.fields[i].name, text) for i, text in item.column_comments]
    names = ("name", "kind", "column", "comment")
    return Result(names, (TEXT,) * 4, pa.table(
        {n: pa.array([row[i] for row in rows], pa.string()) for i, n in enumerate(names)}))

"""Binding ``CREATE SOURCE``: a relation following a Delta Lake table, a folder of Parquet
files or a Spark stream's batches (``matview.sources`` runs it). Its columns are written
(required for a stream) or read from the lake when the statement runs."""

from __future__ import annotations

from typing import Literal, cast

from matview.ir.relation import Field
from matview.sql.datatypes import column_type
from matview.sql.ddl import check_unique
from matview.sql.dialect_nodes import CreateSource as CreateSourceNode
from matview.sql.errors import SqlError
from matview.sql.names import normalize, relation_name
from matview.sql.statements import CreateSource
from sqlglot import exp


def bind_create_source(node: CreateSourceNode) -> CreateSource:
    """``CREATE SOURCE [IF NOT EXISTS] name [(column type, ...)] FROM DELTA 'uri' | PARQUET
    'folder' | STREAM``."""
    columns = [c for c in node.args.get("columns") or [] if isinstance(c, exp.ColumnDef)]
    fields = tuple(Field(normalize(c.this), column_type(c.args["kind"], normalize(c.this)))
                   for c in columns)
    check_unique([f.name for f in fields], columns)
    kind = cast(Literal["delta", "parquet", "stream"], node.args["kind"].lower())
    if kind == "stream" and not fields:
        raise SqlError.at("a source FROM STREAM needs its columns: CREATE SOURCE name "
                          "(column type, ...) FROM STREAM", node)
    path = node.args.get("path")
    return CreateSource(relation_name(node.this), fields, kind,
                        None if path is None else path.name, bool(node.args.get("exists")))

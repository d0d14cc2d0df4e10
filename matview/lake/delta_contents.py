"""A Delta Lake table kept equal to a view (``CREATE SINK ... INTO DELTA 'dir' ENVELOPE
CONTENTS``): each batch of the view's changes is one commit that replaces the rows it
touches (``write_deltalake(mode="overwrite", predicate=...)``, Delta's ``replaceWhere``),
so readers of the lake see the view's contents, each copy of a row as many times as the
view holds it.

A batch's changes are consolidated (a row's diffs summed); the rows they touch are read
from the table (a filter on their values), their counts changed by the diffs, and written
back in place of every row equal to one of them, in one commit that records the batch's
last time as the version of the sink's Delta app transaction (``txn``): a sink resumed
after a restart starts after it, so no batch is applied twice. Columns of integers,
floating point numbers, numerics, text, booleans and dates can be matched by value; a view
with others is refused when the sink is created.
"""

from __future__ import annotations

import datetime
import functools
import operator
from collections.abc import Sequence
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from matview.errors import ProgrammingError
from matview.ir.types import Kind, SqlType
from matview.lake.changes import DIFF, consolidated, signed

try:
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
except ImportError:  # an optional dependency: matview[delta]
    write_deltalake = None

MATCHED = (Kind.INT, Kind.BIGINT, Kind.DOUBLE, Kind.NUMERIC, Kind.TEXT, Kind.BOOLEAN,
           Kind.DATE)
"""The kinds of columns a row is matched by (``check``)."""


def check(view: str, columns: Sequence[tuple[str, SqlType]]) -> None:
    """Refuse a view ``view`` of ``columns`` whose rows cannot be matched by value."""
    for name, sql_type in columns:
        if sql_type.kind not in MATCHED:
            raise ProgrammingError(f'ENVELOPE CONTENTS cannot keep "{view}": its column '
                                   f'"{name}" is {sql_type}, which a Delta predicate does not '
                                   "match (integers, floats, numerics, text, booleans, dates)")


def merged(directory: str, changes: pa.Table, app: str, last: int) -> None:
    """Apply ``changes`` (``mz_timestamp``, ``mz_diff``, the view's columns) to the Delta
    table at ``directory`` as one commit of app transaction ``app`` at version ``last``
    (made with the rows inserted when there is no table yet)."""
    columns = [c for c in changes.column_names if c not in ("mz_timestamp", "mz_diff")]
    net = consolidated([changes.select(columns).append_column(
        DIFF, changes["mz_diff"].cast(pa.int64()))])
    committed = CommitProperties(app_transactions=[Transaction(app, last)])
    if not DeltaTable.is_deltatable(directory):
        write_deltalake(directory, _copies(net, changes.select(columns).schema),
                        commit_properties=committed)
        return
    if net is None:
        return
    table = DeltaTable(directory)
    schema = pa.schema(table.schema().to_arrow())
    net = net.cast(pa.schema([*schema, pa.field(DIFF, pa.int64())]))
    touched = net.select(columns)
    old = table.to_pyarrow_dataset().to_table(filter=_matching(touched))
    after = consolidated([signed(old, 1), net])
    write_deltalake(directory, _copies(after, schema), mode="overwrite",
                    predicate=_predicate(touched), commit_properties=committed)


def _copies(rows: pa.Table | None, schema: pa.Schema) -> pa.Table:
    """Update rows ``rows`` (None: none) as the rows they hold, each as many times as its
    diff (a negative one is a row the table did not hold: an error)."""
    if rows is None:
        return schema.empty_table()
    if pc.min(rows[DIFF]).as_py() < 0:
        raise ProgrammingError("the Delta table of an ENVELOPE CONTENTS sink lacks a row the "
                               "view retracts: it was written by another writer")
    copies = np.repeat(np.arange(rows.num_rows), rows[DIFF].to_numpy())
    return rows.take(pa.array(copies, pa.int64())).drop_columns([DIFF]).cast(schema)


def _matching(rows: pa.Table) -> pc.Expression:
    """A filter keeping the rows equal to one of ``rows``."""
    return functools.reduce(operator.or_, (
        functools.reduce(operator.and_, (
            pc.field(name).is_null() if value is None
            else pc.field(name) == pa.scalar(value, rows.schema.field(name).type)
            for name, value in row.items()))
        for row in rows.to_pylist()))


def _predicate(rows: pa.Table) -> str:
    """``_matching`` as Delta's SQL predicate."""
    return " OR ".join("(" + " AND ".join(
        f'"{name}" IS NULL' if value is None
        else f'"{name}" = {_literal(value, rows.schema.field(name).type)}'
        for name, value in row.items()) + ")" for row in rows.to_pylist())


def _literal(value: object, arrow: pa.DataType) -> str:
    """``value`` of Arrow type ``arrow`` as a SQL literal of that type."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, Decimal):
        return f"CAST('{value}' AS DECIMAL({arrow.precision}, {arrow.scale}))"
    if isinstance(value, datetime.date):
        return f"CAST('{value.isoformat()}' AS DATE)"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return f"CAST('{value!r}' AS DOUBLE)"
    return str(value)

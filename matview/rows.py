"""Rows crossing the Python API: rows given to ``Connection.insert``/``delete`` checked and
made into update rows for a table (Arrow or a Spark DataFrame), and Arrow results as Python
tuples."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, FractionalType, StringType

from matview.errors import DataError, ProgrammingError
from matview.ir import bytea, interval_values, times, timetz, uuids
from matview.ir.eval_error import EvalError
from matview.ir.types import BIGINT, INT, TEXT, UUID, Kind, SqlType, array_of
from matview.runtime.arrangements.updates import DIFF
from matview.runtime.lowering.expressions import compile_cast
from matview.runtime.lowering.types import (
    ARROW_TIMETZ,
    arrow_values,
    column_names,
    spark_type,
    update_schema,
)
from matview.sql.catalog import CatalogItem


def update_rows(rows: object, item: CatalogItem, sign: int) -> DataFrame | pa.Table:
    """``rows`` (a list of tuples, a pandas or Arrow table, or a Spark DataFrame) as update
    rows of table ``item`` with multiplicity ``sign``: Arrow checked now, a DataFrame
    checked by the job that computes it."""
    types = [f.type for f in item.fields]
    names = column_names(len(types))
    if isinstance(rows, DataFrame):
        if len(rows.columns) != len(types):
            raise ProgrammingError(f'rows have {len(rows.columns)} columns, table '
                                   f'"{item.name}" has {len(types)}')
        order = by_name(rows.columns, [f.name for f in item.fields], item.name)
        schema = [rows.schema[i] for i in order]
        return rows.select(*[checked(rows[s.name], s.dataType, f.type, item.name,
                                     f.name).alias(n)
                             for s, f, n in zip(schema, item.fields, names)],
                           F.lit(sign).cast("bigint").alias(DIFF))
    data = arrow_rows(rows, names, update_schema(types), item.name,
                      [f.name for f in item.fields])
    for i, (field, name) in enumerate(zip(item.fields, names)):
        if UUID in (field.type, field.type.element):
            data = data.set_column(i, name, _uuids(data.column(i), item.name, field.name))
    return data.append_column(DIFF, pa.array([sign] * data.num_rows, pa.int64()))


def by_name(given: Sequence[object], columns: Sequence[str], table_name: str) -> list[int]:
    """The positions in ``given`` (the names of the columns of rows written to a table) of
    the table's ``columns``, in order: by name when the rows' names are the table's
    columns (in any order, case aside), by position when none of them is one (a frame's
    names of no meaning: pandas' 0, 1, ..., Spark's _1, _2, ...). Some but not all of them
    columns is a ``ProgrammingError`` naming the first that is not, rather than values
    written to the wrong columns."""
    wanted = [c.lower() for c in columns]
    found = [str(n).lower() for n in given]
    if not set(found) & set(wanted):
        return list(range(len(given)))
    for name, shown in zip(found, given):
        if name not in wanted:
            raise ProgrammingError(f'rows have a column "{shown}", which table "{table_name}" '
                                   f"does not have")
    if len(set(found)) != len(found):
        raise ProgrammingError(f'rows name a column of table "{table_name}" twice')
    return [found.index(c) for c in wanted]


def rows_of(table: pa.Table, types: Sequence[SqlType],
            wire: bool = False) -> list[tuple[object, ...]]:
    """Arrow rows of columns of ``types`` as Python tuples (SQL TIMESTAMP has no zone:
    values come back naive; a TIMESTAMPTZ's come back in UTC, the session time zone);
    ``wire``: with TIME and TIMETZ values as the server prints them (``python_values``)."""
    columns = []
    for column, sql_type in zip(table.columns, types, strict=True):
        listed = pa.types.is_list(column.type)
        if pa.types.is_timestamp(column.type.value_type if listed else column.type):
            zoned = (sql_type.element or sql_type).kind is Kind.TIMESTAMPTZ
            moment = pa.timestamp("us", "UTC" if zoned else None)
            column = column.cast(pa.list_(moment) if listed else moment)
        columns.append(python_values(column.to_pylist(), sql_type, wire))
    return list(zip(*columns)) if columns else [() for _ in range(table.num_rows)]


def arrow_rows(rows: object, names: list[str], schema: pa.Schema, table_name: str,
                columns: list[str]) -> pa.Table:
    """``rows`` (a list of tuples, a pandas or Arrow table) as an Arrow table with columns
    ``names`` of the schema's types; values that do not fit their column are DataErrors
    naming it, and text holding a NUL byte is refused as PostgreSQL refuses it."""
    fields = list(schema)[:len(names)]
    if isinstance(rows, pa.Table) or hasattr(rows, "to_numpy") and hasattr(rows, "columns"):
        table = rows if isinstance(rows, pa.Table) else pa.Table.from_pandas(
            rows, preserve_index=False)
        if table.num_columns == len(names):  # its columns named: the table's, by name
            table = table.select(by_name(table.column_names, columns, table_name))
    elif isinstance(rows, (list, tuple)) and all(isinstance(r, (list, tuple)) for r in rows):
        for row in rows:
            if len(row) != len(names):
                raise ProgrammingError(f'a row has {len(row)} values, table "{table_name}" '
                                       f"has {len(names)} columns: {tuple(row)!r}")
        values = list(zip(*rows)) if rows else [[] for _ in names]
        arrays = [_column(list(c), f.type, table_name, name)
                  for c, f, name in zip(values, fields, columns)]
        table = pa.Table.from_arrays(arrays, names=names)
    else:
        raise ProgrammingError(f"rows must be a list of tuples, a pandas DataFrame, an Arrow "
                               f"table or a Spark DataFrame, not {type(rows).__name__}")
    if table.num_columns != len(names):
        raise ProgrammingError(f'rows have {table.num_columns} columns, table "{table_name}" '
                               f"has {len(names)}")
    table = table.rename_columns(names)
    arrays = [_column(table.column(i), f.type, table_name, name)
              for i, (f, name) in enumerate(zip(fields, columns))]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


NUL_BYTE = 'invalid byte sequence for encoding "UTF8": 0x00'
"""PostgreSQL's error for text holding a NUL byte, which it cannot store."""


def _column(values: list[object] | pa.ChunkedArray, arrow_type: pa.DataType, table: str,
            name: str) -> pa.Array | pa.ChunkedArray:
    """``values`` as an Arrow column of ``arrow_type`` (a DataError naming the column when
    a value does not fit it: a float with a fraction does not fit an integer column)."""
    try:
        if isinstance(values, pa.ChunkedArray) and not (
                pa.types.is_binary(arrow_type) and pa.types.is_string(values.type)) and not (
                pa.types.is_struct(arrow_type) and values.type != arrow_type):
            column = values.cast(arrow_type)
        else:
            values = _inputs(values if isinstance(values, list) else values.to_pylist(),
                             arrow_type)
            if pa.types.is_integer(arrow_type):
                for value in values:
                    if isinstance(value, float) and not value.is_integer():
                        raise ValueError(f"{value!r} is not an integer")
            column = pa.array(values, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError,
            EvalError) as e:
        raise DataError(f'invalid value for column "{name}" of table "{table}" '
                        f"({arrow_type}): {e}") from None
    if _holds_nul(column):
        raise DataError(f'{NUL_BYTE} (in column "{name}" of table "{table}")')
    return column


def _holds_nul(column: pa.Array | pa.ChunkedArray) -> bool:
    """Whether text in ``column`` (also inside arrays) holds a NUL byte."""
    kind = column.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _holds_nul(pc.list_flatten(column))
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return bool(pc.any(pc.match_substring(column, "\x00")).as_py())
    return False


def checked(value: Column, source: DataType, sql_type: SqlType, table: str,
             name: str) -> Column:
    """Spark column ``value`` (of type ``source``) cast to ``sql_type``, failing the job that
    computes it (a DataError naming the table and column) at a value that does not fit (a
    fraction does not fit an integer column), or at text with a NUL byte."""
    cast = value.try_cast(spark_type(sql_type))
    if sql_type.kind in (Kind.UUID, Kind.BYTEA, Kind.TIME, Kind.TIMETZ) and isinstance(
            source, StringType):
        cast = compile_cast(value, TEXT, sql_type, safe=True)  # their text forms
    where = f'column "{name}" of table "{table}"'
    unfit = value.isNotNull() & cast.isNull()
    if sql_type in (INT, BIGINT) and isinstance(source, FractionalType):
        unfit = unfit | (cast.isNotNull() & (value != cast))
    checked = F.when(unfit, F.raise_error(F.concat(
        F.lit(f"invalid value for {where} ({sql_type}): "), value.cast("string"))))
    nul = F.lit(f"{NUL_BYTE} (in {where})")
    if sql_type == TEXT:
        checked = checked.when(F.instr(cast, "\x00") > 0, F.raise_error(nul))
    elif sql_type == array_of(TEXT):
        checked = checked.when(F.exists(cast, lambda text: F.instr(text, "\x00") > 0),
                               F.raise_error(nul))
    return checked.otherwise(cast)


def python_values(values: list[object], sql_type: SqlType, wire: bool = False) -> list[object]:
    """A column's values as Python gives them: a UUID (also in an array) as a ``uuid.UUID``,
    a TIME's microseconds as a ``datetime.time``, a TIMETZ's struct as one with its offset
    as ``tzinfo``, an INTERVAL's struct as a ``timedelta`` (``interval_values.PgInterval``),
    other values as Arrow gives them. A TIME or TIMETZ at 24:00:00, which ``datetime.time``
    cannot hold, is a ``DataError``, as psycopg's loader has it; ``wire`` gives them as the
    reference interpreter's values instead (``times.END_OF_DAY``, ``timetz.TimeTz``), which
    the server prints as PostgreSQL's text."""
    if sql_type.kind is Kind.INTERVAL:
        return [None if v is None else interval_values.python_value(
            interval_values.of_arrow(v)) for v in values]  # type: ignore[arg-type]
    if sql_type.kind is Kind.UUID:
        return [None if v is None else uuid.UUID(str(v)) for v in values]
    if sql_type.kind in (Kind.TIME, Kind.TIMETZ):
        made = _time_value(sql_type, wire)
        try:
            return [None if v is None else made(v) for v in values]
        except EvalError as error:
            raise DataError(str(error)) from None
    if sql_type.kind is Kind.ARRAY and sql_type.element is not None and (
            sql_type.element.kind in (Kind.UUID, Kind.TIME)):
        return [python_values(v, sql_type.element, wire) if isinstance(v, list) else v
                for v in values]
    return values


def _time_value(sql_type: SqlType, wire: bool) -> Callable[[Any], object]:
    """The value of a TIME's microseconds or a TIMETZ's struct (``python_values``)."""
    if sql_type.kind is Kind.TIME:
        return times.of_micros if wire else times.python_value
    if wire:
        return timetz.of_arrow
    return lambda value: timetz.python_value(timetz.of_arrow(value))


def _inputs(values: list[object], arrow_type: pa.DataType) -> list[object]:
    """Python values as Arrow takes them: a ``uuid.UUID`` as its text, text for a BYTEA
    column read as PostgreSQL reads a bytea's text (``\\xdeadbeef``), a ``timedelta`` or
    interval text for an INTERVAL column and a ``datetime.time`` or text for a TIMETZ
    column as their structs."""
    if arrow_type == ARROW_TIMETZ:  # a ``datetime.time`` (naive: at UTC's offset) or text
        return [None if v is None else timetz.arrow_value(timetz.of_python(v)) for v in values]
    if pa.types.is_struct(arrow_type):
        return [None if v is None else interval_values.arrow_value(interval_values.of_python(v))
                for v in values]
    if pa.types.is_list(arrow_type):
        return [_inputs(list(v), arrow_type.value_type) if isinstance(v, list | tuple) else v
                for v in values]
    if pa.types.is_binary(arrow_type):
        return [bytea.parse(v) if isinstance(v, str) else v for v in values]
    if pa.types.is_string(arrow_type):
        return [str(v) if isinstance(v, uuid.UUID) else v for v in values]
    if pa.types.is_int64(arrow_type):  # a TIME's ``datetime.time`` as its microseconds
        return arrow_values(values)
    return values


def _uuids(column: pa.ChunkedArray, table: str, name: str) -> pa.Array:
    """The texts of UUID (or UUID[]) column ``name`` in canonical form (a DataError naming
    the column at one that spells no UUID)."""
    def canonical(value: object) -> object:
        if isinstance(value, list):
            return [canonical(v) for v in value]
        return None if value is None else uuids.canonical(str(value))

    try:
        return pa.array([canonical(v) for v in column.to_pylist()], column.type)
    except EvalError as e:
        raise DataError(f'invalid value for column "{name}" of table "{table}" (uuid): {e}'
                        ) from None

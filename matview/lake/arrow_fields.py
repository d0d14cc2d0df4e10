"""A lake table's Arrow schema as a source's SQL columns: each Arrow type as the SQL type
holding its values (integers up to 32 bits as INTEGER, 64 as BIGINT, floats as DOUBLE
PRECISION, strings as TEXT, decimals as NUMERIC of their precision and scale, dates,
timestamps with and without a zone, binary as BYTEA, booleans, lists as arrays); any other
type is refused by name."""

from __future__ import annotations

import pyarrow as pa

from matview.errors import ProgrammingError
from matview.ir.relation import Field
from matview.ir.types import (
    BIGINT,
    BOOLEAN,
    BYTEA,
    DATE,
    DOUBLE,
    INT,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    Kind,
    SqlType,
    array_of,
)


def fields(schema: pa.Schema, where: str) -> tuple[Field, ...]:
    """The columns of ``schema``, the schema of the lake table at ``where`` (named in
    errors), with lower-case names as SQL's unquoted ones."""
    names = [name.lower() for name in schema.names]
    if len(set(names)) != len(names):
        raise ProgrammingError(f"{where} has two columns whose names differ only in case")
    return tuple(Field(name, sql_type(field.type, f'column "{field.name}" of {where}'))
                 for name, field in zip(names, schema))


def sql_type(arrow: pa.DataType, what: str) -> SqlType:
    """The SQL type of values of ``arrow`` (``what``: the column, named in errors)."""
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return array_of(sql_type(arrow.value_type, what))
    if pa.types.is_decimal(arrow) and arrow.precision <= 38:
        return SqlType(Kind.NUMERIC, arrow.precision, arrow.scale)
    if pa.types.is_timestamp(arrow):
        return TIMESTAMPTZ if arrow.tz is not None else TIMESTAMP
    for test, result in _SIMPLE:
        if test(arrow):
            return result
    raise ProgrammingError(f"{what} has type {arrow}, which matview cannot hold")


_SIMPLE = (
    (lambda t: pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t), INT),
    (pa.types.is_int64, BIGINT), (pa.types.is_floating, DOUBLE), (pa.types.is_boolean, BOOLEAN),
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)
     or pa.types.is_string_view(t), TEXT),
    (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t), BYTEA),
    (pa.types.is_date32, DATE),
)
"""The Arrow types of one SQL type each, tested in order."""


def plain(table: pa.Table) -> pa.Table:
    """``table`` with views of strings and binaries as plain ones (Arrow's kernels that
    sort, group and take do not all read views)."""
    fields = []
    for field in table.schema:
        if pa.types.is_string_view(field.type):
            field = field.with_type(pa.large_string())
        elif pa.types.is_binary_view(field.type):
            field = field.with_type(pa.large_binary())
        fields.append(field)
    return table.cast(pa.schema(fields))

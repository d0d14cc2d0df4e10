"""SQL type names (sqlglot ``DataType`` nodes) to matview types.

``sql_type`` accepts every type an expression may have (``CAST(x AS interval)``);
``column_type`` only the types a stored column may have: MZ_TIMESTAMP exists in expressions
only.
"""

from __future__ import annotations

from matview.ir.types import INTERVAL, TEXT, TIMETZ, Kind, SqlType, array_of, type_from_name
from matview.sql.errors import SqlTypeError, UnknownObjectError, UnsupportedError
from sqlglot import exp

DType = exp.DataType.Type

_NAMES = {
    DType.SMALLINT: "int",
    DType.INT: "int",
    DType.BIGINT: "bigint",
    DType.FLOAT: "double",
    DType.DOUBLE: "double",
    DType.DECIMAL: "numeric",
    DType.TEXT: "text",
    DType.VARCHAR: "varchar",
    DType.CHAR: "char",
    DType.BOOLEAN: "boolean",
    DType.DATE: "date",
    DType.TIMESTAMP: "timestamp",
    DType.TIMESTAMPTZ: "timestamptz",
    DType.TIME: "time",
    DType.TIMETZ: "timetz",
    DType.INTERVAL: "interval",
    DType.JSONB: "jsonb",
    DType.UUID: "uuid",
    DType.VARBINARY: "bytea",
    DType.NAME: "text",
}
"""Accepted types. SMALLINT and REAL widen to INT and DOUBLE; length limits of character
types are not enforced; ``name`` (and ``"char"``) are text."""

MAX_PRECISION = 38

NOT_STORABLE = (Kind.MZ_TIMESTAMP,)
"""Kinds no column of a table or a query's result may have."""


def sql_type(node: exp.DataType) -> SqlType:
    """The matview type a SQL type name denotes."""
    if node.this == DType.ARRAY:
        if not node.expressions:
            raise UnsupportedError.at("arrays need an element type (int[], text[], ...)", node)
        element = sql_type(node.expressions[0])
        if element.kind is Kind.ARRAY:
            raise UnsupportedError.at("multidimensional arrays are not supported", node)
        return array_of(element)
    if node.this == DType.JSON:
        raise UnsupportedError.at("type json is not supported; use jsonb", node)
    if node.this == DType.USERDEFINED:  # PostgreSQL's "char" is a one-byte text
        written = node.args["kind"]
        if isinstance(written, exp.Identifier) and written.quoted and written.this == "char":
            return TEXT
        raise UnknownObjectError.at(f'type "{written.name}" does not exist', node)
    name = _NAMES.get(node.this)
    if name is None:
        raise UnsupportedError.at(f"type {node.this.value.lower()} is not supported", node)
    if name != "numeric":
        return type_from_name(name)
    params = [int(p.this.this) for p in node.expressions]
    precision = params[0] if params else None
    scale = params[1] if len(params) > 1 else None
    if precision is not None and not 1 <= precision <= MAX_PRECISION:
        raise SqlTypeError.at(
            f"NUMERIC precision {precision} must be between 1 and {MAX_PRECISION}", node)
    if scale is not None and not 0 <= scale <= precision:
        raise SqlTypeError.at(
            f"NUMERIC scale {scale} must be between 0 and precision {precision}", node)
    return type_from_name(name, precision, scale)


def storable(sql_type: SqlType) -> bool:
    """Whether a column (of a table, a view or a query's result) may have ``sql_type``."""
    if sql_type.kind is Kind.ARRAY:
        assert sql_type.element is not None
        return sql_type.element.kind not in NOT_STORABLE + (Kind.ARRAY, Kind.NULL,
                                                            Kind.INTERVAL, Kind.TIMETZ)
    return sql_type.kind not in NOT_STORABLE


def column_type(node: exp.DataType, column: str) -> SqlType:
    """The type of table column ``column`` declared as ``node``."""
    result = sql_type(node)
    if not storable(result):
        plural = {INTERVAL: "intervals", TIMETZ: "timetz values"}.get(result.element)
        reason = (f"arrays of {plural} are not supported" if plural
                  else "it exists only in expressions (mz_now() in temporal filters)")
        raise UnsupportedError.at(f'column "{column}" cannot have type {result}: {reason}', node)
    return result

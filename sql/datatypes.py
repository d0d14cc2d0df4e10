"""SQL type names (sqlglot ``DataType`` nodes) to matview types."""

from __future__ import annotations

from matview.ir.types import SqlType, type_from_name
from matview.sql.errors import SqlTypeError, UnsupportedError
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
}
"""Accepted types. SMALLINT and REAL widen to INT and DOUBLE; length limits of character
types are not enforced."""

MAX_PRECISION = 38


def sql_type(node: exp.DataType) -> SqlType:
    """The matview type a SQL type name denotes."""
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

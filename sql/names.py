"""Names: identifier normalization and PostgreSQL's output column names."""

from __future__ import annotations

from matview.ir.types import Kind, SqlType
from matview.sql.datatypes import sql_type
from matview.sql.errors import SqlSyntaxError, UnsupportedError
from sqlglot import exp

UNNAMED = "?column?"

_TYPE_NAMES = {
    Kind.BOOLEAN: "bool", Kind.INT: "int4", Kind.BIGINT: "int8", Kind.DOUBLE: "float8",
    Kind.NUMERIC: "numeric", Kind.TEXT: "text", Kind.DATE: "date", Kind.TIMESTAMP: "timestamp",
    Kind.TIMESTAMPTZ: "timestamptz", Kind.TIME: "time", Kind.TIMETZ: "timetz",
    Kind.INTERVAL: "interval", Kind.JSONB: "jsonb",
    Kind.UUID: "uuid", Kind.BYTEA: "bytea",
}


def normalize(identifier: exp.Identifier) -> str:
    """The name an identifier denotes: unquoted identifiers are case-insensitive (lowercased),
    quoted ones are taken as written. Anything else in a name's place (``t@x``) is a syntax
    error."""
    if not isinstance(identifier, exp.Identifier):
        raise SqlSyntaxError.at("syntax error: expected a name", identifier)
    return identifier.this if identifier.quoted else identifier.this.lower()


def relation_name(table: exp.Table) -> str:
    """The normalized name of a table reference, which must not be schema-qualified."""
    if table.args.get("db") or table.args.get("catalog"):
        raise UnsupportedError.at("schema-qualified names are not supported", table)
    return normalize(table.this)


def type_name(sql_type: SqlType) -> str:
    """PostgreSQL's internal name of a type, used as a column name (``SELECT 1::int``); an
    array type's is its element's with a leading underscore (``_int4``)."""
    if sql_type.kind is Kind.ARRAY:
        assert sql_type.element is not None
        return "_" + type_name(sql_type.element)
    return _TYPE_NAMES[sql_type.kind]


def output_name(node: exp.Expr) -> str:
    """The name PostgreSQL gives a select-list expression that has no alias."""
    if isinstance(node, exp.Alias):
        return normalize(node.args["alias"])
    if isinstance(node, exp.Column):
        return normalize(node.this)
    if isinstance(node, exp.Paren):
        return output_name(node.this)
    if isinstance(node, exp.Cast):
        inner = output_name(node.this)
        return type_name(sql_type(node.to)) if inner == UNNAMED else inner
    if isinstance(node, exp.Boolean):
        return "bool"
    if isinstance(node, exp.Case):
        return "case"
    if isinstance(node, exp.GenerateSeries):
        return "generate_series"
    if isinstance(node, (exp.Explode, exp.Unnest)):
        return "unnest"
    if isinstance(node, exp.Interval):
        return "interval"
    if isinstance(node, exp.Array):
        return "array"
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    if isinstance(node, exp.Uuid):  # sqlglot's name for it is uuid
        return "gen_random_uuid"
    if isinstance(node, exp.Func) and not isinstance(node, exp.Binary):
        return node.sql_name().lower()
    return UNNAMED

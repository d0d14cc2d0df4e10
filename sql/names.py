"""Names: identifier normalization and PostgreSQL's output column names."""

from __future__ import annotations

from matview.ir.types import Kind, SqlType
from matview.sql.datatypes import sql_type
from matview.sql.errors import SqlSyntaxError, UnknownObjectError, UnsupportedError
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


SYSTEM_SCHEMAS = ("pg_catalog", "information_schema")
"""The schemas of the system catalogs, read-only (``matview.system_catalog``)."""


def relation_name(table: exp.Table) -> str:
    """The normalized name of a stored object's reference: the user's objects are in schema
    ``public``, which may be written (``public.t``); no other schema is."""
    name = read_name(table)
    if "." in name:
        raise UnsupportedError.at(f'"{name}" is a system catalog: it can only be read', table)
    return name


def read_name(table: exp.Table) -> str:
    """The normalized name of a relation a query reads: a user's (``t``, ``public.t``) or a
    system catalog, ``pg_catalog.pg_class`` (which the binder's catalog also finds as
    ``pg_class``, as PostgreSQL searches ``pg_catalog`` first). A database name before the
    schema (``db.public.t``) names the one database there is."""
    name, schema = normalize(table.this), table.args.get("db")
    if schema is None or normalize(schema) == "public":
        return name
    if normalize(schema) in SYSTEM_SCHEMAS:
        return f"{normalize(schema)}.{name}"
    raise UnknownObjectError.at(f'schema "{normalize(schema)}" does not exist', table)


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
        if inner != UNNAMED:
            return inner
        if isinstance(node.to, exp.ObjectIdentifier):  # oid, regclass, regtype
            return node.to.name.lower()
        return type_name(sql_type(node.to))
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

"""Schema qualifiers of functions, types and columns: ``pg_catalog.format_type(...)``,
``x::pg_catalog.text`` and ``pg_catalog.pg_class.relname``, as PostgreSQL's clients write them.

Every function and type is in ``pg_catalog`` and every relation a column can belong to is
named by its bare name in its query's scope (``sql.names.read_name``), so the qualifiers
``pg_catalog``, ``information_schema`` and ``public`` say nothing the binder needs and are
dropped before binding:

    pg_catalog.f(args)      => f(args)
    x::pg_catalog.t         => x::t
    schema.rel.column       => rel.column      (schema one of the three)
"""

from __future__ import annotations

import sqlglot
from matview.sql.dialect import Matview
from matview.sql.names import SYSTEM_SCHEMAS, normalize
from sqlglot import exp

_SCHEMAS = (*SYSTEM_SCHEMAS, "public")


def unqualified(tree: exp.Expr) -> exp.Expr:
    """``tree`` without the schema qualifiers of its functions, types and columns (in
    place)."""
    for node in list(tree.find_all(exp.DataType)):
        kind = node.args.get("kind")
        if node.this == exp.DataType.Type.USERDEFINED and isinstance(kind, exp.Dot) and \
                isinstance(kind.this, exp.Identifier) and normalize(kind.this) in _SCHEMAS:
            cast = sqlglot.parse_one(f"CAST(NULL AS {kind.expression.sql(dialect=Matview)})",
                                     dialect=Matview)
            assert isinstance(cast, exp.Cast)
            node.replace(cast.to)
    for node in list(tree.find_all(exp.Dot, exp.Column)):
        if isinstance(node, exp.Column):
            schema = node.args.get("db")
            if isinstance(schema, exp.Identifier) and normalize(schema) in _SCHEMAS:
                node.set("db", None)
        elif (isinstance(node.this, exp.Identifier) and normalize(node.this) in _SCHEMAS
              and isinstance(node.expression, exp.Func)):
            node.replace(node.expression)
    return tree

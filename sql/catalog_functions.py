"""PostgreSQL's catalog functions and object identifier types, as clients use them over the
system catalogs (``matview.system_catalog``).

Casts: ``x::oid`` is ``x`` as a BIGINT; ``'name'::regclass`` the relation's OID
(``ir.object_ids.relation_oid``); ``'name'::regtype`` the type's OID, an unknown name an
error (``to_regtype`` gives NULL); ``oid::regtype::text`` the type's name, ``format_type(oid,
NULL)``; ``oid::regclass::text`` the relation's name, ``(SELECT relname FROM pg_class WHERE
oid = x)``. Functions: ``format_type``, ``to_regtype``; ``pg_table_is_visible`` and its kin
TRUE (every object is on the search path); ``pg_get_expr(text, oid)`` its text (the
catalogs keep expressions as SQL text); ``pg_get_serial_sequence`` NULL (there are no
sequences); ``pg_get_userbyid`` the one user's name; ``pg_get_constraintdef(oid)`` and
``pg_get_indexdef(oid)`` the text ``matview_definitions`` keeps (``pg_get_indexdef(oid, n,
pretty)`` only for ``n`` 0, the whole index: NULL for a column);
``current_schemas(implicit)`` the search path, ``{pg_catalog,public}`` (``{public}``
without the implicit schema); ``pg_encoding_to_char(6)`` ``UTF8``; ``current_setting(name)``
inside a query a setting's default (``ir.object_ids.SETTINGS``; the server answers
``SELECT current_setting(...)`` alone with the session's value).
"""

from __future__ import annotations

import sqlglot
from matview.ir.object_ids import to_regtype
from matview.ir.scalar import Call, Case, Lit
from matview.ir.types import BIGINT, INT, TEXT
from matview.sql.call_names import CATALOG_FUNCTIONS
from matview.sql.calls import check_arity
from matview.sql.coerce import TypedScalar, call, coerce, explicit_cast, is_string_literal
from matview.sql.errors import SqlTypeError, UnknownObjectError
from matview.sql.scalars import ExprBinder
from sqlglot import exp

USER = "matview"
_VISIBLE = tuple(n for n in CATALOG_FUNCTIONS if n.endswith("_is_visible"))


def _argument(binder: ExprBinder, node: exp.Expr, to: object, signature: str) -> TypedScalar:
    value = coerce(binder.bind(node), to)  # type: ignore[arg-type]
    if value is None:
        raise SqlTypeError.at(f"function {signature} does not exist", node)
    return value


def bind_function(binder: ExprBinder, node: exp.Anonymous | exp.CurrentSchemas) -> TypedScalar:
    """A call of one of ``CATALOG_FUNCTIONS``."""
    if isinstance(node, exp.CurrentSchemas):
        name, args = "current_schemas", [a for a in [node.this] if a is not None]
    else:
        name, args = node.name.lower(), node.expressions
    if name == "format_type":
        check_arity(node, (2, 2), len(args))
        return call("format_type", [_argument(binder, args[0], BIGINT, "format_type"),
                                    _argument(binder, args[1], INT, "format_type")], node)
    if name == "to_regtype":
        check_arity(node, (1, 1), len(args))
        return call("to_regtype", [_argument(binder, args[0], TEXT, "to_regtype")], node)
    if name in _VISIBLE:
        check_arity(node, (1, 1), len(args))
        return call("object_visible", [_argument(binder, args[0], BIGINT, name)], node)
    if name == "pg_get_expr":
        check_arity(node, (2, 3), len(args))
        return _argument(binder, args[0], TEXT, name)
    if name in ("pg_get_constraintdef", "pg_get_indexdef"):
        check_arity(node, (1, 1 if name == "pg_get_indexdef" else 2) if len(args) < 3
                    else (3, 3), len(args))
        if len(args) == 3:  # (index, column, pretty): the index's text for column 0
            _argument(binder, args[1], INT, name)
        lookup = _lookup("matview_definitions", args[0])
        if len(args) == 3:
            lookup = exp.Case(ifs=[exp.If(this=exp.EQ(this=args[1].copy(),
                                                      expression=exp.Literal.number(0)),
                                          true=lookup)])
        return binder.bind(lookup)
    if name == "current_schemas":  # with the implicit pg_catalog when asked
        check_arity(node, (1, 1), len(args))
        implicit = exp.Array(expressions=[exp.Literal.string("pg_catalog"),
                                          exp.Literal.string("public")])
        return binder.bind(exp.Case(ifs=[exp.If(this=args[0].copy(), true=implicit)],
                                    default=exp.Array(expressions=[exp.Literal.string("public")])))
    if name == "pg_encoding_to_char":
        check_arity(node, (1, 1), len(args))
        code = _argument(binder, args[0], INT, name)
        return TypedScalar(Case(((Call("eq", (code.expr, Lit(6, INT))), Lit("UTF8", TEXT)),),
                                Lit("", TEXT)), TEXT)
    if name == "current_setting":
        check_arity(node, (1, 2), len(args))
        return call("current_setting", [_argument(binder, args[0], TEXT, name)], node)
    if name == "pg_get_userbyid":
        check_arity(node, (1, 1), len(args))
        _argument(binder, args[0], BIGINT, name)
        return TypedScalar(Lit(USER, TEXT), TEXT)
    check_arity(node, (2, 2), len(args))  # pg_get_serial_sequence
    for arg in args:
        _argument(binder, arg, TEXT, name)
    return TypedScalar(Lit(None, TEXT), TEXT)


def bind_object_cast(binder: ExprBinder, node: exp.Cast) -> TypedScalar:
    """``CAST(x AS oid | regclass | regtype)``, or such a cast cast to text."""
    if isinstance(node.to, exp.ObjectIdentifier):
        return _oid(binder, node)
    inner = node.this
    assert isinstance(inner, exp.Cast)
    kind = inner.to.name.lower()
    if kind == "regtype":
        return call("format_type", [_oid(binder, inner), TypedScalar(Lit(None, INT), INT)],
                    node)
    if kind == "regclass":
        lookup = _lookup("pg_class", inner)
        return binder.bind(lookup)
    return explicit_cast(_oid(binder, inner), TEXT, node)


def _lookup(catalog: str, oid: exp.Expr) -> exp.Expr:
    """``(SELECT <second column> FROM pg_catalog.<catalog> WHERE <first column> = oid)``, its
    columns renamed so that they take no column of ``oid`` (which reads the query around)."""
    lookup = sqlglot.parse_one(f"(SELECT matview_text FROM pg_catalog.{catalog} AS "
                               "matview_lookup(matview_oid, matview_text) WHERE matview_oid = _)")
    next(c for c in lookup.find_all(exp.Column) if c.name == "_").replace(oid.copy())
    return lookup


def _oid(binder: ExprBinder, node: exp.Cast) -> TypedScalar:
    """The OID ``CAST(x AS oid | regclass | regtype)`` gives."""
    kind, value = node.to.name.lower(), binder.bind(node.this)
    named = value.type == TEXT or is_string_literal(value)
    if kind == "regtype" and named:
        if is_string_literal(value):
            text = str(value.expr.value)  # type: ignore[attr-defined]
            if to_regtype(text) is None:
                raise UnknownObjectError.at(f'type "{text}" does not exist', node)
        return call("to_regtype", [explicit_cast(value, TEXT, node)], node)
    if kind == "regclass" and named:
        return call("relation_oid", [explicit_cast(value, TEXT, node)], node)
    return explicit_cast(value, BIGINT, node)

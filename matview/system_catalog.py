"""The system catalogs: PostgreSQL's ``pg_catalog`` and ``information_schema`` relations that
clients read (SQLAlchemy's and pandas' reflection, psycopg's type lookup), made
from the live catalog when a statement reading them is bound.

Each is a relation of PostgreSQL's columns (those clients read; OIDs as BIGINT, ``"char"``
and ``name`` as TEXT, ``int2vector`` and ``oidvector`` as arrays, subscripted from 1, but
``indoption`` in its text form, ``0 0``, as clients split it) whose
rows describe matview's objects: tables (``relkind`` ``r``), views (``v``), materialized views
(``m``) and the index backing each unique key (``i``), all in schema ``public``; columns with
their types (``ir.object_ids``), defaults, NOT NULL and comments; keys as constraints ``p``
and ``u``. ``matview_definitions`` is matview's own: the text of each constraint and index by
OID (``pg_get_constraintdef``, ``pg_get_indexdef``). A query reads one as a constant
(``Constant``): a one-shot query sees the catalog as it was when the query was bound. The
catalogs list no system object (nothing in ``pg_catalog``) but types, the two access methods,
a collation, a tablespace, the database and its one role; ``pg_proc`` is empty. The
views ``pg_tables``, ``pg_views`` and ``pg_matviews`` list tables, views and materialized views.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from matview.ir.object_ids import (
    INFORMATION_SCHEMA,
    PG_CATALOG,
    PUBLIC,
    SYSTEM_RELATIONS,
    TYPES,
    name_oid,
)
from matview.ir.relation import Field
from matview.ir.types import BIGINT, BOOLEAN, DOUBLE, INT, TEXT, SqlType, array_of
from matview.server.pgtypes import column_type
from matview.sql.catalog import CatalogItem

OWNER, HEAP, BTREE, DEFAULT_COLLATION = 10, 2, 403, 100
DATABASE = "matview"
_RELKIND = {"table": "r", "view": "v", "materialized view": "m", "source": "r"}
Row = tuple[Any, ...]
Table = tuple[list[tuple[str, SqlType]], Callable[[list[CatalogItem]], Iterable[Row]]]

B, T, N, K = BOOLEAN, TEXT, INT, BIGINT
TEXTS, INTS, OIDS = array_of(TEXT), array_of(INT), array_of(BIGINT)


def _columns(spec: str, kind: SqlType) -> list[tuple[str, SqlType]]:
    return [(name, kind) for name in spec.split()]


def _keys(item: CatalogItem) -> list[tuple[int, Any]]:
    """The unique keys of ``item`` with their index's OID."""
    return [(name_oid(key.name), key) for key in item.keys]


def _class(items: list[CatalogItem]) -> Iterable[Row]:
    for item in items:
        persisted = item.kind != "view"
        yield (name_oid(item.name), item.name, PUBLIC, 0, OWNER, HEAP if persisted else 0, 0,
               bool(item.keys), "p", _RELKIND[item.kind], len(item.fields), 0, False,
               False, False, False, False, None, None, -1.0, 0, 0)
        for index, key in _keys(item):
            yield (index, key.name, PUBLIC, 0, OWNER, BTREE, 0, False, "p", "i",
                   len(key.columns), 0, False, False, False, False, False, None, None, -1.0,
                   0, 0)


def _attribute(items: list[CatalogItem]) -> Iterable[Row]:
    for item in items:
        defaults = dict(item.defaults)
        for number, field in enumerate(item.fields, 1):
            oid, size, modifier, shown = column_type(str(field.type))
            collation = DEFAULT_COLLATION if shown in ("text", "text[]") else 0
            yield (name_oid(item.name), field.name, oid, -1, size, number, int(
                shown.endswith("[]")), modifier, size > 0, number - 1 in item.not_null,
                number - 1 in defaults, False, "", "", False, True, 0, collation)


def _type(items: list[CatalogItem]) -> Iterable[Row]:
    for t in TYPES:
        category = "A" if t.element else "S" if t.name in ("text", "varchar", "bpchar",
                                                          "name") else "U"
        collation = DEFAULT_COLLATION if category == "S" else 0
        yield (t.oid, t.name, PG_CATALOG, OWNER, t.size, 0 < t.size <= 8, "b", category, True,
               ",", 0, t.element, t.array, False, 0, -1, 0, collation, None)


def _attrdef(items: list[CatalogItem]) -> Iterable[Row]:
    for item in items:
        for position, text in item.defaults:
            yield (name_oid(f"{item.name}.{position}"), name_oid(item.name), position + 1, text)


def _description(items: list[CatalogItem]) -> Iterable[Row]:
    for item in items:
        if item.comment is not None:
            yield name_oid(item.name), SYSTEM_RELATIONS["pg_class"], 0, item.comment
        for position, text in item.column_comments:
            yield name_oid(item.name), SYSTEM_RELATIONS["pg_class"], position + 1, text


def _constraint(items: list[CatalogItem]) -> Iterable[Row]:
    for item in items:
        for index, key in _keys(item):
            yield (name_oid(f"{item.name}.{key.name}"), key.name, PUBLIC,
                   "p" if key.primary else "u", False, False, True, name_oid(item.name), 0,
                   index, 0, 0, " ", " ", " ", True, 0, False,
                   tuple(c + 1 for c in key.columns), None, None)


def _index(items: list[CatalogItem]) -> Iterable[Row]:
    for item in items:
        for index, key in _keys(item):
            width = len(key.columns)
            yield (index, name_oid(item.name), width, width, True, False, key.primary, False,
                   True, False, True, False, True, True, False, tuple(c + 1 for c in key.columns),
                   (0,) * width, " ".join(["0"] * width), None, None)


def _definitions(items: list[CatalogItem]) -> Iterable[Row]:
    for item in items:
        for index, key in _keys(item):
            listed = ", ".join(item.fields[c].name for c in key.columns)
            yield (name_oid(f"{item.name}.{key.name}"),
                   f"{'PRIMARY KEY' if key.primary else 'UNIQUE'} ({listed})")
            yield (index, f"CREATE UNIQUE INDEX {key.name} ON public.{item.name} USING btree "
                          f"({listed})")


def _tables(items: list[CatalogItem]) -> Iterable[Row]:
    for item in items:
        if item.kind != "materialized view":
            kind = "BASE TABLE" if item.kind in ("table", "source") else "VIEW"
            yield DATABASE, "public", item.name, kind, "YES", "NO"


def _information_columns(items: list[CatalogItem]) -> Iterable[Row]:
    for item in items:
        defaults = dict(item.defaults)
        for number, field in enumerate(item.fields, 1):
            _, _, modifier, shown = column_type(str(field.type))
            shown, _, precision = shown.partition("(")
            digits = [int(d) for d in precision.rstrip(")").split(",")] if precision else []
            array = shown.endswith("[]")
            yield (DATABASE, "public", item.name, field.name, number,
                   defaults.get(number - 1), "NO" if number - 1 in item.not_null else "YES",
                   "ARRAY" if array else shown, None, *(digits + [None, None])[:2],
                   ("_" if array else "") + next(t.name for t in TYPES if t.shown ==
                                                 shown.removesuffix("[]")))


CATALOGS: dict[str, Table] = {
    "pg_catalog.pg_namespace": (
        [("oid", K), ("nspname", T), ("nspowner", K), ("nspacl", TEXTS)],
        lambda items: [(PG_CATALOG, "pg_catalog", OWNER, None), (PUBLIC, "public", OWNER, None),
                       (INFORMATION_SCHEMA, "information_schema", OWNER, None)]),
    "pg_catalog.pg_class": (
        [("oid", K), ("relname", T), ("relnamespace", K), ("reltype", K), ("relowner", K),
         ("relam", K), ("reltablespace", K), ("relhasindex", B), ("relpersistence", T),
         ("relkind", T), ("relnatts", N), ("relchecks", N),
         *_columns("relhasrules relhastriggers relrowsecurity relforcerowsecurity "
                   "relispartition", B),
         ("reloptions", TEXTS), ("relpartbound", T), ("reltuples", DOUBLE),
         ("reltoastrelid", K), ("reloftype", K)], _class),
    "pg_catalog.pg_attribute": (
        [("attrelid", K), ("attname", T), ("atttypid", K), ("attstattarget", N),
         ("attlen", N), ("attnum", N), ("attndims", N), ("atttypmod", N),
         *_columns("attbyval attnotnull atthasdef atthasmissing", B),
         ("attidentity", T), ("attgenerated", T), ("attisdropped", B), ("attislocal", B),
         ("attinhcount", N), ("attcollation", K)], _attribute),
    "pg_catalog.pg_type": (
        [("oid", K), ("typname", T), ("typnamespace", K), ("typowner", K), ("typlen", N),
         ("typbyval", B), ("typtype", T), ("typcategory", T), ("typisdefined", B),
         ("typdelim", T), ("typrelid", K), ("typelem", K), ("typarray", K),
         ("typnotnull", B), ("typbasetype", K), ("typtypmod", N), ("typndims", N),
         ("typcollation", K), ("typdefault", T)], _type),
    "pg_catalog.pg_attrdef": (
        [("oid", K), ("adrelid", K), ("adnum", N), ("adbin", T)], _attrdef),
    "pg_catalog.pg_description": (
        [("objoid", K), ("classoid", K), ("objsubid", N), ("description", T)], _description),
    "pg_catalog.pg_constraint": (
        [("oid", K), ("conname", T), ("connamespace", K), ("contype", T),
         *_columns("condeferrable condeferred convalidated", B), ("conrelid", K),
         ("contypid", K), ("conindid", K), ("conparentid", K), ("confrelid", K),
         *_columns("confupdtype confdeltype confmatchtype", T), ("conislocal", B),
         ("coninhcount", N), ("connoinherit", B), ("conkey", INTS), ("confkey", INTS),
         ("conbin", T)], _constraint),
    "pg_catalog.pg_index": (
        [("indexrelid", K), ("indrelid", K), ("indnatts", N), ("indnkeyatts", N),
         *_columns("indisunique indnullsnotdistinct indisprimary indisexclusion indimmediate "
                   "indisclustered indisvalid indcheckxmin indisready indislive "
                   "indisreplident", B),
         ("indkey", INTS), ("indclass", OIDS), ("indoption", T), ("indexprs", T),
         ("indpred", T)], _index),
    "pg_catalog.pg_am": (
        [("oid", K), ("amname", T), ("amtype", T)],
        lambda items: [(HEAP, "heap", "t"), (BTREE, "btree", "i")]),
    "pg_catalog.pg_opclass": (
        [("oid", K), ("opcmethod", K), ("opcname", T), ("opcnamespace", K),
         ("opcintype", K), ("opcdefault", B)], lambda items: []),
    "pg_catalog.pg_sequence": (
        [("seqrelid", K), ("seqtypid", K), *_columns(
            "seqstart seqincrement seqmax seqmin seqcache", K), ("seqcycle", B)],
        lambda items: []),
    "pg_catalog.pg_collation": (
        [("oid", K), ("collname", T), ("collnamespace", K), ("collprovider", T)],
        lambda items: [(DEFAULT_COLLATION, "default", PG_CATALOG, "d")]),
    "pg_catalog.pg_tablespace": (
        [("oid", K), ("spcname", T)], lambda items: [(1663, "pg_default")]),
    "pg_catalog.pg_inherits": (
        [("inhrelid", K), ("inhparent", K), ("inhseqno", N)], lambda items: []),
    "pg_catalog.matview_definitions": ([("oid", K), ("definition", T)], _definitions),
    "pg_catalog.pg_database": (
        [("oid", K), ("datname", T), ("datdba", K), ("encoding", N), ("datcollate", T),
         ("datctype", T), ("datallowconn", B), ("datacl", TEXTS)],
        lambda items: [(1, DATABASE, OWNER, 6, "C", "C", True, None)]),
    "pg_catalog.pg_roles": (
        [("oid", K), ("rolname", T), *_columns(
            "rolsuper rolinherit rolcreaterole rolcreatedb rolcanlogin rolreplication", B),
         ("rolconnlimit", N), ("rolvaliduntil", T)],
        lambda items: [(OWNER, DATABASE, True, True, True, True, True, False, -1, None)]),
    "pg_catalog.pg_proc": (
        [("oid", K), ("proname", T), ("pronamespace", K), ("prokind", T), ("proretset", B),
         ("prorettype", K), ("proargnames", TEXTS), ("prosrc", T), ("prolang", K)],
        lambda items: []),
    "pg_catalog.pg_language": (
        [("oid", K), ("lanname", T)],
        lambda items: [(12, "internal"), (13, "c"), (14, "sql")]),
    "pg_catalog.pg_tables": (
        _columns("schemaname tablename tableowner", T),
        lambda items: [("public", i.name, DATABASE) for i in items if i.kind == "table"]),
    "pg_catalog.pg_views": (
        _columns("schemaname viewname viewowner definition", T),
        lambda items: [("public", i.name, DATABASE, i.query_sql) for i in items
                       if i.kind == "view"]),
    "pg_catalog.pg_matviews": (
        _columns("schemaname matviewname matviewowner definition", T),
        lambda items: [("public", i.name, DATABASE, i.query_sql) for i in items
                       if i.kind == "materialized view"]),
    "information_schema.schemata": (
        _columns("catalog_name schema_name schema_owner", T),
        lambda items: [(DATABASE, "public", "matview"),
                       (DATABASE, "information_schema", "matview"),
                       (DATABASE, "pg_catalog", "matview")]),
    "information_schema.tables": (
        _columns("table_catalog table_schema table_name table_type is_insertable_into "
                 "is_typed", T), _tables),
    "information_schema.columns": (
        [*_columns("table_catalog table_schema table_name column_name", T),
         ("ordinal_position", N), *_columns("column_default is_nullable data_type", T),
         *_columns("character_maximum_length numeric_precision numeric_scale", N),
         ("udt_name", T)], _information_columns),
    "information_schema.views": (
        _columns("table_catalog table_schema table_name view_definition", T),
        lambda items: [(DATABASE, "public", i.name, i.query_sql) for i in items
                       if i.kind == "view"]),
}
"""Each catalog: its columns and its rows of the user's objects."""

_BARE = {name.partition(".")[2]: name for name in [*CATALOGS, "pg_catalog.pg_depend"]
         if name.startswith("pg_catalog.")}


def catalog_name(name: str) -> str | None:
    """The system catalog ``name`` denotes (``pg_class`` is ``pg_catalog.pg_class``), if
    any."""
    return name if name in CATALOGS or name == "pg_catalog.pg_depend" else _BARE.get(name)


def _depend(uses: Iterable[tuple[str, str]]) -> Iterable[Row]:
    """``pg_depend``'s rows of views and materialized views, as PostgreSQL keeps them: the
    rule of each (``pg_rewrite``) depends internally on it, and normally on what it reads."""
    rule, relation = SYSTEM_RELATIONS["pg_rewrite"], SYSTEM_RELATIONS["pg_class"]
    for used, user in uses:
        view_rule = name_oid(f"{user}._RETURN")
        yield rule, view_rule, 0, relation, name_oid(user), 0, "i"
        yield rule, view_rule, 0, relation, name_oid(used), 0, "n"


_DEPEND = [("classid", K), ("objid", K), ("objsubid", N), ("refclassid", K), ("refobjid", K),
           ("refobjsubid", N), ("deptype", T)]


def catalog_item(name: str, items: list[CatalogItem],
                 uses: Iterable[tuple[str, str]]) -> CatalogItem:
    """System catalog ``name`` (from ``catalog_name``) of the objects ``items``, each pair
    ``(a, b)`` of ``uses`` saying that view ``b`` reads ``a``."""
    if name == "pg_catalog.pg_depend":
        columns, found = _DEPEND, list(_depend(uses))
    else:
        columns, rows = CATALOGS[name]
        found = list(rows(sorted(items, key=lambda i: i.name)))
    return CatalogItem(name, "system catalog", tuple(Field(n, t) for n, t in columns),
                       rows=tuple((tuple(row), 1) for row in dict.fromkeys(found)))

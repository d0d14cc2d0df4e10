"""Answers to the catalog and session queries clients send on their own: ``version()``,
``current_database()`` and friends, and psql's describe queries (``\\d``, ``\\dt``, ...)
over pg_catalog, recognised by their shape and answered from matview's catalog."""

from __future__ import annotations

import re

import matview
from matview.server.catalog_view import Relation, relations
from matview.server.pgtypes import column_type
from matview.server.settings import SERVER_VERSION

Columns = list[tuple[str, str]]
Answer = tuple[Columns, list[tuple[object, ...]]]

RELKINDS = {"table": "r", "view": "v", "materialized view": "m", "source": "r"}
OWNER = "matview"
SCHEMA = "public"


def answer(sql: str, connection: matview.Connection, settings: dict[str, str],
           database: str) -> Answer | None:
    """The result of ``sql`` when it is a session or catalog query the server answers
    itself, else None."""
    session = _session_functions(sql, settings, database)
    if session is not None:
        return session
    if not re.search(r"\bpg_catalog\.|information_schema\.", sql, re.I):
        return None
    for recognise, respond in _SHAPES:
        if recognise.search(sql):
            return respond(sql, relations(connection))
    if _FOOTERS.search(sql):
        return [("?column?", "text")], []
    return None  # run as a query of the system catalogs (``matview.system_catalog``)


_FUNCTION = re.compile(
    r"\s*(?:pg_catalog\.)?(version|current_database|current_schema|current_user|session_user|"
    r"user|current_catalog|pg_backend_pid|current_setting)\s*(?:\(\s*(?:'([^']*)')?\s*\))?"
    r"(?:\s+(?:AS\s+)?(\w+|\"[^\"]*\"))?\s*", re.I)


def _session_functions(sql: str, settings: dict[str, str], database: str) -> Answer | None:
    """``SELECT version()``, ``current_database()``, ``current_user``,
    ``current_setting('x')`` ... (a select list of those alone)."""
    found = re.fullmatch(r"\s*SELECT\s+(.*?)\s*;?\s*", sql, re.I | re.S)
    if found is None:
        return None
    columns, row = [], []
    for item in found.group(1).split(","):
        call = _FUNCTION.fullmatch(item)
        if call is None:
            return None
        name, argument, alias = call.group(1).lower(), call.group(2), call.group(3)
        values = {
            "version": f"PostgreSQL {SERVER_VERSION} on matview", "current_database": database,
            "current_catalog": database, "current_schema": "public",
            "current_user": settings["session_authorization"],
            "session_user": settings["session_authorization"],
            "user": settings["session_authorization"], "pg_backend_pid": None,
            "current_setting": settings.get(argument or "", None),
        }
        columns.append(((alias or name).strip('"'), "text"))
        row.append(values[name])
    return columns, [tuple(row)]


def _view_definition(sql: str, relations_: list[Relation]) -> Answer:
    """``pg_get_viewdef(oid)``: a view's defining query."""
    target = _by_oid(sql, relations_)
    return [("pg_get_viewdef", "text")], [(None if target is None else target.sql,)]


_FOOTERS = re.compile(r"FROM pg_catalog\.(pg_policy|pg_statistic_ext|pg_publication|pg_class c, "
                      r"pg_catalog\.pg_inherits)\b")
"""psql's ``\\d NAME`` footer queries: policies, statistics, publications, inheritance
(matview has none)."""


def _name_filter(sql: str) -> re.Pattern[str] | None:
    """psql's name pattern (``c.relname OPERATOR(pg_catalog.~) '^(t)$'``) as a regex."""
    found = re.search(r"c\.relname OPERATOR\(pg_catalog\.~\) '((?:[^']|'')*)'", sql)
    return None if found is None else re.compile(found.group(1).replace("''", "'"))


def _selected(relations_: list[Relation], sql: str) -> list[Relation]:
    """The relations of the kinds and name pattern a psql query asks for."""
    pattern = _name_filter(sql)
    kinds = re.search(r"c\.relkind IN \(([^)]*)\)", sql)
    wanted = set(re.findall(r"'(\w)'", kinds.group(1))) if kinds else set(RELKINDS.values())
    return [r for r in relations_ if RELKINDS[r.kind] in wanted
            and (pattern is None or pattern.search(r.name))]


_LIST_VALUES = {
    "Schema": lambda r: SCHEMA, "Name": lambda r: r.name, "Type": lambda r: r.kind,
    "Owner": lambda r: OWNER, "Persistence": lambda r: "permanent",
    "Access method": lambda r: None, "Size": lambda r: "0 bytes",
    "Description": lambda r: r.comment,
}


def _list(sql: str, relations_: list[Relation]) -> Answer:
    """``\\d``, ``\\dt``, ``\\dv``, ``\\dm`` (and ``+``): one row per relation."""
    head = sql[:sql.index("FROM pg_catalog.pg_class")]
    names = [n for n in re.findall(r'as "([^"]+)"', head) if n in _LIST_VALUES]
    rows = [tuple(_LIST_VALUES[n](r) for n in names) for r in _selected(relations_, sql)]
    return [(n, "text") for n in names], rows


def _lookup(sql: str, relations_: list[Relation]) -> Answer:
    """``\\d name``'s first query: the OID, schema and name of each matching relation."""
    rows = [(str(r.oid), SCHEMA, r.name) for r in _selected(relations_, sql)]
    return [("oid", "text"), ("nspname", "text"), ("relname", "text")], rows


def _by_oid(sql: str, relations_: list[Relation]) -> Relation | None:
    """The relation whose OID a psql query names, or None."""
    found = re.search(r"(?:c\.oid = |attrelid = |pg_get_viewdef\()'(\d+)'", sql)
    oid = int(found.group(1)) if found else -1
    return next((r for r in relations_ if r.oid == oid), None)


def _flags(sql: str, relations_: list[Relation]) -> Answer:
    """``\\d name``'s second query: the relation's kind and flags (``relhasindex`` alone
    set, when it has indexes: psql then asks for them, ``_indexes``)."""
    names = ["relchecks", "relkind", "relhasindex", "relhasrules", "relhastriggers",
             "relrowsecurity", "relforcerowsecurity", "relhasoids", "relispartition",
             "reloptions", "reltablespace", "reloftype", "relpersistence", "relreplident",
             "amname"]
    target = _by_oid(sql, relations_)
    rows = [] if target is None else [(
        "0", RELKINDS[target.kind], "t" if target.indexes else "f", "f", "f", "f", "f", "f",
        "f", "", "0", "", "p", "d", "heap" if target.kind != "view" else None)]
    return [(n, "text") for n in names], rows


def _attributes(sql: str, relations_: list[Relation]) -> Answer:
    """``\\d name``'s columns query: name, type, default, not null, collation, identity,
    generated (and, for ``\\d+``, storage, statistics target and description)."""
    target = _by_oid(sql, relations_)
    names = ["attname", "format_type", "default", "attnotnull", "attcollation", "attidentity",
             "attgenerated"]
    extra = [(n, v) for n, v in (("attstorage", "x"), ("attcompression", ""),
                                 ("attstattarget", None), ("col_description", None))
             if n in sql]
    rows = [] if target is None else [
        (name, column_type(kind)[3], default, "t" if not_null else "f", None, "", "",
         *(said if n == "col_description" else v for n, v in extra))
        for (name, kind), said, default, not_null in zip(
            target.columns, target.column_comments, target.defaults, target.not_null)]
    return [(n, "text") for n in names + [n for n, _ in extra]], rows


def _indexes(sql: str, relations_: list[Relation]) -> Answer:
    """``\\d name``'s indexes query (its footer ``Indexes:``): per index, its name, whether
    it backs the primary key or a unique key, its definition (psql shows what follows
    ``USING``) and its key constraint's kind (``p``, ``u``), primary key first."""
    target = _by_oid(sql, relations_)
    names = ["relname", "indisprimary", "indisunique", "indisclustered", "indisvalid",
             "pg_get_indexdef", "pg_get_constraintdef", "contype", "condeferrable",
             "condeferred", "indisreplident", "reltablespace"]
    columns: Columns = [(n, "text") for n in names]
    if target is None:
        return columns, []
    rows = [(i.name, _flag(i.primary), _flag(i.unique), "f", "t",
             f"CREATE {'UNIQUE ' if i.unique else ''}INDEX {i.name} ON {SCHEMA}.{target.name} "
             f"USING btree ({', '.join(i.columns)})",
             None if not i.unique else f"{'PRIMARY KEY' if i.primary else 'UNIQUE'} "
             f"({', '.join(i.columns)})",
             ("p" if i.primary else "u") if i.unique else None, "f", "f", "f", "0")
            for i in sorted(target.indexes, key=lambda i: not i.primary)]
    return columns, rows


def _flag(value: bool) -> str:
    """A boolean as pg_catalog's text shows it."""
    return "t" if value else "f"


_SHAPES = [
    (re.compile(r"^SELECT pg_catalog\.pg_get_viewdef\('\d+'"), _view_definition),
    (re.compile(r"^SELECT a\.attname,\s+pg_catalog\.format_type\(a\.atttypid, a\.atttypmod\),"
                r"\s+\(SELECT pg_catalog\.pg_get_expr"), _attributes),
    (re.compile(r"^SELECT c\.relchecks, c\.relkind, c\.relhasindex, c\.relhasrules, "
                r"c\.relhastriggers, c\.relrowsecurity"), _flags),
    (re.compile(r"^SELECT c2\.relname, i\.indisprimary, i\.indisunique"), _indexes),
    (re.compile(r'pg_catalog\.pg_get_userbyid\(c\.relowner\) as "Owner"'), _list),
    (re.compile(r"^SELECT c\.oid,\s+n\.nspname,\s+c\.relname\s+FROM pg_catalog\.pg_class c"
                r"(?=[\s\S]*OPERATOR\(pg_catalog\.~\) ')"), _lookup),  # psql's (a parameter: run)
]

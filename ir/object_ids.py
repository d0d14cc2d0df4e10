"""PostgreSQL object identifiers: the OIDs of types and relations, and the functions over them
that need no catalog (``format_type``, ``to_regtype``, ``'name'::regclass``).

A type's OID is PostgreSQL's (``TYPES``). A relation's is PostgreSQL's for the system catalogs
matview has (``SYSTEM_RELATIONS``) and, for a user's relation, index or constraint, a function
of its name: ``16384 + crc32(name) mod (2^31 - 16384)`` (``name_oid``), PostgreSQL's range of
user OIDs, the same in every process and computed alike in Python and in Spark (two names may
share one, with odds of about n^2 / 2^32 for n names). OIDs are BIGINT values.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from matview.ir.types import BIGINT, BOOLEAN, INT, TEXT, Kind, SqlType

FIRST_OID = 16384
"""PostgreSQL's first OID for user objects."""
_OID_SPAN = 2**31 - FIRST_OID

PG_CATALOG, PUBLIC, INFORMATION_SCHEMA = 11, 2200, 13000
"""The namespaces' OIDs (``pg_namespace``)."""


@dataclass(frozen=True)
class PgType:
    """A type of ``pg_type``: OID, internal name, ``format_type``'s name, size (-1: varies),
    the OID of its array type (0 for an array) and of its element (0 but for an array)."""

    oid: int
    name: str
    shown: str
    size: int
    array: int = 0
    element: int = 0


_BASE = [
    PgType(16, "bool", "boolean", 1, 1000), PgType(17, "bytea", "bytea", -1, 1001),
    PgType(18, "char", '"char"', 1, 1002), PgType(19, "name", "name", 64, 1003),
    PgType(20, "int8", "bigint", 8, 1016), PgType(21, "int2", "smallint", 2, 1005),
    PgType(23, "int4", "integer", 4, 1007), PgType(25, "text", "text", -1, 1009),
    PgType(26, "oid", "oid", 4, 1028), PgType(700, "float4", "real", 4, 1021),
    PgType(701, "float8", "double precision", 8, 1022),
    PgType(1042, "bpchar", "character", -1, 1014),
    PgType(1043, "varchar", "character varying", -1, 1015),
    PgType(1082, "date", "date", 4, 1182), PgType(1083, "time", "time without time zone", 8, 1183),
    PgType(1114, "timestamp", "timestamp without time zone", 8, 1115),
    PgType(1184, "timestamptz", "timestamp with time zone", 8, 1185),
    PgType(1186, "interval", "interval", 16, 1187), PgType(1700, "numeric", "numeric", -1, 1231),
    PgType(2205, "regclass", "regclass", 4, 2210), PgType(2206, "regtype", "regtype", 4, 2211),
    PgType(2950, "uuid", "uuid", 16, 2951), PgType(3802, "jsonb", "jsonb", -1, 3807),
]
TYPES: tuple[PgType, ...] = (*_BASE, *(PgType(t.array, "_" + t.name, t.shown + "[]", -1, 0, t.oid)
                                       for t in _BASE))
"""The types ``pg_type`` lists: matview's, those PostgreSQL's clients ask for, and their
arrays."""

_BY_OID = {t.oid: t for t in TYPES}
_ALIASES = {"int": 23, "integer": 23, "smallint": 21, "bigint": 20, "boolean": 16,
            "real": 700, "float": 701, "double precision": 701, "decimal": 1700,
            "character varying": 1043, "character": 1042, "timestamp without time zone": 1114,
            "timestamp with time zone": 1184, "time without time zone": 1083}
TYPE_NAMES: dict[str, int] = {**{t.name: t.oid for t in TYPES}, **_ALIASES,
                              **{t.shown: t.oid for t in TYPES}}
"""The OID of each name ``to_regtype`` reads: internal names, SQL names and aliases."""

SYSTEM_RELATIONS = {
    "pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255, "pg_class": 1259,
    "pg_attrdef": 2604, "pg_constraint": 2606, "pg_inherits": 2611, "pg_index": 2610,
    "pg_description": 2609, "pg_namespace": 2615, "pg_am": 2601, "pg_opclass": 2616,
    "pg_tablespace": 1213, "pg_collation": 3456, "pg_sequence": 2224, "pg_depend": 2608,
    "pg_rewrite": 2618,
}
"""The system catalogs' OIDs, PostgreSQL's (``classoid`` of ``pg_description``)."""


def name_oid(name: str) -> int:
    """The OID of the user's relation, index or constraint called ``name`` (normalized)."""
    return FIRST_OID + zlib.crc32(name.encode()) % _OID_SPAN


def relation_oid(text: str) -> int:
    """``text::regclass`` of a user's relation or a system catalog: the name as PostgreSQL
    reads it (an unquoted name folds to lower case; ``public.`` and ``pg_catalog.`` are the
    schemas searched)."""
    name = text.strip()
    name = name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()
    schema, _, bare = name.rpartition(".")
    if schema in ("", "pg_catalog") and bare in SYSTEM_RELATIONS:
        return SYSTEM_RELATIONS[bare]
    return name_oid(bare if schema == "public" else name)


def format_type(oid: int | None, modifier: int | None) -> str | None:
    """``format_type(oid, typmod)``: a type's SQL name, with its precision and scale
    (``numeric(10,2)``) or length (``character varying(20)``) when ``typmod`` gives them;
    ``???`` for an unknown OID, NULL for NULL (not NULL for a NULL ``typmod``)."""
    found = None if oid is None else _BY_OID.get(oid)
    if oid is None:
        return None
    if found is None:
        return "???"
    if modifier is None or modifier < 4:
        return found.shown
    if found.name == "numeric":
        return f"numeric({(modifier - 4) >> 16},{(modifier - 4) & 0xFFFF})"
    if found.name in ("varchar", "bpchar"):
        return f"{found.shown}({modifier - 4})"
    return found.shown


def to_regtype(text: str) -> int | None:
    """``to_regtype(text)``: the OID of the type ``text`` names, NULL if none."""
    return TYPE_NAMES.get(" ".join(text.strip().lower().replace('"', "").split()))


SETTINGS = {"server_version": "15.0 (matview)", "server_version_num": "150000",
            "default_table_access_method": "heap", "search_path": '"$user", public',
            "standard_conforming_strings": "on", "server_encoding": "UTF8",
            "client_encoding": "UTF8", "datestyle": "ISO, MDY", "timezone": "UTC",
            "integer_datetimes": "on", "max_identifier_length": "63"}
"""The settings ``current_setting`` reads inside a query: their defaults (the server's
session starts from them: ``matview.server.settings``)."""


def current_setting(name: str) -> str | None:
    """``current_setting(name)``: the setting's default, NULL for a setting it does not know
    (as PostgreSQL's ``current_setting(name, true)``)."""
    return SETTINGS.get(name.lower())


def _spark_map(F: Any, pairs: dict[Any, Any]) -> Any:
    return F.create_map(*(F.lit(x) for pair in pairs.items() for x in pair))


def _spark_format_type(F: Any, oid: Any, modifier: Any) -> Any:
    shown = _spark_map(F, {t.oid: t.shown for t in TYPES})[oid.cast("bigint")]
    size = modifier - 4
    return (F.when(oid.isNull(), F.lit(None))
            .when(shown.isNull(), F.lit("???"))
            .when((oid == 1700) & (modifier >= 4), F.format_string(
                "numeric(%d,%d)", F.shiftright(size, 16), size % 65536))
            .when(oid.isin(1042, 1043) & (modifier >= 4),
                  F.format_string("%s(%d)", shown, size))
            .otherwise(shown))


def _spark_relation_oid(F: Any, text: Any) -> Any:
    name = F.trim(text)
    name = F.when(name.startswith('"'), F.regexp_replace(
        F.regexp_replace(name, '^"|"$', ""), '""', '"')).otherwise(F.lower(name))
    bare = F.regexp_replace(name, r"^(public|pg_catalog)\.", "")
    system = _spark_map(F, SYSTEM_RELATIONS)[bare]
    hashed = F.crc32(F.encode(F.regexp_replace(name, r"^public\.", ""), "UTF-8"))
    return F.coalesce(F.when(~name.startswith("public."), system),
                      F.lit(FIRST_OID) + hashed % _OID_SPAN)


def _spark_to_regtype(F: Any, text: Any) -> Any:
    key = F.trim(F.regexp_replace(F.lower(F.regexp_replace(text, '"', "")), r"\s+", " "))
    return _spark_map(F, TYPE_NAMES)[key]


def _types(*expected: SqlType) -> Any:
    def returns(types: list[SqlType]) -> SqlType:
        for given, want in zip(types, expected[:-1], strict=False):
            if given.kind not in (Kind.NULL, want.kind) and not (
                    want.kind in (Kind.BIGINT, Kind.INT) and given.kind in (Kind.INT,
                                                                            Kind.BIGINT)):
                raise TypeError(f"function does not accept {given}")
        return expected[-1]
    return returns


FUNCTIONS: list[tuple[str, Any, Any, Any, tuple[int, int]]] = [
    ("format_type", _types(BIGINT, INT, TEXT), format_type, _spark_format_type, (2, 2)),
    ("to_regtype", _types(TEXT, BIGINT), to_regtype, _spark_to_regtype, (1, 1)),
    ("relation_oid", _types(TEXT, BIGINT), relation_oid, _spark_relation_oid, (1, 1)),
    ("current_setting", _types(TEXT, TEXT), current_setting,
     lambda F, name: _spark_map(F, SETTINGS)[F.lower(name)], (1, 1)),
    ("object_visible", _types(BIGINT, BOOLEAN), lambda oid: True,
     lambda F, oid: F.lit(True), (1, 1)),
]
"""The OID functions: name, type rule, Python meaning, Spark lowering, arity.
``object_visible`` is ``pg_table_is_visible`` and its kin: every object is on the search
path."""

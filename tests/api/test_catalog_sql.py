"""The SQL that PostgreSQL's clients send about the catalog, through the Python API: the
system catalogs (``matview.system_catalog``), OID casts and catalog functions
(``sql.catalog_functions``), ``x op ANY | ALL (array)``, array sizes and
``generate_subscripts``, ``jsonb_build_object`` and ORDER BY an expression not selected."""

from __future__ import annotations

import random

import duckdb
import pytest
from matview.ir.array_quantifiers import FUNCTIONS
from pyspark.sql import SparkSession

import matview


@pytest.fixture(scope="module")
def con(spark: SparkSession) -> matview.Connection:
    con = matview.connect(spark=spark)
    con.execute("CREATE TABLE cat_items (id INT PRIMARY KEY, name TEXT NOT NULL, "
                "price NUMERIC(10,2) DEFAULT 0, tag VARCHAR, UNIQUE (name, tag))")
    con.execute("COMMENT ON COLUMN cat_items.price IS 'in euros'")
    con.execute("CREATE MATERIALIZED VIEW cat_dear AS SELECT id, name FROM cat_items "
                "WHERE price > 2")
    con.execute("CREATE VIEW cat_names AS SELECT name FROM cat_items")
    return con


def test_pg_class_lists_relations_and_key_indexes(con: matview.Connection) -> None:
    rows = con.execute(
        "SELECT c.relname, c.relkind, n.nspname FROM pg_catalog.pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE c.relname LIKE 'cat_%' ORDER BY c.relname").fetchall()
    assert rows == [("cat_dear", "m", "public"), ("cat_items", "r", "public"),
                    ("cat_items_name_tag_key", "i", "public"),
                    ("cat_items_pkey", "i", "public"), ("cat_names", "v", "public")]


def test_pg_attribute_types_defaults_and_comments(con: matview.Connection) -> None:
    rows = con.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
        "pg_get_expr(d.adbin, d.adrelid), ds.description FROM pg_attribute a "
        "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "LEFT JOIN pg_description ds ON ds.objoid = a.attrelid AND ds.objsubid = a.attnum "
        "WHERE a.attrelid = 'cat_items'::regclass ORDER BY a.attnum").fetchall()
    assert rows == [("id", "integer", True, None, None), ("name", "text", True, None, None),
                    ("price", "numeric(10,2)", False, "0", "in euros"),
                    ("tag", "text", False, None, None)]


def test_constraints_and_their_definitions(con: matview.Connection) -> None:
    rows = con.execute(
        "SELECT conname, contype, conkey, pg_get_constraintdef(oid), "
        "pg_get_indexdef(conindid) FROM pg_constraint WHERE conrelid = "
        "'public.cat_items'::regclass ORDER BY conname").fetchall()
    assert rows == [
        ("cat_items_name_tag_key", "u", [2, 4], "UNIQUE (name, tag)",
         "CREATE UNIQUE INDEX cat_items_name_tag_key ON public.cat_items USING btree (name, "
         "tag)"),
        ("cat_items_pkey", "p", [1], "PRIMARY KEY (id)",
         "CREATE UNIQUE INDEX cat_items_pkey ON public.cat_items USING btree (id)")]


def test_information_schema(con: matview.Connection) -> None:
    tables = con.execute("SELECT table_name, table_type FROM information_schema.tables "
                         "WHERE table_name LIKE 'cat_%' ORDER BY 1").fetchall()
    assert tables == [("cat_items", "BASE TABLE"), ("cat_names", "VIEW")]
    columns = con.execute(
        "SELECT column_name, is_nullable, data_type, numeric_precision, column_default FROM "
        "information_schema.columns WHERE table_name = 'cat_items' ORDER BY ordinal_position")
    assert columns.fetchall() == [("id", "NO", "integer", None, None),
                                  ("name", "NO", "text", None, None),
                                  ("price", "YES", "numeric", 10, "0"),
                                  ("tag", "YES", "text", None, None)]


def test_type_lookup_as_psycopg_sends_it(con: matview.Connection) -> None:
    sql = ("SELECT typname AS name, oid, typarray AS array_oid, oid::regtype::text AS regtype, "
           "typdelim AS delimiter FROM pg_type t WHERE t.oid = to_regtype(?) ORDER BY t.oid")
    assert con.execute(sql, ["hstore"]).fetchall() == []
    assert con.execute(sql, ["numeric"]).fetchall() == [("numeric", 1700, 1231, "numeric", ",")]
    assert con.execute(sql, ["character varying"]).fetchall() == [
        ("varchar", 1043, 1015, "character varying", ",")]


def test_object_identifier_casts(con: matview.Connection) -> None:
    row = con.execute("SELECT 'cat_items'::regclass = 'public.CAT_ITEMS'::regclass, "
                      "'pg_catalog.pg_class'::regclass, 'cat_items'::regclass::text, "
                      "23::regtype::text, 1::oid, 'r'::\"char\", 'x'::name").fetchall()
    assert row == [(True, 1259, "cat_items", "integer", 1, "r", "x")]
    with pytest.raises(matview.ProgrammingError, match='type "hstore" does not exist'):
        con.execute("SELECT 'hstore'::regtype")


def test_catalogs_are_read_only_and_not_materialized(con: matview.Connection) -> None:
    with pytest.raises(matview.NotSupportedError, match="system catalog"):
        con.execute("CREATE MATERIALIZED VIEW cat_bad AS SELECT relname FROM pg_class")
    with pytest.raises(matview.NotSupportedError, match="system catalog"):
        con.execute("INSERT INTO pg_catalog.pg_class (relname) VALUES ('x')")
    with pytest.raises(matview.ProgrammingError, match='schema "other" does not exist'):
        con.execute("SELECT * FROM other.t")
    con.execute("CREATE VIEW cat_tables AS SELECT relname FROM pg_class WHERE relkind = 'r'")
    before = {r[0] for r in con.execute("SELECT relname FROM cat_tables").fetchall()}
    con.execute("CREATE TABLE cat_later (x INT)")
    after = {r[0] for r in con.execute("SELECT relname FROM cat_tables").fetchall()}
    assert after - before == {"cat_later"}  # a plain view reads the catalog as it is now


def _quantified(name: str, x: int | None, array: list[int | None] | None) -> bool | None:
    return next(f for f in FUNCTIONS if f[0] == name)[2](x, array)


def test_any_all_over_arrays_in_spark(con: matview.Connection) -> None:
    """Each comparison over random arrays with NULLs, computed by Spark on a table's rows,
    equals PostgreSQL's three-valued rule (checked on known cases first)."""
    assert _quantified("any_eq", 1, [2, None]) is None
    assert _quantified("any_eq", 2, [2, None]) is True
    assert _quantified("all_lt", 1, [2, None]) is None
    assert _quantified("all_lt", 1, [0, None]) is False
    assert _quantified("any_eq", None, []) is False and _quantified("all_eq", None, []) is True
    rng = random.Random(3)
    rows = [(i, rng.choice([None, *range(4)]), None if rng.random() < 0.1 else
             [rng.choice([None, *range(4)]) for _ in range(rng.randrange(4))])
            for i in range(60)]
    con.execute("CREATE TABLE cat_arrays (id INT, x INT, a INT[])")
    con.insert("cat_arrays", rows)
    symbols = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    for name, symbol in symbols.items():
        got = con.execute(f"SELECT id, x {symbol} ANY (a), x {symbol} ALL (a) FROM cat_arrays "
                          "ORDER BY id").fetchall()
        assert got == [(i, _quantified(f"any_{name}", x, a), _quantified(f"all_{name}", x, a))
                       for i, x, a in rows], name


def test_array_sizes_and_subscripts(con: matview.Connection) -> None:
    con.execute("CREATE TABLE cat_lists (id INT, a INT[])")
    con.insert("cat_lists", [(1, [4, 5, 6]), (2, []), (3, None)])
    assert con.execute("SELECT id, cardinality(a), array_length(a, 1), array_length(a, 2) FROM "
                       "cat_lists ORDER BY id").fetchall() == [
        (1, 3, 3, None), (2, 0, None, None), (3, None, None, None)]
    assert con.execute("SELECT id, unnest(a) AS v, generate_subscripts(a, 1) AS o FROM "
                       "cat_lists ORDER BY id, o").fetchall() == [(1, 4, 1), (1, 5, 2), (1, 6, 3)]


def test_jsonb_build_object(con: matview.Connection) -> None:
    con.execute("CREATE TABLE cat_json (a INT, b TEXT)")
    con.insert("cat_json", [(1, "x"), (None, 'y"')])
    assert con.execute("SELECT jsonb_build_object('k', a, 'b', b, 'k', a + 1)::text FROM "
                       "cat_json ORDER BY b").fetchall() == [
        ('{"b":"x","k":2}',), ('{"b":"y\\"","k":null}',)]  # matview's canonical text
    assert con.execute("SELECT json_build_object()::text").fetchall() == [("{}",)]
    with pytest.raises(matview.ProgrammingError, match="even number"):
        con.execute("SELECT jsonb_build_object('k')")


def test_order_by_expressions_not_selected(con: matview.Connection) -> None:
    """ORDER BY (with LIMIT) of columns and expressions a query does not return, as DuckDB."""
    rng = random.Random(5)
    rows = [(i, rng.randrange(5), rng.choice(["a", "b", "c"])) for i in range(40)]
    con.execute("CREATE TABLE cat_sorted (id INT, k INT, s TEXT)")
    con.insert("cat_sorted", rows)
    oracle = duckdb.connect()
    oracle.execute("CREATE TABLE cat_sorted (id INT, k INT, s TEXT)")
    oracle.executemany("INSERT INTO cat_sorted VALUES (?, ?, ?)", rows)
    for sql in ["SELECT s FROM cat_sorted ORDER BY k DESC, id",
                "SELECT id FROM cat_sorted ORDER BY k * 7 % 3, s DESC, id LIMIT 9 OFFSET 2",
                "SELECT s, id FROM cat_sorted WHERE k > 1 ORDER BY -id LIMIT 4",
                "SELECT x FROM (SELECT id AS x, k FROM cat_sorted ORDER BY k, id LIMIT 5) t "
                "ORDER BY x"]:
        result = con.execute(sql)
        assert [d[0] for d in result.description] == [
            d[0] for d in oracle.execute(sql).description]
        assert result.fetchall() == oracle.execute(sql).fetchall(), sql
    with pytest.raises(matview.NotSupportedError, match="not in the select list"):
        con.execute("CREATE VIEW cat_v AS SELECT s FROM cat_sorted ORDER BY k LIMIT 2")
    with pytest.raises(matview.ProgrammingError, match="must appear in select list"):
        con.execute("SELECT DISTINCT s FROM cat_sorted ORDER BY k")


def test_regular_expression_match_operators(con: matview.Connection) -> None:
    """``~``, ``~*``, ``!~``, ``!~*`` and psql's ``OPERATOR(pg_catalog.~)`` over a table's
    rows (in Spark): a match anywhere, ``.`` matching a newline, NULL for NULL."""
    con.execute("CREATE TABLE cat_texts (id INT, s TEXT)")
    con.insert("cat_texts", [(1, "pg_class"), (2, "Items"), (3, "a\nb"), (4, None)])
    got = con.execute("SELECT id, s ~ '^pg_', s ~* 'ITEM', s !~ 'a.b', s !~* 's$', "
                      "s OPERATOR(pg_catalog.~) 'class' FROM cat_texts ORDER BY id").fetchall()
    assert got == [(1, True, False, True, False, True), (2, False, True, True, False, False),
                   (3, False, False, False, True, False), (4, None, None, None, None, None)]

"""The column types UUID and BYTEA (issue 45) and blob literals ``x'0a'``, as PostgreSQL has
them: input forms and text forms, casts and their errors, comparison, order and grouping,
``length``/``octet_length``/``md5``/``encode``/``decode``/``||``, the same values from the
reference interpreter and from Spark (one-shot and in a maintained view); maintained views
against DuckDB under random writes; Python values (``uuid.UUID``, ``bytes``) in and out;
durable databases, COPY files and the PostgreSQL server."""

from __future__ import annotations

import hashlib
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from matview.ir.interpret import interpret
from matview.ir.parse import parse_scalar
from matview.ir.render_scalars import render_scalar
from matview.ir.scalar import Lit
from matview.ir.types import BYTEA, TEXT, UUID, SqlType
from matview.sql.errors import InvalidValueError, SqlTypeError, UnsupportedError
from matview.sql.parse import parse
from matview.sql.statements import Query
from pyspark.sql import SparkSession

import matview
from matview.server import serve
from tests.support.mirror import Mirror
from tests.support.oracle.workload import BulkDelete, BulkInsert
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_refused_at, assert_value, environment

U1 = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
ROWS = [  # id, text, bytes, uuid (in the reference interpreter's form: canonical text)
    (1, "DE AD be ef", b"\xde\xad\xbe\xef", U1),
    (2, "abc\\000\\\\", b"\x00\xff\\A", "00000000-0000-0000-0000-0000000000ff"),
    (3, "", b"", "ffffffff-0000-0000-0000-000000000000"),
    (4, None, None, None),
    (5, "3q2+ 7w==", b"\x00" * 60, U1),
]

# expressions over table e, with PostgreSQL's values on the rows of ROWS (by id)
EXPRESSIONS = {
    "b::text": ["\\xdeadbeef", "\\x00ff5c41", "\\x", None, "\\x" + "00" * 60],
    "length(b)": [4, 4, 0, None, 60],
    "octet_length(t)": [11, 9, 0, None, 9],
    "md5(b)": [hashlib.md5(r[2]).hexdigest() if r[2] is not None else None for r in ROWS],
    "encode(b, 'hex')": ["deadbeef", "00ff5c41", "", None, "00" * 60],
    "encode(b, 'escape')": ["\\336\\255\\276\\357", "\\000\\377\\\\A", "", None,
                            "\\000" * 60],
    "encode(b, 'base64')": ["3q2+7w==", "AP9cQQ==", "", None, "A" * 76 + "\nAAAA"],
    "b || x'01'": [b"\xde\xad\xbe\xef\x01", b"\x00\xff\\A\x01", b"\x01", None,
                   b"\x00" * 60 + b"\x01"],
    "b || '\\x0203'": [b"\xde\xad\xbe\xef\x02\x03", b"\x00\xff\\A\x02\x03", b"\x02\x03",
                       None, b"\x00" * 60 + b"\x02\x03"],
    "b < '\\x01'": [False, True, True, None, True],
    "u::text || '!'": [U1 + "!", "00000000-0000-0000-0000-0000000000ff!",
                       "ffffffff-0000-0000-0000-000000000000!", None, U1 + "!"],
    "u < 'B0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'": [True, True, False, None, True],
    "u = '{a0eebc999c0b4ef8bb6d6bb9bd380a11}'": [True, False, False, None, True],
    "CASE WHEN id = 2 THEN t::bytea END": [None, b"abc\x00\\", None, None, None],
    "CASE WHEN id = 1 THEN decode(t, 'hex') END": [b"\xde\xad\xbe\xef", None, None, None,
                                                   None],
    "CASE WHEN id = 5 THEN decode(t, 'base64') END": [None, None, None, None,
                                                      b"\xde\xad\xbe\xef"],
    "CASE WHEN id = 2 THEN decode(t, 'escape') END": [None, b"abc\x00\\", None, None, None],
}


@pytest.fixture(scope="module")
def env() -> Environment:
    return environment({"e": "CREATE TABLE e (id int, t text, b bytea, u uuid)"},
                       {"e": ROWS}, [])


@pytest.fixture(scope="module")
def con(spark: SparkSession) -> matview.Connection:
    """One connection for the module, table ``e`` holding ``ROWS``."""
    con = matview.connect(spark=spark, clock=0)
    con.execute("CREATE TABLE e (id INT, t TEXT, b BYTEA, u UUID)")
    con.insert("e", ROWS)
    return con


def test_the_reference_meaning_is_postgresqls(env: Environment) -> None:
    """Each expression's value on each row, by the reference interpreter."""
    for sql, values in EXPRESSIONS.items():
        [query] = parse(f"SELECT id, {sql} FROM e", env[0])
        assert isinstance(query, Query)
        got = dict(interpret(query.plan, env[1]).elements())
        assert [got[i] for i in range(1, 6)] == values, sql


def test_spark_gives_the_same_values_one_shot_and_in_a_view(con: matview.Connection) -> None:
    exprs = list(EXPRESSIONS)
    select = ", ".join(f"{e} AS x{i}" for i, e in enumerate(exprs))
    con.execute(f"CREATE MATERIALIZED VIEW ev AS SELECT id, {select} FROM e")
    expected = [(i + 1, *(EXPRESSIONS[e][i] for e in exprs)) for i in range(len(ROWS))]
    assert sorted(con.execute("SELECT * FROM ev").fetchall()) == expected
    assert sorted(con.execute(f"SELECT id, {select} FROM e").fetchall()) == expected


def test_constants_literals_and_their_types(env: Environment) -> None:
    assert_value("'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid", U1, UUID, env)
    assert_value("'{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}'::uuid", U1, UUID, env)
    assert_value("x'0A'", b"\n", BYTEA, env)
    assert_value("X''", b"", BYTEA, env)
    assert_value("'\\x 0a 0B '::bytea", b"\n\x0b", BYTEA, env)
    assert_value("'a\\\\b\\101'::bytea", b"a\\bA", BYTEA, env)
    assert_value("x'0a'::text", "\\x0a", TEXT, env)
    assert_value("decode('ZGVhZA==', 'BASE64')", b"dead", BYTEA, env)
    assert_value("md5('abc')", "900150983cd24fb0d6963f7d28e17f72", TEXT, env)


@pytest.mark.parametrize("sql, error, message, col", [
    ("SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1'::uuid", SqlTypeError,
     'invalid input syntax for type uuid: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1"', 8),
    ("SELECT 1, ' a0eebc999c0b4ef8bb6d6bb9bd380a11'::uuid", SqlTypeError,
     'invalid input syntax for type uuid: " a0eebc999c0b4ef8bb6d6bb9bd380a11"', 11),
    ("SELECT '{a0eebc999c0b4ef8bb6d6bb9bd380a11'::uuid", SqlTypeError,
     'invalid input syntax for type uuid: "{a0eebc999c0b4ef8bb6d6bb9bd380a11"', 8),
    ("SELECT '\\xabc'::bytea", SqlTypeError, "invalid hexadecimal data: odd number of digits",
     8),
    ("SELECT '\\x0g'::bytea", SqlTypeError, 'invalid hexadecimal digit: "g"', 8),
    ("SELECT 'a\\b'::bytea", SqlTypeError, "invalid input syntax for type bytea", 8),
    ("SELECT x'abc'", InvalidValueError, "invalid hexadecimal data: odd number of digits", 8),
    ("SELECT encode(b, 'base32') FROM e", InvalidValueError, 'unrecognized encoding: "base32"',
     18),
    ("SELECT encode(t, 'hex') FROM e", SqlTypeError, "function encode(text, text) does not exist",
     8),
    ("SELECT decode(b, 'hex') FROM e", SqlTypeError, "function decode(bytea, text) does not exist",
     15),  # at its first argument: sqlglot keeps no position of the name decode
    ("SELECT length(u) FROM e", SqlTypeError, "function length(uuid) does not exist", 8),
    ("SELECT u::int FROM e", SqlTypeError, "cannot cast type uuid to int", 8),
    ("SELECT b::uuid FROM e", SqlTypeError, "cannot cast type bytea to uuid", 8),
    ("SELECT id FROM e WHERE u = b", SqlTypeError, "operator does not exist: uuid = bytea", 24),
    ("SELECT uuid()", UnsupportedError,  # gen_random_uuid(): test_gen_random_uuid.py
     "function uuid is not supported yet", 8),
])
def test_invalid_input_and_types_are_refused_where_written(
        sql: str, error: type[Exception], message: str, col: int, env: Environment) -> None:
    assert_refused_at(sql, error, message, 1, col, env)  # type: ignore[arg-type]


def test_python_values_in_and_out(con: matview.Connection) -> None:
    """``uuid.UUID`` and ``bytes`` (and their texts) as inserted rows and parameters; out of
    fetchall as ``uuid.UUID`` and ``bytes``, also in arrays; uuid[] and bytea[] columns."""
    con.execute("CREATE TABLE py (id INT, u UUID, b BYTEA, us UUID[])")
    con.insert("py", [(1, uuid.UUID(U1), b"\x01", [uuid.UUID(int=1), None]),
                      (2, "{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12}", "\\x0203", None)])
    con.execute("INSERT INTO py VALUES (?, ?, ?, NULL)", (3, uuid.UUID(int=2), b"\xff"))
    con.execute("INSERT INTO py VALUES (4, 'a0eebc999c0b4ef8bb6d6bb9bd380a13', 'x\\000', "
                "'{00000000-0000-0000-0000-000000000003}')")
    rows = con.execute("SELECT * FROM py ORDER BY id").fetchall()
    assert rows == [
        (1, uuid.UUID(U1), b"\x01", [uuid.UUID(int=1), None]),
        (2, uuid.UUID(U1[:-1] + "2"), b"\x02\x03", None),
        (3, uuid.UUID(int=2), b"\xff", None),
        (4, uuid.UUID(U1[:-1] + "3"), b"x\x00", [uuid.UUID(int=3)]),
    ]
    assert sorted(con.execute("SELECT id FROM py WHERE u = ? OR b = ?",
                              (uuid.UUID(U1), b"\xff")).fetchall()) == [(1,), (3,)]
    assert con.execute("SELECT array_agg(b ORDER BY b), min(u), max(b), count(DISTINCT u) "
                       "FROM py").fetchall() == [
        ([b"\x01", b"\x02\x03", b"x\x00", b"\xff"], uuid.UUID(int=2), b"\xff", 4)]
    with pytest.raises(matview.DataError, match='invalid input syntax for type uuid: "nope"'):
        con.insert("py", [(5, "nope", None, None)])
    with pytest.raises(matview.DataError, match="invalid hexadecimal digit"):
        con.insert("py", [(5, None, "\\xzz", None)])
    con.delete("py", [(3, uuid.UUID(int=2), b"\xff", None)])
    assert con.execute("SELECT count(*) FROM py").fetchall() == [(3,)]


def test_invalid_text_of_a_column_is_an_error_as_data(con: matview.Connection) -> None:
    """A view casting a column's text holds the error of the row that fails, until that row
    goes; a one-shot query fails."""
    con.execute("CREATE TABLE s (t TEXT)")
    con.execute("CREATE MATERIALIZED VIEW su AS SELECT t::uuid AS u FROM s")
    con.execute("CREATE MATERIALIZED VIEW sb AS SELECT decode(t, 'hex') AS b FROM s "
                "WHERE length(t) < 5")
    con.execute(f"INSERT INTO s VALUES ('{U1.upper()}')")
    assert con.execute("SELECT * FROM su").fetchall() == [(uuid.UUID(U1),)]
    con.execute("INSERT INTO s VALUES ('zz')")
    with pytest.raises(matview.DataError, match='invalid input syntax for type uuid: "zz"'):
        con.execute("SELECT * FROM su").fetchall()
    with pytest.raises(matview.DataError, match='invalid hexadecimal digit: "z"'):
        con.execute("SELECT * FROM sb").fetchall()
    with pytest.raises(matview.DataError, match='invalid hexadecimal digit: "z"'):
        con.execute("SELECT ('\\x' || t)::bytea FROM s WHERE t = 'zz'").fetchall()
    con.execute("DELETE FROM s WHERE t = 'zz'")
    assert con.execute("SELECT * FROM su").fetchall() == [(uuid.UUID(U1),)]
    assert con.execute("SELECT * FROM sb").fetchall() == []


@pytest.mark.parametrize("value, sql_type, text", [
    (U1, UUID, f"'{U1}'::uuid"), (b"\x00\xff", BYTEA, "'\\x00ff'::bytea"),
    (b"", BYTEA, "'\\x'::bytea"),
])
def test_constants_read_back_from_the_plan_text(value: object, sql_type: SqlType,
                                                text: str) -> None:
    assert render_scalar(Lit(value, sql_type)) == text
    assert parse_scalar(text) == Lit(value, sql_type)


def test_explain_shows_the_constants(con: matview.Connection) -> None:
    [[plan]] = con.execute(f"EXPLAIN SELECT id FROM e WHERE u = '{U1.upper()}' "
                           "AND b <> x'00FF'").fetchall()
    assert f"'{U1}'::uuid" in plan and "'\\x00ff'::bytea" in plan


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Grouping, DISTINCT, joins, extremes and order on UUID and BYTEA keys, maintained
    under random inserts and deletes, equal DuckDB's answers."""
    rng = random.Random(seed)
    keys = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(4)] + [None]
    blobs = [b"", b"\x00", b"\x00\x01", b"\x80", b"\xff\x00", None]
    mirror = Mirror(spark, "CREATE TABLE k (id INT, u UUID, b BYTEA)",
                    "CREATE TABLE l (u UUID, n INT)")
    mirror.view("groups", "SELECT u, count(*) AS c, count(DISTINCT b) AS d, max(b) AS m "
                          "FROM k GROUP BY u")
    mirror.view("blobs", "SELECT DISTINCT b, octet_length(b) AS n, "
                         "b >= '\\x00' AND b < '\\x80' AS low FROM k")
    mirror.view("joined", "SELECT k.id, l.n, k.u FROM k JOIN l ON k.u = l.u")
    mirror.view("least", "SELECT min(u) AS u, min(b) AS b, count(DISTINCT u) AS c FROM k")
    mirror.view("firsts", "SELECT id, u FROM k WHERE u IS NOT NULL ORDER BY u, id LIMIT 3")
    live: list[tuple[object, ...]] = []

    def change() -> tuple[BulkInsert | BulkDelete, ...]:
        if live and rng.random() < 0.35:
            gone = live.pop(rng.randrange(len(live)))
            return (BulkDelete("k", (gone,)),)
        if rng.random() < 0.25:
            return (BulkInsert("l", ((rng.choice(keys), rng.randint(1, 9)),)),)
        row = (rng.randint(1, 20), rng.choice(keys), rng.choice(blobs))
        live.append(row)
        return (BulkInsert("k", (row,)),)

    mirror.steps_grouped([change() for _ in range(12)], rng)  # type: ignore[arg-type]


def test_a_durable_database_keeps_the_rows(spark: SparkSession, tmp_path: Path) -> None:
    rows = [(uuid.UUID(U1), b"\x00\xff"), (None, b""), (uuid.UUID(int=7), None)]
    con = matview.connect(path=str(tmp_path / "db"), spark=spark, clock=0)
    con.execute("CREATE TABLE d (u UUID, b BYTEA)")
    con.execute("CREATE MATERIALIZED VIEW dv AS SELECT b, u::text AS t FROM d WHERE u IS "
                "NOT NULL")
    con.insert("d", rows)
    con.close()
    again = matview.connect(path=str(tmp_path / "db"), spark=spark, clock=0)
    assert sorted(again.execute("SELECT * FROM d").fetchall(), key=str) == sorted(rows, key=str)
    assert sorted(again.execute("SELECT * FROM dv").fetchall(), key=str) == [
        (None, "00000000-0000-0000-0000-000000000007"), (b"\x00\xff", U1)]
    again.close()


def test_copy_files_write_and_read_the_text_forms(spark: SparkSession, tmp_path: Path) -> None:
    con = matview.connect(spark=spark, clock=0, files=[str(tmp_path)])
    con.execute("CREATE TABLE f (u UUID, b BYTEA)")
    con.insert("f", [(uuid.UUID(U1), b"\x00\xff"), (None, None)])
    for fmt in ("csv", "parquet"):
        path = tmp_path / f"f.{fmt}"
        con.execute(f"COPY f TO '{path}' (FORMAT {fmt})")
        if fmt == "csv":
            assert sorted(path.read_text().splitlines()) == [f'"{U1}","\\x00ff"', ","]
        con.execute(f"CREATE TABLE g_{fmt} (u UUID, b BYTEA)")
        con.execute(f"COPY g_{fmt} FROM '{path}' (FORMAT {fmt})")
        assert Counter(con.execute(f"SELECT * FROM g_{fmt}").fetchall()) == Counter(
            [(uuid.UUID(U1), b"\x00\xff"), (None, None)])


@pytest.fixture(scope="module")
def server(con: matview.Connection) -> Iterator[int]:
    with serve(con, port=0, poll=0.05) as running:
        yield running.port


def test_the_server_sends_postgresqls_types_and_text(server: int) -> None:
    """psycopg reads uuid (OID 2950) as ``uuid.UUID`` and bytea (OID 17) as ``bytes``, and
    sends them as parameters; the text forms are PostgreSQL's."""
    with psycopg.connect(host="127.0.0.1", port=server, user="u", dbname="matview",
                         autocommit=True, connect_timeout=10) as pg:
        cur = pg.execute("SELECT u, b, b::text, u::text FROM e WHERE id = 1")
        assert [d.type_code for d in cur.description] == [2950, 17, 25, 25]
        assert cur.fetchall() == [(uuid.UUID(U1), b"\xde\xad\xbe\xef", "\\xdeadbeef", U1)]
        assert pg.execute("SELECT id FROM e WHERE u = %s AND b = %s ORDER BY id",
                          (uuid.UUID(U1), b"\xde\xad\xbe\xef")).fetchall() == [(1,)]
        with pg.cursor() as c:
            with c.copy("COPY (SELECT u, b FROM e WHERE id = 2) TO STDOUT") as copy:
                out = b"".join(copy)
        assert out.decode() == "00000000-0000-0000-0000-0000000000ff\t\\\\x00ff5c41\n"

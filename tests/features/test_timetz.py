"""TIMETZ (``time with time zone``, issue 45): a time of day and its UTC offset, as PostgreSQL
has it. Two compare by their times in UTC, then by their zones (``timetz_cmp``), and are
equal only when both agree, so GROUP BY, DISTINCT and joins tell ``10:00+02`` and
``09:00+01`` apart; text input and output, casts from and to TIME, TIMESTAMPTZ and text,
``± interval`` and ``extract`` give PostgreSQL's values from the reference interpreter and
from Spark (one-shot and in a maintained view); maintained views match DuckDB under random
writes; Python values (``datetime.time`` with ``tzinfo``) in and out; durable databases, COPY
files and the PostgreSQL server keep them."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from matview.ir.interpret import interpret
from matview.ir.parse import parse_scalar
from matview.ir.render_scalars import render_scalar
from matview.ir.scalar import Lit
from matview.ir.times import END_OF_DAY
from matview.ir.timetz import TimeTz
from matview.ir.types import TIME, TIMETZ
from matview.sql.parse import parse
from pyspark.sql import SparkSession

import matview
from matview.server import serve
from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, environment

ZONES = "CREATE TABLE zones (id int, z timetz, c time, ts timestamptz, t text)"
ROWS = [(1, TimeTz.of(36_000_000_000, -19_800), END_OF_DAY,  # 10:00:00-05:30, 24:00:00
         datetime(2024, 3, 1, 23, 30, tzinfo=UTC), "07:05:00.25+0530"),
        (2, None, None, None, "x")]
"""The rows of ``zones`` as the reference interpreter holds them (``con`` inserts them)."""


def zone(hours: int, minutes: int = 0) -> timezone:
    return timezone(timedelta(hours=hours, minutes=minutes))


VALUES = [
    # each expression over row 1 and PostgreSQL's value of it (SET TimeZone = 'UTC')
    ("z::text", "10:00:00-05:30"),
    ("z::time", time(10)),
    ("t::timetz::text", "07:05:00.25+05:30"),
    ("c::timetz::text", "24:00:00+00"),
    ("ts::timetz::text", "23:30:00+00"),
    ("'10:00'::timetz::text", "10:00:00+00"),
    ("'1:02:03.5 -0930'::timetz::text", "01:02:03.5-09:30"),
    ("'10:00Z'::timetz::text", "10:00:00+00"),
    ("'23:59:60+15:59:59'::timetz::text", "24:00:00+15:59:59"),
    ("(z + INTERVAL '1 month 1 day 15 hours')::text", "01:00:00-05:30"),
    ("(z - INTERVAL '10 hours 30 minutes')::text", "23:30:00-05:30"),
    ("(c::timetz + INTERVAL '1 hour')::text", "01:00:00+00"),
    ("z = '10:00:00-05:30'", True),
    ("z = '15:30:00+00'", False),  # the same time in UTC, another zone
    ("z > '15:30:00+00'", True),  # ... compares by its zone: seconds west of UTC
    ("z < '15:30:00.000001+00'", True),
    ("'01:00+02'::timetz < '00:00+00'", True),  # in UTC, not wrapped around midnight
    ("z < c", True),  # c as a TIMETZ at +00
    ("z = TIME '10:00'", False),
    ("greatest(z, '15:30:00+00')::text", "10:00:00-05:30"),
    ("coalesce(NULL, z, c)::text", "10:00:00-05:30"),
    ("extract(hour FROM z)", Decimal(10)),
    ("extract(second FROM t::timetz)", Decimal("0.250000")),
    ("extract(epoch FROM z)", Decimal("55800.000000")),  # its seconds in UTC
    ("extract(epoch FROM '01:00+02'::timetz)", Decimal("-3600.000000")),
    ("extract(timezone FROM z)", Decimal(-19800)),
    ("extract(timezone_hour FROM z)", Decimal(-5)),
    ("extract(timezone_minute FROM z)", Decimal(-30)),
    ("date_part('minute', z)", 0.0),
]


@pytest.fixture(scope="module")
def env() -> Environment:
    catalog, tables, db = environment({"zones": ZONES}, {"zones": ROWS[1:]}, ())
    tables["zones"][ROWS[0]] += 1  # DuckDB takes no TimeTz: the interpreter's row alone
    return catalog, tables, db


@pytest.fixture(scope="module")
def con(spark: SparkSession) -> matview.Connection:
    con = matview.connect(spark=spark, clock=0)
    con.execute(ZONES)
    con.execute("INSERT INTO zones VALUES (1, '10:00-05:30', '24:00', '2024-03-01 23:30:00', "
                "'07:05:00.25+0530'), (2, NULL, NULL, NULL, 'x')")
    return con


def test_the_reference_meaning_is_postgresqls(env: Environment) -> None:
    catalog, tables, _ = env
    select = ", ".join(sql for sql, _ in VALUES)
    [query] = parse(f"SELECT {select} FROM zones WHERE id = 1", catalog)
    assert list(interpret(query.plan, tables).elements()) == [tuple(v for _, v in VALUES)]
    for text, message in [("x", 'invalid input syntax for type time with time zone: "x"'),
                          ("10:00+16", 'time zone displacement out of range: "10:00\\+16"'),
                          ("24:00:01+00", "date/time field value out of range")]:
        [query] = parse(f"SELECT '{text}'::timetz", catalog)
        with pytest.raises(Exception, match=message):
            interpret(query.plan, tables)


def test_spark_gives_the_same_values_one_shot_and_in_a_view(con: matview.Connection) -> None:
    select = ", ".join(f"{sql} AS c{i}" for i, (sql, _) in enumerate(VALUES))
    expected = [tuple(v for _, v in VALUES)]
    assert con.execute(f"SELECT {select} FROM zones WHERE id = 1").fetchall() == expected
    con.execute(f"CREATE MATERIALIZED VIEW zv AS SELECT {select} FROM zones WHERE id = 1")
    assert con.execute("SELECT * FROM zv").fetchall() == expected
    for sql, message in [
            ("SELECT t::timetz FROM zones WHERE id = 2",
             'invalid input syntax for type time with time zone: "x"'),
            ("SELECT (c::text || '+16')::timetz FROM zones WHERE id = 1",
             'time zone displacement out of range: "24:00:00\\+16"'),
            ("SELECT ('2' || (id + 4)::text || ':00+01')::timetz FROM zones WHERE id = 1",
             'date/time field value out of range: "25:00\\+01"')]:
        with pytest.raises(matview.DataError, match=message):
            con.execute(sql).fetchall()


def test_values_round_trip_with_their_offsets(con: matview.Connection) -> None:
    """Aware ``datetime.time`` values (a naive one at +00) and text go in; aware ones with
    the same offsets come back; parameters are TIMETZ; 24:00:00 is refused as a Python
    value (as psycopg's loader refuses it) but not as text."""
    con.execute("CREATE TABLE tz (id INT, z TIME WITH TIME ZONE)")
    con.insert("tz", [(1, time(10, tzinfo=zone(2))), (2, time(9, 30)),
                      (3, "23:00:00.5-05:30"), (4, None)])
    con.execute("INSERT INTO tz VALUES (?, ?), (6, '24:00+01')",
                (5, time(1, 2, 3, tzinfo=zone(-3))))
    rows = con.execute("SELECT id, z, z::text FROM tz WHERE id <> 6 ORDER BY id").fetchall()
    assert rows == [(1, time(10, tzinfo=zone(2)), "10:00:00+02"),
                    (2, time(9, 30, tzinfo=UTC), "09:30:00+00"),
                    (3, time(23, 0, 0, 500000, tzinfo=zone(-5, -30)), "23:00:00.5-05:30"),
                    (4, None, None), (5, time(1, 2, 3, tzinfo=zone(-3)), "01:02:03-03")]
    assert [r[1].utcoffset() for r in rows if r[1] is not None] == [
        timedelta(hours=2), timedelta(0), -timedelta(hours=5, minutes=30), -timedelta(hours=3)]
    assert [d[1] for d in con.execute("SELECT z FROM tz").description] == ["timetz"]
    assert con.execute("SELECT id FROM tz WHERE z = ?", (time(10, tzinfo=zone(2)),)
                       ).fetchall() == [(1,)]
    with pytest.raises(matview.DataError, match="24:00:00 cannot be a Python datetime.time"):
        con.execute("SELECT z FROM tz WHERE id = 6").fetchall()
    assert con.execute("SELECT z::text FROM tz WHERE id = 6").fetchall() == [("24:00:00+01",)]
    with pytest.raises(matview.DataError, match="time zone displacement out of range"):
        con.insert("tz", [(7, "10:00+16")])


def test_order_grouping_and_joins_are_postgresqls(con: matview.Connection) -> None:
    """Equal in UTC but in other zones: apart for GROUP BY, DISTINCT and joins, ordered by
    zone (the larger offset first); not wrapped around midnight."""
    con.execute("CREATE TABLE tt (id INT, z TIMETZ)")
    con.execute("INSERT INTO tt VALUES (1, '10:00+02'), (2, '09:00+01'), (3, '08:00+00'), "
                "(4, '09:00+01'), (5, '01:00+02'), (6, '23:00-05'), (7, NULL)")
    order = ["01:00:00+02", "10:00:00+02", "09:00:00+01", "09:00:00+01", "08:00:00+00",
             "23:00:00-05", None]
    ranked = con.execute("SELECT z::text, rank() OVER (ORDER BY z) FROM tt").fetchall()
    assert [z for z, _ in sorted(ranked, key=lambda r: r[1])] == order
    assert con.execute("SELECT count(DISTINCT z), min(z)::text, max(z)::text FROM tt"
                       ).fetchall() == [(5, "01:00:00+02", "23:00:00-05")]
    assert sorted(con.execute("SELECT z::text, count(*) FROM tt GROUP BY z").fetchall(),
                  key=str) == [("01:00:00+02", 1), ("08:00:00+00", 1), ("09:00:00+01", 2),
                               ("10:00:00+02", 1), ("23:00:00-05", 1), (None, 1)]
    assert con.execute("SELECT a.id, b.id FROM tt a JOIN tt b ON a.z = b.z AND a.id < b.id"
                       ).fetchall() == [(2, 4)]
    con.execute("CREATE MATERIALIZED VIEW firsts AS SELECT id, z FROM tt "
                "ORDER BY z DESC NULLS LAST, id LIMIT 3")
    assert con.execute("SELECT id, z::text FROM firsts ORDER BY id").fetchall() == [
        (2, "09:00:00+01"), (3, "08:00:00+00"), (6, "23:00:00-05")]
    con.execute("DELETE FROM tt WHERE id = 6")
    assert con.execute("SELECT id, z::text FROM firsts ORDER BY id").fetchall() == [
        (2, "09:00:00+01"), (3, "08:00:00+00"), (4, "09:00:00+01")]


@pytest.mark.parametrize("value, sql_type, text", [
    (TimeTz.of(36_000_000_000, -19_800), TIMETZ, "'10:00:00-05:30'::timetz"),
    (TimeTz.of(86_400_000_000, 3_600), TIMETZ, "'24:00:00+01'::timetz"),
    (END_OF_DAY, TIME, "'24:00:00'::time"),
])
def test_constants_read_back_from_the_plan_text(value: object, sql_type: object,
                                                text: str) -> None:
    assert render_scalar(Lit(value, sql_type)) == text  # type: ignore[arg-type]
    assert parse_scalar(text) == Lit(value, sql_type)  # type: ignore[arg-type]


@pytest.mark.parametrize("sql, error, message", [
    ("SELECT z - z FROM zones", matview.ProgrammingError,
     "operator does not exist: timetz - timetz"),
    ("SELECT date_trunc('hour', z) FROM zones", matview.ProgrammingError,
     "function date_trunc\\(text, timetz\\) does not exist"),
    ("SELECT extract(day FROM z) FROM zones", matview.NotSupportedError,
     'unit "day" not supported for type timetz'),
    ("SELECT ts::timestamp::timetz FROM zones", matview.ProgrammingError,
     "cannot cast type timestamp to timetz"),
    ("SELECT z::interval FROM zones", matview.ProgrammingError,
     "cannot cast type timetz to interval"),
    ("SELECT ARRAY[z] FROM zones", matview.NotSupportedError,
     "arrays of timetz are not supported"),
    ("CREATE TABLE bad (a TIMETZ[])", matview.NotSupportedError,
     "arrays of timetz values are not supported"),
])
def test_invalid_operations_are_errors(con: matview.Connection, sql: str,
                                       error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        con.execute(sql).fetchall()


VIEWS = {
    "by_zone": "SELECT z::text AS z, count(*) AS n, min(c)::text AS c FROM ev GROUP BY z",
    "local": "SELECT DISTINCT z::time::text AS local, extract(hour FROM z) AS h FROM ev",
    "joined": "SELECT ev.id, mk.label FROM ev JOIN mk ON ev.z = mk.z",
    "extremes": "SELECT min(z)::text AS lo, max(z)::text AS hi, count(DISTINCT z) AS n FROM ev",
    "latest": "SELECT id, z FROM ev WHERE z::time <> '24:00' "  # no datetime.time holds it
              "ORDER BY z DESC NULLS LAST, id LIMIT 3",
    "early": "SELECT id, (z + INTERVAL '12 hours')::text AS later FROM ev "
             "WHERE z < '12:00:00+00' AND z <> c",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Times of day at offsets (the same instant in several zones among them) come and go
    beside marks and times without a zone they are compared with; views group, join,
    order and filter by them."""
    rng = random.Random(seed)
    mirror = Mirror(spark)
    mirror.db.execute("SET TimeZone = 'UTC'")
    mirror.execute("CREATE TABLE ev (id INT, z TIMETZ, c TIME)")
    mirror.execute("CREATE TABLE mk (z TIMETZ, label TEXT)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def clock() -> str:
        if rng.random() < 0.1:
            return "NULL"
        hour, offset = rng.choice([(10, "+02"), (9, "+01"), (8, "+00"), (8, ""), (1, "+02"),
                                   (23, "-05:30"), (24, "-01"), (0, "+00")])
        return f"'{hour:02d}:00:00{offset}'"

    def change() -> str:
        roll = rng.random()
        if roll < 0.45:
            rows = ", ".join(f"({rng.randint(1, 9)}, {clock()}, "
                             f"'{rng.choice(['08:00:00', '12:00:00', '24:00:00'])}')"
                             for _ in range(rng.randint(1, 3)))
            return f"INSERT INTO ev VALUES {rows}"
        if roll < 0.6:
            return f"INSERT INTO mk VALUES ({clock()}, '{rng.choice('abc')}')"
        if roll < 0.8:
            return f"DELETE FROM ev WHERE id = {rng.randint(1, 9)}"
        if roll < 0.9:
            return f"DELETE FROM mk WHERE z > {clock()}"
        return f"UPDATE ev SET z = {clock()} WHERE id = {rng.randint(1, 9)}"

    mirror.steps_grouped([change() for _ in range(7)], rng)


def test_a_durable_database_keeps_them(spark: SparkSession, tmp_path: Path) -> None:
    with matview.connect(tmp_path, spark=spark, clock=0) as con:
        con.execute("CREATE TABLE kept (id INT, z TIMETZ, c TIME)")
        con.execute("CREATE MATERIALIZED VIEW last AS SELECT max(z)::text AS z, "
                    "max(c)::text AS c FROM kept")
        con.execute("INSERT INTO kept VALUES (1, '10:00-05:30', '24:00'), (2, NULL, '01:00')")
    with matview.connect(tmp_path, spark=spark, clock=0) as con:
        assert con.execute("SELECT id, z::text, c::text FROM kept ORDER BY id").fetchall() == [
            (1, "10:00:00-05:30", "24:00:00"), (2, None, "01:00:00")]
        con.execute("INSERT INTO kept VALUES (3, '23:00+00', '02:00')")
        assert con.execute("SELECT * FROM last").fetchall() == [("23:00:00+00", "24:00:00")]


def test_copy_files_keep_them(spark: SparkSession, tmp_path: Path) -> None:
    """CSV holds PostgreSQL's text (24:00:00 too), Parquet the stored values."""
    con = matview.connect(spark=spark, clock=0, files=[str(tmp_path)])
    con.execute("CREATE TABLE f (z TIMETZ, c TIME)")
    con.execute("INSERT INTO f VALUES ('10:00-05:30', '24:00'), ('24:00+01', '00:00:00.5'), "
                "(NULL, NULL)")
    expected = sorted(con.execute("SELECT z::text, c::text FROM f").fetchall(), key=str)
    for fmt in ("csv", "parquet"):
        path = tmp_path / f"f.{fmt}"
        con.execute(f"COPY f TO '{path}' (FORMAT {fmt})")
        if fmt == "csv":
            assert sorted(path.read_text().splitlines()) == [
                '"10:00:00-05:30","24:00:00"', '"24:00:00+01","00:00:00.5"', ","]
        con.execute(f"CREATE TABLE g_{fmt} (z TIMETZ, c TIME)")
        con.execute(f"COPY g_{fmt} FROM '{path}' (FORMAT {fmt})")
        assert sorted(con.execute(f"SELECT z::text, c::text FROM g_{fmt}").fetchall(),
                      key=str) == expected


@pytest.fixture(scope="module")
def server(con: matview.Connection) -> Iterator[int]:
    with serve(con, port=0, poll=0.05) as running:
        yield running.port


def test_the_server_sends_postgresqls_types_and_text(server: int) -> None:
    """psycopg reads timetz (OID 1266) as an aware ``datetime.time`` and sends one as a
    parameter; the server prints TIME 24:00:00 as PostgreSQL does (which psycopg's loader
    then refuses, as it does PostgreSQL's)."""
    with psycopg.connect(host="127.0.0.1", port=server, user="u", dbname="matview",
                         autocommit=True, connect_timeout=10) as pg:
        cur = pg.execute("SELECT z, z::text, c::text, '24:00+01'::timetz::text FROM zones "
                         "WHERE id = 1")
        assert [d.type_code for d in cur.description] == [1266, 25, 25, 25]
        assert cur.fetchall() == [(time(10, tzinfo=zone(-5, -30)), "10:00:00-05:30",
                                   "24:00:00", "24:00:00+01")]
        assert pg.execute("SELECT id FROM zones WHERE z = %s",
                          (time(10, tzinfo=zone(-5, -30)),)).fetchall() == [(1,)]
        assert pg.execute("SELECT id FROM zones WHERE z = %t",
                          (time(15, 30, tzinfo=UTC),)).fetchall() == []
        with pytest.raises(psycopg.DataError, match="24:00:00"):
            pg.execute("SELECT c FROM zones WHERE id = 1").fetchall()
        with pg.cursor() as c:
            with c.copy("COPY (SELECT z, c FROM zones WHERE id = 1) TO STDOUT") as copy:
                out = b"".join(copy)
        assert out.decode() == "10:00:00-05:30\t24:00:00\n"

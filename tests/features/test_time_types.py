"""TIMESTAMPTZ (``timestamp with time zone``) and TIME columns. A TIMESTAMPTZ is an instant,
read and shown in UTC (the session time zone is always UTC): text with a UTC offset is that
instant; values come back as aware ``datetime``s in UTC. A TIME is a time of day, a
``datetime.time``, from 00:00:00 to 24:00:00 (the end of a day, which ``datetime.time``
cannot hold: the API refuses it as psycopg does, its text is ``24:00:00``); ``time - time``
is an interval, and ``date_trunc`` of a time the truncated interval, as in PostgreSQL. The
operators, casts and date functions give PostgreSQL's values from the reference interpreter
and from Spark alike; maintained views over such columns match DuckDB (``SET TimeZone =
'UTC'``) under random transactions; temporal filters take TIMESTAMPTZ; a durable database
keeps both."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from matview.ir.functions import EvalError
from matview.ir.interpret import interpret
from matview.sql.parse import parse
from pyspark.sql import SparkSession

import matview
from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, environment

MOMENTS = "CREATE TABLE moments (id int, ts timestamptz, n timestamp, t text, c time)"
ROWS = [(1, datetime(2024, 1, 1, 0, 0, tzinfo=timezone(timedelta(hours=2))),
         datetime(2024, 1, 1, 5, 0), "2024-02-29 12:30:00.25-03:30", time(23, 30, 15, 500000)),
        (2, None, None, "x", None)]


def utc(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=UTC)  # type: ignore[misc]


VALUES = [
    # each expression over row 1 and PostgreSQL's value of it (SET TimeZone = 'UTC')
    ("ts", utc(2023, 12, 31, 22)),
    ("ts::text", "2023-12-31 22:00:00+00"),
    ("t::timestamptz", utc(2024, 2, 29, 16, 0, 0, 250000)),
    ("t::timestamptz::text", "2024-02-29 16:00:00.25+00"),
    ("t::timestamp", datetime(2024, 2, 29, 12, 30, 0, 250000)),
    ("ts + INTERVAL '1 month 2 hours'", utc(2024, 2, 1)),
    ("ts - INTERVAL '1 day'", utc(2023, 12, 30, 22)),
    ("date_trunc('month', ts)", utc(2023, 12, 1)),
    ("extract(hour FROM ts)", Decimal(22)),
    ("extract(epoch FROM ts)", Decimal("1704060000.000000")),
    ("date_part('day', ts)", 31.0),
    ("to_char(ts, 'YYYY-MM-DD HH24:MI')", "2023-12-31 22:00"),
    ("ts < n", True),
    ("ts = '2024-01-01 00:00:00+02'", True),
    ("ts = TIMESTAMPTZ '2023-12-31 22:00:00'", True),
    ("ts::timestamp", datetime(2023, 12, 31, 22)),
    ("ts::date", date(2023, 12, 31)),
    ("n::timestamptz", utc(2024, 1, 1, 5)),
    ("coalesce(NULL, n, ts)", utc(2024, 1, 1, 5)),
    ("CASE WHEN id = 1 THEN ts ELSE DATE '2024-01-01' END", utc(2023, 12, 31, 22)),
    ("c", time(23, 30, 15, 500000)),
    ("c::text", "23:30:15.5"),
    ("'7:05'::time", time(7, 5)),
    ("c + INTERVAL '1 month 1 day 1 hour'", time(0, 30, 15, 500000)),
    ("c - INTERVAL '23 hours 31 minutes'", time(23, 59, 15, 500000)),
    ("DATE '2024-02-29' + c", datetime(2024, 2, 29, 23, 30, 15, 500000)),
    ("c + DATE '2024-02-29'", datetime(2024, 2, 29, 23, 30, 15, 500000)),
    ("extract(minute FROM c)", Decimal(30)),
    ("extract(epoch FROM c)", Decimal("84615.500000")),
    ("date_part('second', c)", 15.5),
    ("ts::time", time(22)),
    ("n::time", time(5)),
    ("c > '23:30'", True),
    ("c BETWEEN TIME '23:00' AND n::time", False),
    # PostgreSQL's values DuckDB does not compute: time - time, date_trunc of a time or an
    # interval, intervals as times (their time field modulo a day), a second of 60
    ("(c - TIME '08:00')::text", "15:30:15.5"),
    ("(TIME '01:00' - c)::text", "-22:30:15.5"),
    ("(c - '23:30:15.5')::text", "00:00:00"),
    ("date_trunc('hour', c)::text", "23:00:00"),
    ("date_trunc('second', c)::text", "23:30:15"),
    ("date_trunc('minute', INTERVAL '-2 days 03:04:05.5')::text", "-2 days +03:04:00"),
    ("date_trunc('quarter', INTERVAL '1 year 5 months 3 days')::text", "1 year 3 mons"),
    ("date_trunc('year', INTERVAL '-14 months 3 days 01:00')::text", "-1 years"),
    ("c::interval::text", "23:30:15.5"),
    ("INTERVAL '-90 minutes'::time", time(22, 30)),
    ("INTERVAL '1 day 25:00:00'::time", time(1)),
    ("('24:00'::time)::text", "24:00:00"),
    ("('23:59:60'::time)::text", "24:00:00"),
    ("('24:00'::time - c)::text", "00:29:44.5"),
    ("'24:00'::time > c AND '24:00'::time > '23:59:59.999999'", True),
    ("greatest(c, '24:00')::text", "24:00:00"),
    ("('24:00'::time + INTERVAL '90 minutes')::text", "01:30:00"),
    ("DATE '2024-02-29' + '24:00'::time", datetime(2024, 3, 1)),
    ("extract(hour FROM '24:00'::time)", Decimal(24)),
    ("extract(epoch FROM '24:00'::time)", Decimal("86400.000000")),
    ("date_trunc('hour', '24:00'::time)::text", "24:00:00"),
]


@pytest.fixture(scope="module")
def env() -> Environment:
    return environment({"moments": MOMENTS}, {"moments": ROWS}, ())


@pytest.fixture(scope="module")
def con(spark: SparkSession) -> matview.Connection:
    con = matview.connect(spark=spark, clock=0)
    con.execute(MOMENTS)
    con.insert("moments", ROWS)
    return con


def test_the_reference_meaning_is_postgresqls(env: Environment) -> None:
    select = ", ".join(sql for sql, _ in VALUES)
    [query] = parse(f"SELECT {select} FROM moments WHERE id = 1", env[0])
    assert list(interpret(query.plan, env[1]).elements()) == [tuple(v for _, v in VALUES)]
    with pytest.raises(EvalError, match='invalid input syntax for type timestamp with time '
                                        'zone: "x"'):
        interpret(parse("SELECT t::timestamptz FROM moments", env[0])[0].plan, env[1])
    with pytest.raises(EvalError, match='invalid input syntax for type time without time '
                                        'zone: "x"'):
        interpret(parse("SELECT t::time FROM moments WHERE id = 2", env[0])[0].plan, env[1])


def test_spark_gives_the_same_values_one_shot_and_in_a_view(con: matview.Connection) -> None:
    select = ", ".join(f"{sql} AS c{i}" for i, (sql, _) in enumerate(VALUES))
    expected = [tuple(v for _, v in VALUES)]
    got = con.execute(f"SELECT {select} FROM moments WHERE id = 1").fetchall()
    assert got == expected
    assert all(v.utcoffset() == timedelta(0) for v in got[0] if isinstance(v, datetime)
               and v.tzinfo is not None)
    con.execute(f"CREATE MATERIALIZED VIEW values_of AS SELECT {select} FROM moments "
                "WHERE id = 1")
    assert con.execute("SELECT * FROM values_of").fetchall() == expected
    with pytest.raises(matview.DataError, match='invalid input syntax for type timestamp '
                                                'with time zone: "x"'):
        con.execute("SELECT t::timestamptz FROM moments").fetchall()
    with pytest.raises(matview.DataError, match='invalid input syntax for type time without '
                                                'time zone: "x"'):
        con.execute("SELECT t::time FROM moments WHERE id = 2").fetchall()


def test_values_round_trip_with_their_offsets_applied(con: matview.Connection) -> None:
    con.execute("CREATE TABLE trips (id INT, ts TIMESTAMP WITH TIME ZONE)")
    con.execute("INSERT INTO trips VALUES (1, '2024-01-01 00:00:00+02'), "
                "(2, '2024-06-01 12:00:00.5Z'), (3, '2024-06-01 12:00:00'), (4, NULL)")
    con.execute("INSERT INTO trips VALUES (?, ?)",
                (5, datetime(2024, 3, 1, 10, tzinfo=timezone(timedelta(hours=5, minutes=30)))))
    con.insert("trips", [(6, datetime(2024, 3, 1, 10)), (7, datetime(2024, 3, 1, 10, tzinfo=UTC))])
    rows = con.execute("SELECT id, ts, ts::text FROM trips ORDER BY id").fetchall()
    assert rows == [(1, utc(2023, 12, 31, 22), "2023-12-31 22:00:00+00"),
                    (2, utc(2024, 6, 1, 12, 0, 0, 500000), "2024-06-01 12:00:00.5+00"),
                    (3, utc(2024, 6, 1, 12), "2024-06-01 12:00:00+00"), (4, None, None),
                    (5, utc(2024, 3, 1, 4, 30), "2024-03-01 04:30:00+00"),
                    (6, utc(2024, 3, 1, 10), "2024-03-01 10:00:00+00"),
                    (7, utc(2024, 3, 1, 10), "2024-03-01 10:00:00+00")]
    assert all(ts.utcoffset() == timedelta(0) for _, ts, _ in rows if ts is not None)
    assert [d[1] for d in con.execute("SELECT ts FROM trips").description] == ["timestamptz"]
    assert con.execute("SELECT id FROM trips WHERE ts BETWEEN '2024-03-01 04:30:00+00' AND "
                       "'2024-03-01 15:00:00+05' ORDER BY id").fetchall() == [(5,), (6,), (7,)]
    series = con.execute("SELECT * FROM generate_series(TIMESTAMPTZ '2024-01-01 00:00:00+01', "
                         "'2024-01-01 01:00:00+00', INTERVAL '30 minutes')").fetchall()
    assert series == [(utc(2023, 12, 31, 23),), (utc(2023, 12, 31, 23, 30),),
                      (utc(2024, 1, 1),), (utc(2024, 1, 1, 0, 30),), (utc(2024, 1, 1, 1),)]


def test_times_round_trip(con: matview.Connection) -> None:
    con.execute("CREATE TABLE clocks (id INT, t TIME WITHOUT TIME ZONE)")
    con.execute("INSERT INTO clocks VALUES (1, '00:00'), (2, '23:59:59.999999'), (3, NULL), "
                "(4, '7:05:00.25')")
    con.execute("INSERT INTO clocks VALUES (?, ?)", (5, time(12)))
    con.insert("clocks", [(6, time(1, 2, 3))])
    rows = con.execute("SELECT id, t, t::text FROM clocks ORDER BY id").fetchall()
    assert rows == [(1, time(0), "00:00:00"), (2, time(23, 59, 59, 999999), "23:59:59.999999"),
                    (3, None, None), (4, time(7, 5, 0, 250000), "07:05:00.25"),
                    (5, time(12), "12:00:00"), (6, time(1, 2, 3), "01:02:03")]
    assert [d[1] for d in con.execute("SELECT t FROM clocks").description] == ["time"]
    assert con.execute("SELECT t FROM clocks WHERE t > '07:00' ORDER BY t").fetchall() == [
        (time(7, 5, 0, 250000),), (time(12),), (time(23, 59, 59, 999999),)]


def test_the_end_of_a_day_is_a_time(con: matview.Connection) -> None:
    """``'24:00:00'`` (and ``'23:59:60'``, a leap second) is a TIME after every other, equal
    only to itself; the API refuses it as a ``datetime.time`` with a DataError, as psycopg's
    loader does, and its text is PostgreSQL's."""
    con.execute("CREATE TABLE ends (id INT, t TIME)")
    con.execute("INSERT INTO ends VALUES (1, '24:00'), (2, '23:59:59.999999'), (3, '00:00'), "
                "(4, '23:59:60'), (5, NULL)")
    assert con.execute("SELECT id, t::text, rank() OVER (ORDER BY t DESC NULLS LAST) FROM ends "
                       "ORDER BY id").fetchall() == [
        (1, "24:00:00", 1), (2, "23:59:59.999999", 3), (3, "00:00:00", 4), (4, "24:00:00", 1),
        (5, None, 5)]
    assert con.execute("SELECT count(DISTINCT t), max(t)::text, min(t) FROM ends").fetchall() \
        == [(3, "24:00:00", time(0))]
    assert con.execute("SELECT id FROM ends WHERE t = '24:00:00' ORDER BY id").fetchall() == [
        (1,), (4,)]
    with pytest.raises(matview.DataError, match="24:00:00 cannot be a Python datetime.time"):
        con.execute("SELECT t FROM ends WHERE id = 1").fetchall()
    assert con.execute("SELECT t FROM ends WHERE id = 2").fetchall() == [
        (time(23, 59, 59, 999999),)]


@pytest.mark.parametrize("sql, error, message", [
    ("INSERT INTO moments (id, ts) VALUES (9, 'soon')", matview.ProgrammingError,
     'invalid input syntax for type timestamp with time zone: "soon"'),
    ("SELECT CAST(id AS timestamptz) FROM moments", matview.ProgrammingError,
     "cannot cast type int to timestamptz"),
    ("SELECT ts + 1 FROM moments", matview.ProgrammingError, "operator does not exist"),
    ("INSERT INTO moments (id, c) VALUES (9, '24:00:01')", matview.ProgrammingError,
     'date/time field value out of range: "24:00:01"'),
    ("INSERT INTO moments (id, c) VALUES (9, '12:60')", matview.ProgrammingError,
     'date/time field value out of range: "12:60"'),
    ("SELECT ('2' || (id + 3)::text || ':00')::time FROM moments WHERE id = 2",
     matview.DataError, 'date/time field value out of range: "25:00"'),
    ("SELECT c::timestamp FROM moments", matview.ProgrammingError,
     "cannot cast type time to timestamp"),
    ("SELECT extract(day FROM c) FROM moments", matview.NotSupportedError,
     'unit "day" not supported for type time'),
    ("SELECT date_trunc('week', c) FROM moments", matview.NotSupportedError,
     'unit "week" not supported for type interval'),
    ("SELECT c + c FROM moments", matview.ProgrammingError,
     "operator does not exist: time \\+ time"),
    ("SELECT c - 1 FROM moments", matview.ProgrammingError, "operator does not exist"),
])
def test_invalid_input_and_operations_are_errors(con: matview.Connection, sql: str,
                                                 error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        con.execute(sql).fetchall()


def test_a_temporal_filter_over_a_timestamptz_column(spark: SparkSession) -> None:
    con = matview.connect(spark=spark, clock=0)
    con.execute("CREATE TABLE ev (id INT, ts TIMESTAMPTZ)")
    con.execute("CREATE MATERIALIZED VIEW live AS SELECT id FROM ev "
                "WHERE mz_now() <= ts + INTERVAL '1 day'")
    con.execute("INSERT INTO ev VALUES (1, '1970-01-01 12:00:00+00'), "
                "(2, '1970-01-02 00:00:00+02'), (3, NULL)")
    assert sorted(con.execute("SELECT * FROM live").fetchall()) == [(1,), (2,)]
    con.advance_time(129_600_000)  # 1970-01-02 12:00 UTC: row 1's last instant
    assert sorted(con.execute("SELECT * FROM live").fetchall()) == [(1,), (2,)]
    con.advance_time(129_600_001)
    assert con.execute("SELECT * FROM live").fetchall() == [(2,)]
    con.advance_time(165_600_001)  # past 1970-01-02 22:00 UTC
    assert con.execute("SELECT * FROM live").fetchall() == []
    con.close()


def test_a_durable_database_keeps_the_instants(spark: SparkSession, tmp_path: Path) -> None:
    with matview.connect(tmp_path, spark=spark, clock=0) as con:
        con.execute("CREATE TABLE kept (id INT, ts TIMESTAMPTZ, t TIME)")
        con.execute("CREATE MATERIALIZED VIEW latest AS SELECT max(ts) AS ts, min(t) AS t "
                    "FROM kept")
        con.execute("INSERT INTO kept VALUES (1, '2024-01-01 00:00:00+02', '12:00'), "
                    "(2, NULL, NULL)")
    with matview.connect(tmp_path, spark=spark, clock=0) as con:
        assert sorted(con.execute("SELECT * FROM kept").fetchall(), key=str) == [
            (1, utc(2023, 12, 31, 22), time(12)), (2, None, None)]
        con.execute("INSERT INTO kept VALUES (3, '2025-01-01 00:00:00-01', '06:30')")
        assert con.execute("SELECT * FROM latest").fetchall() == [
            (utc(2025, 1, 1, 1), time(6, 30))]
        assert "timestamptz" in con.execute("EXPLAIN SELECT ts FROM kept WHERE ts > "
                                            "'2024-01-01 00:00:00+00'").fetchone()[0]


VIEWS = {
    "per_day": "SELECT date_trunc('day', ts) AS d, count(*) AS n, min(ts) AS lo, max(seen) AS hi "
               "FROM events GROUP BY date_trunc('day', ts)",
    "marked": "SELECT e.id, m.label FROM events e JOIN marks m ON e.ts = m.ts",
    "before": "SELECT id, ts FROM events WHERE ts < seen",
    "shifted": "SELECT id, ts + INTERVAL '1 month 1 hour' AS later, extract(hour FROM ts) AS h "
               "FROM events WHERE ts >= '2024-01-02 00:00:00+05'",
    "latest": "SELECT ts FROM events ORDER BY ts DESC NULLS LAST LIMIT 3",
    "by_time": "SELECT t::text AS t, count(*) AS n, max(t + INTERVAL '20 hours') AS late, "
               "min(DATE '2024-01-01' + t) AS at FROM events WHERE t >= '06:00' GROUP BY t",
    "day_end": "SELECT max(t)::text AS t, count(DISTINCT t) AS n FROM events "
               "WHERE t > '23:59:59.999999'",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Events at instants written with offsets (and NULLs) come and go, beside marks at some
    of the same instants and a TIMESTAMP column they are compared with; views group by day,
    join on the instant, filter, shift and order by it, and group by the events' times of
    day (24:00:00, the end of a day, among them)."""
    rng = random.Random(seed)
    mirror = Mirror(spark)
    mirror.db.execute("SET TimeZone = 'UTC'")
    mirror.execute("CREATE TABLE events (id INT, ts TIMESTAMPTZ, seen TIMESTAMP, t TIME)")
    mirror.execute("CREATE TABLE marks (ts TIMESTAMPTZ, label TEXT)")
    mirror.execute("INSERT INTO events VALUES (1, '2024-01-01 23:00:00+02', "
                   "'2024-01-01 22:00:00', '06:00'), (2, NULL, NULL, NULL)")
    mirror.execute("INSERT INTO marks VALUES ('2024-01-01 21:00:00+00', 'a')")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def instant() -> str:
        if rng.random() < 0.1:
            return "NULL"
        offset = rng.choice(["+00", "+02", "-05:30", "Z", ""])
        return f"'2024-01-0{rng.randint(1, 3)} {rng.choice([0, 6, 21, 23]):02d}:00:00{offset}'"

    def clock() -> str:
        return "NULL" if rng.random() < 0.1 else rng.choice(
            ["'00:30:00'", "'06:30:00'", "'09:30:00'", "'23:30:00'", "'24:00:00'"])

    def change() -> str:
        roll = rng.random()
        if roll < 0.4:
            rows = ", ".join(f"({rng.randint(1, 9)}, {instant()}, "
                             f"'2024-01-0{rng.randint(1, 3)} 12:00:00', {clock()})"
                             for _ in range(rng.randint(1, 3)))
            return f"INSERT INTO events VALUES {rows}"
        if roll < 0.6:
            return f"INSERT INTO marks VALUES ({instant()}, '{rng.choice('abc')}')"
        if roll < 0.75:
            return f"DELETE FROM events WHERE id = {rng.randint(1, 9)}"
        if roll < 0.85:
            return f"DELETE FROM marks WHERE ts < {instant()}"
        return (f"UPDATE events SET ts = {instant()}, t = {clock()} "
                f"WHERE id = {rng.randint(1, 9)}")

    mirror.steps_grouped([change() for _ in range(14)], rng)

"""INTERVAL columns and query results, with PostgreSQL's semantics. An interval keeps its
months, days and microseconds apart (``'1 mon'`` stays ``'1 mon'``), and comes back as a
``timedelta`` (months as 30 days, as psycopg gives it). Intervals compare, order and group
by their length with 30-day months and 24-hour days (``'1 month' = '30 days'``); a group
of equal intervals shows the smallest of them (the least months, then days). The
operators, casts, ``extract`` and aggregates give PostgreSQL's values from the reference interpreter
and from Spark alike; maintained views match DuckDB under random writes; a durable
database keeps intervals."""

from __future__ import annotations

import random
from datetime import datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from matview.ir.interpret import interpret
from matview.ir.interval_values import python_value
from matview.ir.intervals import Interval
from matview.ir.intervals import parse as interval
from matview.sql.parse import parse
from pyspark.sql import SparkSession

import matview
from matview.server.pgtypes import column_type, text_of
from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, environment

SPANS = "CREATE TABLE spans (id int, d interval, e interval, ts timestamp, c time)"
ROWS = [(1, "1 year 2 mons 3 days 04:05:06.5", "-01:30",
         datetime(2024, 1, 31, 12), time(23, 30)),
        (2, "1 month", "30 days", datetime(2024, 1, 31), None),
        (3, "720 hours", None, None, None),
        (4, None, "-1 day +02:00", None, None)]

VALUES = [
    # each expression over row 1 and PostgreSQL's value of it
    ("d", timedelta(days=423, hours=4, minutes=5, seconds=6.5)),
    ("d::text", "1 year 2 mons 3 days 04:05:06.5"),
    ("e::text", "-01:30:00"),
    ("(-d)::text", "-1 years -2 mons -3 days -04:05:06.5"),
    ("(d + e)::text", "1 year 2 mons 3 days 02:35:06.5"),
    ("(d - e)::text", "1 year 2 mons 3 days 05:35:06.5"),
    ("(d * 2)::text", "2 years 4 mons 6 days 08:10:13"),
    ("(-3 * e)::text", "04:30:00"),
    ("(d / 2)::text", "7 mons 1 day 14:02:33.25"),  # more in test_interval_arithmetic
    ("(1.5 * d)::text", "1 year 9 mons 4 days 18:07:39.75"),
    ("ts + d", datetime(2025, 4, 3, 16, 5, 6, 500000)),
    ("ts - e", datetime(2024, 1, 31, 13, 30)),
    ("c + e", time(22)),
    ("d::time", time(4, 5, 6, 500000)),
    ("c::interval", timedelta(hours=23, minutes=30)),
    ("(c::interval)::text", "23:30:00"),
    ("'1 day -02:00'::interval::text", "1 day -02:00:00"),
    ("(INTERVAL '-1 day' + INTERVAL '2 hours')::text", "-1 days +02:00:00"),
    ("d > e", True),
    ("d = INTERVAL '14 months 3 days 04:05:06.5'", True),
    ("INTERVAL '1 month' = INTERVAL '30 days'", True),
    ("INTERVAL '1 day' = INTERVAL '24 hours'", True),
    ("INTERVAL '1 month' < INTERVAL '31 days'", True),
    ("INTERVAL '1 month' <> INTERVAL '720 hours'", False),
    ("d BETWEEN '1 year' AND '2 years'", True),
    ("greatest(d, e, INTERVAL '1 day')::text", "1 year 2 mons 3 days 04:05:06.5"),
    ("CASE WHEN id = 1 THEN e END", timedelta(hours=-1, minutes=-30)),
    ("extract(year FROM d)", Decimal(1)),
    ("extract(month FROM d)", Decimal(2)),
    ("extract(day FROM d)", Decimal(3)),
    ("extract(hour FROM d)", Decimal(4)),
    ("extract(minute FROM e)", Decimal(-30)),
    ("extract(second FROM d)", Decimal("6.5")),
    ("extract(epoch FROM d)", Decimal("37015506.5")),
    ("extract(epoch FROM INTERVAL '-1 year -1 mon -1 day')", Decimal(-34236000)),
    ("date_part('epoch', e)", -5400.0),
]


@pytest.fixture(scope="module")
def env() -> Environment:
    return environment({"spans": SPANS}, {"spans": [(1, None, None, None, None)]}, ())


@pytest.fixture(scope="module")
def con(spark: SparkSession) -> matview.Connection:
    con = matview.connect(spark=spark, clock=0)
    con.execute(SPANS)
    con.insert("spans", ROWS)
    return con


def test_the_reference_meaning_is_postgresqls(env: Environment) -> None:
    rows = {"spans": {(1, interval(ROWS[0][1]), interval("-01:30"), ROWS[0][3], ROWS[0][4]): 1}}
    select = ", ".join(sql for sql, _ in VALUES)
    [query] = parse(f"SELECT {select} FROM spans", env[0])
    [row] = interpret(query.plan, rows).elements()
    assert [python_value(v) if isinstance(v, Interval) else v for v in row] == [
        v for _, v in VALUES]


def test_spark_gives_the_same_values_one_shot_and_in_a_view(con: matview.Connection) -> None:
    select = ", ".join(f"{sql} AS c{i}" for i, (sql, _) in enumerate(VALUES))
    expected = [tuple(v for _, v in VALUES)]
    assert con.execute(f"SELECT {select} FROM spans WHERE id = 1").fetchall() == expected
    con.execute(f"CREATE MATERIALIZED VIEW values_of AS SELECT {select} FROM spans "
                "WHERE id = 1")
    assert con.execute("SELECT * FROM values_of").fetchall() == expected


def test_values_round_trip_keeping_their_fields(con: matview.Connection) -> None:
    con.execute("CREATE TABLE kept (id INT, d INTERVAL)")
    con.execute("INSERT INTO kept VALUES (1, '2 mons -3 days'), (2, NULL), "
                "(3, INTERVAL '90' DAY), (4, '0 seconds')")
    con.execute("INSERT INTO kept VALUES (?, ?)", (5, timedelta(days=-1, seconds=1)))
    con.insert("kept", [(6, "1 week 1.5 seconds"), (7, timedelta(microseconds=7))])
    rows = con.execute("SELECT id, d, d::text FROM kept ORDER BY id").fetchall()
    assert rows == [(1, timedelta(days=57), "2 mons -3 days"), (2, None, None),
                    (3, timedelta(days=90), "90 days"), (4, timedelta(0), "00:00:00"),
                    (5, timedelta(seconds=-86399), "-1 days +00:00:01"),
                    (6, timedelta(days=7, seconds=1.5), "7 days 00:00:01.5"),
                    (7, timedelta(microseconds=7), "00:00:00.000007")]
    assert str(rows[0][1]) == "2 mons -3 days"  # the value keeps its fields
    assert [d[1] for d in con.execute("SELECT d FROM kept").description] == ["interval"]
    assert column_type("interval")[0] == 1186
    assert text_of(rows[0][1]) == "2 mons -3 days"  # the server's text output


def test_equal_lengths_compare_order_and_group_as_one(con: matview.Connection) -> None:
    def rows(sql: str) -> list[tuple[object, ...]]:
        return con.execute(sql).fetchall()

    assert rows("SELECT id FROM spans WHERE d = INTERVAL '30 days' ORDER BY id") == [(2,), (3,)]
    assert [(i, t) for i, _, t in rows("SELECT id, d, d::text AS t FROM spans "
                                       "ORDER BY d DESC, id")] == [
        (4, None), (1, "1 year 2 mons 3 days 04:05:06.5"), (2, "1 mon"), (3, "720:00:00")]
    assert [r[1:] for r in rows("SELECT d, d::text AS t, count(*) FROM spans GROUP BY d "
                                "ORDER BY d")] == [
        ("720:00:00", 2), ("1 year 2 mons 3 days 04:05:06.5", 1), (None, 1)]
    assert rows("SELECT u::text FROM (SELECT DISTINCT d AS u FROM (SELECT d FROM spans "
                "UNION ALL SELECT e FROM spans) s) t ORDER BY 1") == [
        ("-01:30:00", ), ("-1 days +02:00:00",), ("1 year 2 mons 3 days 04:05:06.5",),
        ("720:00:00",), (None,)]
    assert rows("SELECT min(d)::text, max(d)::text, count(DISTINCT d) FROM spans") == [
        ("720:00:00", "1 year 2 mons 3 days 04:05:06.5", 2)]
    assert rows("SELECT a.id, b.id FROM spans a JOIN spans b ON a.d = b.e ORDER BY 1, 2") == [
        (2, 2), (3, 2)]
    assert rows("SELECT sum(d)::text, sum(e)::text, sum(d) FILTER (WHERE id > 9) FROM spans"
                ) == [("1 year 3 mons 3 days 724:05:06.5", "29 days 00:30:00", None)]
    assert rows("SELECT d::text, count(*) FROM spans GROUP BY ROLLUP (d) ORDER BY 2, 1") == [
        ("1 year 2 mons 3 days 04:05:06.5", 1), (None, 1), ("720:00:00", 2), (None, 4)]


@pytest.mark.parametrize("sql, error, message", [
    ("INSERT INTO spans (id, d) VALUES (9, 'soon')", matview.ProgrammingError,
     'invalid input syntax for type interval: "soon"'),
    ("CREATE TABLE wrong (a INTERVAL[])", matview.NotSupportedError,
     "arrays of intervals are not supported"),
    ("SELECT CAST(ts::text AS interval) FROM spans", matview.NotSupportedError,
     "casting text to interval is supported for constants only"),
    ("SELECT d + 1 FROM spans", matview.ProgrammingError, "operator does not exist"),
    ("SELECT extract(dow FROM d) FROM spans", matview.NotSupportedError,
     'unit "dow" not supported for type interval'),
])
def test_invalid_input_and_operations_are_errors(con: matview.Connection, sql: str,
                                                 error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        con.execute(sql).fetchall()


def test_invalid_api_values_are_data_errors(con: matview.Connection) -> None:
    with pytest.raises(matview.DataError, match='column "d" of table "spans"'):
        con.insert("spans", [(9, 5, None, None, None)])


def test_a_durable_database_keeps_intervals(spark: SparkSession, tmp_path: Path) -> None:
    with matview.connect(tmp_path, spark=spark, clock=0) as con:
        con.execute("CREATE TABLE waits (id INT, d INTERVAL)")
        con.execute("CREATE MATERIALIZED VIEW totals AS SELECT d, count(*) AS n, "
                    "sum(d) AS s FROM waits GROUP BY d")
        con.execute("INSERT INTO waits VALUES (1, '1 mon'), (2, '30 days'), (3, NULL)")
    with matview.connect(tmp_path, spark=spark, clock=0) as con:
        assert con.execute("SELECT id, d::text FROM waits ORDER BY id").fetchall() == [
            (1, "1 mon"), (2, "30 days"), (3, None)]
        con.execute("INSERT INTO waits VALUES (4, '1 day')")
        assert con.execute("SELECT d, d::text AS t, n, s::text AS s FROM totals ORDER BY d"
                           ).fetchall() == [
            (timedelta(1), "1 day", 1, "1 day"),
            (timedelta(30), "30 days", 2, "1 mon 30 days"), (None, None, 1, None)]


VIEWS = {
    "per_span": ("SELECT d, count(*) AS n, min(e) AS lo, max(e) AS hi FROM waits GROUP BY d", None),
    "summed": ("SELECT g, sum(d) AS s, count(DISTINCT d) AS n FROM waits GROUP BY g",
               "SELECT g, to_microseconds(sum(epoch_us(d))::bigint) AS s, count(DISTINCT d) "
               "AS n FROM waits GROUP BY g"),
    "shifted": ("SELECT id, ts + d AS later, ts - e AS earlier FROM waits WHERE d > e", None),
    "longest": ("SELECT d FROM waits ORDER BY d DESC NULLS LAST LIMIT 3", None),
    "paired": ("SELECT a.id, b.id AS other FROM waits a JOIN waits b ON a.d = b.e", None),
    "deduplicated": ("SELECT DISTINCT e FROM waits", None),
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """Rows with intervals of equal lengths spelled differently (months, days, hours) come
    and go; views group by an interval, sum intervals (DuckDB has no ``sum(interval)``: its
    query sums their lengths), shift timestamps by interval columns, order, join and
    deduplicate on them. Results compare as ``timedelta``s, months as 30 days."""
    rng = random.Random(seed)
    mirror = Mirror(spark)
    mirror.execute("CREATE TABLE waits (id INT, g INT, d INTERVAL, e INTERVAL, ts TIMESTAMP)")
    mirror.execute("INSERT INTO waits VALUES (1, 1, '1 month', '30 days', "
                   "'2024-01-31 12:00:00'), (2, 2, NULL, NULL, NULL)")
    for name, (sql, duckdb_sql) in VIEWS.items():
        mirror.view(name, sql)
        mirror.views[name] = duckdb_sql or sql

    def span() -> str:
        return "NULL" if rng.random() < 0.1 else "'" + rng.choice([
            "1 month", "30 days", "720 hours", "1 day", "24 hours", "-2 days 03:00",
            "1 mon 1 day", "31 days", "1 year", "12 mons"]) + "'"

    def change() -> str:
        roll = rng.random()
        if roll < 0.5:
            rows = ", ".join(f"({rng.randint(1, 9)}, {rng.randint(1, 3)}, {span()}, {span()}, "
                             f"'2024-0{rng.randint(1, 3)}-{rng.choice([1, 29, 31]):02d} "
                             "12:00:00')" for _ in range(rng.randint(1, 3)))
            return f"INSERT INTO waits VALUES {rows}".replace("2024-02-31", "2024-02-28")
        if roll < 0.75:
            return f"DELETE FROM waits WHERE id = {rng.randint(1, 9)}"
        if roll < 0.85:
            return f"DELETE FROM waits WHERE d < {span()}"
        return f"UPDATE waits SET d = {span()} WHERE id = {rng.randint(1, 9)}"

    mirror.steps_grouped([change() for _ in range(14)], rng)


def test_copy_files_write_and_read_intervals(spark: SparkSession, tmp_path: Path) -> None:
    con = matview.connect(spark=spark, clock=0, files=[str(tmp_path)])
    con.execute("CREATE TABLE f (id INT, d INTERVAL)")
    con.execute("INSERT INTO f VALUES (1, '1 mon -2 days 03:00'), (2, NULL)")
    for fmt in ("csv", "parquet"):
        path = tmp_path / f"f.{fmt}"
        con.execute(f"COPY f TO '{path}' (FORMAT {fmt})")
        if fmt == "csv":
            assert sorted(path.read_text().splitlines()) == ['1,"1 mon -2 days +03:00:00"', "2,"]
        con.execute(f"CREATE TABLE g_{fmt} (id INT, d INTERVAL)")
        con.execute(f"COPY g_{fmt} FROM '{path}' (FORMAT {fmt})")
        assert con.execute(f"SELECT id, d::text FROM g_{fmt} ORDER BY id").fetchall() == [
            (1, "1 mon -2 days +03:00:00"), (2, None)]
    con.close()

"""``interval * number``, ``interval / number`` and ``avg(interval)`` with PostgreSQL's values
(``ir/interval_scaling.py``): fractions of months cascade into days at 30 days a month, of
days into time at 24 hours a day, nothing cascades up; ``avg`` divides the sum by the count
so. The reference interpreter and Spark agree, one-shot and in maintained views; a division
by zero or a result out of range is an error, and in a view an error-as-data that the
retraction of its row takes away.

DuckDB is no oracle here: its ``avg(interval)`` normalizes the sum before dividing and its
division rounds a half microsecond otherwise, so the expected values are PostgreSQL's,
written out (those of its documentation's operator table among them). A maintained
``avg`` under random writes is checked against the reference interpreter on the table's
current rows, whose meaning these literal values pin down."""

from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal

import pytest
from matview.ir.eval_error import EvalError
from matview.ir.interpret import interpret
from matview.ir.interval_values import of_python
from matview.sql.parse import parse
from pyspark.sql import SparkSession

import matview
from matview.server.sqlstate import pg_error
from tests.support.seeds import seeds
from tests.support.sql_env import environment

W = "CREATE TABLE w (id INT, g INT, d INTERVAL, n DOUBLE PRECISION, k NUMERIC(6, 2))"
ROWS = [(1, 1, "1 mon", 2.0, Decimal("0.1")), (2, 1, "1 day", 0.5, Decimal("1.5")),
        (3, 2, "1 year 2 mons 3 days 04:05:06.5", 3.0, Decimal(-2)),
        (4, 2, None, 0.0, None), (5, 3, "-01:30", -7.0, Decimal("0.7"))]

SCALED = [
    # each expression over the rows of ``ROWS`` and PostgreSQL's value of it at each row
    ("d / n", ["15 days", "2 days", "4 mons 21 days 01:21:42.166667", None, "00:12:51.428571"]),
    ("n * d", ["2 mons", "12:00:00", "3 years 6 mons 9 days 12:15:19.5", None, "10:30:00"]),
    ("d * k", ["3 days", "1 day 12:00:00", "-2 years -4 mons -6 days -08:10:13", None,
               "-01:03:00"]),
    ("d / k", ["10 mons", "16:00:00", "-7 mons -1 days -14:02:33.25", None,
               "-02:08:34.285714"]),
    ("d / id", ["1 mon", "12:00:00", "4 mons 21 days 01:21:42.166667", None, "-00:18:00"]),
    ("d * 0.1 + INTERVAL '1 mon 1 day 00:00:01' * 0.1",
     ["6 days 02:24:00.1", "3 days 04:48:00.1", "1 mon 15 days 10:00:30.75", None,
      "3 days 02:15:00.1"]),
]


@pytest.fixture(scope="module")
def con(spark: SparkSession) -> matview.Connection:
    con = matview.connect(spark=spark, clock=0)
    con.execute(W)
    con.insert("w", ROWS)
    return con


def test_the_reference_meaning_is_postgresqls() -> None:
    catalog = environment({"w": W}, {"w": ROWS}, ())[0]
    table = {"w": Counter({(i, g, None if d is None else of_python(d), n, k): 1
                           for i, g, d, n, k in ROWS})}
    select = ", ".join(f"({sql})::text" for sql, _ in SCALED)
    [query] = parse(f"SELECT id, {select} FROM w", catalog)
    assert sorted(interpret(query.plan, table).elements()) == [
        (i, *(values[i - 1] for _, values in SCALED)) for i in range(1, 6)]


def test_spark_gives_the_same_values_one_shot_and_in_a_view(con: matview.Connection) -> None:
    select = ", ".join(f"({sql})::text AS c{i}" for i, (sql, _) in enumerate(SCALED))
    expected = [(i, *(values[i - 1] for _, values in SCALED)) for i in range(1, 6)]
    assert con.execute(f"SELECT id, {select} FROM w ORDER BY id").fetchall() == expected
    con.execute(f"CREATE MATERIALIZED VIEW scaled AS SELECT id, {select} FROM w")
    assert con.execute("SELECT * FROM scaled ORDER BY id").fetchall() == expected


@pytest.mark.parametrize("sql, text", [
    # PostgreSQL's documentation (Date/Time Operators)
    ("21 * INTERVAL '1 day'", "21 days"),
    ("3.5 * INTERVAL '1 hour'", "03:30:00"),
    ("INTERVAL '1 hour' / 1.5", "00:40:00"),
    # the fractions cascade down, rounded to the microsecond of a day on the way
    ("INTERVAL '7 mons' / 4", "1 mon 22 days 12:00:00"),
    ("INTERVAL '1 mon 1 day' / 7", "4 days 10:17:08.546743"),
    ("INTERVAL '-1 mon' * 0.5", "-15 days"),
    ("INTERVAL '1 mon' * 1.5", "1 mon 15 days"),
    ("INTERVAL '00:00:00.000003' / 2", "00:00:00.000002"),  # half to even
    ("INTERVAL '00:00:00.000001' / 2", "00:00:00"),
    ("NULL::interval / 0", None),
])
def test_constant_values(con: matview.Connection, sql: str, text: str | None) -> None:
    assert con.execute(f"SELECT ({sql})::text").fetchall() == [(text,)]


def test_division_by_zero_and_overflow_are_errors_as_data(con: matview.Connection) -> None:
    for sql, message, state in (("d / (n - 2)", "division by zero", "22012"),
                                ("d * (n * 1e9)", "interval out of range", "22008")):
        with pytest.raises(matview.DataError, match=message) as caught:
            con.execute(f"SELECT {sql} FROM w").fetchall()
        assert pg_error(caught.value).sqlstate == state
    con.execute("CREATE TABLE z (id INT, d INTERVAL, n DOUBLE PRECISION)")
    con.execute("CREATE MATERIALIZED VIEW halves AS SELECT id, d / n AS h FROM z")
    con.execute("INSERT INTO z VALUES (1, '1 mon', 2), (2, NULL, 0), (3, '1 day', 0)")
    with pytest.raises(matview.DataError, match='"halves".*division by zero'):
        con.execute("SELECT * FROM halves").fetchall()
    con.execute("UPDATE z SET n = 1e-10 WHERE id = 3")  # 10^10 days
    with pytest.raises(matview.DataError, match='"halves".*interval out of range'):
        con.execute("SELECT * FROM halves").fetchall()
    con.execute("UPDATE z SET n = 4 WHERE id = 3")
    assert sorted((i, None if h is None else str(h)) for i, h in con.execute(
        "SELECT * FROM halves").fetchall()) == [(1, "15 days"), (2, None), (3, "06:00:00")]


@pytest.mark.parametrize("sql, message", [
    ("INTERVAL '1 day' / 0", "division by zero"),
    ("INTERVAL '100000000 years' * 2", "interval out of range"),
    ("INTERVAL '1 day' / 1e-10", "interval out of range"),
    ("INTERVAL '1 hour' * 'NaN'::double precision", "interval out of range"),
])
def test_the_reference_raises_postgresqls_errors(sql: str, message: str) -> None:
    [query] = parse(f"SELECT {sql}", environment({}, {}, ())[0])
    with pytest.raises(EvalError, match=message):
        interpret(query.plan, {})


def test_avg_divides_the_sum_by_the_count(con: matview.Connection) -> None:
    con.execute("CREATE TABLE v (g INT, d INTERVAL)")
    con.execute("INSERT INTO v VALUES (1, '1 mon'), (1, '1 day'), (1, NULL), "
                "(2, '1 mon'), (2, '30 days'), (2, '720 hours'), (3, NULL)")
    sql = "SELECT g, avg(d)::text, avg(d) FILTER (WHERE d < '2 days')::text FROM v GROUP BY g"
    expected = [(1, "15 days 12:00:00", "1 day"), (2, "20 days 240:00:00", None),
                (3, None, None)]
    assert sorted(con.execute(sql).fetchall()) == expected
    con.execute(f"CREATE MATERIALIZED VIEW averages AS {sql}")
    assert sorted(con.execute("SELECT * FROM averages").fetchall()) == expected
    con.execute("DELETE FROM v WHERE d = '1 day'")  # '1 day' and '24 hours' alike
    con.execute("INSERT INTO v VALUES (2, '1 day'), (3, '7 mons'), (3, NULL)")
    assert sorted(con.execute("SELECT * FROM averages").fetchall()) == [
        (1, "1 mon", None), (2, "15 days 186:00:00", "1 day"),
        (3, "7 mons", None)]
    assert con.execute("SELECT avg(d)::text, sum(d)::text FROM v WHERE g < 0").fetchall() == [
        (None, None)]


def test_sum_and_avg_over_windows(con: matview.Connection) -> None:
    rows = con.execute(
        "SELECT id, avg(d) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)::text, "
        "sum(d) OVER (PARTITION BY g)::text FROM w ORDER BY id").fetchall()
    assert rows == [(1, "1 mon", "1 mon 1 day"), (2, "15 days 12:00:00", "1 mon 1 day"),
                    (3, "7 mons 2 days 02:02:33.25", "1 year 2 mons 3 days 04:05:06.5"),
                    (4, "1 year 2 mons 3 days 04:05:06.5", "1 year 2 mons 3 days 04:05:06.5"),
                    (5, "-01:30:00", "-01:30:00")]


@pytest.mark.parametrize("sql, error, message", [
    ("SELECT d * d FROM w", matview.ProgrammingError,
     "operator does not exist: interval \\* interval"),
    ("SELECT 2 / d FROM w", matview.ProgrammingError,
     "operator does not exist: int / interval"),
    ("SELECT d / 'x' FROM w", matview.ProgrammingError, "operator does not exist"),
    ("SELECT avg(DISTINCT d) FROM w", matview.NotSupportedError,
     "avg\\(DISTINCT interval\\) is not supported"),
])
def test_invalid_operations_are_refused(con: matview.Connection, sql: str,
                                        error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        con.execute(sql).fetchall()


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_maintained_averages_match_the_reference_under_random_writes(
        spark: SparkSession, seed: int) -> None:
    """Intervals of every field's sign come and go; after each write, the view of ``avg``
    (and of ``interval / count``) holds what the reference interpreter computes from the
    table's rows, compared by their text (the fields, not only the length)."""
    rng = random.Random(seed)
    ddl = "CREATE TABLE t (id INT, g INT, d INTERVAL)"
    sql = ("SELECT g, avg(d)::text AS a, (sum(d) / (count(*) + 0.5))::text AS q, "
           "count(d) AS n FROM t GROUP BY g")
    con = matview.connect(spark=spark, clock=0, refresh="incremental")
    con.execute(ddl)
    con.execute(f"CREATE MATERIALIZED VIEW averaged AS {sql}")
    [query] = parse(sql, environment({"t": ddl}, {"t": [(0, 0, None)]}, ())[0])

    def span() -> str:
        return "NULL" if rng.random() < 0.1 else "'" + rng.choice([
            "1 mon", "30 days", "7 mons -3 days", "1 day 00:00:00.000001", "-2 days 03:00",
            "1 year 1 mon 1 day 01:01:01.5", "-00:00:00.000003", "720 hours"]) + "'"

    for _ in range(7):
        roll = rng.random()
        if roll < 0.55:
            con.execute("INSERT INTO t VALUES " + ", ".join(
                f"({rng.randint(1, 9)}, {rng.randint(1, 3)}, {span()})"
                for _ in range(rng.randint(1, 3))))
        elif roll < 0.8:
            con.execute(f"DELETE FROM t WHERE id = {rng.randint(1, 9)}")
        else:
            con.execute(f"UPDATE t SET d = {span()} WHERE id = {rng.randint(1, 9)}")
        rows = Counter((i, g, None if d is None else of_python(d))
                       for i, g, d in con.execute("SELECT * FROM t").fetchall())
        assert Counter(con.execute("SELECT * FROM averaged").fetchall()) == interpret(
            query.plan, {"t": rows})

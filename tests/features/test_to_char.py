"""``to_char(date | timestamp, 'pattern')`` (``ir/to_char.py``): PostgreSQL's template
patterns matview has, the same text from the reference interpreter (Python) and from Spark,
one-shot and in a maintained view; the patterns it does not have are refused, never read as
others."""

from __future__ import annotations

from datetime import date, datetime

import pytest
from matview.ir.interpret import interpret
from matview.sql.errors import SqlTypeError, UnsupportedError
from matview.sql.parse import parse
from pyspark.sql import SparkSession

import matview
from tests.support.sql_env import Environment, assert_refused, setup  # noqa: F401 (a fixture)

PATTERN = 'YYYY-MM-DD HH24:MI:SS.US MS "at" HH12 AM pm Mon MON mon Dy DY dy DDD Q yy hh'

MOMENTS = [
    # PostgreSQL's results for these patterns (its documentation's meanings, written out)
    (datetime(2024, 3, 5, 14, 7, 9, 123456),
     "2024-03-05 14:07:09.123456 123 at 02 PM pm Mar MAR mar Tue TUE tue 065 1 24 02"),
    (datetime(999, 12, 31, 0, 0, 0),
     "0999-12-31 00:00:00.000000 000 at 12 AM am Dec DEC dec Tue TUE tue 365 4 99 12"),
    (datetime(2023, 7, 2, 12, 30, 59, 999000),
     "2023-07-02 12:30:59.999000 999 at 12 PM pm Jul JUL jul Sun SUN sun 183 3 23 12"),
]


@pytest.mark.parametrize("moment, expected", MOMENTS)
def test_the_reference_meaning_is_postgresqls(moment: datetime, expected: str,
                                              setup: Environment) -> None:  # noqa: F811
    [query] = parse(f"SELECT to_char(TIMESTAMP '{moment.isoformat(' ')}', '{PATTERN}')",
                    setup[0])
    assert list(interpret(query.plan, setup[1]).elements()) == [(expected,)]


def test_spark_gives_the_same_text_one_shot_and_in_a_view(spark: SparkSession) -> None:
    con = matview.connect(spark=spark, clock=0)
    con.execute("CREATE TABLE t (id INT, at TIMESTAMP, day DATE)")
    con.execute(f"CREATE MATERIALIZED VIEW v AS SELECT id, to_char(at, '{PATTERN}') AS s, "
                "to_char(day, 'Dy DD Mon YYYY') AS d, to_char(day, '\"x\"') AS x FROM t")
    for i, (moment, _) in enumerate(MOMENTS):
        con.execute("INSERT INTO t VALUES (?, ?, ?)", (i, moment, moment.date()))
    con.execute("INSERT INTO t VALUES (9, NULL, NULL)")
    expected = [(i, text, moment.strftime("%a %d %b ") + f"{moment.year:04d}", "x")
                for i, (moment, text) in enumerate(MOMENTS)] + [(9, None, None, None)]
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == expected
    one_shot = con.execute(f"SELECT id, to_char(at, '{PATTERN}'), to_char(day, 'Dy DD Mon "
                           "YYYY'), to_char(day, '\"x\"') FROM t").fetchall()
    assert sorted(one_shot) == expected
    assert con.execute("SELECT to_char(DATE '2024-02-29', 'DDD \"of\" YYYY, HH24:MI')"
                       ).fetchall() == [("060 of 2024, 00:00",)]
    assert date(2024, 2, 29).timetuple().tm_yday == 60


@pytest.mark.parametrize("sql, error, message", [
    ("SELECT to_char(day, 'Month') FROM orders", UnsupportedError,
     'to_char\'s pattern "Month" is not supported'),
    ("SELECT to_char(day, 'DDth') FROM orders", UnsupportedError,
     'to_char\'s pattern "th" is not supported'),
    ("SELECT to_char(day, 'FMDD') FROM orders", UnsupportedError, '"FM" is not supported'),
    ("SELECT to_char(day, 'x') FROM orders", UnsupportedError,
     'has "x", which starts no pattern matview has; quote text to copy it'),
    ("SELECT to_char(day, note) FROM orders", UnsupportedError,
     "to_char's pattern must be a text constant"),
    ("SELECT to_char(amount, '999') FROM orders", SqlTypeError,
     "function to_char\\(bigint, text\\) is not supported"),
    ("SELECT to_char(day, '\"open') FROM orders", UnsupportedError, "unterminated quoted text"),
])
def test_patterns_it_does_not_have_are_refused(sql: str, error: type[Exception],
                                               message: str,
                                               setup: Environment) -> None:  # noqa: F811
    assert_refused(sql, error, message, setup)

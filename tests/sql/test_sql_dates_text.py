"""The date, timestamp and text functions TPC-H needs, with PostgreSQL's semantics:
``extract``, ``date_part``, ``date_trunc``, date and timestamp arithmetic with intervals and
days, ``substring``, ``position``/``strpos`` and ``LIKE``/``NOT LIKE``.

Their reference meanings are checked against the values PostgreSQL gives (the golden file
``fixtures/scalar_eval_dates_text.test`` and ``test_postgres_values``) and against DuckDB
where DuckDB agrees with PostgreSQL (``test_matches_duckdb``; DuckDB's ``extract`` returns
integers and doubles where PostgreSQL returns numeric, so numbers compare by value); their
binding errors by message and position; and materialized views using them, maintained on
Spark through inserts, updates and deletes, against DuckDB after every write.
"""

from __future__ import annotations

import datetime
from collections import Counter
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from matview.ir.interpret import interpret
from matview.ir.relation import Field
from matview.ir.types import DATE, DOUBLE, INT, TEXT, TIMESTAMP, Kind, SqlType
from matview.sql.catalog import CatalogItem
from matview.sql.errors import (
    InvalidValueError,
    SqlError,
    SqlSyntaxError,
    SqlTypeError,
    UnsupportedError,
)
from matview.sql.parse import parse
from matview.sql.statements import CreateTable, Query
from pyspark.sql import SparkSession

import matview
from tests.support.golden import run_golden
from tests.support.oracle.compare import canonical, rows_match
from tests.support.scalar_eval import eval_text
from tests.support.sql_env import DictCatalog, assert_refused_at, assert_value

FIXTURES = Path(__file__).parents[1] / "fixtures"
DAY = datetime.date
MOMENT = datetime.datetime

TABLE = "CREATE TABLE t (k INT, d DATE, ts TIMESTAMP, s TEXT, x BIGINT)"
ROWS = [
    (1, DAY(1998, 1, 31), MOMENT(1998, 1, 31, 10, 11, 12, 500000), "xabcq", 5),
    (2, DAY(1996, 2, 29), MOMENT(1996, 2, 29, 23, 59, 59), "abc", 7),
    (3, DAY(1994, 3, 15), MOMENT(1969, 12, 31, 23, 59, 59, 500000), "special requests", 11),
    (4, DAY(1998, 12, 1), MOMENT(2000, 12, 31, 0, 0, 0, 1), "ab", -3),
    (5, DAY(1994, 12, 31), MOMENT(2024, 3, 3, 6, 30), "", 2),
    (6, None, None, None, None),
    (7, DAY(1998, 9, 3), MOMENT(1998, 9, 2, 12, 0), "éabç", 1),
    (8, DAY(1998, 9, 2), MOMENT(1998, 9, 2, 0, 0), "a_c%d", 4),
]


def _duck(sql: str) -> str:
    """``sql`` as DuckDB reads it: without an interval's leading field precision."""
    return sql.replace(" day (3)", " day")


# --- reference meanings --------------------------------------------------------------------


def test_scalar_eval_dates_text(rewrite: bool) -> None:
    run_golden(FIXTURES / "scalar_eval_dates_text.test", eval_text, rewrite)


Environment = tuple[DictCatalog, dict[str, Counter], duckdb.DuckDBPyConnection]


@pytest.fixture(scope="module")
def environment() -> Environment:
    """The catalog and contents of table ``t`` for the binder, and DuckDB holding the same."""
    catalog = DictCatalog()
    [table] = parse(TABLE, catalog)
    assert isinstance(table, CreateTable)
    catalog.items["t"] = CatalogItem("t", "table", table.fields)
    duck = duckdb.connect()
    duck.execute(TABLE)
    duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS)
    return catalog, {"t": Counter(ROWS)}, duck


def _interpret(sql: str, catalog: DictCatalog, tables: dict[str, Counter]) -> list[tuple]:
    [query] = parse(sql, catalog)
    assert isinstance(query, Query)
    return list(interpret(query.plan, tables).elements())


DUCKDB_QUERIES = [
    "SELECT k, extract(year FROM d), extract(quarter FROM d), extract(month FROM d), "
    "extract(day FROM d), extract(dow FROM d), extract(doy FROM d), extract(epoch FROM d) "
    "FROM t",
    "SELECT k, extract(YEAR FROM ts), extract(hour FROM ts), extract(minute FROM ts), "
    "extract(epoch FROM ts), date_part('year', ts), date_part('doy', d) FROM t",
    "SELECT k, date_trunc('year', ts), date_trunc('quarter', ts), date_trunc('month', d), "
    "date_trunc('week', d), date_trunc('day', ts), date_trunc('hour', ts), "
    "date_trunc('minute', ts), date_trunc('second', ts) FROM t",
    "SELECT k, d + interval '1' month, d - interval '90' day (3), d + interval '1' year, "
    "ts - interval '1 month 1 day', interval '2 hours' + ts FROM t",
    "SELECT k, d + 30, d - 7, 5 + d, d - date '1995-01-01', date '1995-01-01' - d FROM t",
    "SELECT k, substring(s FROM 2 FOR 3), substring(s, 1, 2), substr(s, 3), "
    "substring(s FROM 2), position('b' IN s), strpos(s, 'ab'), strpos(s, '') FROM t",
    "SELECT k, s LIKE '%ab%', s NOT LIKE 'a_c%', s LIKE '_b%', s NOT LIKE '%' FROM t",
    "SELECT k FROM t WHERE s NOT LIKE '%special%requests%'",
    "SELECT extract(year FROM d) AS y, sum(x), count(*) FROM t "
    "WHERE d <= date '1998-12-01' - interval '90' day (3) GROUP BY 1",
    "SELECT k FROM t WHERE d >= date '1994-01-01' AND d < date '1994-01-01' + interval '1' year",
    "SELECT date_trunc('quarter', d) AS q, count(*), sum(x) FROM t GROUP BY 1",
]


@pytest.mark.parametrize("sql", DUCKDB_QUERIES)
def test_matches_duckdb(sql: str, environment: Environment) -> None:
    catalog, tables, duck = environment
    got = canonical(_interpret(sql, catalog, tables))
    expected = canonical(duck.execute(_duck(sql)).fetchall())
    assert len(got) == len(expected) and all(
        rows_match(a, b) for a, b in zip(got, expected, strict=True)), (got, expected)


POSTGRES_VALUES = [
    # extract: PostgreSQL's numeric, the seconds with their fraction; field names as
    # PostgreSQL reads them (any case, plurals and abbreviations, a string)
    ("extract(second FROM timestamp '2001-02-16 20:38:40.5')", Decimal("40.500000"),
     SqlType(Kind.NUMERIC, 38, 6)),
    ("extract(epoch FROM timestamp '2001-02-16 20:38:40.5')", Decimal("982355920.500000"),
     SqlType(Kind.NUMERIC, 38, 6)),
    ("extract(epoch FROM date '2001-02-16')", Decimal(982281600), SqlType(Kind.NUMERIC, 38, 0)),
    ("extract(Year FROM date '2024-02-29')", Decimal(2024), SqlType(Kind.NUMERIC, 38, 0)),
    ("extract('mon' FROM date '2024-02-29')", Decimal(2), SqlType(Kind.NUMERIC, 38, 0)),
    ("extract(qtr FROM date '2024-05-01')", Decimal(2), SqlType(Kind.NUMERIC, 38, 0)),
    ("extract(hours FROM '2024-02-29 13:00')", Decimal(13), SqlType(Kind.NUMERIC, 38, 0)),
    ("extract(dow FROM NULL)", None, SqlType(Kind.NUMERIC, 38, 0)),
    # date_part: double precision, of the value as a timestamp (a date's hour is 0)
    ("date_part('hour', date '2024-01-01')", 0.0, DOUBLE),
    ("date_part('SECOND', timestamp '2001-02-16 20:38:40.5')", 40.5, DOUBLE),
    ("date_part('epoch', timestamp '2001-02-16 20:38:40.5')", 982355920.5, DOUBLE),
    # date_trunc: a timestamp, also of a date
    ("date_trunc('Month', date '2024-02-29')", MOMENT(2024, 2, 1), TIMESTAMP),
    ("date_trunc('weeks', timestamp '2024-03-03 23:00')", MOMENT(2024, 2, 26), TIMESTAMP),
    # arithmetic: a date and an interval make a timestamp (the day clamped to the month),
    # a date and days a date, two dates the days between them (a literal beside a date in
    # a subtraction is a date)
    ("date '2024-01-31' + interval '1' month", MOMENT(2024, 2, 29), TIMESTAMP),
    ("date '2024-02-29' - interval '1' year", MOMENT(2023, 2, 28), TIMESTAMP),
    ("date '2024-02-28' + 1", DAY(2024, 2, 29), DATE),
    ("date '2024-03-01' - '2024-01-01'", 60, INT),
    ("date '2024-03-01' - NULL", None, INT),
    # substring: a start below 1 shortens the result (DuckDB counts it from the end)
    ("substring('hello' FROM 0 FOR 3)", "he", TEXT),
    ("substring('hello', -2, 3)", "", TEXT),
    ("substring('hello', -2, 4)", "h", TEXT),
    ("substr('hello', -5)", "hello", TEXT),
    ("position('' IN 'hello')", 1, INT),
    ("strpos('hello', 'z')", 0, INT),
    ("'abc' NOT LIKE NULL", None, SqlType(Kind.BOOLEAN)),
]


@pytest.mark.parametrize(("expression", "value", "sql_type"), POSTGRES_VALUES)
def test_postgres_values(expression: str, value: object, sql_type: SqlType,
                         environment: Environment) -> None:
    assert_value(expression, value, sql_type, environment)


# --- binding errors ------------------------------------------------------------------------

ERRORS = [
    ("SELECT extract(fortnight FROM d) FROM t", SqlTypeError,
     'unit "fortnight" not recognized for type date', 1, 16),
    ("SELECT date_part('fortnight', d) FROM t", SqlTypeError,
     'unit "fortnight" not recognized for type timestamp', 1, 18),
    ("SELECT date_trunc('Fortnight', ts) FROM t", SqlTypeError,
     'unit "fortnight" not recognized for type timestamp', 1, 19),
    ("SELECT extract(hour FROM d) FROM t", UnsupportedError,
     'unit "hour" not supported for type date', 1, 16),
    ("SELECT extract(century FROM d) FROM t", UnsupportedError,
     'unit "century" not supported for type date', 1, 16),
    ("SELECT date_trunc('dow', d) FROM t", UnsupportedError,
     'unit "dow" not supported for type timestamp', 1, 19),
    ("SELECT date_part(s, d) FROM t", UnsupportedError,
     "date_part of a field that is not a constant is not supported yet", 1, 18),
    ("SELECT date_trunc(s || 'x', d) FROM t", UnsupportedError,
     "date_trunc of a field that is not a constant is not supported yet", 1, 19),
    ("SELECT extract(year FROM s) FROM t", SqlTypeError,
     "function extract(text, text) does not exist", 1, 16),
    ("SELECT date_trunc('day', x) FROM t", SqlTypeError,
     "function date_trunc(text, bigint) does not exist", 1, 8),
    ("SELECT date_trunc('day', ts, 'UTC') FROM t", SqlTypeError,
     "function date_trunc takes 2 arguments (3 given)", 1, 8),
    ("SELECT date_part('day') FROM t", SqlTypeError,
     "function date_part takes 2 arguments (1 given)", 1, 8),
    ("SELECT d + 1.5 FROM t", SqlTypeError, "operator does not exist: date + numeric(2,1)",
     1, 8),
    ("SELECT d + d FROM t", SqlTypeError, "operator does not exist: date + date", 1, 8),
    ("SELECT 5 - d FROM t", SqlTypeError, "operator does not exist: int - date", 1, 8),
    ("SELECT d + x FROM t", SqlTypeError, "operator does not exist: date + bigint", 1, 8),
    ("SELECT d - ts FROM t", SqlTypeError, "operator does not exist: date - timestamp", 1, 8),
    ("SELECT position(1 IN s) FROM t", SqlTypeError,
     "function position(text, int) does not exist", 1, 17),
    ("SELECT strpos(s) FROM t", SqlTypeError, "function strpos takes 2 arguments (1 given)",
     1, 8),
    ("SELECT position('a', s) FROM t", SqlSyntaxError, 'syntax error at or near ","', 1, 20),
    ("SELECT d - interval '1000' day (3) FROM t", InvalidValueError,
     'interval field value out of range: "1000" has more than 3 digits', 1, 21),
    ("SELECT d - interval '10' day (x) FROM t", SqlSyntaxError,
     'syntax error at or near ")"', 1, 32),
]


@pytest.mark.parametrize(("sql", "kind", "message", "line", "col"), ERRORS)
def test_errors(sql: str, kind: type[SqlError], message: str, line: int, col: int,
                environment: Environment) -> None:
    assert_refused_at(sql, kind, message, line, col, environment)


def test_view_text_keeps_the_functions(environment: Environment) -> None:
    """A view's SQL is printed and read again where the view is used: ``date_part`` stays
    ``date_part`` (not ``EXTRACT``, whose type differs), and ``INTERVAL '90' DAY (3)`` an
    interval of 90 days."""
    catalog, tables, _ = environment
    sql = ("CREATE VIEW w AS SELECT date_part('dow', d) AS dow, date_trunc('month', d) AS m, "
           "d - interval '90' day (3) AS back, position('b' IN s) AS p FROM t")
    [view] = parse(sql, catalog)
    catalog.items["w"] = CatalogItem("w", "view", tuple(
        Field(n, t) for n, t in zip(view.column_names, view.plan.types, strict=True)),
        view.query_sql)
    assert _interpret("SELECT * FROM w", catalog, tables) == _interpret(
        sql.split(" AS ", 1)[1], catalog, tables)
    assert view.plan.types == (DOUBLE, TIMESTAMP, TIMESTAMP, INT)


# --- maintained views on Spark, against DuckDB ---------------------------------------------

VIEWS = {
    "by_year": "SELECT extract(year FROM d) AS y, sum(x) AS total, count(*) AS n FROM t "
               "WHERE d <= date '1998-12-01' - interval '90' day (3) GROUP BY 1",
    "by_quarter": "SELECT date_trunc('quarter', ts) AS q, count(*) AS n FROM t GROUP BY 1",
    "texts": "SELECT k, substring(s FROM 2 FOR 3) AS mid, substring(s, 1, 2) AS head, "
             "position('ab' IN s) AS p, strpos(s, 'c') AS q, s LIKE '%ab%' AS has_ab, "
             "s NOT LIKE 'a_c%' AS not_abc FROM t",
    "dates": "SELECT k, d - date '1995-01-01' AS days, d + 30 AS later, d - 7 AS earlier, "
             "1 + d AS next_day, d + interval '1' month AS next_month, "
             "ts - interval '1' year AS year_before, date_trunc('month', ts) AS month, "
             "date_trunc('week', d) AS week, extract(dow FROM d) AS dow, "
             "extract(quarter FROM ts) AS quarter, extract(hour FROM ts) AS hour, "
             "extract(epoch FROM ts) AS epoch, date_part('doy', d) AS doy FROM t",
    "fields": "SELECT k, extract(year FROM ts) AS y, extract(month FROM d) AS m, "
              "extract(day FROM ts) AS dd, extract(doy FROM ts) AS doy, "
              "extract(minute FROM ts) AS mi, extract(epoch FROM d) AS e, "
              "date_trunc('year', d) AS ty, date_trunc('day', ts) AS td, "
              "date_trunc('hour', ts) AS th, date_trunc('minute', ts) AS tm, "
              "date_trunc('second', ts) AS tsec, date_part('hour', d) AS ph FROM t",
    "filtered": "SELECT k, s FROM t WHERE s NOT LIKE '%special%requests%' "
                "AND d >= date '1994-01-01' AND d < date '1994-01-01' + interval '1' year",
}

WRITES = [
    "INSERT INTO t VALUES (9, DATE '1994-06-30', TIMESTAMP '1994-06-30 18:45:00', "
    "'no special requests', 6), (10, DATE '1998-08-31', TIMESTAMP '1998-08-31 01:02:03', "
    "'cab', 8)",
    "DELETE FROM t WHERE k IN (1, 6) OR s LIKE 'spec%'",
    "UPDATE t SET d = d + 400, s = s || 'ab' WHERE k % 2 = 0",
    "DELETE FROM t WHERE d - date '1995-01-01' > 1000",
]


def _check_views(con: matview.Connection, duck: duckdb.DuckDBPyConnection, when: str) -> None:
    for name, sql in VIEWS.items():
        got = canonical(con.execute(f"SELECT * FROM {name}").fetchall())
        expected = canonical(duck.execute(_duck(sql)).fetchall())
        assert len(got) == len(expected) and all(
            rows_match(a, b) for a, b in zip(got, expected, strict=True)), (when, name, got,
                                                                            expected)


def test_views_match_duckdb_after_every_write(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    duck = duckdb.connect()
    con.execute(TABLE)
    duck.execute(TABLE)
    con.insert("t", ROWS[:4])
    duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS[:4])
    for name, sql in VIEWS.items():
        con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    _check_views(con, duck, "created")
    con.insert("t", ROWS[4:])
    duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS[4:])
    _check_views(con, duck, "inserted")
    for write in WRITES:
        con.execute(write)
        duck.execute(write)
        _check_views(con, duck, write)


def test_substring_positions_and_errors_in_a_view(spark: SparkSession) -> None:
    """Spark's ``substr`` counts a start below 1 from the end: the view gives PostgreSQL's
    values; a negative length is an error of the view while its row is there."""
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE p (k INT, s TEXT, start INT, n INT)")
    con.execute("CREATE MATERIALIZED VIEW cut AS "
                "SELECT k, substring(s FROM start FOR n) AS part, substr(s, start) AS rest FROM p")
    con.insert("p", [(1, "hello", 0, 3), (2, "hello", -2, 3), (3, "hello", -2, 4),
                     (4, "hello", 4, 10), (5, "hello", 2, 0), (6, "hello", None, 1),
                     (7, "hello", 2147483647, 2147483647), (8, "hello", -5, 2147483647)])
    assert sorted(con.execute("SELECT * FROM cut").fetchall()) == [
        (1, "he", "hello"), (2, "", "hello"), (3, "h", "hello"), (4, "lo", "lo"),
        (5, "", "ello"), (6, None, None), (7, "", ""), (8, "hello", "hello")]
    con.insert("p", [(9, "hello", 2, -1)])
    with pytest.raises(matview.DataError, match="negative substring length not allowed"):
        con.execute("SELECT * FROM cut")
    con.execute("DELETE FROM p WHERE n < 0")
    assert len(con.execute("SELECT * FROM cut").fetchall()) == 8


def test_seconds_keep_their_fraction_in_a_view(spark: SparkSession) -> None:
    """``extract(second ...)`` counts to the microsecond (DuckDB's whole seconds differ)."""
    con = matview.connect(clock=0, spark=spark)
    con.execute(TABLE)
    con.execute("CREATE MATERIALIZED VIEW secs AS "
                "SELECT k, extract(second FROM ts) AS s, date_part('second', ts) AS p FROM t")
    con.insert("t", ROWS[:3])
    assert sorted(con.execute("SELECT * FROM secs").fetchall()) == [
        (1, Decimal("12.500000"), 12.5), (2, Decimal("59.000000"), 59.0),
        (3, Decimal("59.500000"), 59.5)]

"""The binder's differential environment: a few tables and views bound in a dict catalog and
loaded into DuckDB (set up to divide integers and order NULLs as PostgreSQL does), the
corpus of queries ``test_sql_duckdb`` checks, and the assertions that a query's plan denotes
what DuckDB computes or that binding it is refused.

Numbers are compared after rounding to 6 decimal places (``normal_row``), so NUMERIC and
DOUBLE results agree where the two engines choose different result types.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal

import duckdb
import pytest
from matview.ir.interpret import interpret
from matview.ir.relation import Field
from matview.ir.types import SqlType
from matview.planner.pipeline import at_stage
from matview.sql.catalog import CatalogItem
from matview.sql.errors import SqlError
from matview.sql.parse import parse
from matview.sql.statements import CreateTable, CreateView, Query

D = Decimal
DAY = datetime.date

SCHEMA = {
    "orders": "CREATE TABLE orders (id int, cust int, amount bigint, price numeric(10,2), "
              "note text, day date)",
    "customers": "CREATE TABLE customers (id int, name text, region text, score double)",
    "tags": "CREATE TABLE tags (id int, tag text)",
}

ROWS = {
    "orders": [
        (1, 1, 5, D("1.50"), "first", DAY(2024, 1, 1)),
        (2, 1, 20, D("10.00"), "Second", DAY(2024, 1, 2)),
        (3, 2, 15, None, None, DAY(2024, 2, 1)),
        (4, None, 7, D("3.25"), "fourth", None),
        (5, 3, None, D("2.00"), "fifth", DAY(2024, 3, 15)),
        (6, 2, 15, D("0.99"), "sixth", DAY(2024, 2, 1)),
        (6, 2, 15, D("0.99"), "sixth", DAY(2024, 2, 1)),
        (7, 4, -3, D("-1.00"), "seventh", DAY(2023, 12, 31)),
    ],
    "customers": [
        (1, "alice", "north", 1.5),
        (2, "bob", "south", None),
        (3, "carol", None, 2.25),
        (3, "carol2", "east", 0.5),
        (5, "eve", "north", -1.0),
        (None, "nobody", "west", 3.0),
    ],
    "tags": [(1, "x"), (1, "y"), (2, "x"), (None, "z"), (9, "w")],
}

VIEWS = [
    "CREATE VIEW big_orders AS SELECT id, cust, amount FROM orders WHERE amount > 10",
    "CREATE VIEW per_cust (who, n) AS SELECT cust, count(*) FROM orders GROUP BY cust",
]

QUERIES = [
    # projections, arithmetic, literals
    "SELECT * FROM orders",
    "SELECT id, amount * 2, amount + price, -amount, amount % 4, amount / 4 FROM orders",
    "SELECT amount * 1.5, price * 2, price + 1, 1e3 + amount FROM orders",
    "SELECT 1, 'a', NULL, 2.5, TRUE, -2147483648, 2147483648",
    "SELECT CAST(amount AS double) / 4, CAST(price AS int), amount::text, '12'::int + 1 "
    "FROM orders",
    # predicates
    "SELECT id FROM orders WHERE amount > 10 AND note IS NOT NULL",
    "SELECT id, note FROM orders WHERE note LIKE '%e%' OR note ILIKE 's%'",
    "SELECT id FROM orders WHERE note NOT LIKE 'f%' AND note NOT ILIKE '%TH'",
    "SELECT id FROM orders WHERE cust IN (1, 3) OR amount NOT IN (15, 20)",
    "SELECT id FROM orders WHERE amount BETWEEN 5 AND 15",
    "SELECT id FROM orders WHERE amount NOT BETWEEN 5 AND 15",
    "SELECT id FROM orders WHERE NOT (amount > 10)",
    "SELECT id FROM orders WHERE amount = 15.0",
    "SELECT note IS NULL, (amount > 10) IS TRUE, (amount > 10) IS NOT FALSE, "
    "(amount > 10) IS FALSE FROM orders",
    "SELECT id, score > 1 FROM customers",
    # dates: string literals adapt to the other operand
    "SELECT id FROM orders WHERE day = '2024-02-01'",
    "SELECT id, day > DATE '2024-01-15' FROM orders",
    # CASE and functions
    "SELECT id, CASE WHEN amount > 10 THEN 'big' WHEN amount > 0 THEN 'small' "
    "ELSE 'other' END FROM orders",
    "SELECT id, CASE cust WHEN 1 THEN 'one' WHEN 2 THEN 'two' END FROM orders",
    "SELECT coalesce(cust, -1), nullif(amount, 15), coalesce(note, 'none') FROM orders",
    "SELECT lower(note), upper(note), length(note), char_length(note), "
    "substring(note FROM 2 FOR 3), substr(note, 3) FROM orders",
    "SELECT abs(amount), round(price), round(price, 1), round(c.score, 1) "
    "FROM orders o, customers c WHERE o.id = c.id",
    "SELECT note || '-' || id, id || '' FROM orders",
    # joins
    "SELECT o.id, c.name FROM orders o JOIN customers c ON o.cust = c.id",
    "SELECT o.id, c.name FROM orders o, customers c WHERE o.cust = c.id AND c.region = 'north'",
    "SELECT * FROM tags JOIN orders USING (id)",
    "SELECT * FROM tags NATURAL JOIN customers",
    "SELECT t.tag, o.amount, c.name FROM tags t INNER JOIN orders o ON t.id = o.id "
    "JOIN customers c ON c.id = o.cust",
    "SELECT count(*) FROM orders CROSS JOIN tags",
    "SELECT a.id, b.id FROM tags a JOIN tags b ON a.tag = b.tag AND a.id < b.id",
    # aggregation
    "SELECT cust, count(*), count(amount), sum(amount), min(note), max(day) "
    "FROM orders GROUP BY cust",
    "SELECT cust, avg(amount), sum(price) FROM orders GROUP BY cust HAVING count(*) > 1",
    "SELECT count(*), sum(amount), avg(price), min(amount), max(amount) FROM orders",
    "SELECT count(*), sum(amount), max(note) FROM orders WHERE id > 100",
    "SELECT amount % 2 AS parity, count(*) FROM orders GROUP BY parity",
    "SELECT cust + 1, count(*) FROM orders GROUP BY cust + 1",
    "SELECT region, count(*) FROM customers GROUP BY 1",
    "SELECT cust, max(amount) - min(amount) FROM orders GROUP BY cust",
    "SELECT c.region, sum(o.amount) FROM orders o JOIN customers c ON o.cust = c.id "
    "WHERE o.amount > 0 GROUP BY c.region HAVING sum(o.amount) > 5",
    "SELECT count(*) FROM orders HAVING count(*) > 100",
    # DISTINCT and set operations
    "SELECT DISTINCT cust FROM orders",
    "SELECT DISTINCT cust, amount FROM orders",
    "SELECT id FROM orders UNION SELECT id FROM customers",
    "SELECT id FROM orders UNION ALL SELECT id FROM tags UNION ALL SELECT 99",
    "SELECT amount FROM orders UNION ALL SELECT score FROM customers",
    "SELECT cust FROM orders UNION ALL SELECT id FROM tags UNION SELECT 42",
    # views, CTEs and subqueries
    "SELECT * FROM big_orders",
    "SELECT b.id, c.name FROM big_orders b JOIN customers c ON b.cust = c.id",
    "SELECT who, n FROM per_cust WHERE n > 1",
    "WITH x AS (SELECT cust, sum(amount) AS total FROM orders GROUP BY cust), "
    "y AS (SELECT * FROM x WHERE total > 10) SELECT * FROM y",
    "SELECT s.k, s.n FROM (SELECT cust, count(*) FROM orders GROUP BY cust) AS s(k, n) "
    "WHERE s.n > 1",
    "SELECT x.* FROM (SELECT 1 AS a UNION ALL SELECT 2) x",
    # ORDER BY, LIMIT, OFFSET
    "SELECT id FROM orders ORDER BY id DESC LIMIT 3",
    "SELECT cust, amount FROM orders ORDER BY cust NULLS FIRST, amount DESC LIMIT 4 OFFSET 1",
    "SELECT cust AS c, count(*) AS n FROM orders GROUP BY cust ORDER BY n DESC, c",
    "SELECT id, amount FROM orders ORDER BY amount, id",
    "SELECT id, amount FROM orders ORDER BY amount DESC, id",
    "SELECT name FROM customers UNION SELECT tag FROM tags ORDER BY 1 LIMIT 4",
    # table functions in FROM (lateral) and in the select list (lockstep)
    "SELECT * FROM generate_series(1, 3)",
    "SELECT * FROM generate_series(10, 1, -3) AS g(v)",
    "SELECT o.id, g.v FROM orders o, generate_series(1, o.amount) AS g(v) WHERE o.id < 4",
    "SELECT t.tag, g.v FROM tags t JOIN generate_series(1, t.id) AS g(v) ON g.v > 1",
    "SELECT x.v FROM unnest(ARRAY[3, 1, NULL]) AS x(v)",
    "SELECT id, unnest(ARRAY[id, cust]) FROM orders WHERE id < 5",
    "SELECT id, unnest(ARRAY[1, 2, 3]) * 10, unnest(ARRAY['a', 'b']) FROM tags WHERE id = 1",
]


class DictCatalog:
    """A catalog over a dict of items."""

    def __init__(self) -> None:
        self.items: dict[str, CatalogItem] = {}

    def lookup(self, name: str) -> CatalogItem | None:
        return self.items.get(name)


Environment = tuple[DictCatalog, dict[str, Counter], duckdb.DuckDBPyConnection]


def environment(schema: dict[str, str] = SCHEMA, rows: dict[str, list[tuple]] = ROWS,
                views: Sequence[str] = VIEWS) -> Environment:
    """The catalog and table contents for the binder, and a DuckDB database holding the same
    (by default the corpus' tables and views)."""
    catalog = DictCatalog()
    con = duckdb.connect()
    con.execute("SET integer_division = true")
    con.execute("SET default_null_order = 'postgres'")
    for name, ddl in schema.items():
        [stmt] = parse(ddl, catalog)
        assert isinstance(stmt, CreateTable)
        catalog.items[name] = CatalogItem(name, "table", stmt.fields)
        con.execute(ddl)
        marks = ", ".join("?" * len(stmt.fields))
        con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows[name])
    for ddl in views:
        [view] = parse(ddl, catalog)
        assert isinstance(view, CreateView)
        fields = tuple(Field(n, t) for n, t in zip(view.column_names, view.plan.types,
                                                   strict=True))
        catalog.items[view.name] = CatalogItem(view.name, "view", fields, view.query_sql)
        con.execute(ddl)
    tables = {name: Counter(held) for name, held in rows.items()}
    return catalog, tables, con


def assert_denotes(sql: str, stage: str, env: Environment) -> None:
    """The plan of query ``sql`` at ``stage`` (``pipeline.at_stage``), run by the reference
    interpreter over ``env``'s tables, holds the rows DuckDB returns (as multisets)."""
    catalog, tables, db = env
    [query] = parse(sql, catalog)
    assert isinstance(query, Query)
    expected = Counter(normal_row(r) for r in db.execute(sql).fetchall())
    got = interpret(at_stage(query.plan, stage), tables)
    assert Counter(normal_row(r) for r in got.elements()) == expected


def assert_refused(sql: str, error: type[Exception], message: str, env: Environment) -> None:
    """Binding query ``sql`` over ``env``'s catalog raises ``error`` matching ``message``."""
    with pytest.raises(error, match=message):
        parse(sql, env[0])


def assert_value(expression: str, value: object, sql_type: SqlType, env: Environment) -> None:
    """``SELECT expression`` over ``env``'s catalog is of type ``sql_type``, and the
    reference interpreter gives exactly ``value`` (of its Python type)."""
    [query] = parse(f"SELECT {expression}", env[0])
    assert isinstance(query, Query)
    assert query.plan.types == (sql_type,)
    [[got]] = list(interpret(query.plan, env[1]).elements())
    assert got == value and type(got) is type(value)


def assert_refused_at(sql: str, error: type[SqlError], message: str, line: int, col: int,
                      env: Environment) -> None:
    """Binding ``sql`` over ``env``'s catalog raises ``error`` saying exactly ``message``
    at ``line`` and ``col``."""
    with pytest.raises(error) as caught:
        parse(sql, env[0])
    assert (caught.value.message, caught.value.line, caught.value.col) == (message, line, col)


@pytest.fixture(scope="module")
def setup() -> Environment:
    return environment()


def _normal(value: object) -> object:
    if isinstance(value, (float, Decimal)):
        return round(float(value), 6)
    if isinstance(value, list):  # an array
        return tuple(_normal(v) for v in value)
    return value


def normal_row(row: tuple) -> tuple:
    return tuple(_normal(v) for v in row)



"""Deterministic randomized workloads for the oracle tests.

``generate(seed)`` returns a ``Workload``: bulk loads of three small tables (customers,
orders, items), then a stream of operations mixing SQL ``INSERT ... VALUES``,
``DELETE ... WHERE`` and ``UPDATE ... SET ... WHERE`` (join and group keys included), bulk
``con.insert`` / ``con.delete`` of rows, and ``con.advance_time``. Values come from small
domains, so joins and groups collide, about one in ten is NULL (keys included) and rows may
repeat. Every operation applies itself to a matview connection and to a DuckDB connection
with the same meaning, so DuckDB can recompute each view from scratch as the oracle.

The generator tracks the tables' contents in a scratch DuckDB database, so that deletes and
updates usually hit existing rows and bulk deletes only remove rows that exist.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Protocol

import duckdb

import matview

Value = int | str | Decimal | float | bool | date | datetime | None
Row = tuple[Value, ...]

NULL_RATE = 0.1
MAX_ROWS = 38
"""Inserts stop adding to a table once it holds this many rows."""
MIN_OPS, MAX_OPS = 6, 10
"""Operations per workload after the initial loads, at least one of each kind. Each costs
every view it affects a dataflow step of several Spark jobs, so workloads stay short."""


def sql_literal(value: Value) -> str:
    """``value`` as a SQL literal both matview and DuckDB read with the same type."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, Decimal, float)):
        return str(value)
    if isinstance(value, datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class Column:
    """A column, its SQL type and a draw from its (non-NULL) value domain."""

    name: str
    type: str
    draw: Callable[[random.Random], Value]


def _choice(values: Sequence[Value]) -> Callable[[random.Random], Value]:
    return lambda rng: rng.choice(values)


def _ints(low: int, high: int) -> Callable[[random.Random], Value]:
    return lambda rng: rng.randint(low, high)


_CENTS = (0, 1, 10, 20, 48, 73, 99)
"""Prices never end in 5 cents, so ``round(price, 1)`` meets no ties."""

_PRICES = tuple(Decimal(f"{units}.{cents:02d}") for units in (1, 4, 9, 15) for cents in _CENTS)
_NOTES = ("apple", "avocado", "banana", "blueberry", "cherry", "cranberry")
_DAYS = tuple(date(2024, 1, 1) + timedelta(days=d) for d in range(10))
_INSTANTS = tuple(datetime(2024, 1, 1) + timedelta(hours=6 * h) for h in range(12))
_WEIGHTS = tuple(q / 4 for q in range(1, 13))
"""Multiples of 1/4: sums of these doubles are exact in any order."""


@dataclass(frozen=True)
class Table:
    """A table of the workload schema."""

    name: str
    columns: tuple[Column, ...]

    def ddl(self) -> str:
        cols = ", ".join(f"{c.name} {c.type}" for c in self.columns)
        return f"CREATE TABLE {self.name} ({cols})"

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def draw(self, rng: random.Random, column: str) -> Value:
        """A non-NULL value from ``column``'s domain."""
        return self.column(column).draw(rng)

    def row(self, rng: random.Random) -> Row:
        """A fresh row; each value is NULL with probability ``NULL_RATE``."""
        return tuple(None if rng.random() < NULL_RATE else c.draw(rng) for c in self.columns)


CUSTOMERS = Table("customers", (
    Column("id", "INT", _ints(1, 8)),
    Column("region", "TEXT", _choice(("north", "south", "east", "west"))),
    Column("score", "INT", _ints(0, 9)),
    Column("vip", "BOOLEAN", _choice((True, False))),
    Column("since", "DATE", _choice(_DAYS)),
))
ORDERS = Table("orders", (
    Column("id", "INT", _ints(1, 12)),
    Column("cust", "INT", _ints(1, 9)),
    Column("amount", "BIGINT", _choice(tuple(range(10, 101, 10)))),
    Column("note", "TEXT", _choice(_NOTES)),
    Column("price", "NUMERIC(10,2)", _choice(_PRICES)),
    Column("placed", "TIMESTAMP", _choice(_INSTANTS)),
))
ITEMS = Table("items", (
    Column("order_id", "INT", _ints(1, 13)),
    Column("sku", "TEXT", _choice(("a1", "a2", "b1", "b2", "c1"))),
    Column("qty", "INT", _ints(1, 5)),
    Column("weight", "DOUBLE", _choice(_WEIGHTS)),
))
TABLES: tuple[Table, ...] = (CUSTOMERS, ORDERS, ITEMS)


class Op(Protocol):
    """One step of a workload, with the same meaning in matview and in DuckDB."""

    @property
    def table(self) -> str | None:
        """The table the step writes (None: it writes none)."""

    def on_matview(self, con: matview.Connection) -> None: ...

    def on_duckdb(self, db: duckdb.DuckDBPyConnection) -> None: ...


@dataclass(frozen=True)
class Sql:
    """A statement about one table, in SQL both systems read alike."""

    sql: str
    table: str

    def on_matview(self, con: matview.Connection) -> None:
        con.execute(self.sql)

    def on_duckdb(self, db: duckdb.DuckDBPyConnection) -> None:
        db.execute(self.sql)

    def __str__(self) -> str:
        return self.sql


@dataclass(frozen=True)
class BulkInsert:
    """``con.insert(table, rows)``: one transaction."""

    table: str
    rows: tuple[Row, ...]

    def on_matview(self, con: matview.Connection) -> None:
        con.insert(self.table, list(self.rows))

    def on_duckdb(self, db: duckdb.DuckDBPyConnection) -> None:
        marks = ", ".join("?" * len(self.rows[0]))
        db.executemany(f"INSERT INTO {self.table} VALUES ({marks})", list(self.rows))

    def __str__(self) -> str:
        return f"con.insert({self.table!r}, {list(self.rows)!r})"


@dataclass(frozen=True)
class BulkDelete:
    """``con.delete(table, rows)``: removes one copy of each listed row (listed twice, two
    copies), in one transaction; the rows exist."""

    table: str
    rows: tuple[Row, ...]

    def on_matview(self, con: matview.Connection) -> None:
        con.delete(self.table, list(self.rows))

    def on_duckdb(self, db: duckdb.DuckDBPyConnection) -> None:
        names = [d[0] for d in db.execute(f"SELECT * FROM {self.table} LIMIT 0").description]
        match = " AND ".join(f"{n} IS NOT DISTINCT FROM ?" for n in names)
        for row in self.rows:
            deleted = db.execute(f"DELETE FROM {self.table} WHERE rowid = "
                                 f"(SELECT min(rowid) FROM {self.table} WHERE {match})",
                                 list(row)).fetchone()
            assert deleted == (1,), f"{self}: row {row!r} is not in {self.table}"

    def __str__(self) -> str:
        return f"con.delete({self.table!r}, {list(self.rows)!r})"


@dataclass(frozen=True)
class AdvanceTime:
    """``con.advance_time(con.now + by)``: moves the clock, writes nothing."""

    by: int
    table: None = None

    def on_matview(self, con: matview.Connection) -> None:
        con.advance_time(con.now + self.by)

    def on_duckdb(self, db: duckdb.DuckDBPyConnection) -> None:
        """Time is invisible to DuckDB's snapshot."""

    def __str__(self) -> str:
        return f"con.advance_time(con.now + {self.by})"


@dataclass(frozen=True)
class Workload:
    """The seed's initial bulk loads (before the views exist) and the operations after."""

    seed: int
    initial: tuple[Op, ...]
    ops: tuple[Op, ...]


def _contents(db: duckdb.DuckDBPyConnection, table: Table) -> list[Row]:
    return db.execute(f"SELECT * FROM {table.name} ORDER BY ALL").fetchall()


class _Generator:
    """Draws operations against the current contents of a scratch DuckDB database."""

    def __init__(self, rng: random.Random, db: duckdb.DuckDBPyConnection) -> None:
        self.rng = rng
        self.db = db

    def pick(self, table: Table, column: str) -> str:
        """A literal for ``column``: mostly a value some row has, so predicates hit."""
        index = [c.name for c in table.columns].index(column)
        present = [r[index] for r in _contents(self.db, table) if r[index] is not None]
        if present and self.rng.random() < 0.75:
            return sql_literal(self.rng.choice(present))
        return sql_literal(table.draw(self.rng, column))

    def insert_values(self) -> Op:
        table = self.rng.choice(self._growable())
        rows = [table.row(self.rng) for _ in range(self.rng.randint(1, 5))]
        values = ", ".join("(" + ", ".join(sql_literal(v) for v in r) + ")" for r in rows)
        return Sql(f"INSERT INTO {table.name} VALUES {values}", table.name)

    def bulk_insert(self) -> Op:
        table = self.rng.choice(self._growable())
        existing = _contents(self.db, table)
        rows = [self.rng.choice(existing) if existing and self.rng.random() < 0.3
                else table.row(self.rng) for _ in range(self.rng.randint(1, 6))]
        return BulkInsert(table.name, tuple(rows))

    def bulk_delete(self) -> Op:
        filled = [t for t in TABLES if _contents(self.db, t)]
        if not filled:
            return self.bulk_insert()
        table = self.rng.choice(filled)
        existing = _contents(self.db, table)
        chosen = self.rng.sample(range(len(existing)), min(len(existing), self.rng.randint(1, 4)))
        return BulkDelete(table.name, tuple(existing[i] for i in sorted(chosen)))

    def delete_where(self) -> Op:
        p, r = self.pick, self.rng
        predicates = {
            CUSTOMERS: [
                lambda: f"id = {p(CUSTOMERS, 'id')}",
                lambda: f"region = {p(CUSTOMERS, 'region')} AND score < {r.randint(2, 9)}",
                lambda: "score IS NULL OR NOT vip",
            ],
            ORDERS: [
                lambda: f"id = {p(ORDERS, 'id')}",
                lambda: f"amount > {r.randint(3, 9) * 10} AND note LIKE 'b%'",
                lambda: f"cust IN ({p(ORDERS, 'cust')}, {p(ORDERS, 'cust')})",
            ],
            ITEMS: [
                lambda: f"order_id = {p(ITEMS, 'order_id')}",
                lambda: f"sku = {p(ITEMS, 'sku')} AND qty >= {r.randint(1, 5)}",
                lambda: "weight BETWEEN 1 AND 2 OR sku IS NULL",
            ],
        }
        table = r.choice(TABLES)
        return Sql(f"DELETE FROM {table.name} WHERE {r.choice(predicates[table])()}",
                   table.name)

    def update(self) -> Op:
        p, r = self.pick, self.rng
        updates = {
            CUSTOMERS: [
                lambda: (f"region = {p(CUSTOMERS, 'region')}", f"id = {p(CUSTOMERS, 'id')}"),
                lambda: (f"id = {p(CUSTOMERS, 'id')}", f"region = {p(CUSTOMERS, 'region')}"),
                lambda: (f"score = score + {r.randint(1, 3)}, vip = NOT vip",
                         f"id IN ({p(CUSTOMERS, 'id')}, {p(CUSTOMERS, 'id')})"),
                lambda: ("region = NULL", f"score > {r.randint(4, 9)}"),
            ],
            ORDERS: [
                lambda: (f"cust = {p(ORDERS, 'cust')}", f"id = {p(ORDERS, 'id')}"),
                lambda: ("amount = amount + 10, price = price * 2",
                         f"cust BETWEEN {r.randint(1, 6)} AND {r.randint(4, 9)}"),
                lambda: (f"note = {p(ORDERS, 'note')}, placed = {p(ORDERS, 'placed')}",
                         f"id = {p(ORDERS, 'id')} OR note IS NULL"),
                lambda: ("cust = NULL", f"amount < {r.randint(2, 6) * 10}"),
            ],
            ITEMS: [
                lambda: (f"order_id = {p(ITEMS, 'order_id')}", f"sku = {p(ITEMS, 'sku')}"),
                lambda: (f"sku = {p(ITEMS, 'sku')}, qty = qty + 1",
                         f"order_id = {p(ITEMS, 'order_id')}"),
                lambda: ("weight = weight + 0.25", "qty IS NULL OR qty > 3"),
            ],
        }
        table = r.choice(TABLES)
        assignments, predicate = r.choice(updates[table])()
        return Sql(f"UPDATE {table.name} SET {assignments} WHERE {predicate}", table.name)

    def advance(self) -> Op:
        return AdvanceTime(self.rng.choice((1, 5, 250, 1000)))

    def _growable(self) -> list[Table]:
        small = [t for t in TABLES if len(_contents(self.db, t)) < MAX_ROWS]
        return small or list(TABLES)

    def ops(self, count: int) -> list[Op]:
        """``count`` operations (at least one of each kind), each applied to the scratch
        database as it is drawn."""
        kinds = [self.insert_values, self.delete_where, self.update, self.bulk_insert,
                 self.bulk_delete, self.advance]
        order = kinds + self.rng.choices(kinds, weights=[3, 2, 3, 1.5, 1.5, 0.5],
                                         k=count - len(kinds))
        self.rng.shuffle(order)
        ops = []
        for kind in order:
            op = kind()
            op.on_duckdb(self.db)
            ops.append(op)
        return ops


def create_tables(db: duckdb.DuckDBPyConnection) -> None:
    for table in TABLES:
        db.execute(table.ddl())


def generate(seed: int) -> Workload:
    """The workload of ``seed`` (the same on every run and platform)."""
    rng = random.Random(seed)
    db = duckdb.connect()
    create_tables(db)
    initial: list[Op] = [
        BulkInsert(t.name, tuple(t.row(rng) for _ in range(rng.randint(12, 20))))
        for t in TABLES
    ]
    for op in initial:
        op.on_duckdb(db)
    ops = _Generator(rng, db).ops(rng.randint(MIN_OPS, MAX_OPS))
    db.close()
    return Workload(seed, tuple(initial), tuple(ops))

"""A workload for as-of joins on transaction time (``JOIN ... FOR SYSTEM_TIME AS OF
mz_now()``) and its reference, which replays history in DuckDB: after every transaction it
keeps a snapshot of the right table per transaction and each left row with the transaction
it arrived in (an update is a new arrival); a view must equal the left rows joined with the
snapshot of their arrival (the tests of ``tests/features/test_system_time_joins.py`` and
``tests/cluster``)."""

from __future__ import annotations

import random

import duckdb
from pyspark.sql import SparkSession

import matview
from tests.support.oracle.compare import difference
from tests.support.oracle.harness import KEYED_HISTORIES

AS_OF = "FOR SYSTEM_TIME AS OF mz_now()"

IN_FILES = {**KEYED_HISTORIES, "driver_batch_rows": 1, "driver_merge_rows": 1,
            "small_step_rows": 2}
"""Runtime settings: every batch of more than one row in files, read by key, and every step
of more than two update rows a large one (its plans computed by Spark jobs)."""

VIEWS = {
    "padded": (f"SELECT o.id, o.item, o.qty, p.price FROM orders o LEFT JOIN prices {AS_OF} p "
               "ON o.item = p.item",
               "SELECT o.id, o.item, o.qty, p.price FROM arrived o LEFT JOIN snapshots p "
               "ON p.tx = o.tx AND o.item = p.item"),
    "matched": (f"SELECT o.id, p.price, c.name FROM orders o JOIN prices {AS_OF} AS p "
                "ON o.item = p.item AND p.price > o.qty JOIN customers c ON c.id = o.id % 4",
                "SELECT o.id, p.price, c.name FROM arrived o JOIN snapshots p "
                "ON p.tx = o.tx AND o.item = p.item AND p.price > o.qty "
                "JOIN customers c ON c.id = o.id % 4"),
    "summed": ("SELECT p.item, sum(o.qty * p.price), count(*) FROM orders o "
               "JOIN prices FOR TIMESTAMP AS OF mz_now() p ON o.item = p.item GROUP BY p.item",
               "SELECT p.item, sum(o.qty * p.price), count(*) FROM arrived o JOIN snapshots p "
               "ON p.tx = o.tx AND o.item = p.item GROUP BY p.item"),
}


class History:
    """A matview connection and a DuckDB database holding the same tables, and in DuckDB
    each transaction's snapshot of ``prices`` (``snapshots``) and each row of ``orders``
    with the transaction it arrived in (``arrived``)."""

    def __init__(self, spark: SparkSession, **settings: int) -> None:
        self.con = matview.connect(clock=0, spark=spark, refresh="recompute",
                                   settings=settings)
        self.db = duckdb.connect()
        self.tx, self.log = 0, []
        for ddl in ("CREATE TABLE orders (id int PRIMARY KEY, item text, qty int)",
                    "CREATE TABLE prices (item text, price int)",
                    "CREATE TABLE customers (id int, name text)"):
            self.con.execute(ddl)
            self.db.execute(ddl)
        self.db.execute("CREATE TABLE snapshots (tx int, item text, price int)")
        self.db.execute("CREATE TABLE arrived (id int, item text, qty int, tx int)")

    def transaction(self, statements: list[str]) -> None:
        """Run ``statements`` as one transaction on both, then record it in the history."""
        self.log.append("; ".join(statements))
        with self.con.transaction():
            for statement in statements:
                self.con.execute(statement)
                self.db.execute(statement)
        self.record()

    def record(self) -> None:
        self.tx += 1
        same = "a.id = o.id AND a.item IS NOT DISTINCT FROM o.item AND a.qty IS NOT " \
               "DISTINCT FROM o.qty"
        self.db.execute(f"INSERT INTO snapshots SELECT {self.tx}, * FROM prices")
        self.db.execute(f"DELETE FROM arrived a WHERE NOT EXISTS (SELECT 1 FROM orders o "
                        f"WHERE {same})")
        self.db.execute(f"INSERT INTO arrived SELECT o.*, {self.tx} FROM orders o "
                        f"WHERE NOT EXISTS (SELECT 1 FROM arrived a WHERE {same})")

    def check(self) -> None:
        failures = []
        for name, (_, reference) in VIEWS.items():
            missing, extra = difference(self.con.execute(f"SELECT * FROM {name}").fetchall(),
                                        self.db.execute(reference).fetchall())
            if missing or extra:
                failures.append(f"{name}: lacks {missing}, has beyond {extra}")
        assert not failures, "\n".join(failures + ["after:", *self.log])


def check_arrivals(spark: SparkSession, seed: int, subscribed: bool, groups: int = 6,
                   **settings: int) -> str:
    """Orders come, change (a changed order arrives again) and go; prices (duplicates and
    NULL items among them) change between and within the same transactions, customers
    come (one view joins them with the as-of join's rows, which it looks up); ``VIEWS`` are
    read after ``groups`` groups of one to three transactions, equal to their references
    (``subscribed``: with a subscription open, so that a step keeps its transactions'
    times apart). ``refresh="recompute"`` is overruled: a view with this join steps
    incrementally (a recompute cannot know when rows arrived). Returns ``EXPLAIN
    ANALYZE`` of the view ``padded``."""
    rng = random.Random(seed)
    history = History(spark, **settings)
    history.transaction(["INSERT INTO prices VALUES ('a', 10), ('b', 20), ('b', 21)",
                         "INSERT INTO orders VALUES (1, 'a', 1), (2, 'b', 30), (3, 'c', 2)",
                         "INSERT INTO customers VALUES (0, 'c0'), (1, 'c1'), (2, 'c2')"])
    for name, (sql, _) in VIEWS.items():
        history.con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    history.transaction(["UPDATE prices SET price = price + 1"])
    subscription = history.con.subscribe("padded") if subscribed else None
    history.check()
    next_id = 4

    def item() -> str:
        return "NULL" if rng.random() < 0.1 else f"'{rng.choice('abc')}'"

    def statement() -> str:
        nonlocal next_id
        roll, some = rng.random(), rng.randint(1, next_id)
        if roll < 0.3:
            next_id += 1
            return f"INSERT INTO orders VALUES ({next_id}, {item()}, {rng.randint(1, 40)})"
        if roll < 0.42:
            return f"DELETE FROM orders WHERE id = {some}"
        if roll < 0.55:
            return f"UPDATE orders SET qty = qty + 1 WHERE id = {some}"
        if roll < 0.75:
            return f"INSERT INTO prices VALUES ({item()}, {rng.randint(1, 50)})"
        if roll < 0.85:
            return f"UPDATE prices SET price = price + {rng.randint(1, 9)} WHERE item = {item()}"
        if roll < 0.92:
            return f"DELETE FROM prices WHERE item = {item()}"
        return f"INSERT INTO customers VALUES ({rng.randint(0, 3)}, 'n{rng.randint(1, 9)}')"

    for _ in range(groups):
        for _ in range(rng.randint(1, 3)):
            history.transaction([statement() for _ in range(rng.randint(1, 2))])
        history.check()
    stats = history.con.execute("EXPLAIN ANALYZE MATERIALIZED VIEW padded").fetchall()[0][0]
    assert "recomputes" in stats and " 1 recomputes" in stats, stats
    if subscription is not None:
        subscription.fetch()
    return stats

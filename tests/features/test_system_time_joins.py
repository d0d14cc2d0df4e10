"""As-of joins on transaction time (``L [LEFT] JOIN R FOR SYSTEM_TIME AS OF mz_now() ON
...``, the ``AsOfJoin`` node, seed 001): each row of ``L`` joins ``R`` as it was when the
row arrived, and never changes when ``R`` changes later.

The reference replays history in DuckDB: after every transaction it keeps a snapshot of
the right table per transaction and each left row with the transaction it arrived in (an
update is a new arrival), and the view must equal the left rows joined with the snapshot
of their arrival, after every group of one to three transactions of seeded random writes
to both tables (some changing both at once), with and without a subscription (which keeps
the times of a step apart, so that rows arrive and leave within one step).
"""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview
from matview.connection import Connection
from matview.errors import NotSupportedError, ProgrammingError
from tests.support.oracle.compare import difference
from tests.support.seeds import seeds

AS_OF = "FOR SYSTEM_TIME AS OF mz_now()"

VIEWS = {
    "padded": (f"SELECT o.id, o.item, o.qty, p.price FROM orders o LEFT JOIN prices {AS_OF} p "
               "ON o.item = p.item",
               "SELECT o.id, o.item, o.qty, p.price FROM arrived o LEFT JOIN snapshots p "
               "ON p.tx = o.tx AND o.item = p.item"),
    "matched": (f"SELECT o.id, p.price FROM orders o JOIN prices {AS_OF} AS p "
              "ON o.item = p.item AND p.price > o.qty",
              "SELECT o.id, p.price FROM arrived o JOIN snapshots p "
              "ON p.tx = o.tx AND o.item = p.item AND p.price > o.qty"),
    "summed": ("SELECT p.item, sum(o.qty * p.price), count(*) FROM orders o "
               "JOIN prices FOR TIMESTAMP AS OF mz_now() p ON o.item = p.item GROUP BY p.item",
               "SELECT p.item, sum(o.qty * p.price), count(*) FROM arrived o JOIN snapshots p "
               "ON p.tx = o.tx AND o.item = p.item GROUP BY p.item"),
}


class History:
    """A matview connection and a DuckDB database holding the same tables, and in DuckDB
    each transaction's snapshot of ``prices`` (``snapshots``) and each row of ``orders``
    with the transaction it arrived in (``arrived``)."""

    def __init__(self, spark: SparkSession) -> None:
        self.con = matview.connect(clock=0, spark=spark, refresh="recompute")
        self.db = duckdb.connect()
        self.tx, self.log = 0, []
        for ddl in ("CREATE TABLE orders (id int PRIMARY KEY, item text, qty int)",
                    "CREATE TABLE prices (item text, price int)"):
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


def _orders_and_prices(con: Connection) -> Connection:
    """``con`` with a keyed table of orders and a table of prices."""
    con.execute("CREATE TABLE orders (id int PRIMARY KEY, item text)")
    con.execute("CREATE TABLE prices (item text, price int)")
    return con


@pytest.mark.slow
@pytest.mark.parametrize("subscribed", [False, True])
@pytest.mark.parametrize("seed", seeds())
def test_views_equal_the_right_side_at_each_left_rows_arrival(
        spark: SparkSession, seed: int, subscribed: bool) -> None:
    """Orders come, change (a changed order arrives again) and go; prices (duplicates and
    NULL items among them) change between and within the same transactions; views are
    read after one to three transactions. ``refresh="recompute"`` is overruled: a view
    with this join steps incrementally (a recompute cannot know when rows arrived)."""
    rng = random.Random(seed)
    history = History(spark)
    history.transaction(["INSERT INTO prices VALUES ('a', 10), ('b', 20), ('b', 21)",
                         "INSERT INTO orders VALUES (1, 'a', 1), (2, 'b', 30), (3, 'c', 2)"])
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
        if roll < 0.45:
            return f"DELETE FROM orders WHERE id = {some}"
        if roll < 0.6:
            return f"UPDATE orders SET qty = qty + 1 WHERE id = {some}"
        if roll < 0.8:
            return f"INSERT INTO prices VALUES ({item()}, {rng.randint(1, 50)})"
        if roll < 0.9:
            return f"UPDATE prices SET price = price + {rng.randint(1, 9)} WHERE item = {item()}"
        return f"DELETE FROM prices WHERE item = {item()}"

    for _ in range(6):
        for _ in range(rng.randint(1, 3)):
            history.transaction([statement() for _ in range(rng.randint(1, 2))])
        history.check()
    stats = history.con.execute("EXPLAIN ANALYZE MATERIALIZED VIEW padded").fetchall()[0][0]
    assert "recomputes" in stats and " 1 recomputes" in stats, stats
    if subscription is not None:
        subscription.fetch()


def test_a_left_row_keeps_the_price_it_arrived_with(spark: SparkSession) -> None:
    """Later price changes change nothing; a deleted order retracts the price it got (not
    today's); an order inserted in the same transaction as a price sees it."""
    con = _orders_and_prices(matview.connect(clock=0, spark=spark))
    con.execute("INSERT INTO prices VALUES ('a', 10)")
    con.execute("INSERT INTO orders VALUES (1, 'a')")
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT o.id, p.price FROM orders o "
                f"JOIN prices {AS_OF} p ON o.item = p.item")
    changes = con.subscribe("v")
    assert [row[1:] for row in changes.fetch()] == [(1, 1, 10)]
    con.execute("UPDATE prices SET price = 11")
    with con.transaction():
        con.execute("INSERT INTO orders VALUES (2, 'a')")
        con.execute("UPDATE prices SET price = 12")
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == [(1, 10), (2, 12)]
    con.execute("UPDATE prices SET price = 13")
    con.execute("DELETE FROM orders WHERE id = 1")
    assert con.execute("SELECT * FROM v").fetchall() == [(2, 12)]
    assert sorted(row[1:] for row in changes.fetch()) == [(-1, 1, 10), (1, 2, 12)]


def test_rows_arriving_and_leaving_within_one_step_retract_what_they_got(
        spark: SparkSession) -> None:
    """With a subscription the transactions read in one step keep their times: an order
    inserted, then changed after a price change, then deleted, all in one step, leaves
    nothing; another changed within the step holds the price of its change's time."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE orders (id int PRIMARY KEY, item text, qty int)")
    con.execute("CREATE TABLE prices (item text, price int)")
    con.execute("INSERT INTO prices VALUES ('a', 10)")
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT o.id, o.qty, p.price FROM orders o "
                f"JOIN prices {AS_OF} p ON o.item = p.item")
    changes = con.subscribe("v")
    changes.fetch()
    for statement in ("INSERT INTO orders VALUES (1, 'a', 1), (2, 'a', 1)",
                      "UPDATE prices SET price = 11", "UPDATE orders SET qty = 2",
                      "UPDATE prices SET price = 12", "DELETE FROM orders WHERE id = 1"):
        con.execute(statement)
    assert con.execute("SELECT * FROM v").fetchall() == [(2, 2, 11)]
    assert sum(row[1] for row in changes.fetch()) == 1


def test_explain_shows_differentiate_half_join_integrate(spark: SparkSession) -> None:
    con = _orders_and_prices(matview.connect(clock=0, spark=spark))
    sql = f"SELECT o.id, p.price FROM orders o LEFT JOIN prices {AS_OF} p ON o.item = p.item"
    assert con.execute(f"EXPLAIN {sql}").fetchall()[0][0] == (
        "Linear [project (#0, #3)]\n"
        "  AsOfJoin outer left_keys=(#1) right_keys=(#0) unique=(#0)\n"
        "    Get orders (id int, item text)\n"
        "    Get prices (item text, price int)")
    physical = con.execute(f"EXPLAIN PHYSICAL PLAN FOR {sql}").fetchall()[0][0]
    assert "\n".join(physical.splitlines()[3:8]) == (
        "      implementation: as of each change's time\n"
        "        differentiate %0: each change reads %1 at its time\n"
        "        half join %1[#0] <= stream=(#1) in prices\n"
        "        integrate: a retraction negates its key's rows of %2.output by (#0)\n"
        "      arrangements: creates %2.output (the joined rows by the left input's unique "
        "key, read by its retractions)"), physical
    assert "prices (read by %1; looked up by %2 (path 0))" in physical


@pytest.mark.parametrize("sql, error, message", [
    (f"SELECT * FROM prices p JOIN orders {AS_OF} o ON o.item = p.item", NotSupportedError,
     "needs a left side with a unique key"),
    (f"SELECT * FROM orders o FULL JOIN prices {AS_OF} p ON o.item = p.item", NotSupportedError,
     "FULL JOIN ... FOR SYSTEM_TIME AS OF is not supported"),
    (f"SELECT * FROM orders o JOIN prices {AS_OF} p USING (item)", ProgrammingError,
     "needs an ON clause"),
    (f"SELECT * FROM orders o JOIN prices {AS_OF} p ON o.item = p.item AND mz_now() > 0",
     NotSupportedError, "cannot read mz_now"),
    (f"SELECT * FROM orders o JOIN prices {AS_OF} p ON o.item = p.item AND p.price / o.id > 1",
     NotSupportedError, "may fail"),
    (f"SELECT * FROM prices {AS_OF}", NotSupportedError, r"time travel \(AS OF\)"),
    ("SELECT * FROM prices q WHERE EXISTS (SELECT 1 FROM orders o JOIN prices "
     f"{AS_OF} p ON o.item = p.item AND p.price = q.price)", NotSupportedError,
     "a column of an enclosing query"),
    ("SELECT (SELECT max(p.price) FROM (SELECT * FROM orders WHERE id = q.price) o JOIN "
     f"prices {AS_OF} p ON o.item = p.item) FROM prices q", NotSupportedError,
     "cannot join relations that read the enclosing query's columns"),
    ("SELECT * FROM orders o JOIN prices FOR SYSTEM_TIME AS OF 3 p ON o.item = p.item",
     NotSupportedError, r"time travel \(AS OF\)"),
])
def test_other_forms_are_refused(spark: SparkSession, sql: str, error: type[Exception],
                                 message: str) -> None:
    con = _orders_and_prices(matview.connect(clock=0, spark=spark))
    with pytest.raises(error, match=message):
        con.execute(f"CREATE MATERIALIZED VIEW v AS {sql}")
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT * FROM prices")  # the name is free


def test_a_reopened_database_retracts_what_rows_got_before(spark: SparkSession,
                                                           tmp_path: Path) -> None:
    """The join's own output is durable state: after reopening, deleting an order that
    arrived before retracts the price it got then (not today's), with no recompute."""
    path = str(tmp_path / "db")
    with _orders_and_prices(matview.connect(path, spark=spark)) as con:
        con.execute("INSERT INTO prices VALUES ('a', 10)")
        con.execute("INSERT INTO orders VALUES (1, 'a')")
        con.execute("CREATE MATERIALIZED VIEW v AS SELECT o.id, p.price FROM orders o "
                    f"JOIN prices {AS_OF} p ON o.item = p.item")
        con.execute("UPDATE prices SET price = 11")
        con.execute("INSERT INTO orders VALUES (2, 'a')")
    with matview.connect(path, spark=spark) as con:
        assert sorted(con.execute("SELECT * FROM v").fetchall()) == [(1, 10), (2, 11)]
        con.execute("UPDATE prices SET price = 12")
        con.execute("DELETE FROM orders WHERE id = 1")
        con.execute("INSERT INTO orders VALUES (3, 'a')")
        assert sorted(con.execute("SELECT * FROM v").fetchall()) == [(2, 11), (3, 12)]

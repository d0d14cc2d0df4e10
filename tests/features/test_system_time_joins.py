"""As-of joins on transaction time (``L [LEFT] JOIN R FOR SYSTEM_TIME AS OF mz_now() ON
...``, the ``AsOfJoin`` node, seed 001): each row of ``L`` joins ``R`` as it was when the
row arrived, and never changes when ``R`` changes later.

The reference replays history in DuckDB (``tests/support/arrival_history.py``): the views
must equal the left rows joined with the right table's snapshot at their arrival, after
every group of one to three transactions of seeded random writes to both tables (some
changing both at once), with and without a subscription (which keeps the times of a step
apart, so that rows arrive and leave within one step).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import matview
from matview.connection import Connection
from matview.errors import NotSupportedError, ProgrammingError
from tests.support.arrival_history import AS_OF, IN_FILES, check_arrivals
from tests.support.seeds import seeds


def _orders_and_prices(con: Connection) -> Connection:
    """``con`` with a keyed table of orders and a table of prices."""
    con.execute("CREATE TABLE orders (id int PRIMARY KEY, item text)")
    con.execute("CREATE TABLE prices (item text, price int)")
    return con


@pytest.mark.slow
@pytest.mark.parametrize("subscribed, settings, groups",
                         [(False, {}, 6), (True, IN_FILES, 4)])
@pytest.mark.parametrize("seed", seeds())
def test_views_equal_the_right_side_at_each_left_rows_arrival(
        spark: SparkSession, seed: int, subscribed: bool, settings: dict[str, int],
        groups: int) -> None:
    """``check_arrivals``: without a subscription, every step's transactions at one time;
    with one, each at its own, and every batch in files, the join's ``matches`` read by
    key (four groups of transactions: six took 41 s)."""
    stats = check_arrivals(spark, seed, subscribed, groups, **settings)
    assert bool(re.search(r"%2\.matches: .* read: [1-9]\d* by key", stats)) == subscribed, stats


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
        "        integrate: a retraction negates what its key got in %2.matches by (#0)\n"
        "      arrangements: creates %2.matches (the right rows each left key got, read by "
        "its retractions)"), physical
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


def test_altering_a_relation_it_reads_is_refused_and_changes_nothing(
        spark: SparkSession) -> None:
    """A new plan would start from the tables' snapshots, not knowing when rows arrived."""
    con = _orders_and_prices(matview.connect(clock=0, spark=spark))
    con.execute("INSERT INTO prices VALUES ('a', 10)")
    con.execute("INSERT INTO orders VALUES (1, 'a')")
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT o.id, p.price FROM orders o "
                f"JOIN prices {AS_OF} p ON o.item = p.item")
    con.execute("UPDATE prices SET price = 11")
    with pytest.raises(NotSupportedError, match='materialized view "v" joins it as of when'):
        con.execute("ALTER TABLE prices ADD COLUMN note text")
    assert con.execute("SELECT * FROM prices").fetchall() == [("a", 11)]
    assert con.execute("SELECT * FROM v").fetchall() == [(1, 10)]


@pytest.mark.parametrize("settings", [{}, IN_FILES])
def test_a_view_over_rows_deleted_and_inserted_again_starts_from_the_net_rows(
        spark: SparkSession, settings: dict[str, int]) -> None:
    """The first step reads each table's batches, some cancelling others: at one time, so
    its changes join the prices as they come (no consolidation first) and the pairs cancel
    in the output; then later retractions find what their keys got."""
    con = _orders_and_prices(matview.connect(clock=0, spark=spark, settings=settings))
    con.execute("INSERT INTO prices VALUES ('a', 10), ('b', 7)")
    for statement in ("INSERT INTO orders VALUES (1, 'a'), (2, 'b')",
                      "DELETE FROM orders WHERE id = 1", "INSERT INTO orders VALUES (1, 'a')",
                      "DELETE FROM orders WHERE id = 2"):
        con.execute(statement)
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT o.id, p.price FROM orders o "
                f"LEFT JOIN prices {AS_OF} p ON o.item = p.item")
    assert con.execute("SELECT * FROM v").fetchall() == [(1, 10)]
    con.execute("UPDATE prices SET price = 11")
    con.execute("DELETE FROM orders WHERE id = 1")
    con.execute("INSERT INTO orders VALUES (3, 'a')")
    assert con.execute("SELECT * FROM v").fetchall() == [(3, 11)]

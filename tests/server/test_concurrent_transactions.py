"""Several psycopg clients run random transactions at once (writes, reads of their own
writes, savepoints rolled back to or released, commits and rollbacks); the final tables and
materialized views equal DuckDB replaying the committed transactions. Each client writes
rows of its own and adds to shared balances, so the committed transactions commute and any
commit order gives the same state; reads inside a block must see the block's writes."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from decimal import Decimal

import duckdb
import psycopg
import pytest

import matview
from matview.server import Server, serve

CLIENTS, TRANSACTIONS = 3, 8


@pytest.fixture(scope="module")
def server(spark) -> Iterator[Server]:  # type: ignore[no-untyped-def]
    con = matview.connect(clock=None, spark=spark)
    running = serve(con, port=0, poll=0.05)
    yield running
    running.close()


def _client(server: Server, client: int, committed: list[list[tuple[str, tuple]]],
            failures: list[BaseException]) -> None:
    rng = random.Random(client)
    mine: dict[int, int] = {}  # this client's committed items: n -> v
    counter = 0
    try:
        with psycopg.connect(host="127.0.0.1", port=server.port, user="u", dbname="matview",
                             connect_timeout=10) as conn:
            for _ in range(TRANSACTIONS):
                done: list[tuple[str, tuple]] = []
                live = dict(mine)
                marks: list[tuple[str, int, dict[int, int]]] = []
                for _ in range(rng.randint(1, 4)):
                    op = rng.random()
                    if op < 0.4:
                        counter += 1
                        step = ("INSERT INTO ct_items VALUES (%s, %s, %s)",
                                (client, counter, rng.randrange(100)))
                        live[counter] = step[1][2]
                    elif op < 0.65:
                        step = ("UPDATE ct_acct SET bal = bal + %s WHERE id = %s",
                                (rng.randrange(1, 10), rng.randrange(3)))
                    elif op < 0.8 and live:
                        n = rng.choice(sorted(live))
                        step = ("DELETE FROM ct_items WHERE client = %s AND n = %s", (client, n))
                        del live[n]
                    elif op < 0.9:
                        name = f"s{len(marks)}"
                        conn.execute(f"SAVEPOINT {name}")
                        marks.append((name, len(done), dict(live)))
                        continue
                    elif marks:
                        name, at, saved = marks.pop()
                        if rng.random() < 0.5:
                            conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
                            del done[at:]
                            live = saved
                        else:
                            conn.execute(f"RELEASE SAVEPOINT {name}")
                        continue
                    else:
                        continue
                    conn.execute(*step)
                    done.append(step)
                    seen = conn.execute("SELECT count(*), coalesce(sum(v), 0) FROM ct_items "
                                        "WHERE client = %s", (client,)).fetchone()
                    assert seen == (len(live), sum(live.values())), (client, seen, live)
                if rng.random() < 0.8:
                    conn.commit()
                    committed.append(done)
                    mine = live
                else:
                    conn.rollback()
    except BaseException as error:  # reported by the main thread
        failures.append(error)


def test_random_transactions_of_several_clients_equal_duckdb(server: Server) -> None:
    schema = ["CREATE TABLE ct_items (client INT, n INT, v INT)",
              "CREATE TABLE ct_acct (id INT, bal BIGINT)",
              "INSERT INTO ct_acct VALUES (0, 0), (1, 0), (2, 0)"]
    views = {"ct_counts": "SELECT client, count(*) AS c, sum(v) AS s FROM ct_items "
                          "GROUP BY client",
             "ct_total": "SELECT sum(bal) AS total, count(*) AS c FROM ct_acct"}
    with psycopg.connect(host="127.0.0.1", port=server.port, user="u", dbname="matview",
                         autocommit=True) as conn:
        for sql in schema:
            conn.execute(sql)
        for name, sql in views.items():
            conn.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    committed: list[list[tuple[str, tuple]]] = []
    failures: list[BaseException] = []
    threads = [threading.Thread(target=_client, args=(server, i, committed, failures))
               for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not failures, failures
    assert len(committed) > CLIENTS
    oracle = duckdb.connect()
    for sql in schema:
        oracle.execute(sql)
    for transaction in committed:
        for sql, params in transaction:
            oracle.execute(sql.replace("%s", "?"), params)
    with psycopg.connect(host="127.0.0.1", port=server.port, user="u", dbname="matview",
                         autocommit=True) as conn:
        for sql in ["SELECT * FROM ct_items ORDER BY 1, 2", "SELECT * FROM ct_acct ORDER BY 1",
                    *(f"SELECT * FROM {name} ORDER BY 1" for name in views)]:
            expected = oracle.execute(
                sql.replace("FROM ct_counts", f"FROM ({views['ct_counts']})")
                .replace("FROM ct_total", f"FROM ({views['ct_total']})")).fetchall()
            got = conn.execute(sql).fetchall()
            assert [tuple(map(_plain, r)) for r in got] == [
                tuple(map(_plain, r)) for r in expected], sql


def _plain(value: object) -> object:
    """A whole number as an int (the sums are NUMERIC here and HUGEINT or DECIMAL in
    DuckDB); anything else as it is."""
    return int(value) if isinstance(value, int | Decimal) else value

"""A writer that crash tests kill (``tests/api/test_durable_crashes.py``).

``python durable_writer.py DIR SETTINGS FIRST`` opens the durable database in ``DIR`` (with
runtime ``SETTINGS``, JSON), makes its tables and views if they are new, and commits
``transaction(i)`` for i = FIRST, FIRST + 1, ... forever, printing ``begin i`` before each
and ``done i`` once it returned; every third one it reads a view (its views step, merge and
compact). What transactions 0..k-1 leave in the tables is ``replayed(k)``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TABLES = ("CREATE TABLE IF NOT EXISTS log (i INT)",
          "CREATE TABLE IF NOT EXISTS orders (id INT, cust INT, amount INT)")
VIEWS = {"by_cust": "SELECT cust, count(*) AS n, sum(amount) AS total FROM orders "
                    "GROUP BY cust",
         "logged": "SELECT count(*) AS n, max(i) AS last FROM log"}


def orders(i: int) -> list[tuple[int, int, int]]:
    """The orders transaction ``i`` inserts."""
    return [(i * 10 + k, (i + k) % 5, (i * 7 + k * 13) % 100) for k in range(1 + i % 3)]


def deleted(i: int) -> list[tuple[int, int, int]]:
    """The orders transaction ``i`` deletes: every fourth one, those of ``i - 2``."""
    return orders(i - 2) if i % 4 == 3 else []


def replayed(k: int) -> tuple[list[int], list[tuple[int, int, int]]]:
    """The rows of ``log`` and ``orders`` once transactions 0..k-1 committed."""
    kept: list[tuple[int, int, int]] = []
    for i in range(k):
        kept += orders(i)
        for row in deleted(i):
            kept.remove(row)
    return list(range(k)), kept


def made(con: Any) -> None:
    """The tables and views of ``con`` (a connection), made unless they exist."""
    for sql in TABLES:
        con.execute(sql)
    for name, sql in VIEWS.items():
        con.execute(f"CREATE MATERIALIZED VIEW IF NOT EXISTS {name} AS {sql}")


def main() -> None:
    import matview

    path, settings, first = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
    con = matview.connect(path, settings=settings)
    made(con)
    i = first
    while True:
        print(f"begin {i}", flush=True)
        with con.transaction():  # one time, atomic
            con.insert("log", [(i,)])
            con.insert("orders", orders(i))
            if deleted(i):
                con.delete("orders", deleted(i))
        print(f"done {i}", flush=True)
        if i % 3 == 0:
            con.execute("SELECT * FROM by_cust").fetchall()
        i += 1


if __name__ == "__main__":
    main()

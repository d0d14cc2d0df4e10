"""W1 in small: tables ``customers (id, region)`` and ``orders (id, cust, amount)`` and a
materialized view ``v`` of each region's order count and total, with the totals computed
in Python to check it against."""

from __future__ import annotations

import matview

VIEW = ("CREATE MATERIALIZED VIEW v AS SELECT c.region, count(*) AS n, sum(o.amount) AS total "
        "FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.region")


def created(con: matview.Connection, customers: dict[int, str],
            orders: dict[int, tuple[int, int]]) -> None:
    """The tables in ``con`` holding ``customers`` (id to region) and ``orders`` (id to
    customer and amount), and the view ``v`` over them."""
    con.execute("CREATE TABLE customers (id INT, region TEXT)")
    con.execute("CREATE TABLE orders (id INT, cust INT, amount BIGINT)")
    con.insert("customers", list(customers.items()))
    con.insert("orders", [(i, *row) for i, row in orders.items()])
    con.execute(VIEW)


def totals(customers: dict[int, str], orders: dict[int, tuple[int, int]]
           ) -> list[tuple[str, int, int]]:
    """The rows ``v`` holds over ``customers`` and ``orders``, sorted."""
    found: dict[str, list[int]] = {}
    for cust, amount in orders.values():
        total = found.setdefault(customers[cust], [0, 0])
        total[0] += 1
        total[1] += amount
    return sorted((region, n, amount) for region, (n, amount) in found.items())

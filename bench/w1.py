"""W1 join-aggregate: orders joined with customers, summed per region.

``customers(id, region)`` and ``orders(id, cust, amount)``; each batch deletes live orders,
inserts as many new ones, and moves a few customers to another region (an UPDATE: delete the
old row, insert the new one). The view's answer changes in a handful of groups per batch
while the join touches a thousandth of the orders.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from bench.workload import Batch, Table, Workload

VIEW = ("SELECT c.region, count(*) AS orders, sum(o.amount) AS amount "
        "FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.region")
REGIONS = 25


def _orders(ids: np.ndarray, cust: np.ndarray, amount: np.ndarray) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "cust": pa.array(cust, pa.int32()),
                     "amount": pa.array(amount, pa.int64())})


def _customers(ids: np.ndarray, region: np.ndarray) -> pa.Table:
    names = np.array([f"region-{r:02d}" for r in range(REGIONS)], dtype=object)
    return pa.table({"id": pa.array(ids, pa.int32()),
                     "region": pa.array(names[region], pa.string())})


def make(orders: int = 1_000_000, customers: int = 100_000, batches: int = 20,
         catchup: int = 0, changes: int = 1_000, moves: int = 10, seed: int = 0,
         keys: bool = False) -> Workload:
    """The W1 workload: ``batches`` + ``catchup`` batches of ``changes`` order changes (half
    deletions of live orders, half new orders) and ``moves`` customer region changes;
    ``keys`` declares each table's ``id`` its PRIMARY KEY (every write checked)."""
    rng = np.random.default_rng(seed)
    region = rng.integers(0, REGIONS, customers)
    ids = np.arange(orders, dtype=np.int64)
    cust = rng.integers(0, customers, orders).astype(np.int32)
    amount = rng.integers(1, 10_000, orders).astype(np.int64)
    key = " PRIMARY KEY" if keys else ""
    tables = (
        Table("customers", f"CREATE TABLE customers (id INT{key}, region TEXT)", ("id",),
              _customers(np.arange(customers), region)),
        Table("orders", f"CREATE TABLE orders (id BIGINT{key}, cust INT, amount BIGINT)",
              ("id",), _orders(ids, cust, amount)),
    )
    ids, cust, amount = ids.copy(), cust.copy(), amount.copy()
    next_id = orders
    out: list[Batch] = []
    half = changes // 2
    for _ in range(batches + catchup):
        # the live orders are the arrays; new orders take the deleted ones' slots
        gone = rng.choice(len(ids), half, replace=False)
        deleted = _orders(ids[gone], cust[gone], amount[gone])
        ids[gone] = np.arange(next_id, next_id + half)
        cust[gone] = rng.integers(0, customers, half)
        amount[gone] = rng.integers(1, 10_000, half)
        next_id += half
        inserted = _orders(ids[gone], cust[gone], amount[gone])
        moved = rng.choice(customers, moves, replace=False)
        before = _customers(moved, region[moved])
        region[moved] = (region[moved] + rng.integers(1, REGIONS, moves)) % REGIONS
        after = _customers(moved, region[moved])
        out.append(Batch(inserts={"orders": inserted, "customers": after},
                         deletes={"orders": deleted, "customers": before}))
    params = {"orders": orders, "customers": customers, "batches": batches,
              "catchup": catchup, "changes": changes, "moves": moves, "seed": seed,
              "keys": keys}
    return Workload("w1", tables, {"w1": VIEW}, out[:batches], out[batches:], params)

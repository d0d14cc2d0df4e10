"""W6 as-of on transaction time: each trade priced at its symbol's price when the trade
arrived (``JOIN prices FOR SYSTEM_TIME AS OF mz_now()``), the notional summed per symbol.

``trades(id, sym, qty, arrived)`` (1M) over ``series`` symbols, ``prices(sym, px)`` one
current price per symbol. Each batch deletes live trades, inserts new ones, and moves
``price_changes`` prices. matview keeps the prices each trade got itself; the baselines
cannot know them from the tables' current contents, so the workload also keeps what a Spark
user would keep to recompute the answer: each trade's ``arrived`` batch and the prices'
history ``price_history(sym, px, since, until)`` (a slowly changing dimension), which
Spark SQL and DuckDB join (``RECOMPUTE``). matview is given the history table too (it
reads none of it) and ``arrived`` (a column the view does not read).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from bench.workload import Batch, Table, Workload

VIEW = ("SELECT t.sym, count(*) AS trades, sum(t.qty * p.px) AS notional FROM trades t "
        "JOIN prices FOR SYSTEM_TIME AS OF mz_now() p ON t.sym = p.sym GROUP BY t.sym")
RECOMPUTE = ("SELECT t.sym, count(*) AS trades, sum(t.qty * h.px) AS notional FROM trades t "
             "JOIN price_history h ON t.sym = h.sym AND h.since <= t.arrived "
             "AND (h.until IS NULL OR t.arrived < h.until) GROUP BY t.sym")


def _trades(ids: np.ndarray, sym: np.ndarray, qty: np.ndarray, arrived: np.ndarray
            ) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "sym": pa.array(sym, pa.int32()),
                     "qty": pa.array(qty, pa.int32()),
                     "arrived": pa.array(arrived, pa.int64())})


def _prices(sym: np.ndarray, px: np.ndarray) -> pa.Table:
    return pa.table({"sym": pa.array(sym, pa.int32()), "px": pa.array(px, pa.int32())})


def _history(sym: np.ndarray, px: np.ndarray, since: np.ndarray,
             until: np.ndarray | None) -> pa.Table:
    return pa.table({"sym": pa.array(sym, pa.int32()), "px": pa.array(px, pa.int32()),
                     "since": pa.array(since, pa.int64()),
                     "until": pa.nulls(len(sym), pa.int64()) if until is None
                     else pa.array(until, pa.int64())})


def make(trades: int = 1_000_000, series: int = 10_000, batches: int = 20, catchup: int = 0,
         changes: int = 1_000, price_changes: int = 1_000, seed: int = 0) -> Workload:
    """The W6 workload: ``batches`` + ``catchup`` batches, each deleting ``changes // 2``
    live trades, inserting as many, and moving ``price_changes`` prices."""
    rng = np.random.default_rng(seed)
    ids = np.arange(trades, dtype=np.int64)
    sym = rng.integers(0, series, trades).astype(np.int32)
    qty = rng.integers(1, 100, trades).astype(np.int32)
    arrived = np.zeros(trades, dtype=np.int64)
    symbols = np.arange(series, dtype=np.int32)
    px = rng.integers(100, 10_000, series).astype(np.int32)
    since = np.zeros(series, dtype=np.int64)
    tables = (
        Table("trades", "CREATE TABLE trades (id BIGINT PRIMARY KEY, sym INT, qty INT, "
              "arrived BIGINT)", ("id",), _trades(ids, sym, qty, arrived)),
        Table("prices", "CREATE TABLE prices (sym INT PRIMARY KEY, px INT)", ("sym",),
              _prices(symbols, px.copy())),
        Table("price_history", "CREATE TABLE price_history (sym INT, px INT, since BIGINT, "
              "until BIGINT)", ("sym", "since"), _history(symbols, px.copy(), since.copy(), None)),
    )
    live = {"id": ids.copy(), "sym": sym.copy(), "qty": qty.copy(), "arrived": arrived.copy()}
    out: list[Batch] = []
    half, next_id = changes // 2, trades
    for b in range(batches + catchup):
        k = b + 1
        gone = rng.choice(trades, half, replace=False)
        deleted = _trades(*(live[c][gone] for c in ("id", "sym", "qty", "arrived")))
        new = {"id": np.arange(next_id, next_id + half, dtype=np.int64),
               "sym": rng.integers(0, series, half).astype(np.int32),
               "qty": rng.integers(1, 100, half).astype(np.int32),
               "arrived": np.full(half, k, dtype=np.int64)}
        next_id += half
        for c, values in new.items():
            live[c][gone] = values
        moved = rng.choice(series, price_changes, replace=False)
        old_px, old_since = px[moved].copy(), since[moved].copy()
        px[moved] = rng.integers(100, 10_000, price_changes).astype(np.int32)
        since[moved] = k
        now = np.full(price_changes, k, dtype=np.int64)
        out.append(Batch(
            inserts={"trades": _trades(*new.values()),
                     "prices": _prices(symbols[moved], px[moved]),
                     "price_history": pa.concat_tables([
                         _history(symbols[moved], old_px, old_since, now),
                         _history(symbols[moved], px[moved], now, None)])},
            deletes={"trades": deleted, "prices": _prices(symbols[moved], old_px),
                     "price_history": _history(symbols[moved], old_px, old_since, None)}))
    params = {"trades": trades, "series": series, "batches": batches, "catchup": catchup,
              "changes": changes, "price_changes": price_changes, "seed": seed}
    return Workload("w6", tables, {"w6": VIEW}, out[:batches], out[batches:], params,
                    recompute_views={"w6": RECOMPUTE}, arrivals=True)

"""W5 as-of: each trade priced at its symbol's latest price at or before the trade's time
(``ASOF JOIN`` on data time), the notional summed per symbol.

``trades(id, sym, ts, qty)`` (1M) over ``series`` symbols, ``prices(sym, ts, px)`` with
``prices_per_series`` prices per symbol at distinct times. Each batch inserts new trades and
new prices (``price_changes`` symbols move) at the batch's time, deletes live trades, and
deletes old prices, each of which hands its trades to the price before it. Spark has no
ASOF JOIN: its baseline (``spark_asof``) prices the trades with a window over trades and
prices per symbol (the last price at or before each trade), DuckDB runs the SQL.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from bench.workload import Batch, Table, Workload

VIEW = ("SELECT t.sym, count(*) AS trades, sum(t.qty * p.px) AS notional FROM trades t "
        "ASOF JOIN prices p ON t.sym = p.sym AND t.ts >= p.ts GROUP BY t.sym")
SPAN = 1_000_000
"""The initial rows' times are in ``[0, SPAN)``; batch ``b``'s are in ``SPAN + b * 1000``
onwards."""


def spark_asof(tables: Mapping[str, DataFrame]) -> DataFrame:
    """The view on Spark: trades and prices of a symbol in one window ordered by time (a
    price before a trade of its time), each trade taking the last price up to it."""
    trades = tables["trades"].select("sym", "ts", F.lit(1).alias("side"), "qty",
                                     F.lit(None).cast("int").alias("px"))
    prices = tables["prices"].select("sym", "ts", F.lit(0).alias("side"),
                                     F.lit(None).cast("int").alias("qty"), "px")
    upto = Window.partitionBy("sym").orderBy("ts", "side").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    priced = trades.unionByName(prices).withColumn(
        "price", F.last("px", ignorenulls=True).over(upto))
    return (priced.where("side = 1 AND price IS NOT NULL").groupBy("sym")
            .agg(F.count("*").alias("trades"),
                 F.sum(F.col("qty") * F.col("price")).cast("bigint").alias("notional")))


def _trades(ids: np.ndarray, sym: np.ndarray, ts: np.ndarray, qty: np.ndarray) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "sym": pa.array(sym, pa.int32()),
                     "ts": pa.array(ts, pa.int64()), "qty": pa.array(qty, pa.int32())})


def _prices(codes: np.ndarray) -> pa.Table:
    """Prices coded ``sym * 2**40 + ts``; a price's value is a function of both."""
    sym, ts = codes >> 40, codes & (2**40 - 1)
    return pa.table({"sym": pa.array(sym, pa.int32()), "ts": pa.array(ts, pa.int64()),
                     "px": pa.array(100 + (sym * 7 + ts) % 9_900, pa.int32())})


def _fresh_prices(rng: np.random.Generator, live: set[int], series: int, low: int,
                  count: int) -> list[int]:
    """``count`` prices of random symbols at times in ``[low, low + 1000)`` not in ``live``."""
    out: list[int] = []
    while len(out) < count:
        code = (int(rng.integers(0, series)) << 40) + low + int(rng.integers(0, 1000))
        if code not in live:
            live.add(code)
            out.append(code)
    return out


def make(trades: int = 1_000_000, series: int = 10_000, prices_per_series: int = 10,
         batches: int = 20, catchup: int = 0, changes: int = 1_000, price_changes: int = 1_000,
         seed: int = 0) -> Workload:
    """The W5 workload: ``batches`` + ``catchup`` batches, each inserting ``changes // 2``
    trades and ``price_changes`` prices, deleting ``changes // 2`` live trades and
    ``price_changes // 10`` old prices."""
    rng = np.random.default_rng(seed)
    ids = np.arange(trades, dtype=np.int64)
    sym = rng.integers(0, series, trades).astype(np.int32)
    ts = rng.integers(0, SPAN, trades).astype(np.int64)
    qty = rng.integers(1, 100, trades).astype(np.int32)
    codes: set[int] = set()
    while len(codes) < series * prices_per_series:
        more = series * prices_per_series - len(codes)
        codes.update(((rng.integers(0, series, more) << 40)
                      + rng.integers(0, SPAN, more)).tolist())
    old = np.array(sorted(codes), dtype=np.int64)
    tables = (
        Table("trades", "CREATE TABLE trades (id BIGINT, sym INT, ts BIGINT, qty INT)",
              ("id",), _trades(ids, sym, ts, qty)),
        Table("prices", "CREATE TABLE prices (sym INT, ts BIGINT, px INT)", ("sym", "ts"),
              _prices(old)),
    )
    live = ids.copy()
    cols = {"sym": sym.copy(), "ts": ts.copy(), "qty": qty.copy()}
    old_live = np.ones(len(old), dtype=bool)
    out: list[Batch] = []
    half, next_id = changes // 2, trades
    for b in range(batches + catchup):
        now = SPAN + b * 1_000
        gone = rng.choice(len(live), half, replace=False)
        deleted = _trades(live[gone], *(cols[c][gone] for c in ("sym", "ts", "qty")))
        new_ids = np.arange(next_id, next_id + half, dtype=np.int64)
        next_id += half
        new = (rng.integers(0, series, half).astype(np.int32),
               (now + rng.integers(0, 1_000, half)).astype(np.int64),
               rng.integers(1, 100, half).astype(np.int32))
        live[gone] = new_ids
        for c, values in zip(("sym", "ts", "qty"), new):
            cols[c][gone] = values
        dropped = rng.choice(np.flatnonzero(old_live), price_changes // 10, replace=False)
        old_live[dropped] = False
        codes.difference_update(old[dropped].tolist())
        added = np.array(_fresh_prices(rng, codes, series, now, price_changes), dtype=np.int64)
        out.append(Batch(inserts={"trades": _trades(new_ids, *new), "prices": _prices(added)},
                         deletes={"trades": deleted, "prices": _prices(old[dropped])}))
    params = {"trades": trades, "series": series, "prices_per_series": prices_per_series,
              "batches": batches, "catchup": catchup, "changes": changes,
              "price_changes": price_changes, "seed": seed}
    return Workload("w5", tables, {"w5": VIEW}, out[:batches], out[batches:], params,
                    spark_views={"w5": spark_asof})

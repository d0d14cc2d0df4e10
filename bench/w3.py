"""W3 sliding window: events counted per kind while they are less than a minute old.

``events(id, kind, ts)`` arrive in time order. The view keeps ``count(*)`` per kind over the
events whose ``ts`` lies in the last 60 seconds of logical time, a temporal filter: every
event enters the view when it is inserted and leaves it 60 seconds later, also when the
clock advances with no new events. Batches advance the clock by ``tick_ms``; every other
batch inserts the events of that tick, the others only move the clock. The recomputing
baselines evaluate the same query with ``mz_now()`` replaced by the batch's clock.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from bench.workload import Batch, Table, Workload

VIEW = ("SELECT kind, count(*) AS events FROM events "
        "WHERE mz_now() < ts + INTERVAL '60 seconds' GROUP BY kind")
KINDS = 20
START_MS = 1_704_067_200_000
"""The clock when the views are built: 2024-01-01 00:00:00 UTC."""


def _events(ids: np.ndarray, kinds: np.ndarray, ts_ms: np.ndarray) -> pa.Table:
    names = np.array([f"kind-{k:02d}" for k in range(KINDS)], dtype=object)
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "kind": pa.array(names[kinds], pa.string()),
                     "ts": pa.array(ts_ms * 1000, pa.timestamp("us"))})


def make(events: int = 1_000_000, rate: int = 1_000, tick_ms: int = 1_000, batches: int = 20,
         catchup: int = 0, seed: int = 0) -> Workload:
    """``events`` initial events at ``rate`` per second before the start, then ``batches`` +
    ``catchup`` ticks, every other one bringing the tick's ``rate * tick_ms / 1000`` events."""
    rng = np.random.default_rng(seed)
    span_ms = events * 1000 // rate
    initial_ts = START_MS - span_ms + np.sort(rng.integers(0, span_ms, events))
    table = Table("events", "CREATE TABLE events (id BIGINT, kind TEXT, ts TIMESTAMP)",
                  ("id",), _events(np.arange(events), rng.integers(0, KINDS, events),
                                   initial_ts))
    out: list[Batch] = []
    next_id, clock = events, START_MS
    per_tick = rate * tick_ms // 1000
    for i in range(batches + catchup):
        start, clock = clock, clock + tick_ms
        if i % 2:
            out.append(Batch(clock=clock))
            continue
        ts = np.sort(rng.integers(start + 1, clock + 1, per_tick))
        rows = _events(np.arange(next_id, next_id + per_tick), rng.integers(0, KINDS, per_tick),
                       ts)
        next_id += per_tick
        out.append(Batch(inserts={"events": rows}, clock=clock))
    params = {"events": events, "rate": rate, "tick_ms": tick_ms, "batches": batches,
              "catchup": catchup, "seed": seed}
    return Workload("w3", (table,), {"w3": VIEW}, out[:batches], out[batches:], params,
                    clock=START_MS)

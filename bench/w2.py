"""W2 triangles: directed triangles ``(a,b), (a,c), (b,c)`` in one ``edges`` table.

Random edges over ``nodes`` nodes plus a few hub nodes of high degree (skew: a change at a
hub meets thousands of two-paths). Each batch deletes live edges and inserts as many new
ones; edges are distinct, so a deletion names exactly one row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from bench.workload import Batch, Table, Workload

VIEW = ("SELECT count(*) AS triangles FROM edges e1 "
        "JOIN edges e2 ON e1.src = e2.src "
        "JOIN edges e3 ON e1.dst = e3.src AND e2.dst = e3.dst")
SHIFT = 2**20


def _edges(codes: np.ndarray) -> pa.Table:
    return pa.table({"src": pa.array(codes // SHIFT, pa.int32()),
                     "dst": pa.array(codes % SHIFT, pa.int32())})


def _fresh(rng: np.random.Generator, live: set[int], nodes: int, count: int) -> list[int]:
    """``count`` random edges not in ``live`` and without self loops."""
    out: list[int] = []
    while len(out) < count:
        src, dst = (int(v) for v in rng.integers(0, nodes, 2))
        code = src * SHIFT + dst
        if src != dst and code not in live and code not in out:
            out.append(code)
    return out


def make(edges: int = 200_000, nodes: int = 20_000, hubs: int = 5, hub_degree: int = 2_000,
         batches: int = 20, catchup: int = 0, changes: int = 100, seed: int = 0) -> Workload:
    """The W2 workload: ``edges`` edges (``hubs`` hubs with ``hub_degree`` edges each, half
    out, half in), then batches of ``changes`` edge changes (half deletions)."""
    rng = np.random.default_rng(seed)
    hub_ids = np.arange(nodes, nodes + hubs)
    total = nodes + hubs
    codes: set[int] = set()
    for hub in hub_ids:
        others = rng.choice(nodes, hub_degree, replace=False)
        half = hub_degree // 2
        codes.update(int(hub) * SHIFT + int(o) for o in others[:half])
        codes.update(int(o) * SHIFT + int(hub) for o in others[half:])
    while len(codes) < edges:
        src = rng.integers(0, nodes, edges)
        dst = rng.integers(0, nodes, edges)
        keep = src != dst
        codes.update((src[keep] * SHIFT + dst[keep]).tolist()[: edges - len(codes)])
    initial = np.array(sorted(codes), dtype=np.int64)
    live = np.array(initial)
    tables = (Table("edges", "CREATE TABLE edges (src INT, dst INT)", ("src", "dst"),
                    _edges(initial)),)
    out: list[Batch] = []
    half = changes // 2
    for _ in range(batches + catchup):
        gone = rng.choice(len(live), half, replace=False)
        deleted = live[gone]
        codes.difference_update(deleted.tolist())
        new = np.array(_fresh(rng, codes, total, half), dtype=np.int64)
        codes.update(new.tolist())
        live[gone] = new
        out.append(Batch(inserts={"edges": _edges(new)}, deletes={"edges": _edges(deleted)}))
    params = {"edges": edges, "nodes": nodes, "hubs": hubs, "hub_degree": hub_degree,
              "batches": batches, "catchup": catchup, "changes": changes, "seed": seed}
    return Workload("w2", tables, {"w2": VIEW}, out[:batches], out[batches:], params)

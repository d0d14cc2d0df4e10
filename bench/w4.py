"""W4 reachability: the nodes reachable from a few roots along ``edges``, a recursive view.

``edges(src, dst)`` is a random graph on a ring of ``edges // degree`` nodes: every node has
between 1 and ``2 * degree - 1`` out-edges (``degree`` on average), each to one of the
``span`` nodes after it (``span`` a twentieth of the ring). ``roots(id)`` are a few nodes at
the start of the ring, so the reachable set grows by at most ``span`` nodes per hop and
takes some 25 hops (23 to 26 at 20k to 1M edges) to cover 99% of the graph (a node is left
out only when nothing reaches it). Each batch deletes live edges and inserts as many new
ones drawn the same way (from nodes below the out-degree bound, none an edge live or
deleted in the batch); edges are distinct, so a deletion names exactly one row. The roots
do not change.

The view is the set of reachable nodes, ``UNION`` (not ``UNION ALL``): each node once,
however many paths reach it. DuckDB runs its SQL; Spark SQL (4.x) refuses ``UNION`` in a
recursive CTE (``UNION_NOT_SUPPORTED_IN_RECURSIVE_CTE``), and ``UNION ALL`` follows every
path around the ring's cycles until its row limit, so the Spark baseline computes the view
with ``reach``: semi-naive iteration of DataFrame joins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.workload import Batch, Table, Workload

if TYPE_CHECKING:
    pass

VIEW = ("WITH RECURSIVE reach(node) AS ("
        "SELECT id FROM roots "
        "UNION SELECT e.dst FROM reach JOIN edges e ON e.src = reach.node) "
        "SELECT node FROM reach")
SHIFT = 2**32
"""An edge is coded as ``src * SHIFT + dst``."""
HOPS = 20
"""The ring is ``HOPS`` times the span of an edge: the fewest hops from the roots to the
ring's far end."""


def reach(tables: Mapping[str, DataFrame]) -> DataFrame:
    """The view on Spark: the roots, then round after round the frontier (the nodes first
    reached in the last round) joined with ``edges``, less the nodes already reached, until
    a round reaches nothing new. Each round's new nodes and the reached set are
    ``localCheckpoint``ed, so that every round's plan is two joins over checkpoints rather
    than the whole recursion so far. The frontier (at most a few span's worth of nodes) is
    broadcast to the edges: left to itself, Spark broadcast the whole edges table every
    round (100k edges)."""
    edges = tables["edges"]
    reached = tables["roots"].select(F.col("id").alias("node")).distinct().localCheckpoint()
    frontier = reached
    while True:
        new = (F.broadcast(frontier).join(edges, frontier["node"] == edges["src"])
               .select(edges["dst"].alias("node")).distinct()
               .join(reached, "node", "left_anti").localCheckpoint())
        if new.isEmpty():
            return reached
        reached = reached.unionByName(new).localCheckpoint()
        frontier = new


def _edges(codes: np.ndarray) -> pa.Table:
    return pa.table({"src": pa.array(codes // SHIFT, pa.int64()),
                     "dst": pa.array(codes % SHIFT, pa.int64())})


def _targets(rng: np.random.Generator, src: np.ndarray, nodes: int, span: int) -> np.ndarray:
    """An edge code from each of ``src`` to one of the ``span`` nodes after it on the ring."""
    dst = (src + rng.integers(1, span + 1, len(src))) % nodes
    return src * SHIFT + dst


def _degrees(rng: np.random.Generator, nodes: int, edges: int, most: int) -> np.ndarray:
    """Out-degrees between 1 and ``most`` summing to ``edges``: uniform, then nodes with room
    drawn at random to take or give one edge until the sum is right."""
    degree = rng.integers(1, most + 1, nodes)
    while (diff := edges - int(degree.sum())) != 0:
        room = np.flatnonzero(degree < most) if diff > 0 else np.flatnonzero(degree > 1)
        pick = rng.choice(room, min(abs(diff), len(room)), replace=False)
        degree[pick] += 1 if diff > 0 else -1
    return degree


def make(edges: int = 1_000_000, degree: int = 5, roots: int = 10, batches: int = 20,
         catchup: int = 0, changes: int = 100, seed: int = 0) -> Workload:
    """The W4 workload: ``edges`` edges over ``edges // degree`` nodes, ``roots`` roots, then
    batches of ``changes`` edge changes (half deletions of live edges, half new edges)."""
    rng = np.random.default_rng(seed)
    nodes = max(edges // degree, 2 * HOPS)
    span = nodes // HOPS
    most = min(2 * degree - 1, span)
    if edges > nodes * most:
        raise ValueError(f"{edges} edges do not fit {nodes} nodes of out-degree <= {most}")
    out_degree = _degrees(rng, nodes, edges, most)
    src = np.repeat(np.arange(nodes, dtype=np.int64), out_degree)
    codes = _targets(rng, src, nodes, span)
    while True:  # draw again the edges that repeat an earlier one from the same node
        _, first = np.unique(codes, return_index=True)
        again = np.setdiff1d(np.arange(len(codes)), first)
        if not len(again):
            break
        codes[again] = _targets(rng, codes[again] // SHIFT, nodes, span)
    root_ids = np.sort(rng.choice(max(span, roots), roots, replace=False)).astype(np.int64)
    tables = (
        Table("edges", "CREATE TABLE edges (src BIGINT, dst BIGINT)", ("src", "dst"),
              _edges(np.sort(codes))),
        Table("roots", "CREATE TABLE roots (id BIGINT)", ("id",),
              pa.table({"id": pa.array(root_ids, pa.int64())})),
    )
    live = codes.copy()
    known = set(codes.tolist())
    out: list[Batch] = []
    half = changes // 2
    for _ in range(batches + catchup):
        gone = rng.choice(len(live), half, replace=False)
        deleted = live[gone]
        np.subtract.at(out_degree, deleted // SHIFT, 1)
        new: list[int] = []
        while len(new) < half:
            node = int(rng.integers(0, nodes))
            code = int(_targets(rng, np.array([node]), nodes, span)[0])
            if out_degree[node] < most and code not in known:
                known.add(code)
                out_degree[node] += 1
                new.append(code)
        known.difference_update(deleted.tolist())
        live[gone] = new
        out.append(Batch(inserts={"edges": _edges(np.array(new, dtype=np.int64))},
                         deletes={"edges": _edges(deleted)}))
    params = {"edges": edges, "nodes": nodes, "degree": degree, "span": span,
              "roots": roots, "batches": batches, "catchup": catchup, "changes": changes,
              "seed": seed}
    return Workload("w4", tables, {"w4": VIEW}, out[:batches], out[batches:], params,
                    spark_views={"w4": reach})

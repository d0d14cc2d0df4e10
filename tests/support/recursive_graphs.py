"""Random graphs for the recursive views: a ``Mirror`` holding ``edges (src, dst, w)`` and
``roots (id)``, random edge changes, the views matview and DuckDB evaluate with the same SQL
(``GRAPH_VIEWS``), the fixed points over ``min`` with their DuckDB equivalents
(``MUTUAL_VIEWS``), and the check of the latter under edge changes that the recursion tests
and the cluster runs share."""

from __future__ import annotations

import random

from pyspark.sql import SparkSession

from tests.support.mirror import Mirror

GRAPH_VIEWS = {
    "reach": "WITH RECURSIVE reach(node) AS (SELECT id FROM roots UNION "
             "SELECT e.dst FROM reach JOIN edges e ON e.src = reach.node) SELECT node FROM reach",
    "closure": "WITH RECURSIVE tc(a, b) AS (SELECT src, dst FROM edges UNION "
               "SELECT tc.a, e.dst FROM tc JOIN edges e ON e.src = tc.b) SELECT a, b FROM tc",
    "paths": "WITH RECURSIVE p(src, dst, len) AS (SELECT src, dst, 1 FROM edges UNION ALL "
             "SELECT p.src, e.dst, p.len + 1 FROM p JOIN edges e ON e.src = p.dst "
             "WHERE p.len < 3) SELECT src, len, count(*) FROM p GROUP BY src, len",
    "two_hops": "WITH RECURSIVE h(node) AS (SELECT id FROM roots UNION SELECT b.dst "
                "FROM edges a JOIN h ON a.src = h.node JOIN edges b ON b.src = a.dst) "
                "SELECT node FROM h",  # the binding between two inputs of a three-way join
    "components": "WITH RECURSIVE u(a, b) AS (SELECT src, dst FROM edges UNION ALL "
                  "SELECT dst, src FROM edges), r(node, other) AS (SELECT a, a FROM u UNION "
                  "SELECT r.node, u.b FROM r JOIN u ON u.a = r.other) "
                  "SELECT node, min(other) FROM r GROUP BY node",
}
"""Views matview and DuckDB both evaluate with the same SQL."""

MUTUAL_VIEWS = {
    "shortest": (
        "WITH MUTUALLY RECURSIVE dist (node int, d int) AS (SELECT id, 0 FROM roots "
        "UNION ALL SELECT e.dst, min(dist.d + e.w) FROM dist JOIN edges e "
        "ON e.src = dist.node GROUP BY e.dst) SELECT node, min(d) FROM dist GROUP BY node",
        "WITH RECURSIVE p(node, d) AS (SELECT id, 0 FROM roots UNION SELECT e.dst, p.d + e.w "
        "FROM p JOIN edges e ON e.src = p.node WHERE p.d + e.w <= 60) "
        "SELECT node, min(d) FROM p GROUP BY node"),
    "labels": (
        "WITH MUTUALLY RECURSIVE lab (node int, comp int) AS (SELECT node, min(comp) FROM "
        "(SELECT src AS node, src AS comp FROM edges UNION ALL SELECT dst, dst FROM edges "
        "UNION ALL SELECT e.dst, l.comp FROM lab l JOIN edges e ON e.src = l.node "
        "UNION ALL SELECT e.src, l.comp FROM lab l JOIN edges e ON e.dst = l.node) x "
        "GROUP BY node) SELECT node, comp FROM lab",
        "WITH RECURSIVE u(a, b) AS (SELECT src, dst FROM edges UNION ALL "
        "SELECT dst, src FROM edges), r(node, other) AS (SELECT a, a FROM u UNION "
        "SELECT r.node, u.b FROM r JOIN u ON u.a = r.other) "
        "SELECT node, min(other) FROM r GROUP BY node"),
}
"""Fixed points over ``min`` (shortest paths, connected components by label propagation),
each with an equivalent DuckDB query (paths bounded by a length no shortest path reaches:
at most 7 edges of weight at most 5)."""

_REACH = ("reach (node int) AS (SELECT id FROM roots UNION SELECT e.dst FROM reach "
          "JOIN edges e ON e.src = reach.node)")
LOOP_VIEWS = {
    "listed": (
        f"WITH MUTUALLY RECURSIVE {_REACH}, total (n bigint, top int, nodes text) AS ("
        "SELECT count(*), max(node), string_agg(node::text, ',' ORDER BY node DESC) "
        "FROM reach WHERE node >= 5) SELECT n, top, nodes FROM total",
        f"WITH RECURSIVE {_REACH.replace(' (node int)', '(node)')} SELECT count(*), "
        "max(node), string_agg(node::text, ',' ORDER BY node DESC) FROM reach "
        "WHERE node >= 5"),
    "members": (
        "WITH MUTUALLY RECURSIVE lab (node int, comp int) AS (SELECT node, min(comp) FROM "
        "(SELECT src AS node, src AS comp FROM edges UNION ALL SELECT dst, dst FROM edges "
        "UNION ALL SELECT e.dst, l.comp FROM lab l JOIN edges e ON e.src = l.node "
        "UNION ALL SELECT e.src, l.comp FROM lab l JOIN edges e ON e.dst = l.node) x "
        "GROUP BY node), members (comp int, nodes text, hubs bool) AS (SELECT comp, "
        "string_agg(node::text, ' ' ORDER BY node), bool_and(node < 6) FROM lab "
        "GROUP BY comp) SELECT comp, nodes, hubs FROM members",
        "WITH RECURSIVE u(a, b) AS (SELECT src, dst FROM edges UNION ALL "
        "SELECT dst, src FROM edges), r(node, other) AS (SELECT a, a FROM u UNION "
        "SELECT r.node, u.b FROM r JOIN u ON u.a = r.other) SELECT comp, "
        "string_agg(node::text, ' ' ORDER BY node), bool_and(node < 6) FROM "
        "(SELECT node, min(other) AS comp FROM r GROUP BY node) l GROUP BY comp"),
    "highest": (
        f"WITH MUTUALLY RECURSIVE {_REACH}, highest (node int) AS (SELECT node FROM reach "
        "ORDER BY node DESC LIMIT 2 OFFSET 1) SELECT node FROM highest",
        f"WITH RECURSIVE {_REACH.replace(' (node int)', '(node)')} SELECT node FROM reach "
        "ORDER BY node DESC LIMIT 2 OFFSET 1"),
    "hops": (  # rows of multiplicity > 1 (edges into the same node) take several positions
        f"WITH MUTUALLY RECURSIVE {_REACH}, hops (node int) AS (SELECT e.dst FROM reach r "
        "JOIN edges e ON e.src = r.node ORDER BY e.dst LIMIT 4) SELECT node FROM hops",
        f"WITH RECURSIVE {_REACH.replace(' (node int)', '(node)')} SELECT e.dst FROM reach r "
        "JOIN edges e ON e.src = r.node ORDER BY e.dst LIMIT 4"),
    "ranked": (
        f"WITH MUTUALLY RECURSIVE {_REACH}, ranked (node int, pos bigint, below int) AS ("
        "SELECT node, row_number() OVER (ORDER BY node DESC), lag(node) OVER (ORDER BY node) "
        "FROM reach) SELECT node, pos, below FROM ranked",
        f"WITH RECURSIVE {_REACH.replace(' (node int)', '(node)')} SELECT node, "
        "row_number() OVER (ORDER BY node DESC), lag(node) OVER (ORDER BY node) FROM reach"),
    "weights": (  # partitions by source; peers (equal dst) share a running sum
        f"WITH MUTUALLY RECURSIVE {_REACH}, weights (src int, dst int, total bigint) AS ("
        "SELECT e.src, e.dst, sum(e.w) OVER (PARTITION BY e.src ORDER BY e.dst) FROM reach r "
        "JOIN edges e ON e.src = r.node) SELECT src, dst, total FROM weights",
        f"WITH RECURSIVE {_REACH.replace(' (node int)', '(node)')} SELECT e.src, e.dst, "
        "sum(e.w) OVER (PARTITION BY e.src ORDER BY e.dst) FROM reach r "
        "JOIN edges e ON e.src = r.node"),
}
"""Aggregates, LIMITs and window functions the loop computes like the operators outside
it (a global aggregate, whose row exists over no rows; aggregates of values in order;
derived ones; ORDER BY with LIMIT and OFFSET; ranking, offset and aggregate window
functions, partitioned or not), over bindings, each with an equivalent DuckDB query."""


def random_graph(spark: SparkSession, seed: int) -> tuple[Mirror, random.Random]:
    rng = random.Random(seed)
    mirror = Mirror(spark, "CREATE TABLE edges (src int, dst int, w int)",
                    "CREATE TABLE roots (id int)")
    edges = {(rng.randint(0, 7), rng.randint(0, 7)) for _ in range(10)}
    mirror.execute("INSERT INTO edges VALUES " + ", ".join(
        f"({a}, {b}, {rng.randint(1, 5)})" for a, b in sorted(edges)))
    mirror.execute("INSERT INTO roots VALUES (0), (3)")
    return mirror, rng


def edge_change(rng: random.Random) -> str:
    roll = rng.random()
    a, b = rng.randint(0, 7), rng.randint(0, 7)
    if roll < 0.5:
        return f"INSERT INTO edges VALUES ({a}, {b}, {rng.randint(1, 5)})"
    if roll < 0.85:
        return f"DELETE FROM edges WHERE src = {a} OR dst = {b}"
    if roll < 0.93:
        return f"UPDATE edges SET w = {rng.randint(1, 5)} WHERE src = {a}"
    return rng.choice(["INSERT INTO roots VALUES (5)", "DELETE FROM roots WHERE id = 0",
                       "INSERT INTO roots VALUES (0)"])


def check_fixed_points_over_min(spark: SparkSession, seed: int, changes: int = 12) -> None:
    """WITH MUTUALLY RECURSIVE with ``min`` inside the loop (a reduce at interesting times):
    shortest paths and label propagation, whose answers shrink as edges are inserted and
    grow back as they are deleted (``changes`` edge changes)."""
    mirror, rng = random_graph(spark, seed)
    for name, (ours, theirs) in MUTUAL_VIEWS.items():
        mirror.con.execute(f"CREATE MATERIALIZED VIEW {name} AS {ours}")
        mirror.views[name] = theirs
    mirror.steps_grouped([edge_change(rng) for _ in range(changes)], rng)


def check_loop_operators(spark: SparkSession, seed: int) -> None:
    """``LOOP_VIEWS`` against DuckDB on a random graph under edge changes."""
    mirror, rng = random_graph(spark, seed)
    for name, (ours, theirs) in LOOP_VIEWS.items():
        mirror.con.execute(f"CREATE MATERIALIZED VIEW {name} AS {ours}")
        mirror.views[name] = theirs
    mirror.steps_grouped([edge_change(rng) for _ in range(12)], rng)

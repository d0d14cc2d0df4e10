"""The clauses the binder implements: anything else in a statement is refused, never ignored.

sqlglot parses many dialects' clauses into the same nodes (Spark's ``DISTRIBUTE BY``,
DuckDB's ``ASOF JOIN``, ``TABLESAMPLE``, ``QUALIFY``...). A clause the binder does not read
would silently change a query's meaning, so every statement's tree is checked first: for
each node kind that carries clauses, only the arguments listed here may be set, and a join's
method must be one the binder runs. The check walks the tree without recursion.
"""

from __future__ import annotations

from matview.sql.errors import UnsupportedError
from sqlglot import exp

_QUERY = {"with_", "order", "limit", "offset"}
ALLOWED: dict[type[exp.Expr], frozenset[str]] = {
    exp.Select: frozenset(_QUERY | {"expressions", "from_", "joins", "where", "group", "having",
                                    "distinct"}),
    exp.Union: frozenset(_QUERY | {"this", "expression", "distinct"}),
    exp.Except: frozenset(_QUERY | {"this", "expression", "distinct"}),
    exp.Intersect: frozenset(_QUERY | {"this", "expression", "distinct"}),
    exp.Subquery: frozenset(_QUERY | {"this", "alias"}),
    exp.Join: frozenset({"this", "on", "using", "kind", "side", "method"}),
    exp.Table: frozenset({"this", "db", "catalog", "alias", "ordinality", "rows_from",
                          "joins"}),
    exp.Group: frozenset({"expressions"}),
    exp.Ordered: frozenset({"this", "desc", "nulls_first"}),
    exp.Limit: frozenset({"this", "expression"}),
    exp.With: frozenset({"expressions", "recursive"}),
    exp.CTE: frozenset({"this", "alias", "materialized"}),
}
"""Per node kind, the arguments the binder reads (the others must be unset)."""

REFUSED: dict[type[exp.Expr], str] = {
    exp.Rollup: "GROUP BY ROLLUP clauses", exp.Cube: "GROUP BY CUBE clauses",
    exp.GroupingSets: "GROUPING SETS", exp.Window: "window functions",
    exp.Exists: "subqueries in expressions", exp.Any: "subqueries in expressions",
    exp.All: "subqueries in expressions",
}
"""Node kinds the binder does not implement (refused before grouping looks for aggregates,
which would otherwise take a subquery's or a window's aggregate for the query's own)."""

_QUERY_PLACES = (exp.From, exp.Join, exp.Union, exp.Except, exp.Intersect, exp.Subquery,
                 exp.Create, exp.Insert, exp.Lateral, exp.Table)
"""Parents under which a parenthesized query is a relation, not an expression."""

JOIN_METHODS = frozenset({"", "NATURAL"})
"""``Join.method`` values the binder runs (``ASOF``, ``POSITIONAL``... are refused)."""

_WORDS = {
    "distribute": "DISTRIBUTE BY", "cluster": "CLUSTER BY", "sort": "SORT BY",
    "qualify": "QUALIFY", "windows": "WINDOW", "locks": "FOR UPDATE", "sample": "TABLESAMPLE",
    "laterals": "LATERAL VIEW", "pivots": "PIVOT", "hint": "query hints", "hints": "hints",
    "into": "SELECT INTO", "connect": "CONNECT BY", "match": "MATCH_RECOGNIZE",
    "prewhere": "PREWHERE", "rollup": "GROUP BY ROLLUP", "cube": "GROUP BY CUBE",
    "grouping_sets": "GROUPING SETS", "totals": "WITH TOTALS", "all": "GROUP BY ALL",
    "with_fill": "WITH FILL", "limit_options": "FETCH ... WITH TIES", "by_name": "BY NAME",
    "match_condition": "MATCH_CONDITION", "version": "time travel (AS OF)",
    "cycle": "CYCLE", "search": "SEARCH", "only": "ONLY",
}


def check_supported(tree: exp.Expr) -> None:
    """Raise ``UnsupportedError`` at the first clause of ``tree`` the binder does not read."""
    for node in tree.walk():
        if type(node) in REFUSED:
            at = node.parent if isinstance(node, exp.Any | exp.All) else node  # x > ALL (..)
            raise UnsupportedError.at(f"{REFUSED[type(node)]} are not supported yet", at)
        if (isinstance(node, exp.In) and node.args.get("query")) or (
                isinstance(node, exp.Subquery) and node.parent is not None
                and not isinstance(node.parent, _QUERY_PLACES)):
            raise UnsupportedError.at("subqueries in expressions are not supported yet", node)
        allowed = ALLOWED.get(type(node))
        if allowed is None:
            continue
        for key, value in node.args.items():
            if key not in allowed and value not in (None, False, [], ""):
                at = value if isinstance(value, exp.Expr) else node
                raise UnsupportedError.at(f"{_WORDS.get(key, key.upper())} is not supported", at)
        if isinstance(node, exp.Join) and (node.method or "") not in JOIN_METHODS:
            raise UnsupportedError.at(f"{node.method} JOIN is not supported", node)

"""The clauses the binder implements: anything else in a statement is refused, never ignored.

sqlglot parses many dialects' clauses into the same nodes (Spark's ``DISTRIBUTE BY``,
DuckDB's ``ASOF JOIN``, ``TABLESAMPLE``, ``QUALIFY``...). A clause the binder does not read
would silently change a query's meaning, so every statement's tree is checked first: for
each node kind listed here (statements, clauses, and the expressions whose arguments the
scalar binder does not all read, like ``CAST ... FORMAT`` or ``SELECT * EXCEPT``), only the
arguments listed may be set, and a join's method must be one the binder runs. Function calls
are checked by name and argument count when bound (``calls.check_call``). The check walks the
tree without recursion.
"""

from __future__ import annotations

from matview.sql.dialect_nodes import MutuallyRecursive, RecursiveBinding
from matview.sql.errors import UnsupportedError
from matview.sql.from_items import system_time
from sqlglot import exp

_QUERY = {"with_", "order", "limit", "offset"}
ALLOWED: dict[type[exp.Expr], frozenset[str]] = {
    # statements (RETURNING, USING... are read to be refused with their names;
    # CREATE and DROP are checked by ``ddl`` once it knows what is created or dropped)
    exp.Insert: frozenset({"this", "expression", "returning", "conflict", "default"}),
    exp.Delete: frozenset({"this", "where", "using", "returning"}),
    exp.Update: frozenset({"this", "expressions", "where", "from_", "returning"}),
    exp.ColumnDef: frozenset({"this", "kind", "constraints", "exists"}),  # ADD IF NOT EXISTS
    # queries and their clauses
    exp.Select: frozenset(_QUERY | {"expressions", "from_", "joins", "where", "group", "having",
                                    "distinct"}),
    exp.Union: frozenset(_QUERY | {"this", "expression", "distinct"}),
    exp.Except: frozenset(_QUERY | {"this", "expression", "distinct"}),
    exp.Intersect: frozenset(_QUERY | {"this", "expression", "distinct"}),
    exp.Subquery: frozenset(_QUERY | {"this", "alias"}),
    exp.Join: frozenset({"this", "on", "using", "kind", "side", "method"}),
    exp.Table: frozenset({"this", "db", "catalog", "alias", "ordinality", "rows_from",
                          "joins"}),
    exp.Lateral: frozenset({"this", "alias", "ordinality", "cross_apply"}),
    exp.Unnest: frozenset({"expressions", "alias", "offset"}),
    exp.Group: frozenset({"expressions"}),
    exp.Order: frozenset({"this", "expressions"}),  # "this": an aggregate call's argument
    exp.Ordered: frozenset({"this", "desc", "nulls_first"}),
    exp.Limit: frozenset({"this", "expression"}),
    exp.With: frozenset({"expressions", "recursive"}),
    MutuallyRecursive: frozenset({"expressions", "recursive", "limit", "at_limit"}),
    RecursiveBinding: frozenset({"this", "alias", "columns"}),
    exp.CTE: frozenset({"this", "alias", "materialized"}),
    exp.Values: frozenset({"expressions", "alias"}),
    exp.Copy: frozenset({"this", "kind", "files", "params", "credentials"}),
    exp.Credentials: frozenset(),
    # expressions: the arguments the scalar binder reads of the nodes it binds (a function
    # call's arguments are counted instead: ``calls.check_call``)
    exp.Star: frozenset(),
    exp.Column: frozenset({"this", "table", "db", "catalog"}),
    exp.Cast: frozenset({"this", "to"}),
    exp.In: frozenset({"this", "expressions", "query"}),
    exp.Window: frozenset({"this", "partition_by", "order", "spec", "over", "alias"}),
    exp.WindowSpec: frozenset({"kind", "start", "start_side", "end", "end_side"}),
}
"""Per node kind, the arguments the binder reads (the others must be unset)."""

JOIN_METHODS = frozenset({"", "NATURAL", "ASOF"})
"""``Join.method`` values the binder runs (``POSITIONAL``... are refused)."""

_WORDS = {
    "distribute": "DISTRIBUTE BY", "cluster": "CLUSTER BY", "sort": "SORT BY",
    "qualify": "QUALIFY", "windows": "WINDOW", "locks": "FOR UPDATE/FOR SHARE",
    "sample": "TABLESAMPLE", "laterals": "LATERAL VIEW", "pivots": "PIVOT",
    "hint": "query hints", "hints": "hints", "into": "SELECT INTO", "connect": "CONNECT BY",
    "match": "MATCH_RECOGNIZE", "prewhere": "PREWHERE", "rollup": "GROUP BY ROLLUP",
    "cube": "GROUP BY CUBE", "grouping_sets": "GROUPING SETS", "totals": "WITH TOTALS",
    "all": "GROUP BY ALL", "with_fill": "WITH FILL", "limit_options": "FETCH ... WITH TIES",
    "by_name": "BY NAME", "match_condition": "MATCH_CONDITION",
    "version": "time travel (AS OF)", "cycle": "CYCLE", "search": "SEARCH", "only": "ONLY",
    "join_mark": "the (+) outer join operator", "siblings": "ORDER SIBLINGS BY",
}
"""What the user wrote, by argument name, for the message refusing it."""

_NODE_WORDS: dict[tuple[type[exp.Expr], str], str] = {
    (exp.Insert, "overwrite"): "INSERT OVERWRITE", (exp.Insert, "with_"): "WITH ... INSERT",
    (exp.Delete, "with_"): "WITH ... DELETE", (exp.Update, "with_"): "WITH ... UPDATE",
    (exp.Delete, "limit"): "DELETE ... LIMIT", (exp.Delete, "order"): "DELETE ... ORDER BY",
    (exp.Update, "limit"): "UPDATE ... LIMIT", (exp.Update, "order"): "UPDATE ... ORDER BY",
    (exp.Limit, "expressions"): "LIMIT ... BY", (exp.Star, "except_"): "SELECT * EXCEPT",
    (exp.Star, "replace"): "SELECT * REPLACE", (exp.Star, "rename"): "SELECT * RENAME",
    (exp.Star, "ilike"): "SELECT * ILIKE", (exp.Cast, "format"): "CAST ... FORMAT",
    (exp.Cast, "default"): "CAST ... DEFAULT ON CONVERSION ERROR",
    (exp.Cast, "action"): "CAST ... ON CONVERSION ERROR", (exp.Cast, "safe"): "TRY_CAST",
    (exp.In, "unnest"): "IN UNNEST", (exp.In, "is_global"): "GLOBAL IN",
    (exp.Lateral, "view"): "LATERAL VIEW", (exp.Lateral, "outer"): "LATERAL VIEW OUTER",
}
"""Names of arguments that mean something else on another node kind."""


def check_supported(tree: exp.Expr) -> None:
    """Raise ``UnsupportedError`` at the first clause of ``tree`` the binder does not read."""
    for node in tree.walk():
        allowed = ALLOWED.get(type(node))
        if allowed is not None:
            check_arguments(node, allowed | {"version"} if system_time(node) else allowed)
        if isinstance(node, exp.Join) and (node.method or "") not in JOIN_METHODS:
            raise UnsupportedError.at(f"{node.method} JOIN is not supported", node)
        if isinstance(node, exp.Lateral) and node.args.get("cross_apply") is False:
            raise UnsupportedError.at("OUTER APPLY is not supported", node)


def check_arguments(node: exp.Expr, allowed: frozenset[str]) -> None:
    """Raise ``UnsupportedError`` when an argument of ``node`` other than ``allowed`` is set
    (sqlglot leaves an absent one None, False or empty)."""
    for key, value in node.args.items():
        if key in allowed or value in (None, False, [], ""):
            continue
        word = _NODE_WORDS.get((type(node), key)) or _WORDS.get(key) or key.upper().strip("_")
        first = value[0] if isinstance(value, list) else value
        raise UnsupportedError.at(f"{word} is not supported",
                                  first if isinstance(first, exp.Expr) else node)

"""FROM items as sqlglot writes them: the side of an outer join (``outer_side``), the call
of a table function (``table_function``), the query of ``LATERAL (SELECT ...)``
(``lateral_query``), an item's alias and column aliases (``item_alias``,
``column_aliases``, applied to its column names by ``rename``), and every name the items
of a FROM clause are known by (``known_aliases``).
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.sql.errors import SqlError, SqlSyntaxError, UnsupportedError
from matview.sql.names import normalize
from sqlglot import exp


def rename(names: Sequence[str], aliases: Sequence[str], relation: str,
           node: exp.Expr) -> tuple[str, ...]:
    """``names`` with the first ones replaced by the column ``aliases`` of ``relation``."""
    if len(aliases) > len(names):
        raise SqlError.at(f'table "{relation}" has {len(names)} columns available but '
                          f"{len(aliases)} columns specified", node)
    return tuple(aliases) + tuple(names[len(aliases):])


def outer_side(join: exp.Join) -> str | None:
    """``LEFT``, ``RIGHT`` or ``FULL`` for an outer join, ``ASOF`` or ``ASOF LEFT`` for an
    ASOF join (``ir.asof_joins``), ``SYSTEM_TIME`` or ``SYSTEM_TIME LEFT`` for an as-of
    join on transaction time (``sql.asof_join``), None for an inner or cross join (or a
    comma); other kinds of join are refused."""
    side, kind = (join.side or "").upper(), (join.kind or "").upper()
    if system_time(join.this):
        if side not in ("", "LEFT") or kind not in ("", "OUTER", "INNER") or join.method:
            raise UnsupportedError.at(f"{join.method or side or kind} JOIN ... FOR "
                                      "SYSTEM_TIME AS OF is not supported", join)
        if join.args.get("on") is None:
            raise SqlSyntaxError.at("syntax error: JOIN ... FOR SYSTEM_TIME AS OF mz_now() "
                                    "needs an ON clause", join)
        return "SYSTEM_TIME LEFT" if side else "SYSTEM_TIME"
    if (join.method or "").upper() == "ASOF":
        if side not in ("", "LEFT") or kind not in ("", "OUTER", "INNER"):
            raise UnsupportedError.at(f"ASOF {side or kind} JOIN is not supported", join)
        if join.args.get("on") is None:
            raise SqlSyntaxError.at("syntax error: ASOF JOIN needs an ON clause (its keys' "
                                    "equalities and one inequality of times)", join)
        return "ASOF LEFT" if side else "ASOF"
    if side and kind in ("", "OUTER"):
        return side
    if side or kind not in ("", "CROSS", "INNER"):
        raise UnsupportedError.at(f"{' '.join(w for w in (side, kind) if w)} JOIN is not "
                                  "supported yet", join)
    return None


def system_time(node: exp.Expr) -> bool:
    """Whether ``node`` is a FROM item ``name FOR SYSTEM_TIME AS OF mz_now()`` on the right
    of a JOIN (the as-of join on transaction time: ``sql.asof_join``), the one time travel
    the binder reads."""
    version = node.args.get("version") if isinstance(node, exp.Table) else None
    return (isinstance(version, exp.Version) and str(version.args.get("kind")) == "AS OF"
            and isinstance(version.expression, exp.Anonymous)
            and str(version.expression.this).lower() == "mz_now"
            and not version.expression.expressions and isinstance(node.parent, exp.Join)
            and node.arg_key == "this")


def table_function(node: exp.Expr) -> tuple[exp.Expr, bool] | None:
    """The call of table function FROM item ``node`` and whether it has WITH ORDINALITY; None
    when ``node`` is no table function."""
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Func):
        return node.this, bool(node.args.get("ordinality"))
    if isinstance(node, exp.Unnest):
        return node, bool(node.args.get("offset"))
    if isinstance(node, exp.Lateral) and isinstance(node.this, exp.Func):
        return node.this, bool(node.args.get("ordinality") or (
            isinstance(node.this, exp.Unnest) and node.this.args.get("offset")))
    return None


def lateral_query(node: exp.Expr) -> exp.Expr | None:
    """The query of FROM item ``node`` when it is ``LATERAL (SELECT ...)``, else None."""
    if isinstance(node, exp.Lateral) and isinstance(node.this, exp.Subquery):
        return node.this.this
    return None


def item_alias(node: exp.Expr) -> str | None:
    """The normalized alias of a FROM item, or None."""
    alias = node.args.get("alias")
    return normalize(alias.this) if alias is not None and alias.this is not None else None


def column_aliases(node: exp.Expr, func: exp.Expr) -> list[str]:
    """The column aliases of table function item ``node``; sqlglot keeps the name of an
    ``unnest`` ordinality column apart (in ``offset``)."""
    alias = node.args.get("alias")
    names = [normalize(c) for c in alias.columns] if alias is not None else []
    offset = func.args.get("offset") if isinstance(func, exp.Unnest) else None
    return names + [normalize(offset)] if isinstance(offset, exp.Identifier) else names


def known_aliases(nodes: Sequence[exp.Expr]) -> set[str]:
    """Every name a FROM item is known by in ``nodes`` (for the error of a table function
    reading a later item)."""
    out = set()
    for node in nodes:
        for item in node.find_all(exp.Table, exp.Subquery, exp.Lateral, exp.Unnest):
            alias = item_alias(item)
            if alias is None and isinstance(item, exp.Table) and isinstance(item.this,
                                                                            exp.Identifier):
                alias = normalize(item.this)
            if alias is not None:
                out.add(alias)
    return out

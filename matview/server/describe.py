"""Describe of a prepared statement: its result columns found by binding it (parameters as
NULL) against the catalog, without running it."""

from __future__ import annotations

import matview
from matview.server.statements import positional
from matview.sql.parameters import bind_parameters
from matview.sql.parse import bind_statement, one_statement
from matview.sql.statements import Explain, Query, Show


def result_columns(connection: matview.Connection, sql: str) -> list[tuple[str, str]] | None:
    """``(name, type name)`` of each column ``sql`` returns, None when it returns no rows or
    cannot be bound now (it then fails when it runs, with the error)."""
    text, order = positional(sql)
    try:
        with connection._using(beside=True) as engine:
            tree = bind_parameters(one_statement(text), [None] * len(order))
            statement = bind_statement(tree, engine.catalog)
    except matview.Error:
        return None
    if isinstance(statement, Query):
        return [(n, str(t)) for n, t in zip(statement.column_names, statement.plan.types)]
    if isinstance(statement, Explain):
        return [("plan", "text")]
    if isinstance(statement, Show):
        return [("name", "text"), ("type", "text")] if statement.what == "columns" \
            else [("name", "text")]
    return None

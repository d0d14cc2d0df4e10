"""Differential tests of the binder: each query is bound, its plan run by the reference
interpreter, and the resulting multiset compared with DuckDB running the same SQL on the same
tables (DuckDB set up to divide integers and order NULLs as PostgreSQL does).

Numbers are compared after rounding to 6 decimal places, so NUMERIC and DOUBLE results agree
where the two engines choose different result types. Queries with ORDER BY are compared as
lists, after applying the bound ORDER BY, LIMIT and OFFSET to the interpreter's rows.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest
from matview.ir.interpret import interpret
from matview.sql.parse import parse
from matview.sql.statements import Query

from tests.support.sql_env import QUERIES, Environment, normal_row, setup  # noqa: F401 (a fixture)


def _compare(a: object, b: object, descending: bool, nulls_first: bool) -> int:
    if a is None or b is None:
        if a is None and b is None:
            return 0
        return -1 if (a is None) == nulls_first else 1
    result = (a > b) - (a < b)
    return -result if descending else result


def _ordered(query: Query, rows: Counter) -> list[tuple]:
    def cmp(x: tuple, y: tuple) -> int:
        for index, descending, nulls_first in query.order_by:
            result = _compare(x[index], y[index], descending, nulls_first)
            if result:
                return result
        return 0

    out = sorted(rows.elements(), key=functools.cmp_to_key(cmp))
    start = query.offset or 0
    end = None if query.limit is None else start + query.limit
    return out[start:end]


@pytest.mark.parametrize("sql", QUERIES)
def test_matches_duckdb(sql: str, setup: Environment) -> None:  # noqa: F811 (the fixture)
    catalog, tables, con = setup
    [query] = parse(sql, catalog)
    assert isinstance(query, Query)
    expected = [normal_row(r) for r in con.execute(sql).fetchall()]
    got = interpret(query.plan, tables)
    assert len(query.column_names) == len(query.plan.types)
    if query.order_by or query.limit is not None:
        assert [normal_row(r) for r in _ordered(query, got)] == expected
    else:
        assert Counter(normal_row(r) for r in got.elements()) == Counter(expected)


def test_enough_queries() -> None:
    assert len(QUERIES) >= 30

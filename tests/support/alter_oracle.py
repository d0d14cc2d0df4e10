"""What the ALTER TABLE tests share: a matview connection and a DuckDB database written
alike, their rows compared, and an error's SQLSTATE."""

from __future__ import annotations

import random

import duckdb

import matview
from matview.server.sqlstate import pg_error


def rows(con: matview.Connection | duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    """The rows of ``sql``, sorted (NULLs first)."""
    found = con.execute(sql).fetchall()
    return sorted(found, key=lambda row: [(v is not None, v) for v in row])


def both(con: matview.Connection, oracle: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Run ``sql`` on matview and on DuckDB."""
    con.execute(sql)
    oracle.execute(sql)


def changes(con: matview.Connection, oracle: duckdb.DuckDBPyConnection, table: str,
            rng: random.Random, values: str, key: str = "a") -> None:
    """A few random inserts (rows of ``values``, a format of ``a``) and deletes (by
    column ``key``)."""
    for _ in range(2):
        a = rng.randrange(6)
        both(con, oracle, f"INSERT INTO {table} VALUES " + values.format(a=a))
    both(con, oracle, f"DELETE FROM {table} WHERE {key} = {rng.randrange(6)}")


def sqlstate(error: BaseException) -> str:
    """The SQLSTATE the server reports ``error`` with."""
    return pg_error(error).sqlstate


def created(con: matview.Connection, table: str) -> str:
    """``SHOW CREATE TABLE table``'s statement."""
    return str(con.execute(f"SHOW CREATE TABLE {table}").fetchall()[0][1])

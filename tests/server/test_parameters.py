"""psycopg's parameters of every type matview has, in text (``%t``), binary (``%b``) and
psycopg's own choice (``%s``): each value written through a parameter reads back equal."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from decimal import Decimal

import psycopg
import pytest
from psycopg.types.json import Jsonb

import matview
from matview.server import Server, serve

UTC = datetime.UTC
COLUMNS = [
    ("i", "INT", 7), ("b", "BIGINT", 2**40), ("d", "DOUBLE PRECISION", 1.25),
    ("n", "NUMERIC(10,3)", Decimal("12.345")), ("t", "TEXT", "héllo"), ("o", "BOOLEAN", True),
    ("dt", "DATE", datetime.date(2024, 2, 29)),
    ("ts", "TIMESTAMP", datetime.datetime(2024, 1, 2, 3, 4, 5, 6)),
    ("tz", "TIMESTAMPTZ", datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ("tm", "TIME", datetime.time(1, 2, 3, 4)),
    ("ttz", "TIMETZ", datetime.time(10, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))),
    ("iv", "INTERVAL", datetime.timedelta(days=3, seconds=5, microseconds=7)),
    ("j", "JSONB", {"a": [1, None, "x"]}), ("u", "UUID", uuid.UUID(int=12345)),
    ("by", "BYTEA", b"\x00\xffab"), ("ai", "INT[]", [1, None, 3]), ("at", "TEXT[]", ["a", "b c"]),
]


@pytest.fixture(scope="module")
def server(spark) -> Iterator[Server]:  # type: ignore[no-untyped-def]
    con = matview.connect(clock=None, spark=spark)
    running = serve(con, port=0, poll=0.05)
    yield running
    running.close()


def _wrapped(value: object) -> object:
    return Jsonb(value) if isinstance(value, dict) else value


@pytest.mark.parametrize("form", ["s", "t", "b"])
def test_every_type_round_trips_as_a_parameter(server: Server, form: str) -> None:
    table = f"par_{form}"
    with psycopg.connect(host="127.0.0.1", port=server.port, user="u", dbname="matview",
                         autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t, _ in COLUMNS)})")
        marks = ", ".join(f"%{form}" for _ in COLUMNS)
        conn.execute(f"INSERT INTO {table} VALUES ({marks})",
                     [_wrapped(v) for _, _, v in COLUMNS])
        row = conn.execute(f"SELECT * FROM {table}").fetchone()
        assert row is not None
        for (name, _, value), got in zip(COLUMNS, row, strict=True):
            assert got == value, (name, got, value)
        found = conn.execute(f"SELECT count(*) FROM {table} WHERE i = %{form} AND t = %{form} "
                             f"AND dt = %{form} AND u = %{form}",
                             [7, "héllo", datetime.date(2024, 2, 29), uuid.UUID(int=12345)])
        assert found.fetchone() == (1,)

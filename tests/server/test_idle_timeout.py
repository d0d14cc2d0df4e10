"""``idle_in_transaction_session_timeout``: a session left idle inside a block longer than
the setting is ended with FATAL 25P03, its writes rolled back and its write transaction
released for other sessions; outside a block, or within the limit, nothing happens."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest

import matview
from matview.server import Server, serve


@pytest.fixture(scope="module")
def server(spark) -> Iterator[Server]:  # type: ignore[no-untyped-def]
    con = matview.connect(clock=None, spark=spark)
    running = serve(con, port=0, poll=0.05)
    yield running
    running.close()


def _connect(server: Server, autocommit: bool = False) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=server.port, user="u", dbname="matview",
                           autocommit=autocommit, connect_timeout=10)


def test_idle_block_is_ended_and_rolled_back(server: Server) -> None:
    with _connect(server, autocommit=True) as admin:
        admin.execute("CREATE TABLE idl (x INT)")
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            admin.execute("SET idle_in_transaction_session_timeout = 'soon'")
    idle = _connect(server)
    idle.execute("SET idle_in_transaction_session_timeout = '400ms'")
    idle.commit()
    idle.execute("INSERT INTO idl VALUES (1)")
    idle.execute("SELECT count(*) FROM idl")  # within the limit: the block goes on
    time.sleep(1.5)
    with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout):
        idle.execute("INSERT INTO idl VALUES (2)")
    idle.close()
    with _connect(server, autocommit=True) as other:  # the writer's turn was released
        other.execute("INSERT INTO idl VALUES (3)")
        assert other.execute("SELECT x FROM idl").fetchall() == [(3,)]
        other.execute("SET idle_in_transaction_session_timeout = '200ms'")
        time.sleep(0.6)  # idle outside a block: no limit
        assert other.execute("SELECT count(*) FROM idl").fetchone() == (1,)

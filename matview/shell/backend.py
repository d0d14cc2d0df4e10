"""What the shell runs statements on: the embedded engine (a ``matview.Connection``) or a
``matview serve`` server reached through psycopg 3, behind one small interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import matview
from matview.server.statements import command_tag

if TYPE_CHECKING:
    import psycopg

KINDS = (("TABLES", "table"), ("VIEWS", "view"), ("MATERIALIZED VIEWS", "materialized view"),
         ("SOURCES", "source"))
"""What ``SHOW ...`` lists each kind of relation, and the kind's name."""


@dataclass(frozen=True)
class Outcome:
    """The result of one statement: column names and rows when it returned rows (``columns``
    None otherwise), and its command tag (``CREATE TABLE``, ``INSERT 0 2``, ``SELECT 3``)."""

    columns: list[str] | None
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    status: str = ""


class Backend(ABC):
    """Runs the shell's statements; the catalog is read with matview's ``SHOW`` statements,
    which the embedded engine and the server answer alike."""

    errors: tuple[type[Exception], ...] = (matview.Error,)
    """The exceptions a failed statement raises (printed, the shell goes on)."""

    @abstractmethod
    def execute(self, sql: str) -> Outcome:
        """Run the one statement ``sql``."""

    @abstractmethod
    def explain(self, sql: str) -> str:
        """The optimized plan of the one statement ``sql``, as text."""

    def idle(self) -> bool:
        """Whether no transaction block is open, so that reading the catalog cannot disturb
        one."""
        return True

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def relations(self) -> list[tuple[str, str]]:
        """Every relation as ``(name, kind)``, by name."""
        found = [(row[0], kind) for show, kind in KINDS
                 for row in self.execute(f"SHOW {show}").rows]
        return sorted(found)

    def columns(self, name: str) -> list[tuple[str, str]]:
        """The columns of relation ``name`` (as SQL writes it: unquoted names fold to lower
        case) as ``(name, type)``."""
        return [(row[0], row[1]) for row in self.execute(f"SHOW COLUMNS FROM {name}").rows]


class Embedded(Backend):
    """The embedded engine: a ``matview.Connection`` in this process."""

    def __init__(self, connection: matview.Connection) -> None:
        self.connection = connection

    def execute(self, sql: str) -> Outcome:
        """Run ``sql`` on the connection; the command tag is the one the server would send."""
        cursor = self.connection.execute(sql)
        if cursor.description is None:
            return Outcome(None, [], command_tag(sql, cursor.rowcount, False))
        rows = cursor.fetchall()
        return Outcome([d[0] for d in cursor.description], rows,
                       command_tag(sql, len(rows), True))

    def explain(self, sql: str) -> str:
        """``Connection.explain`` of ``sql`` at the optimized stage."""
        return self.connection.explain(sql)

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


class Remote(Backend):
    """A ``matview serve`` server (or another PostgreSQL server) through a psycopg 3
    connection in autocommit mode: each statement commits on its own unless the user opens a
    block with ``BEGIN``."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        import psycopg

        self.connection = connection
        self.errors = (psycopg.Error,)

    def execute(self, sql: str) -> Outcome:
        """Send ``sql`` as it is (no parameters, so ``%`` is not a placeholder)."""
        with self.connection.cursor() as cursor:
            cursor.execute(sql)
            status = cursor.statusmessage or ""
            if cursor.description is None:
                return Outcome(None, [], status)
            return Outcome([d.name for d in cursor.description], cursor.fetchall(), status)

    def explain(self, sql: str) -> str:
        """The rows of ``EXPLAIN sql``, one line each."""
        return "\n".join(str(row[0]) for row in self.execute(f"EXPLAIN {sql}").rows)

    def idle(self) -> bool:
        """Whether the server's session is outside a transaction block."""
        from psycopg.pq import TransactionStatus

        return self.connection.info.transaction_status == TransactionStatus.IDLE

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


def connect_remote(conninfo: str | None = None, host: str | None = None,
                   port: int | None = None) -> Remote:
    """A ``Remote`` on the server that ``conninfo`` (``postgresql://host:port/db``) or
    ``host`` and ``port`` name (database ``matview``); psycopg's connection errors come out
    as ``matview.OperationalError``. Without psycopg installed, ImportError."""
    import psycopg

    params: dict[str, Any] = {"dbname": "matview"} if conninfo is None else {}
    params.update({k: v for k, v in (("host", host), ("port", port)) if v is not None})
    try:
        return Remote(psycopg.connect(conninfo or "", autocommit=True, **params))
    except psycopg.Error as error:
        raise matview.OperationalError(str(error).strip()) from error

"""Transaction control written as SQL: BEGIN / START TRANSACTION, COMMIT / END, ROLLBACK /
ABORT, SAVEPOINT, RELEASE [SAVEPOINT] and ROLLBACK TO [SAVEPOINT], recognised in a
statement's text (``block_statement``) by the server (``matview.server.executor``, which
keeps a session's block) and by the Python API's cursors (``SqlBlock``, on the connection's
transaction).

Through the Python API, with PostgreSQL's rules: a BEGIN inside a transaction and a COMMIT
or ROLLBACK outside one change nothing (PostgreSQL warns); savepoints exist only inside one;
ROLLBACK TO a savepoint discards the writes after it and keeps it, RELEASE forgets it and
those after it. BEGIN opens the connection's transaction at once (``Connection.begin``), so
DDL inside the block is refused, as in ``with con.transaction():``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from matview.errors import OperationalError, ProgrammingError
from matview.statement_text import name_as_written, statement_body, words

if TYPE_CHECKING:
    from matview.connection import Connection

_BEGIN = re.compile(r"(BEGIN|START\s+TRANSACTION)\b[^;]*", re.I)
_END = re.compile(r"(COMMIT|END|ROLLBACK|ABORT)(\s+(WORK|TRANSACTION))?", re.I)
_NAME = r"(\"(?:[^\"]|\"\")+\"|[A-Za-z_][\w$]*)"
_SAVEPOINT = re.compile(r"(SAVEPOINT|RELEASE(?:\s+SAVEPOINT)?|ROLLBACK(?:\s+(?:WORK|TRANSACTION))?"
                        r"\s+TO(?:\s+SAVEPOINT)?)\s+" + _NAME, re.I)


@dataclass(frozen=True)
class Begin:
    """BEGIN / START TRANSACTION."""


@dataclass(frozen=True)
class End:
    """COMMIT / END (``commit``) or ROLLBACK / ABORT."""

    commit: bool


@dataclass(frozen=True)
class Savepoint:
    """SAVEPOINT ``name`` (``kind`` ``savepoint``), RELEASE [SAVEPOINT] it (``release``) or
    ROLLBACK TO [SAVEPOINT] it (``rollback``)."""

    kind: str
    name: str


def block_statement(sql: str) -> Begin | End | Savepoint | None:
    """The transaction control statement ``sql`` is, if it is one."""
    text = statement_body(sql)
    if _BEGIN.fullmatch(text):
        return Begin()
    found = _END.fullmatch(text)
    if found:
        return End(found.group(1).upper() in ("COMMIT", "END"))
    found = _SAVEPOINT.fullmatch(text)
    if found:
        return Savepoint(found.group(1).split()[0].lower(), name_as_written(found.group(2)))
    return None


def writes(sql: str) -> bool:
    """Whether statement ``sql`` writes (INSERT, UPDATE, DELETE, COPY FROM; a COPY TO too,
    which a block's transaction also runs): in a block, its first opens the transaction."""
    return words(sql, 1)[:1] in (["INSERT"], ["UPDATE"], ["DELETE"], ["COPY"])


@dataclass
class SqlBlock:
    """A connection's block opened by SQL through the Python API: whether one is open
    (``BEGIN`` seen), and its savepoints, each name with the transaction's mark
    (``Connection.savepoint``; 0 before the block's first write), oldest first."""

    open: bool = False
    savepoints: list[tuple[str, int]] = field(default_factory=list)

    def run(self, statement: Begin | End | Savepoint, connection: Connection) -> None:
        """Carry ``statement`` out on ``connection``'s transaction."""
        writing = connection.writing
        if isinstance(statement, Begin):
            if not connection.in_transaction:
                self.open, self.savepoints = True, []
            return
        if isinstance(statement, End):
            self.ended()
            if writing:
                (connection.commit if statement.commit else connection.rollback)()
            return
        if not connection.in_transaction:
            raise ProgrammingError(f"{statement.kind.upper()} can only be used in transaction "
                                   "blocks")
        if statement.kind == "savepoint":
            self.savepoints.append((statement.name, connection.savepoint() if writing else 0))
            return
        found = [i for i, (name, _) in enumerate(self.savepoints) if name == statement.name]
        if not found:
            raise OperationalError(f'savepoint "{statement.name}" does not exist')
        del self.savepoints[found[-1] + (statement.kind == "rollback"):]
        if statement.kind == "rollback" and writing:
            connection.rollback_to(self.savepoints[-1][1])

    def before(self, sql: str, connection: Connection) -> None:
        """``sql`` is about to run: in an open block, a write opens its transaction first
        (reads and DDL before the block's first write run on their own)."""
        if self.open and not connection.writing and writes(sql):
            connection.begin()

    def ended(self) -> None:
        self.open, self.savepoints = False, []

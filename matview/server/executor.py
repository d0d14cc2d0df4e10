"""One client session's statements on the shared matview connection: transaction blocks,
session settings, the statements the server answers itself, and everything else run by a
new cursor on the connection.

Transaction blocks map onto matview's write transactions: BEGIN opens a block but no
transaction yet; the block's first write (INSERT, DELETE, UPDATE, COPY FROM) opens one on
the connection (``Connection.begin``, which makes other sessions' writes wait until it
ends; their reads run beside it), and COMMIT or ROLLBACK ends it. Reads and DDL before the
block's first write run at once, as statements of their own; after it, reads see the
block's writes and the engine refuses DDL. After an error in a block every statement but
COMMIT, ROLLBACK and ROLLBACK TO a savepoint is refused, as in PostgreSQL. A savepoint marks
the block's writes so far: ROLLBACK TO it discards those after it (psql's ON_ERROR_ROLLBACK,
psycopg's nested transactions).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import matview
from matview.server import pg_catalog
from matview.server.copy import Copy, parse_copy
from matview.server.settings import OTHER_SETTINGS, REPORTED, TIME_SETTINGS, seconds
from matview.server.sqlstate import IN_FAILED_TRANSACTION, PgError, pg_error
from matview.server.statements import (
    Deallocate,
    Set,
    ShowSetting,
    SubscribeTo,
    check_parameters,
    command_tag,
    positional,
    special,
    subscribed,
)
from matview.statement_text import words
from matview.transaction_sql import Begin, End, Savepoint, writes

_CANONICAL = {name.lower(): name for name in (*REPORTED, *OTHER_SETTINGS)}


@dataclass
class Outcome:
    """What a statement returns: result columns (``(name, matview type name)``) and rows,
    or no columns; the CommandComplete tag; notices to send before it."""

    tag: str
    columns: list[tuple[str, str]] | None = None
    rows: list[tuple[object, ...]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Subscribe:
    """SUBSCRIBE to ``name``, streamed by the session (plain rows, or CopyData when
    ``copy`` is the COPY (SUBSCRIBE ...) TO STDOUT around it)."""

    name: str
    copy: Copy | None = None


Work = Outcome | Copy | Subscribe
"""A statement's work: done (an Outcome), or a COPY or SUBSCRIBE for the session to run."""


class Executor:
    """Runs one session's statements on ``connection``; ``settings`` are the session's
    (changes reported through ``report(name, value)``)."""

    def __init__(self, connection: matview.Connection, user: str, database: str,
                 report: Callable[[str, str], None],
                 deallocate: Callable[[str | None], None]) -> None:
        self.connection = connection
        self.deallocate = deallocate
        """Forgets the session's prepared statement of a name (None: all of them)."""
        self.user = user
        self.database = database
        self.report = report
        self.settings = {**REPORTED, **OTHER_SETTINGS, "session_authorization": user}
        self.in_block = False
        self.failed = False
        self.writing = False
        """Whether the block's write transaction is open on the connection."""
        self.savepoints: list[tuple[str, int]] = []
        """The block's savepoints, oldest first: each name with the writes before it."""

    @property
    def idle_limit(self) -> float:
        """How long the session may wait for its client inside a block (seconds, 0: as
        long as it likes): ``idle_in_transaction_session_timeout``."""
        if not self.in_block:
            return 0.0
        name = "idle_in_transaction_session_timeout"
        return seconds(name, self.settings[name])

    @property
    def status(self) -> str:
        """ReadyForQuery's transaction status: idle, in a block, in a failed block."""
        return "E" if self.failed else "T" if self.in_block else "I"

    def failure(self) -> None:
        """An error happened: a block fails (until COMMIT or ROLLBACK)."""
        if self.in_block:
            self.failed = True

    def prepare(self, sql: str, params: Sequence[object] = ()) -> Work:
        """Run statement ``sql`` with ``$n`` parameters ``params``, or, for COPY and
        SUBSCRIBE, say what the session must stream."""
        kind = special(sql)
        if self.failed and not isinstance(kind, End) and not (
                isinstance(kind, Savepoint) and kind.kind == "rollback"):
            raise PgError(IN_FAILED_TRANSACTION, "current transaction is aborted, commands "
                          "ignored until end of transaction block")
        if isinstance(kind, Begin):
            return self._begin()
        if isinstance(kind, End):
            return self._end(kind.commit)
        if isinstance(kind, Savepoint):
            return self._savepoint(kind)
        if isinstance(kind, Set):
            return self._set(kind, sql)
        if isinstance(kind, ShowSetting):
            return self._show(kind.name)
        if isinstance(kind, SubscribeTo):
            return Subscribe(kind.name)
        if isinstance(kind, Deallocate):
            self.deallocate(kind.name)
            return Outcome("DEALLOCATE ALL" if kind.name is None else "DEALLOCATE")
        copy = parse_copy(sql)
        if copy is not None:
            if copy.query is not None and (name := subscribed(copy.query)) is not None:
                return Subscribe(name, copy)
            return copy
        answered = pg_catalog.answer(sql, self.connection, self.settings, self.database)
        if answered is not None:
            columns, rows = answered
            return Outcome(f"SELECT {len(rows)}", columns, rows)
        return self.run(sql, params)

    def run(self, sql: str, params: Sequence[object] = ()) -> Outcome:
        """Run ``sql`` on a new cursor of the connection (``$n`` made ``?``)."""
        text, order = positional(sql)
        values = check_parameters(order, list(params))
        if writes(sql):
            self.will_write()
        limit = seconds("statement_timeout", self.settings["statement_timeout"])
        timer = threading.Timer(limit, self.connection.interrupt, (threading.get_ident(),),
                                {"why": "statement timeout"})
        if limit:
            timer.start()
        try:
            cursor = self.connection.cursor(wire=True).execute(text, values or None)
        except matview.Error as error:
            raise pg_error(error, sql) from error
        finally:
            timer.cancel()
        description = cursor.description
        columns = None if description is None else [(d[0], d[1]) for d in description]
        rows = cursor.fetchall() if columns is not None else []
        rowcount = len(rows) if columns is not None else cursor.rowcount
        return Outcome(command_tag(sql, rowcount, columns is not None), columns, rows)

    def will_write(self) -> None:
        """A write is about to run: inside a block, open its transaction first."""
        if self.in_block and not self.writing:
            try:
                self.connection.begin()
            except matview.Error as error:
                raise pg_error(error) from error
            self.writing = True

    def _begin(self) -> Outcome:
        """BEGIN: open a block (a second BEGIN only warns, as in PostgreSQL)."""
        if self.in_block:
            return Outcome("BEGIN", notices=["there is already a transaction in progress"])
        self.in_block = True
        return Outcome("BEGIN")

    def _end(self, commit: bool) -> Outcome:
        """COMMIT or ROLLBACK: end the block and its write transaction, if open."""
        if not self.in_block:
            return Outcome("COMMIT" if commit else "ROLLBACK",
                           notices=["there is no transaction in progress"])
        failed, writing = self.failed, self.writing
        self.in_block = self.failed = self.writing = False
        self.savepoints = []
        if writing:
            try:
                if commit and not failed:
                    self.connection.commit()
                else:
                    self.connection.rollback()
            except matview.Error as error:
                raise pg_error(error) from error
        return Outcome("COMMIT" if commit and not failed else "ROLLBACK")

    def _savepoint(self, statement: Savepoint) -> Outcome:
        """SAVEPOINT marks the block's writes so far; ROLLBACK TO forgets those after its
        mark (and ends a failure since), keeping it; RELEASE forgets the mark. Both act on
        the latest savepoint of the name, and forget those made after it."""
        if not self.in_block:
            raise PgError("25P01", f"{statement.kind.upper()} can only be used in "
                          "transaction blocks")
        tag = statement.kind.upper()  # SAVEPOINT, RELEASE, ROLLBACK
        if statement.kind == "savepoint":
            mark = self.connection.savepoint() if self.writing else 0
            self.savepoints.append((statement.name, mark))
            return Outcome(tag)
        found = [i for i, (name, _) in enumerate(self.savepoints) if name == statement.name]
        if not found:
            raise PgError("3B001", f'savepoint "{statement.name}" does not exist')
        at = found[-1]
        if statement.kind == "release":
            del self.savepoints[at:]
            return Outcome(tag)
        del self.savepoints[at + 1:]
        if self.writing:
            try:
                self.connection.rollback_to(self.savepoints[at][1])
            except matview.Error as error:
                raise pg_error(error) from error
        self.failed = False
        return Outcome(tag)

    def abandon(self) -> None:
        """The client is gone: roll back its open transaction, if any."""
        if self.writing:
            self.writing = False
            self.connection.rollback()

    def _set(self, kind: Set, sql: str) -> Outcome:
        """SET, RESET, DISCARD ALL and SET TRANSACTION (accepted, ignored)."""
        head = words(sql, 2)
        tag = "DISCARD ALL" if head[:1] == ["DISCARD"] else "RESET" if head[:1] == ["RESET"] \
            else "SET"
        if kind.name is None:
            return Outcome(tag)
        if kind.name == "all":
            for name, value in {**REPORTED, **OTHER_SETTINGS}.items():
                self._assign(name, value)
            return Outcome(tag)
        name = _CANONICAL.get(kind.name, kind.name)
        value = kind.value if kind.value is not None else {**REPORTED, **OTHER_SETTINGS}.get(
            name, "")
        if name == "client_encoding" and value.upper().replace("-", "") not in (
                "UTF8", "UNICODE"):
            raise PgError("0A000", f"client_encoding {value} is not supported (UTF8 is)")
        if name in TIME_SETTINGS:
            try:
                seconds(name, value)
            except ValueError as error:
                raise PgError("22023", str(error)) from None
        self._assign(name, value)
        return Outcome(tag)

    def _assign(self, name: str, value: str) -> None:
        """Set a session setting, reporting it when clients track it."""
        if name == "client_encoding":
            value = "UTF8"
        self.settings[name] = value
        if name in REPORTED:
            self.report(name, value)

    def _show(self, name: str) -> Outcome:
        """SHOW of a session setting, or of all of them."""
        if name == "all":
            rows = [(k, v, "") for k, v in sorted(self.settings.items())]
            return Outcome("SHOW", [("name", "text"), ("setting", "text"),
                                    ("description", "text")], rows)
        canonical = "TimeZone" if name == "timezone" else _CANONICAL.get(name, name)
        if canonical not in self.settings:
            raise PgError("42704", f'unrecognized configuration parameter "{name}"')
        return Outcome("SHOW", [(name, "text")], [(self.settings[canonical],)])

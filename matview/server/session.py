"""One client connection, run on a thread of its own: startup and authentication, then the
simple and extended query protocols (COPY and SUBSCRIBE are streamed by ``transfer``, the
extended protocol's prepared statements and portals decoded by ``portals``)."""

from __future__ import annotations

import logging
import select
import socket
import struct
import threading

import matview
from matview.server import describe, portals, transfer, wire
from matview.server.executor import Executor, Outcome, Subscribe, Work
from matview.server.portals import Portal, Prepared
from matview.server.registry import Registry
from matview.server.scram import MECHANISM, AuthFailed, ScramExchange
from matview.server.settings import REPORTED
from matview.server.sqlstate import (
    IDLE_IN_TRANSACTION_TIMEOUT,
    INVALID_PASSWORD,
    PROTOCOL_VIOLATION,
    QUERY_CANCELED,
    PgError,
    pg_error,
)
from matview.statement_text import split

log = logging.getLogger("matview.server")

STARTUP_TIMEOUT = 60.0
"""Seconds a client has to finish startup and authentication."""
FLUSH_AT = 64 * 1024
"""Output is sent once this many bytes are buffered (and at every ReadyForQuery)."""


class Session:
    """A client connection served on ``connection``; ``password`` (None: trust) is checked
    with SCRAM-SHA-256; ``poll`` is how often a SUBSCRIBE looks for changes (seconds)."""

    def __init__(self, sock: socket.socket, connection: matview.Connection, registry: Registry,
                 password: str | None, poll: float) -> None:
        self.sock = sock
        self.reader = wire.Reader(sock)
        self.connection = connection
        self.registry = registry
        self.password = password
        self.poll = poll
        self.pid, self.secret = 0, 0
        self.cancelled = threading.Event()
        self._busy = False
        self.thread = threading.get_ident()
        """The thread running the session's statements (set again when it starts)."""
        self._out = bytearray()
        self.executor: Executor | None = None
        self.statements: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.skipping = False
        """After an error in the extended protocol: messages are skipped until Sync."""

    # --- output -------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        """Buffer a backend message (sent once enough is buffered, or at flush)."""
        self._out += data
        if len(self._out) >= FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        """Send the buffered output."""
        if not self._out:
            return
        data, self._out = bytes(self._out), bytearray()
        try:
            self.sock.sendall(data)
        except OSError as error:
            raise wire.ClientGone(str(error)) from error

    def send_error(self, error: PgError, severity: str = "ERROR") -> None:
        """Send ``error`` as an ErrorResponse."""
        self.send(wire.error_fields(b"E", error.fields(severity)))

    def notice(self, text: str) -> None:
        """Send a WARNING NoticeResponse."""
        self.send(wire.error_fields(b"N", [("S", "WARNING"), ("V", "WARNING"),
                                           ("C", "25001"), ("M", text)]))

    # --- cancellation and liveness -------------------------------------------------------

    def cancel(self) -> None:
        """A CancelRequest for this session: its running statement stops where it can
        (its Spark jobs cancelled: ``Connection.interrupt``; a SUBSCRIBE at its next
        poll)."""
        if self._busy:
            self.cancelled.set()
            if self.executor is not None:
                self.executor.connection.interrupt(self.thread)

    def check_cancel(self) -> None:
        """Raise 57014 if a CancelRequest arrived for this statement."""
        if self.cancelled.is_set():
            self.cancelled.clear()
            raise PgError(QUERY_CANCELED, "canceling statement due to user request")

    def client_left(self) -> bool:
        """Whether the client closed the connection or sent Terminate (without consuming
        anything else it sent)."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            if not readable:
                return False
            head = self.sock.recv(1, socket.MSG_PEEK)
        except (OSError, ValueError):
            return True
        return head in (b"", b"X")

    def disconnect(self) -> None:
        """Close the socket (server shutdown): the session's thread then ends."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # --- the connection's life ----------------------------------------------------------

    def run(self) -> None:
        """Serve the client until it leaves or breaks the protocol."""
        try:
            self.sock.settimeout(STARTUP_TIMEOUT)
            if self._startup():
                self.sock.settimeout(None)
                self._loop()
        except wire.ClientGone:
            pass
        except wire.ProtocolError as error:
            self._fatal(PgError(PROTOCOL_VIOLATION, str(error)))
        except Exception:
            log.exception("session %d failed", self.pid)
            self._fatal(PgError("XX000", "internal error in the matview server"))
        finally:
            if self.executor is not None:
                try:
                    self.executor.abandon()
                except matview.Error:
                    log.exception("rolling back session %d's transaction failed", self.pid)
            self.registry.remove(self.pid)
            self.sock.close()

    def _fatal(self, error: PgError) -> None:
        """Send a FATAL error before the connection closes (if the client listens)."""
        try:
            self._out.clear()
            self.send_error(error, "FATAL")
            self.flush()
        except wire.ClientGone:
            pass

    def _startup(self) -> bool:
        """Startup, SSL/GSS refusals, cancel requests, authentication; whether a session
        is ready for queries."""
        while True:
            code, body = self.reader.startup()
            if code in (wire.SSL_REQUEST, wire.GSSENC_REQUEST):
                self.send(b"N")
                self.flush()
                continue
            if code == wire.CANCEL_REQUEST:
                if len(body) == 8:
                    self.registry.cancel(*struct.unpack("!iI", body))
                return False
            break
        if code >> 16 != wire.PROTOCOL_3 >> 16:
            raise wire.ProtocolError(f"unsupported frontend protocol {code >> 16}."
                                     f"{code & 0xFFFF}: server supports 3.0")
        payload = wire.Payload(body)
        params: dict[str, str] = {}
        while True:
            key = payload.cstring()
            if not key:
                break
            params[key] = payload.cstring()
        user = params.get("user")
        if not user:
            raise wire.ProtocolError("no PostgreSQL user name specified in startup packet")
        if self.password is not None and not self._authenticate(user):
            return False
        self.pid, self.secret = self.registry.add(self)
        self.executor = Executor(self.connection, user, params.get("database") or user,
                                 self._report, self._deallocate)
        self.send(wire.authentication(0))
        for name, value in REPORTED.items():
            self.send(wire.parameter_status(name, value))
        self.send(wire.parameter_status("session_authorization", user))
        self.send(wire.backend_key_data(self.pid, self.secret))
        self.send(wire.ready_for_query("I"))
        self.flush()
        return True

    def _deallocate(self, name: str | None) -> None:
        """DEALLOCATE: forget prepared statement ``name`` (None: all of them)."""
        if name is None:
            self.statements.clear()
        elif self.statements.pop(name, None) is None:
            raise PgError("26000", f'prepared statement "{name}" does not exist')

    def _authenticate(self, user: str) -> bool:
        """SCRAM-SHA-256 with the server's password; whether it succeeded."""
        assert self.password is not None
        self.send(wire.authentication(10, wire.cstr(MECHANISM) + b"\0"))
        self.flush()
        exchange = ScramExchange(self.password)
        try:
            kind, data = self.reader.message()
            message = wire.Payload(data)
            if kind != b"p" or message.cstring() != MECHANISM:
                raise AuthFailed("expected a SASLInitialResponse for SCRAM-SHA-256")
            length = message.int32()
            self.send(wire.authentication(11, exchange.first(message.bytes(length))))
            self.flush()
            kind, data = self.reader.message()
            if kind != b"p":
                raise AuthFailed("expected a SASLResponse")
            self.send(wire.authentication(12, exchange.final(data)))
        except AuthFailed:
            self._fatal(PgError(INVALID_PASSWORD,
                                f'password authentication failed for user "{user}"'))
            return False
        return True

    def _report(self, name: str, value: str) -> None:
        """A setting changed: send its ParameterStatus."""
        self.send(wire.parameter_status(name, value))

    def _loop(self) -> None:
        """Dispatch the client's messages until Terminate."""
        self.thread = threading.get_ident()
        handlers = {b"Q": self._query, b"P": self._parse, b"B": self._bind,
                    b"D": self._describe, b"E": self._execute, b"C": self._close,
                    b"S": self._sync, b"H": lambda _: self.flush()}
        while True:
            assert self.executor is not None
            limit = self.executor.idle_limit
            if limit and not select.select([self.sock], [], [], limit)[0]:
                self._fatal(PgError(IDLE_IN_TRANSACTION_TIMEOUT, "terminating connection due "
                                    "to idle-in-transaction timeout"))
                return  # the block's transaction is rolled back (``run``)
            kind, data = self.reader.message()
            if kind == b"X":
                return
            if kind in (b"d", b"c", b"f"):  # COPY messages after a failed COPY: ignored
                continue
            handler = handlers.get(kind)
            if handler is None:
                raise wire.ProtocolError(f"invalid frontend message type {kind[0]}")
            if self.skipping and kind != b"S":
                continue
            self._busy = True
            self.cancelled.clear()
            try:
                handler(data)
            except (wire.ClientGone, wire.ProtocolError):
                raise
            except Exception as error:
                self._failed(pg_error(error))
            finally:
                self._busy = False

    def _failed(self, error: PgError) -> None:
        """An extended-protocol message failed: report it, skip until Sync."""
        self.send_error(error)
        assert self.executor is not None
        self.executor.failure()
        self.skipping = True

    # --- simple query -------------------------------------------------------------------

    def _query(self, data: bytes) -> None:
        """Query: run each statement, stopping at the first error; ReadyForQuery."""
        sql = wire.Payload(data).cstring()
        assert self.executor is not None
        self.portals.pop("", None)
        self.statements.pop("", None)
        pieces = split(sql)
        if not pieces:
            self.send(wire.EMPTY_QUERY)
        for piece in pieces:
            try:
                self.check_cancel()
                work = self.executor.prepare(piece.text)
                self._perform(work, Portal(piece.text, []), describe=True)
            except (wire.ClientGone, wire.ProtocolError):
                raise
            except Exception as error:
                self.send_error(pg_error(error, piece.text).moved(piece.offset))
                self.executor.failure()
                break
        self.send(wire.ready_for_query(self.executor.status))
        self.flush()

    def _perform(self, work: Work, portal: Portal, describe: bool, limit: int = 0) -> None:
        """Send ``work``'s results (up to ``limit`` rows, 0: all; RowDescription first when
        ``describe``), or stream its COPY or SUBSCRIBE."""
        assert self.executor is not None
        if isinstance(work, Subscribe):
            transfer.subscribe(self, self.executor, work, describe)
        elif not isinstance(work, Outcome):
            self.send(transfer.copy(self, self.executor, work))
        else:
            for text in work.notices:
                self.notice(text)
            work.notices = []
            if describe and work.columns is not None:
                self.send(transfer.row_description(work.columns))
            end = len(work.rows) if limit <= 0 else min(len(work.rows), portal.sent + limit)
            for row in work.rows[portal.sent:end]:
                self.send(transfer.data_row(row))
            portal.sent = end
            if end < len(work.rows):
                self.send(wire.PORTAL_SUSPENDED)
                return
            self.send(wire.command_complete(work.tag))
        portal.done = True

    # --- extended query -----------------------------------------------------------------

    def _parse(self, data: bytes) -> None:
        """Parse: keep a prepared statement (``portals.prepared``)."""
        name, statement = portals.prepared(data, self.statements)
        self.statements[name] = statement
        self.send(wire.PARSE_COMPLETE)

    def _bind(self, data: bytes) -> None:
        """Bind: a portal of a prepared statement with its parameter values
        (``portals.bound``)."""
        name, portal = portals.bound(data, self.statements)
        self.portals[name] = portal
        self.send(wire.BIND_COMPLETE)

    def _run_portal(self, portal: Portal) -> Work:
        """The portal's work, running its statement on first use."""
        assert self.executor is not None
        if portal.work is None:
            portal.work = self.executor.prepare(portal.sql, portal.params)
        return portal.work

    def _describe(self, data: bytes) -> None:
        """Describe of a prepared statement or of a portal (which runs it)."""
        message = wire.Payload(data)
        what, name = message.byte(), message.cstring()
        if what == b"S":
            statement = self.statements.get(name)
            if statement is None:
                raise PgError("26000", f'prepared statement "{name}" does not exist')
            self.send(wire.parameter_description(statement.parameter_oids()))
            columns = describe.result_columns(self.connection, statement.sql)
            self.send(wire.NO_DATA if columns is None else transfer.row_description(columns))
            return
        if what != b"P":
            raise wire.ProtocolError(f"invalid DESCRIBE message subtype {what!r}")
        portal = self.portals.get(name)
        if portal is None:
            raise PgError("34000", f'portal "{name}" does not exist')
        work = self._run_portal(portal)
        if isinstance(work, Subscribe):
            self.send(transfer.row_description(transfer.subscribe_columns(self.connection,
                                                                          work.name)))
        elif isinstance(work, Outcome) and work.columns is not None:
            self.send(transfer.row_description(work.columns))
        else:
            self.send(wire.NO_DATA)

    def _execute(self, data: bytes) -> None:
        """Execute: send a portal's rows (up to the row limit) or stream its work."""
        message = wire.Payload(data)
        name, limit = message.cstring(), message.int32()
        portal = self.portals.get(name)
        if portal is None:
            raise PgError("34000", f'portal "{name}" does not exist')
        if portal.done:
            self.send(wire.command_complete(
                portal.work.tag if isinstance(portal.work, Outcome) else "SELECT 0"))
            return
        self._perform(self._run_portal(portal), portal, describe=False, limit=limit)

    def _close(self, data: bytes) -> None:
        """Close a prepared statement or portal."""
        message = wire.Payload(data)
        what, name = message.byte(), message.cstring()
        (self.statements if what == b"S" else self.portals).pop(name, None)
        self.send(wire.CLOSE_COMPLETE)

    def _sync(self, _: bytes) -> None:
        """Sync: end the error skipping; ReadyForQuery."""
        assert self.executor is not None
        self.skipping = False
        self.portals.pop("", None)
        self.send(wire.ready_for_query(self.executor.status))
        self.flush()

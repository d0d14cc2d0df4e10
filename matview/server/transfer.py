"""Results on the wire: RowDescription and DataRow of a result, COPY FROM STDIN and TO
STDOUT, and SUBSCRIBE streamed as rows (or CopyData) until the client cancels or leaves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matview
from matview.server import wire
from matview.server.catalog_view import relation
from matview.server.copy import Copy, header_line, read_rows, write_row
from matview.server.executor import Executor, Subscribe
from matview.server.pgtypes import InvalidText, column_type, encode, from_text
from matview.server.sqlstate import (
    INVALID_TEXT,
    PROTOCOL_VIOLATION,
    QUERY_CANCELED,
    PgError,
    pg_error,
)

if TYPE_CHECKING:
    from matview.server.session import Session


def row_description(columns: Sequence[tuple[str, str]]) -> bytes:
    """RowDescription of ``(name, matview type name)`` columns."""
    return wire.row_description([(name, *column_type(kind)[:3]) for name, kind in columns])


def data_row(row: Sequence[object]) -> bytes:
    """A result row as a text-format DataRow."""
    return wire.data_row([encode(value) for value in row])


def _quoted(name: str) -> str:
    """``name`` as a quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


def copy(session: Session, executor: Executor, statement: Copy) -> bytes:
    """Run COPY ``statement`` over ``session``'s socket; its CommandComplete."""
    if statement.incoming:
        return wire.command_complete(f"COPY {_copy_in(session, executor, statement)}")
    if statement.query is not None:
        outcome = executor.run(statement.query)
    else:
        names = ", ".join(map(_quoted, statement.columns)) if statement.columns else "*"
        outcome = executor.run(f"SELECT {names} FROM {_quoted(str(statement.table))}")
    columns = outcome.columns or []
    session.send(wire.copy_response(b"H", len(columns)))
    if statement.format.header:
        session.send(wire.message(b"d", header_line([c[0] for c in columns], statement.format)))
    for row in outcome.rows:
        session.send(wire.message(b"d", write_row(row, statement.format)))
    session.send(wire.COPY_DONE)
    return wire.command_complete(f"COPY {len(outcome.rows)}")


def _copy_in(session: Session, executor: Executor, statement: Copy) -> int:
    """COPY ... FROM STDIN: collect the client's CopyData, read its rows with the table's
    column types and insert them in one write; the number of rows."""
    target = relation(executor.connection, str(statement.table))
    if target is None or target.kind != "table":
        what = "does not exist" if target is None else f"is a {target.kind}, not a table"
        raise PgError("42P01" if target is None else "42809",
                      f'table "{statement.table}" {what}')
    types = dict(target.columns)
    names = list(statement.columns or types)
    for name in names:
        if name not in types:
            raise PgError("42703", f'column "{name}" of relation "{target.name}" does not exist')
    session.send(wire.copy_response(b"G", len(names)))
    session.flush()
    chunks = []
    while True:
        kind, data = session.reader.message()
        if kind == b"d":
            chunks.append(data)
        elif kind == b"c":
            break
        elif kind == b"f":
            message = wire.Payload(data).cstring()
            raise PgError(QUERY_CANCELED, f"COPY from stdin failed: {message}")
        elif kind not in (b"H", b"S"):
            raise PgError(PROTOCOL_VIOLATION,
                          f"unexpected message type 0x{kind[0]:02X} during COPY from stdin")
    try:
        text = b"".join(chunks).decode()
    except UnicodeDecodeError as error:
        raise PgError("22021", 'invalid byte sequence for encoding "UTF8"') from error
    order = [names.index(n) if n in names else None for n in types]
    rows = []
    for line, fields in enumerate(read_rows(text, statement.format), start=1):
        if len(fields) != len(names):
            problem = "missing data for a column" if len(fields) < len(names) else \
                "extra data after last expected column"
            raise PgError("22P04", f"{problem} (COPY {target.name}, line {line})")
        try:
            values = [None if f is None else from_text(f, types[n])
                      for f, n in zip(fields, names)]
        except InvalidText as error:
            raise PgError(INVALID_TEXT, f"{error} (COPY {target.name}, line {line})") from error
        rows.append(tuple(None if i is None else values[i] for i in order))
    if not rows:
        return 0
    executor.will_write()
    try:
        return executor.connection.insert(target.name, rows)
    except matview.Error as error:
        raise pg_error(error) from error


def subscribe_columns(connection: matview.Connection, name: str) -> list[tuple[str, str]]:
    """The columns SUBSCRIBE to ``name`` returns: ``mz_timestamp``, ``mz_diff``, then the
    view's."""
    target = relation(connection, name)
    if target is None:
        raise PgError("42P01", f'relation "{name}" does not exist')
    return [("mz_timestamp", "mz_timestamp"), ("mz_diff", "bigint"), *target.columns]


def subscribe(session: Session, executor: Executor, work: Subscribe, describe: bool) -> None:
    """Stream every change of ``work.name`` (the snapshot first) as DataRows, or CopyData
    for COPY (SUBSCRIBE ...) TO STDOUT, polling every ``session.poll`` seconds until the
    client cancels (ErrorResponse 57014) or leaves."""
    columns = subscribe_columns(executor.connection, work.name)
    try:
        subscription = executor.connection.subscribe(work.name)
    except matview.Error as error:
        raise pg_error(error) from error
    try:
        if work.copy is not None:
            session.send(wire.copy_response(b"H", len(columns)))
        elif describe:
            session.send(row_description(columns))
        session.flush()
        while True:
            session.check_cancel()
            try:
                rows = subscription.fetch(wire=True)
            except matview.Error as error:
                raise pg_error(error) from error
            for row in rows:
                session.send(wire.message(b"d", write_row(row, work.copy.format))
                             if work.copy is not None else data_row(row))
            session.flush()
            if session.client_left():
                raise wire.ClientGone("the client left during SUBSCRIBE")
            session.cancelled.wait(session.poll)
    finally:
        try:
            subscription.close()
        except matview.Error:
            pass

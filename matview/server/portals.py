"""The extended query protocol's objects: prepared statements (made by Parse) and portals
(made by Bind, a prepared statement with its parameter values), decoded from their
messages."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from matview.server import wire
from matview.server.executor import Work
from matview.server.pgtypes import TEXT_OID, InvalidText, parameter
from matview.server.sqlstate import FEATURE_NOT_SUPPORTED, INVALID_TEXT, PROTOCOL_VIOLATION, PgError
from matview.server.statements import parameter_count
from matview.statement_text import split


@dataclass
class Prepared:
    """A prepared statement: its text and declared parameter type OIDs."""

    sql: str
    oids: list[int]

    def parameter_oids(self) -> list[int]:
        """The type OID of each of its parameters, as Describe reports them: the declared
        one, else text."""
        count = max(parameter_count(self.sql), len(self.oids))
        return [(self.oids[i] if i < len(self.oids) else 0) or TEXT_OID for i in range(count)]


@dataclass
class Portal:
    """A bound statement: its text and parameter values; once run, its work and how many of
    its rows were sent."""

    sql: str
    params: list[object]
    work: Work | None = None
    sent: int = 0
    done: bool = False


def prepared(data: bytes, statements: Mapping[str, Prepared]) -> tuple[str, Prepared]:
    """A Parse message: the name of the prepared statement it makes (one statement, ``$n``
    parameters), which ``statements`` must not hold unless unnamed, and the statement."""
    message = wire.Payload(data)
    name, sql = message.cstring(), message.cstring()
    oids = [message.int32() for _ in range(max(message.int16(), 0))]
    if name and name in statements:
        raise PgError("42P05", f'prepared statement "{name}" already exists')
    if len(split(sql)) > 1:
        raise PgError("42601", "cannot insert multiple commands into a prepared statement")
    return name, Prepared(sql, oids)


def bound(data: bytes, statements: Mapping[str, Prepared]) -> tuple[str, Portal]:
    """A Bind message: the name of the portal it makes, and the portal, of a prepared
    statement of ``statements`` with its parameter values decoded."""
    message = wire.Payload(data)
    portal, name = message.cstring(), message.cstring()
    formats = [message.int16() for _ in range(max(message.int16(), 0))]
    raw = []
    for _ in range(max(message.int16(), 0)):
        length = message.int32()
        raw.append(None if length < 0 else message.bytes(length))
    results = [message.int16() for _ in range(max(message.int16(), 0))]
    statement = statements.get(name)
    if statement is None:
        raise PgError("26000", f'prepared statement "{name}" does not exist')
    if any(results):
        raise PgError(FEATURE_NOT_SUPPORTED, "binary result format is not supported; "
                      "ask for text")
    if len(formats) not in (0, 1, len(raw)):
        raise PgError(PROTOCOL_VIOLATION, "wrong number of parameter format codes")
    values = []
    for i, value in enumerate(raw):
        binary = bool(formats[i if len(formats) > 1 else 0]) if formats else False
        oid = statement.oids[i] if i < len(statement.oids) else 0
        try:
            values.append(parameter(value, oid, binary))
        except InvalidText as error:
            raise PgError(INVALID_TEXT, str(error)) from error
        except UnicodeDecodeError as error:
            raise PgError("22021", 'invalid byte sequence for encoding "UTF8"') from error
    return portal, Portal(statement.sql, values)

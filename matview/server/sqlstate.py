"""matview's errors as PostgreSQL ErrorResponse fields: severity, SQLSTATE, message and the
1-based character position of the offending text, when the error names one."""

from __future__ import annotations

import re
from dataclasses import dataclass

from matview import errors

SYNTAX_ERROR = "42601"
FEATURE_NOT_SUPPORTED = "0A000"
PROTOCOL_VIOLATION = "08P01"
QUERY_CANCELED = "57014"
IDLE_IN_TRANSACTION_TIMEOUT = "25P03"
IN_FAILED_TRANSACTION = "25P02"
INVALID_PASSWORD = "28P01"
INVALID_TEXT = "22P02"


@dataclass
class PgError(Exception):
    """An error to send as an ErrorResponse: its SQLSTATE, message and position (1-based
    character offset in the query text, or None)."""

    sqlstate: str
    message: str
    position: int | None = None

    def __str__(self) -> str:
        return self.message

    def fields(self, severity: str = "ERROR") -> list[tuple[str, str]]:
        """The ErrorResponse fields (``S``, ``V``, ``C``, ``M`` and ``P`` when known)."""
        out = [("S", severity), ("V", severity), ("C", self.sqlstate), ("M", self.message)]
        if self.position is not None:
            out.append(("P", str(self.position)))
        return out

    def moved(self, offset: int) -> PgError:
        """The same error positioned in a text where the statement starts at ``offset``."""
        if self.position is None:
            return self
        return PgError(self.sqlstate, self.message, self.position + offset)


_BY_MESSAGE = [
    (r"interval out of range", "22008"),
    (r"division by zero", "22012"),
    (r"integer out of range|value out of range|numeric field overflow|out of range", "22003"),
    (r"invalid input syntax|invalid value for column", INVALID_TEXT),
    (r"invalid byte sequence", "22021"),
    (r"more than one row returned by a subquery|cannot affect row a second time", "21000"),
    (r"violates unique constraint|^could not create unique index", "23505"),
    (r"violates not-null constraint", "23502"),
    (r"no unique or exclusion constraint matching", "42P10"),
    (r"multiple primary keys", "42P16"),
    (r"^relation .* does not exist|^(table|view|materialized view) .* does not exist",
     "42P01"),
    (r"^column .* does not exist", "42703"),
    (r"^constraint .* does not exist", "42704"),
    (r"cannot be cast automatically", "42804"),
    (r"^column .* is in a primary key", "42P16"),
    (r"^function .* does not exist|unknown function", "42883"),
    (r"^column .* of relation .* already exists", "42701"),
    (r"already exists", "42P07"),
    (r"contains null values", "23502"),
    (r"syntax error|unterminated", SYNTAX_ERROR),
    (r"inside a transaction|transaction is already open|no transaction is open", "25000"),
    (r"because other objects depend on it", "2BP01"),
    (r"too deeply nested", "54001"),
]
_BY_CLASS: list[tuple[type[Exception], str]] = [
    (errors.DataError, "22000"), (errors.IntegrityError, "23000"),
    (errors.NotSupportedError, FEATURE_NOT_SUPPORTED), (errors.ProgrammingError, "42000"),
    (errors.QueryCanceled, QUERY_CANCELED), (errors.OperationalError, "58000"),
    (errors.InterfaceError, "08000"),
]
_POSITION_SUFFIX = re.compile(r" \(line \d+, column \d+\)$")


def _source(error: BaseException) -> BaseException | None:
    """The SQL layer's error behind ``error`` (it carries ``line`` and ``col``), if any."""
    seen: BaseException | None = error
    while seen is not None:
        if getattr(seen, "line", None) is not None and getattr(seen, "col", None) is not None:
            return seen
        seen = seen.__cause__
    return None


def character_position(sql: str, line: int, col: int) -> int:
    """The 1-based character offset in ``sql`` of 1-based ``line`` and ``col``."""
    lines = sql.split("\n")
    return sum(len(text) + 1 for text in lines[:line - 1]) + col


def pg_error(error: BaseException, sql: str = "") -> PgError:
    """``error`` (a matview exception, or any other) as a ``PgError``; its position is in
    ``sql``, the statement that failed."""
    if isinstance(error, PgError):
        return error
    message = _POSITION_SUFFIX.sub("", str(error)) or type(error).__name__
    source = _source(error)
    position = None
    if source is not None:
        position = character_position(sql, source.line, source.col)  # type: ignore[attr-defined]
    if not isinstance(error, errors.Error):
        return PgError("XX000", f"internal error: {message}", position)
    cause = type(source).__name__ if source is not None else ""
    if cause == "SqlSyntaxError":
        return PgError(SYNTAX_ERROR, message, position)
    for pattern, code in _BY_MESSAGE:
        if re.search(pattern, message, re.IGNORECASE):
            return PgError(code, message, position)
    if cause == "SqlTypeError":
        return PgError("42804", message, position)
    for kind, code in _BY_CLASS:
        if isinstance(error, kind):
            return PgError(code, message, position)
    return PgError("XX000", message, position)

"""Errors raised while parsing and binding SQL, with the position of the offending text.

Positions are 1-based line and column numbers of the first character of the token the error
is about. Errors that fit no narrower class (grouping errors, wrong numbers of values, a
relation of the wrong kind) are raised as plain ``SqlError``.
"""

from __future__ import annotations

from sqlglot import exp


class SqlError(Exception):
    """A statement that cannot be run: ``message``, at ``line``/``col`` when known."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col

    @classmethod
    def at(cls, message: str, node: exp.Expr | None) -> SqlError:
        """The error ``message`` positioned at the leftmost token of ``node``."""
        line, col = position(node)
        return cls(message, line, col)

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        return f"{self.message} (line {self.line}, column {self.col})"


class SqlSyntaxError(SqlError):
    """The text is not valid SQL."""


class UnknownObjectError(SqlError):
    """A name (relation, column, function) that does not exist."""


class DuplicateObjectError(SqlError):
    """A name defined twice: an existing relation, a repeated column."""


class SqlTypeError(SqlError):
    """Operands or arguments whose types do not fit."""


class UnsupportedError(SqlError):
    """Valid SQL that matview does not support (yet)."""


class InvalidValueError(SqlError):
    """A constant whose value no column can hold (text with a NUL byte)."""


def position(node: exp.Expr | None) -> tuple[int | None, int | None]:
    """Line and column of the leftmost token under ``node`` that carries a position (under its
    nearest ancestor with one, when ``node`` has none, like a type name).

    sqlglot records a token's line, the column of its last character and its character
    offsets; the first character's column is derived from them.
    """
    while node is not None:
        starts = [sub.meta for sub in node.walk() if "line" in sub.meta]
        if starts:
            first = min(starts, key=lambda meta: meta["start"])
            return first["line"], first["col"] - (first["end"] - first["start"])
        node = node.parent
    return None, None

"""Statement text before it is parsed: a text split into its ``;``-separated statements
(by matview's tokenizer, so semicolons in strings, quoted names and comments do not
separate), a statement's body without its leading comments, and names as written. The
server and the shell split what clients send with it; the Python API's cursors read
transaction control with it (``transaction_sql``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from matview.sql.dialect import Matview

LEADING = re.compile(r"(\s+|--[^\n]*(\n|$)|/\*.*?\*/)*", re.S)
"""Blanks and comments before a statement's first word."""


@dataclass(frozen=True)
class Piece:
    """One statement of a query text: its text and the offset where it starts."""

    text: str
    offset: int


def sql_tokens(sql: str) -> list[Token] | None:
    """The tokens of ``sql`` by matview's own tokenizer (None when it cannot tokenize)."""
    try:
        return list(Matview().tokenize(sql))
    except TokenError:
        return None


def split(sql: str) -> list[Piece]:
    """The ``;``-separated statements of ``sql`` (semicolons in strings, quoted names and
    comments do not separate); statements holding only blanks and comments are left out.
    Text the tokenizer refuses is one statement, for the engine to report the error."""
    tokens = sql_tokens(sql)
    if tokens is None:
        return [Piece(sql, 0)] if sql.strip() else []
    pieces, start, seen = [], 0, False
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if seen:
                pieces.append(Piece(sql[start:token.start], start))
            start, seen = token.end + 1, False
        else:
            seen = True
    if seen:
        pieces.append(Piece(sql[start:], start))
    return pieces


def statement_body(sql: str) -> str:
    """``sql`` without leading blanks and comments, trailing blanks and ``;``."""
    return sql[LEADING.match(sql).end():].rstrip().rstrip(";").rstrip()  # type: ignore[union-attr]


def name_as_written(written: str) -> str:
    """An identifier as written: quoted as it is, else in lower case."""
    return written[1:-1].replace('""', '"') if written.startswith('"') else written.lower()


def words(sql: str, n: int = 3) -> list[str]:
    """The first ``n`` words of ``sql`` (after leading blanks and comments), upper case."""
    body = sql[LEADING.match(sql).end():]  # type: ignore[union-attr]
    return [w.upper() for w in re.findall(r"[A-Za-z_]+", body[:200])][:n]

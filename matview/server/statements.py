"""Statement text as the server handles it: a Query message split into statements, ``$n``
parameters made into matview's ``?`` marks, the statements the server answers itself
recognised (transaction control, SET, SHOW of a setting, COPY, SUBSCRIBE), and command
tags."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot.tokens import TokenType

from matview.server.sqlstate import PgError
from matview.statement_text import name_as_written, sql_tokens, statement_body, words
from matview.transaction_sql import Begin, End, Savepoint, block_statement


def positional(sql: str) -> tuple[str, list[int]]:
    """``sql`` with each ``$n`` outside strings and comments replaced by ``?`` padded to the
    same length (so error positions stay right), and the 1-based parameter number of each
    ``?`` in order (``$2 ... $1 ... $2`` gives ``[2, 1, 2]``)."""
    tokens = sql_tokens(sql)
    if tokens is None:
        return sql, []
    out, order, last = [], [], 0
    for marker, number in zip(tokens, tokens[1:]):
        if (marker.token_type == TokenType.PARAMETER and number.token_type == TokenType.NUMBER
                and number.start == marker.end + 1 and number.text.isdigit()):
            out.append(sql[last:marker.start])
            out.append("?".ljust(number.end + 1 - marker.start))
            order.append(int(number.text))
            last = number.end + 1
    out.append(sql[last:])
    return "".join(out), order


def parameter_count(sql: str) -> int:
    """The highest ``$n`` of ``sql`` (0 when it has none)."""
    return max(positional(sql)[1], default=0)


def command_tag(sql: str, rowcount: int, returned_rows: bool) -> str:
    """The CommandComplete tag of statement ``sql``: ``SELECT n``, ``INSERT 0 n``, ``DELETE
    n``, ``UPDATE n``, ``CREATE TABLE``, ``DROP MATERIALIZED VIEW``, ``ALTER TABLE`` ..."""
    first = words(sql)
    head = first[0] if first else ""
    count = max(rowcount, 0)
    if head == "INSERT":
        return f"INSERT 0 {count}"
    if head in ("DELETE", "UPDATE"):
        return f"{head} {count}"
    if head == "EXPLAIN":
        return "EXPLAIN"
    if returned_rows:
        return f"SELECT {count}"
    if head in ("CREATE", "DROP", "ALTER"):
        kind = first[1:3] if first[1:3] == ["MATERIALIZED", "VIEW"] else first[1:2]
        return " ".join([head, *kind])
    return head


# --- statements the server answers itself -----------------------------------------------

_SET = re.compile(r"SET\s+(?:SESSION\s+|LOCAL\s+)?(?!TRANSACTION\b|SESSION\b)"
                  r"([A-Za-z_][\w.]*)\s*(?:=|\bTO\b)\s*(.*?)", re.I | re.S)
_SET_TIME_ZONE = re.compile(r"SET\s+(?:SESSION\s+|LOCAL\s+)?TIME\s+ZONE\s+(.*?)", re.I | re.S)
_SET_OTHER = re.compile(r"SET\s+(SESSION\s+CHARACTERISTICS|TRANSACTION)\b.*", re.I | re.S)
_RESET = re.compile(r"(RESET\s+([A-Za-z_][\w.]*|ALL)|DISCARD\s+ALL)", re.I)
_SHOW = re.compile(r"SHOW\s+([A-Za-z_][\w.]*|TIME\s+ZONE|TRANSACTION\s+ISOLATION\s+LEVEL|ALL)",
                   re.I)
_DEALLOCATE = re.compile(r"DEALLOCATE\s+(?:PREPARE\s+)?(ALL|\"(?:[^\"]|\"\")+\"|[A-Za-z_][\w$]*)",
                         re.I)
_SUBSCRIBE = re.compile(r"SUBSCRIBE\s+(?:TO\s+)?(\"(?:[^\"]|\"\")+\"|[A-Za-z_][\w$]*)", re.I)
_MATVIEW_SHOWS = {"TABLES", "VIEWS", "MATERIALIZED", "COLUMNS", "SETTINGS", "SOURCES"}


@dataclass(frozen=True)
class Set:
    """SET (or RESET: ``value`` None) of a session setting; ``name`` None for SET
    TRANSACTION / SESSION CHARACTERISTICS, accepted and ignored."""

    name: str | None
    value: str | None


@dataclass(frozen=True)
class ShowSetting:
    """SHOW of a session setting (``all`` for SHOW ALL)."""

    name: str


@dataclass(frozen=True)
class Deallocate:
    """DEALLOCATE [PREPARE] name | ALL: forget prepared statements (None: all)."""

    name: str | None


@dataclass(frozen=True)
class SubscribeTo:
    """SUBSCRIBE [TO] name."""

    name: str


def _unquoted(value: str) -> str:
    """A SET value without its quotes and trailing ``;``."""
    value = value.strip().rstrip(";").strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].replace(value[0] * 2, value[0])
    return value


def subscribed(sql: str) -> str | None:
    """The name ``SUBSCRIBE [TO] name`` follows (None: ``sql`` is no SUBSCRIBE)."""
    found = _SUBSCRIBE.fullmatch(statement_body(sql))
    return None if found is None else name_as_written(found.group(1))


def special(
    sql: str,
) -> Begin | End | Savepoint | Set | ShowSetting | SubscribeTo | Deallocate | None:
    """The statement ``sql`` is when the server answers it itself, else None."""
    found_block = block_statement(sql)
    if found_block is not None:
        return found_block
    body = statement_body(sql)
    if _SET_OTHER.fullmatch(body):
        return Set(None, None)
    found = _SET_TIME_ZONE.fullmatch(body)
    if found:
        return Set("timezone", _unquoted(found.group(1)))
    found = _SET.fullmatch(body)
    if found:
        return Set(found.group(1).lower(), _unquoted(found.group(2)))
    found = _RESET.fullmatch(body)
    if found:
        name = (found.group(2) or "all").lower()
        return Set(name, None)
    found = _SHOW.fullmatch(body)
    if found and found.group(1).upper() not in _MATVIEW_SHOWS:
        name = re.sub(r"\s+", "", found.group(1)).lower()
        return ShowSetting("transaction_isolation" if name == "transactionisolationlevel"
                           else name)
    found = _DEALLOCATE.fullmatch(body)
    if found:
        named = found.group(1)
        return Deallocate(None if named.upper() == "ALL" else name_as_written(named))
    name = subscribed(sql)
    if name is not None:
        return SubscribeTo(name)
    return None


def check_parameters(order: list[int], values: list[object]) -> list[object]:
    """The value of each ``?`` (``order`` from ``positional``) from the Bind values."""
    for number in order:
        if not 1 <= number <= len(values):
            raise PgError("08P01", f"there is no parameter ${number}")
    return [values[number - 1] for number in order]

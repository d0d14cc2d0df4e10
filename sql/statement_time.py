"""``now()``, ``current_timestamp``, ``transaction_timestamp()``, ``statement_timestamp()``,
``localtimestamp``, ``current_date``, ``current_time`` and ``localtime``: the time the
statement started, one constant for the whole statement (a ``TIMESTAMPTZ``, as
PostgreSQL's; ``localtimestamp`` the ``TIMESTAMP`` in UTC, the session's zone;
``current_date`` its ``DATE``; ``current_time`` its time of day, a ``TIMETZ`` at offset
+00, and ``localtime`` that ``TIME``).

PostgreSQL's ``now()`` is its transaction's start; matview binds each statement apart, so
here it is the statement's (``statement_timestamp()``), the same within one statement. A
statement is bound inside ``statement_clock``, which reads the wall clock once; a view's
query is bound ``timeless``: its rows must not change with time by themselves, so these
functions are refused there with a pointer to ``mz_now()``, the temporal filter that keeps
a row only while a condition on the current time holds. A column's ``DEFAULT now()`` is
bound at each INSERT, so it is that statement's time. ``refuse_in_view`` refuses the other
functions a view cannot hold (``gen_random_uuid()``) the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

from matview.ir import timetz
from matview.ir.scalar import Lit
from matview.ir.types import DATE, TIME, TIMESTAMP, TIMESTAMPTZ, TIMETZ
from matview.sql.coerce import TypedScalar
from matview.sql.errors import SqlError, UnsupportedError
from sqlglot import exp

_NOW: ContextVar[datetime | None] = ContextVar("statement time", default=None)
"""The time the statement being bound started (None: a view's query, or no statement)."""

NAMES = frozenset({"now", "transaction_timestamp", "statement_timestamp"})
"""The spellings that take no argument, not even a precision (sqlglot reads ``now()`` as a
``CurrentTimestamp`` and leaves the other two calls of unknown functions;
``current_timestamp [(p)]``, ``localtimestamp [(p)]`` and ``current_date`` are nodes of
their own)."""


_QUERY: ContextVar[bool] = ContextVar("a query read once", default=False)
"""Whether the statement being bound is a query read once (SELECT, or COPY or EXPLAIN of
one), not a view's query nor a write."""


@contextmanager
def _bound_at(now: datetime | None, query: bool) -> Iterator[None]:
    tokens = _NOW.set(now), _QUERY.set(query)
    try:
        yield
    finally:
        _NOW.reset(tokens[0])
        _QUERY.reset(tokens[1])


def statement_clock(query: bool) -> AbstractContextManager[None]:
    """Bind a statement (``query``: one that only reads, once): the functions above read
    the wall clock as it is now."""
    return _bound_at(datetime.now(UTC).replace(tzinfo=None), query)


def timeless() -> AbstractContextManager[None]:
    """Bind a view's query, where the functions above are refused."""
    return _bound_at(None, False)


def one_shot() -> bool:
    """Whether a query read once is being bound (not a view's query, nor a write): there
    ``mz_now()`` is a value, the time the query reads at (``ir.mz_now``)."""
    return _QUERY.get()


def in_view() -> bool:
    """Whether a view's query is being bound (not a statement of its own)."""
    return _NOW.get() is None


def refuse_in_view(node: exp.Expr, name: str, why: str) -> None:
    """Refuse function ``name`` (called at ``node``) in a view's query, saying ``why``."""
    if in_view():
        raise UnsupportedError.at(f"{name} cannot be used in a view: {why}", node)


def bind_now(node: exp.Expr, name: str) -> TypedScalar:
    """The statement's start time as the literal ``node`` (function ``name``) denotes."""
    refuse_in_view(node, name, "its value changes with time while the view's rows must not; "
                   "to keep rows only while a condition on the current time holds, compare "
                   "mz_now() in WHERE (a temporal filter)")
    now = _NOW.get()
    assert now is not None
    precision = None if isinstance(node, exp.Anonymous) else node.args.get("this")
    if precision is not None:
        if not (isinstance(precision, exp.Literal) and precision.is_int
                and 0 <= int(precision.name) <= 6):
            raise SqlError.at(f"{name}'s precision must be an integer from 0 to 6", precision)
        step = 10 ** (6 - int(precision.name))
        now = now.replace(microsecond=now.microsecond // step * step)
    if isinstance(node, exp.CurrentDate):
        return TypedScalar(Lit(now.date(), DATE), DATE)
    if isinstance(node, exp.Localtimestamp):
        return TypedScalar(Lit(now, TIMESTAMP), TIMESTAMP)
    if isinstance(node, exp.Localtime):
        return TypedScalar(Lit(now.time(), TIME), TIME)
    if isinstance(node, exp.CurrentTime):
        return TypedScalar(Lit(timetz.of_timestamp(now), TIMETZ), TIMETZ)
    return TypedScalar(Lit(now.replace(tzinfo=UTC), TIMESTAMPTZ), TIMESTAMPTZ)

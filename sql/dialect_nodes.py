"""The syntax nodes matview's SQL dialect (``dialect``) adds to sqlglot's: its statements
(``Explain`` and the words of EXPLAIN, ``Subscribe``, ``CreateSink``, ``DropSink``,
``CreateSource``, and ``MutuallyRecursive`` with its ``RecursiveBinding``s), ALTER TABLE's
``RenameConstraint`` action, and the function calls it parses into nodes of their own
(``DatePartCall``, ``DateTruncCall``, ``JsonbAggCall``, ``ToJsonbCall``, ``ToCharCall``,
``OctetLengthCall``).
"""

from __future__ import annotations

from sqlglot import exp


class Explain(exp.Expression):
    """``EXPLAIN``: ``this`` is the explained statement (or, with ``view`` set, the name of
    the explained materialized view), ``stage`` the lower-case stage (None: not written),
    ``format`` the lower-case format (None: not written), ``options`` the lower-case option
    names (a list of ``exp.Var``, in the order written)."""

    arg_types = {"this": True, "stage": False, "format": False, "options": False,
                 "view": False}


EXPLAIN_STAGES = ("RAW", "DECORRELATED", "OPTIMIZED", "PHYSICAL")
EXPLAIN_FORMATS = ("TEXT", "JSON", "DOT")
EXPLAIN_OPTIONS = ("arity", "types", "keys", "humanized expressions")


class DatePartCall(exp.Expression, exp.Func):
    """``date_part(this, expression)``: ``this`` is the field as written (a string literal,
    or any other expression, which the binder refuses), ``expression`` the date or timestamp."""

    arg_types = {"this": True, "expression": True}
    _sql_names = ["DATE_PART"]


class DateTruncCall(exp.Expression, exp.Func):
    """``date_trunc(this, expression)``: ``this`` is the field as written, ``expression`` the
    date or timestamp truncated."""

    arg_types = {"this": True, "expression": True}
    _sql_names = ["DATE_TRUNC"]


class JsonbAggCall(exp.Expression, exp.AggFunc):
    """``jsonb_agg(this)``: the JSON array of a group's values (``this`` an ``exp.Order`` when
    written with ORDER BY)."""

    arg_types = {"this": True}
    _sql_names = ["JSONB_AGG"]


class ToJsonbCall(exp.Expression, exp.Func):
    """``to_jsonb(this)``: a value as JSONB."""

    arg_types = {"this": True}
    _sql_names = ["TO_JSONB"]


class ToCharCall(exp.Expression, exp.Func):
    """``to_char(this, format)``, its pattern as written (PostgreSQL's dialect rewrites it
    into ``strftime``'s, which cannot say all of it)."""

    arg_types = {"this": True, "format": True}
    _sql_names = ["TO_CHAR"]


class OctetLengthCall(exp.Expression, exp.Func):
    """``octet_length(this)``: the number of bytes of a text or a bytea."""

    arg_types = {"this": True}
    _sql_names = ["OCTET_LENGTH"]


class Subscribe(exp.Expression):
    """``SUBSCRIBE [TO] name ...``: ``this`` is the followed relation (a ``Table``; None when
    not a name, like a parenthesized query); ``options`` the text after the name (a string
    literal), if any."""

    arg_types = {"this": False, "options": False}


class AsOf(exp.Expression):
    """``query AS OF time`` (Materialize's): ``this`` is the query, ``expression`` the
    time it reads at."""

    arg_types = {"this": True, "expression": True}


class CreateSink(exp.Expression):
    """``CREATE SINK name FROM view INTO PARQUET | DELTA 'directory' [ENVELOPE word]``."""

    arg_types = {"this": True, "view": True, "kind": True, "path": True, "envelope": False}


class CreateSource(exp.Expression):
    """``CREATE SOURCE [IF NOT EXISTS] name [(column type, ...)] FROM DELTA 'uri' | PARQUET
    'folder' | STREAM``: ``kind`` the upper-case word after FROM, ``path`` its string
    (None for STREAM), ``columns`` the ``ColumnDef``s written (None: none)."""

    arg_types = {"this": True, "columns": False, "kind": True, "path": False,
                 "exists": False}


class MutuallyRecursive(exp.With):
    """``WITH MUTUALLY RECURSIVE [(RETURN | ERROR AT RECURSION LIMIT n)] binding, ...``
    (Materialize's): ``expressions`` are ``RecursiveBinding``s; ``limit`` the literal n,
    ``at_limit`` "return" or "error" (both None without the option)."""

    arg_types = {**exp.With.arg_types, "limit": False, "at_limit": False}


class RecursiveBinding(exp.Expression):
    """``name (column type, ...) AS (query)`` in ``WITH MUTUALLY RECURSIVE``: ``alias`` the
    name, ``columns`` the ``ColumnDef``s, ``this`` the query."""

    arg_types = {"this": True, "alias": True, "columns": True}


class DropSink(exp.Expression):
    """``DROP SINK [IF EXISTS] name``."""

    arg_types = {"this": True, "exists": False}


class RenameConstraint(exp.Expression):
    """``ALTER TABLE ... RENAME CONSTRAINT this TO to``: an action of ALTER TABLE."""

    arg_types = {"this": True, "to": True}

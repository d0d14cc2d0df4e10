"""matview's SQL dialect: PostgreSQL as sqlglot reads it, plus matview's own statements.

Added syntax:

* ``EXPLAIN [[RAW | DECORRELATED | OPTIMIZED | PHYSICAL] PLAN] [WITH (option, ...)]
  [AS TEXT | AS JSON | AS DOT] FOR <statement | MATERIALIZED VIEW name>``, and ``EXPLAIN
  <statement>`` alone, parsed into ``Explain``; ``EXPLAIN OPTIMIZER TRACE [WITH (...)]
  [AS TEXT | AS JSON] FOR ...`` (stage ``trace``) and ``EXPLAIN ANALYZE [AS TEXT | AS JSON]
  MATERIALIZED VIEW name`` (stage ``analyze``) too. Options are ``arity``, ``types``,
  ``keys`` and ``humanized expressions``;
* ``SHOW TABLES | VIEWS | MATERIALIZED VIEWS | COLUMNS FROM <name>``, parsed into sqlglot's
  ``Show`` (``this`` the upper-case kind, ``target`` the relation for COLUMNS);
* ``SUBSCRIBE [TO] <name> ...``, parsed into ``Subscribe`` (which the binder refuses, pointing
  to the Python API);
* ``ALTER MATERIALIZED VIEW``, ``ALTER TABLE ... RENAME CONSTRAINT`` and ``ADD CHECK``
  (``dialect_alter``).

Changed:

* a function call keeps the name and the number of arguments it was written with
  (``WRITTEN_NAME`` and ``ARGUMENT_COUNT`` in its ``meta``), and the calls the binder binds
  (``CALL_NAMES``) are not checked while parsing: the binder checks them against the
  function it binds (``calls.check_call``: sqlglot's limits are not matview's, and its errors
  name no function); a builder of another dialect's function failing on its arguments is a
  syntax error;
* an interval literal whose text is more than one ``<number> <unit>`` pair, like
  ``INTERVAL '1 day 02:00'``, keeps its whole text (sqlglot would keep its first pair only);
* the SQL standard's leading field precision of an interval literal, ``INTERVAL '90' DAY
  (3)`` (TPC-H writes it), is checked (the value has at most that many digits) and dropped:
  the literal is ``INTERVAL '90' DAY`` (sqlglot would read ``DAY (3)`` as a call of ``day``);
* ``date_part(field, source)`` and ``date_trunc(field, source)`` are parsed into
  ``DatePartCall`` and ``DateTruncCall``, which keep the field as written (sqlglot reads
  ``date_part`` as ``EXTRACT``, whose type it does not have, and takes a column naming the
  field for the field's name); ``EXTRACT``'s field keyword keeps its position;
* ``jsonb_agg`` and ``to_jsonb`` (PostgreSQL's JSONB functions, which sqlglot reads as
  anonymous calls) are parsed into ``JsonbAggCall`` and ``ToJsonbCall``, ``octet_length``
  into ``OctetLengthCall``;
* ``position(needle IN haystack)`` is the only form of ``position`` (other dialects'
  ``position(needle, haystack[, start])`` is a syntax error), named ``position`` in messages;
* a dollar quote's tag is an identifier, as PostgreSQL's is: ``$1,$2`` (psycopg's ``%s,%s``)
  are two parameters, not a string quoted by ``$1,$`` (sqlglot takes any tag but digits
  alone and text with spaces).

The dialect registers itself with sqlglot under the name ``matview``. Its tokenizer is here;
its parser is ``dialect_parser`` (with ``dialect_alter``), its generator
``dialect_generator``, the nodes it adds ``dialect_nodes`` and the names of the calls it
binds ``call_names``.
"""

from __future__ import annotations

import re

from matview.sql.dialect_generator import MatviewGenerator
from matview.sql.dialect_parser import MatviewParser
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokenizer_core import TokenizerCore
from sqlglot.tokens import TokenType

_TAG = re.compile(r"(?:[^\W\d]\w*)?\$")
"""What follows the ``$`` opening a dollar quote: a tag (an identifier) and ``$``."""


class _Core(TokenizerCore):
    """sqlglot's tokenizer reading a ``$`` that no tag and ``$`` follow as a parameter's
    mark (the number after it a token of its own), as PostgreSQL does."""

    __slots__ = ()

    def _scan_string(self, start: str) -> bool:
        if start == "$" and not _TAG.match(self.sql, self._current):
            self._add(self.heredoc_string_alternative)
            return True
        return bool(super()._scan_string(start))


class Matview(Postgres):
    """The ``matview`` dialect (see the module docstring)."""

    class Tokenizer(Postgres.Tokenizer):
        COMMANDS = Postgres.Tokenizer.COMMANDS - {TokenType.SHOW}
        KEYWORDS = {**Postgres.Tokenizer.KEYWORDS, "EXPLAIN": TokenType.DESCRIBE,
                    "SUBSCRIBE": TokenType.COMMAND}

        def _init_core(self) -> TokenizerCore:
            core = super()._init_core()
            core.__class__ = _Core
            return core

    Parser = MatviewParser
    Generator = MatviewGenerator

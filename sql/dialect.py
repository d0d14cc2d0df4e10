"""matview's SQL dialect: PostgreSQL as sqlglot reads it, plus matview's own statements.

Added syntax:

* ``EXPLAIN [[RAW | OPTIMIZED | PHYSICAL] PLAN FOR] <statement>``, parsed into ``Explain``;
* ``SHOW TABLES | VIEWS | MATERIALIZED VIEWS | COLUMNS FROM <name>``, parsed into sqlglot's
  ``Show`` (``this`` the upper-case kind, ``target`` the relation for COLUMNS).

Changed: an interval literal whose text is more than one ``<number> <unit>`` pair, like
``INTERVAL '1 day 02:00'``, keeps its whole text (sqlglot would keep its first pair only).

The dialect registers itself with sqlglot under the name ``matview``.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.generators.postgres import PostgresGenerator
from sqlglot.parsers.postgres import PostgresParser
from sqlglot.tokens import TokenType
from sqlglot.trie import new_trie


class Explain(exp.Expression):
    """``EXPLAIN``: ``this`` is the explained statement, ``stage`` the plan stage (or None)."""

    arg_types = {"this": True, "stage": False}


EXPLAIN_STAGES = ("RAW", "OPTIMIZED", "PHYSICAL")


def _show(kind: str) -> Callable[[MatviewParser], exp.Show]:
    def parse(self: MatviewParser) -> exp.Show:
        return self.expression(exp.Show(this=kind))

    return parse


class MatviewParser(PostgresParser):
    """PostgreSQL's parser with matview's EXPLAIN and SHOW statements."""

    STATEMENT_PARSERS = {
        **PostgresParser.STATEMENT_PARSERS,
        TokenType.DESCRIBE: lambda self: self._parse_explain_or_describe(),
        TokenType.SHOW: lambda self: self._parse_show(),
    }

    SHOW_PARSERS = {
        "TABLES": _show("TABLES"),
        "VIEWS": _show("VIEWS"),
        "MATERIALIZED VIEWS": _show("MATERIALIZED VIEWS"),
        "COLUMNS": lambda self: self._parse_show_columns(),
    }
    SHOW_TRIE = new_trie(key.split(" ") for key in SHOW_PARSERS)

    def _parse_explain_or_describe(self) -> exp.Expr:
        if self._prev.text.upper() != "EXPLAIN":
            return self._parse_describe()
        stage = None
        if self._match_texts(EXPLAIN_STAGES):
            stage = self._prev.text.lower()
            if not self._match_text_seq("PLAN", "FOR"):
                self.raise_error("Expected PLAN FOR")
        else:
            self._match_text_seq("PLAN", "FOR")
        statement = self._parse_statement()
        if statement is None:
            self.raise_error("Expected a statement to explain")
        return self.expression(Explain(this=statement, stage=stage))

    def _parse_interval_span(self, this: exp.Expr,
                             parse_function_unit: bool = True) -> exp.Interval:
        if this is not None and this.is_string:
            text = this.name
            parts = exp.INTERVAL_STRING_RE.findall(text)
            if len(parts) == 1 and not exp.INTERVAL_STRING_RE.fullmatch(text):
                return self.expression(exp.Interval(this=this))
        return super()._parse_interval_span(this, parse_function_unit)

    def _parse_show_columns(self) -> exp.Show:
        if not self._match_set((TokenType.FROM, TokenType.IN)):
            self.raise_error("Expected FROM")
        return self.expression(exp.Show(this="COLUMNS", target=self._parse_table_parts()))


def _explain_sql(self: PostgresGenerator, expression: Explain) -> str:
    stage = expression.args.get("stage")
    prefix = f"EXPLAIN {stage.upper()} PLAN FOR" if stage else "EXPLAIN"
    return f"{prefix} {self.sql(expression, 'this')}"


class MatviewGenerator(PostgresGenerator):
    """PostgreSQL's generator, printing matview's EXPLAIN and SHOW statements back."""

    TRANSFORMS = {**PostgresGenerator.TRANSFORMS, Explain: _explain_sql}

    def show_sql(self, expression: exp.Show) -> str:
        target = self.sql(expression, "target")
        return f"SHOW {expression.name}" + (f" FROM {target}" if target else "")


class Matview(Postgres):
    """The ``matview`` dialect (see the module docstring)."""

    class Tokenizer(Postgres.Tokenizer):
        COMMANDS = Postgres.Tokenizer.COMMANDS - {TokenType.SHOW}
        KEYWORDS = {**Postgres.Tokenizer.KEYWORDS, "EXPLAIN": TokenType.DESCRIBE}

    Parser = MatviewParser
    Generator = MatviewGenerator

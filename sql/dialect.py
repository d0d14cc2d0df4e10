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
  to the Python API).

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
  anonymous calls) are parsed into ``JsonbAggCall`` and ``ToJsonbCall``;
* ``position(needle IN haystack)`` is the only form of ``position`` (other dialects'
  ``position(needle, haystack[, start])`` is a syntax error), named ``position`` in messages.

The dialect registers itself with sqlglot under the name ``matview``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from matview.sql.errors import InvalidValueError, SqlSyntaxError
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.generators.postgres import PostgresGenerator
from sqlglot.parsers.postgres import PostgresParser
from sqlglot.tokens import TokenType
from sqlglot.trie import new_trie

E = TypeVar("E", bound=exp.Expr)


class Explain(exp.Expression):
    """``EXPLAIN``: ``this`` is the explained statement (or, with ``view`` set, the name of
    the explained materialized view), ``stage`` the lower-case stage (None: not written),
    ``format`` the lower-case format (None: not written), ``options`` the lower-case option
    names (a list of ``exp.Var``, in the order written)."""

    arg_types = {"this": True, "stage": False, "format": False, "options": False,
                 "view": False}


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


ARGUMENT_COUNT = "argument_count"
"""``meta`` key of a function call: the number of arguments it was written with."""

WRITTEN_NAME = "written_name"
"""``meta`` key of a function call: its name as written, lower-case (``substr``, not
sqlglot's ``SUBSTRING``)."""


WINDOW_CALLS: dict[type[exp.Expr], str] = {
    exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank",
    exp.PercentRank: "percent_rank", exp.CumeDist: "cume_dist", exp.Ntile: "ntile",
    exp.Lag: "lag", exp.Lead: "lead", exp.FirstValue: "first_value",
    exp.LastValue: "last_value", exp.NthValue: "nth_value",
}
"""The window-only functions (``sql/windows.py``), by the node sqlglot parses them into."""

CALL_NAMES: dict[type[exp.Expr], frozenset[str]] = {
    exp.Lower: frozenset({"lower"}), exp.Upper: frozenset({"upper"}),
    exp.Length: frozenset({"length", "char_length", "character_length"}),
    exp.Substring: frozenset({"substr", "substring"}), exp.Abs: frozenset({"abs"}),
    exp.StrPosition: frozenset({"strpos", "position"}),
    DatePartCall: frozenset({"date_part"}), DateTruncCall: frozenset({"date_trunc"}),
    exp.Round: frozenset({"round"}), exp.Coalesce: frozenset({"coalesce"}),
    exp.Nullif: frozenset({"nullif"}), exp.Mod: frozenset({"mod"}),
    exp.Count: frozenset({"count"}), exp.Sum: frozenset({"sum"}), exp.Avg: frozenset({"avg"}),
    exp.Min: frozenset({"min"}), exp.Max: frozenset({"max"}),
    exp.LogicalAnd: frozenset({"bool_and"}), exp.LogicalOr: frozenset({"bool_or"}),
    exp.Variance: frozenset({"variance", "var_samp"}), exp.VariancePop: frozenset({"var_pop"}),
    exp.Stddev: frozenset({"stddev"}), exp.StddevSamp: frozenset({"stddev_samp"}),
    exp.StddevPop: frozenset({"stddev_pop"}), exp.Grouping: frozenset({"grouping"}),
    exp.GroupConcat: frozenset({"string_agg"}), exp.ArrayAgg: frozenset({"array_agg"}),
    JsonbAggCall: frozenset({"jsonb_agg"}), ToJsonbCall: frozenset({"to_jsonb"}),
    exp.Explode: frozenset({"unnest"}),
    exp.ExplodingGenerateSeries: frozenset({"generate_series"}),
    **{node: frozenset({name}) for node, name in WINDOW_CALLS.items()},
}
"""The node kinds the binder binds from function calls, and the names (PostgreSQL's) under
which it does; it checks their arguments' count itself (``calls.check_call``)."""


class Subscribe(exp.Expression):
    """``SUBSCRIBE [TO] name ...``: ``this`` is the followed relation (a ``Table``; None when
    not a name, like a parenthesized query); what follows the name is not kept."""

    arg_types = {"this": False}


class CreateSink(exp.Expression):
    """``CREATE SINK name FROM view INTO PARQUET | DELTA 'directory'``."""

    arg_types = {"this": True, "view": True, "kind": True, "path": True}


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


_SUBSCRIBED = re.compile(r'\s*(?:TO\s+)?(?:"((?:[^"]|"")+)"|([A-Za-z_][\w$]*))(?![\w$.])',
                         re.IGNORECASE)
"""The relation name at the start of ``SUBSCRIBE``'s text (quoted, or not)."""


LEADING_FIELDS = frozenset({"year", "month", "day", "hour", "minute"})
"""The interval units that take a leading field precision, ``INTERVAL '90' DAY (3)``."""

EXPLAIN_STAGES = ("RAW", "DECORRELATED", "OPTIMIZED", "PHYSICAL")
EXPLAIN_FORMATS = ("TEXT", "JSON", "DOT")
EXPLAIN_OPTIONS = ("arity", "types", "keys", "humanized expressions")


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
        TokenType.COMMAND: lambda self: self._parse_command(),
    }

    FUNCTIONS = {**PostgresParser.FUNCTIONS, "DATE_PART": DatePartCall.from_arg_list,
                 "DATE_TRUNC": DateTruncCall.from_arg_list,
                 "JSONB_AGG": JsonbAggCall.from_arg_list, "TO_JSONB": ToJsonbCall.from_arg_list}

    FUNCTION_PARSERS = {
        **{name: parse for name, parse in PostgresParser.FUNCTION_PARSERS.items()
           if name != "DATE_PART"},
        "POSITION": lambda self: self._parse_position_in(),
    }

    SHOW_PARSERS = {
        "TABLES": _show("TABLES"),
        "VIEWS": _show("VIEWS"),
        "MATERIALIZED VIEWS": _show("MATERIALIZED VIEWS"),
        "COLUMNS": lambda self: self._parse_show_columns(),
    }
    SHOW_TRIE = new_trie(key.split(" ") for key in SHOW_PARSERS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._call_names: list[str] = []

    def _parse_function_call(self, *args: Any, **kwargs: Any) -> exp.Expr | None:
        """sqlglot's, remembering the name of the call being parsed; a builder of another
        dialect's function that fails on the arguments given (``var_map(a)``) is a syntax
        error at the function's name."""
        name = self._curr
        self._call_names.append(name.text.lower() if name else "")
        try:
            return super()._parse_function_call(*args, **kwargs)
        except (IndexError, KeyError, TypeError, ValueError):
            self.raise_error(f"invalid arguments of function {name.text}", name)
            return None
        finally:
            self._call_names.pop()

    def validate_expression(self, expression: E, args: list | None = None) -> E:
        """An expression built from a function call's ``args`` keeps its name and argument
        count as written, and is not validated when the binder checks its arguments itself
        (``CALL_NAMES``); other expressions are validated as sqlglot does."""
        if args is not None:
            expression.meta[ARGUMENT_COUNT] = len(args)
            if self._call_names:
                expression.meta[WRITTEN_NAME] = self._call_names[-1]
            if type(expression) in CALL_NAMES:
                return expression
        return super().validate_expression(expression, args)

    def _parse_create(self) -> exp.Expr:
        """``CREATE SINK ...`` (``CreateSink``), or another CREATE as PostgreSQL's."""
        if not (self._curr and self._curr.text.upper() == "SINK"):
            return super()._parse_create()
        start = self._prev
        self._advance()
        name = self._parse_table_parts()
        if not self._match(TokenType.FROM):
            self.raise_error("expected FROM after CREATE SINK's name")
        view = self._parse_table_parts()
        if not self._match_text_seq("INTO"):
            self.raise_error("expected INTO after CREATE SINK's view")
        kind = self._parse_var(any_token=True)
        path = self._parse_string()
        if kind is None or path is None:
            self.raise_error("expected PARQUET 'directory' or DELTA 'directory' after INTO")
        return self.expression(CreateSink(this=name, view=view, kind=kind,
                                          path=path)).update_positions(start)

    def _parse_with(self, skip_with_token: bool = False) -> exp.With | None:
        """``WITH MUTUALLY RECURSIVE ...`` (``MutuallyRecursive``), or PostgreSQL's WITH."""
        if skip_with_token or not (self._curr and self._curr.token_type == TokenType.WITH
                                   and self._next and self._next.text.upper() == "MUTUALLY"):
            return super()._parse_with(skip_with_token)
        start = self._curr
        self._advance(2)
        if not self._match(TokenType.RECURSIVE):
            self.raise_error("expected RECURSIVE after WITH MUTUALLY")
        limit = at_limit = None
        if self._match(TokenType.L_PAREN):
            at_limit = self._curr.text.lower() if self._curr else ""
            if at_limit not in ("return", "error"):
                self.raise_error("expected RETURN AT RECURSION LIMIT n or ERROR AT RECURSION "
                                 "LIMIT n")
            self._advance()
            if not self._match_text_seq("AT", "RECURSION", "LIMIT"):
                self.raise_error(f"expected AT RECURSION LIMIT after {at_limit.upper()}")
            limit = self._parse_number()
            self._match_r_paren()
        bindings = []
        while True:
            name = self._parse_id_var()
            if name is None:
                self.raise_error("expected the name of a recursive binding")
            columns = self._parse_wrapped_csv(self._parse_column_def_of_binding)
            if not self._match(TokenType.ALIAS):
                self.raise_error("expected AS after a recursive binding's columns")
            query = self._parse_wrapped(self._parse_statement)
            bindings.append(self.expression(RecursiveBinding(this=query, alias=name,
                                                             columns=columns)))
            if not self._match(TokenType.COMMA):
                break
        return self.expression(MutuallyRecursive(
            expressions=bindings, recursive=True, limit=limit,
            at_limit=at_limit)).update_positions(start)

    def _parse_column_def_of_binding(self) -> exp.Expr | None:
        """``column type`` of a recursive binding (a type is required)."""
        name = self._parse_id_var()
        kind = self._parse_types()
        if name is None or kind is None:
            self.raise_error("expected a column name and its type")
        return self.expression(exp.ColumnDef(this=name, kind=kind))

    def _parse_drop(self, exists: bool = False, kind: str | None = None) -> exp.Expr:
        """``DROP SINK [IF EXISTS] name`` (``DropSink``), or another DROP."""
        if not (self._curr and self._curr.text.upper() == "SINK"):
            return super()._parse_drop(exists, kind)
        start = self._prev
        self._advance()
        if_exists = self._match_text_seq("IF", "EXISTS")
        return self.expression(DropSink(this=self._parse_table_parts(),
                                        exists=if_exists)).update_positions(start)

    def _parse_command(self) -> exp.Expr:
        """``SUBSCRIBE`` (a command token), or another command kept as sqlglot keeps it."""
        start = self._prev
        if start.text.upper() != "SUBSCRIBE":
            return self._parse_as_command(start)
        rest = self._curr.text if self._curr else ""  # a command's text is one token
        while self._curr:
            self._advance()
        found = _SUBSCRIBED.match(rest)
        target = None
        if found and found.group(1):
            target = exp.table_(exp.Identifier(this=found.group(1).replace('""', '"'),
                                               quoted=True))
        elif found and found.group(2):
            target = exp.table_(exp.Identifier(this=found.group(2), quoted=False))
        return self.expression(Subscribe(this=target)).update_positions(start)

    def _parse_explain_or_describe(self) -> exp.Expr:
        if self._prev.text.upper() != "EXPLAIN":
            return self._parse_describe()
        if self._match_text_seq("ANALYZE"):
            return self._parse_explain_analyze()
        stage = None
        if self._match_text_seq("OPTIMIZER", "TRACE"):
            stage = "trace"
        elif self._match_texts(EXPLAIN_STAGES):
            stage = self._prev.text.lower()
            if not self._match_text_seq("PLAN"):
                self.raise_error("Expected PLAN")
        headed = stage is not None or self._match_text_seq("PLAN")
        options = self._parse_explain_options()
        fmt = self._parse_explain_format()
        if headed or options is not None or fmt is not None:
            if not self._match(TokenType.FOR):
                self.raise_error("Expected FOR")
        if self._match_text_seq("MATERIALIZED", "VIEW"):
            return self.expression(Explain(this=self._parse_table_parts(), stage=stage,
                                           format=fmt, options=options, view=True))
        statement = self._parse_statement()
        if statement is None:
            self.raise_error("Expected a statement to explain")
        return self.expression(Explain(this=statement, stage=stage, format=fmt,
                                       options=options))

    def _parse_explain_analyze(self) -> Explain:
        fmt = self._parse_explain_format()
        if not self._match_text_seq("MATERIALIZED", "VIEW"):
            self.raise_error("EXPLAIN ANALYZE explains a materialized view: expected "
                             "MATERIALIZED VIEW name")
        return self.expression(Explain(this=self._parse_table_parts(), stage="analyze",
                                       format=fmt, view=True))

    def _parse_explain_options(self) -> list[exp.Var] | None:
        """``WITH (option, ...)`` (None when absent; a ``WITH`` not followed by ``(`` starts
        the explained query's common table expressions)."""
        if not (self._curr and self._curr.token_type == TokenType.WITH and self._next
                and self._next.token_type == TokenType.L_PAREN):
            return None
        self._advance(2)
        options: list[exp.Var] = []
        while True:
            first, words = self._curr, []
            while self._curr and self._curr.token_type not in (TokenType.COMMA,
                                                                 TokenType.R_PAREN):
                words.append(self._curr.text.lower())
                self._advance()
            option = " ".join(words)
            if option not in EXPLAIN_OPTIONS:
                line, col = (first.line, first.col - len(first.text) + 1) if first else (
                    None, None)
                raise SqlSyntaxError(f'unknown EXPLAIN option "{option}"; expected one of '
                                     + ", ".join(EXPLAIN_OPTIONS), line, col)
            options.append(exp.var(option))
            if not self._match(TokenType.COMMA):
                break
        if not self._match(TokenType.R_PAREN):
            self.raise_error("Expected )")
        return options

    def _parse_explain_format(self) -> str | None:
        if not self._match(TokenType.ALIAS):
            return None
        if not self._match_texts(EXPLAIN_FORMATS):
            self.raise_error("Expected TEXT, JSON or DOT after AS")
        return self._prev.text.lower()

    def _parse_interval_span(self, this: exp.Expr,
                             parse_function_unit: bool = True) -> exp.Interval:
        if this is not None and this.is_string:
            text = this.name
            parts = exp.INTERVAL_STRING_RE.findall(text)
            if len(parts) == 1 and not exp.INTERVAL_STRING_RE.fullmatch(text):
                return self.expression(exp.Interval(this=this))
        interval = super()._parse_interval_span(this, parse_function_unit)
        unit = interval.args.get("unit")
        if isinstance(unit, exp.Func) and unit.meta.get(WRITTEN_NAME) in LEADING_FIELDS:
            self._check_leading_precision(interval, unit)
            interval.set("unit", exp.var(unit.meta[WRITTEN_NAME].upper()))
        return interval

    def _check_leading_precision(self, interval: exp.Interval, unit: exp.Func) -> None:
        """Raise unless ``unit`` is ``<field> (<digits>)`` (a syntax error) and the
        interval's value has at most ``<digits>`` digits before its decimal point (an invalid
        value, as the SQL standard's interval field overflow)."""
        precision = unit.this
        if unit.meta.get(ARGUMENT_COUNT) != 1 or not (isinstance(precision, exp.Literal)
                                                      and precision.is_int):
            self.raise_error("expected an integer leading field precision: "
                             f"{unit.meta[WRITTEN_NAME].upper()} (<digits>)", self._prev)
        value = interval.this.name if interval.this is not None else ""
        digits = len(re.sub(r"[^0-9]", "", value.split(".")[0]))
        if digits > int(precision.name):
            raise InvalidValueError.at(f'interval field value out of range: "{value}" has '
                                       f"more than {precision.name} digits", interval.this)

    def _parse_extract(self) -> exp.Extract | exp.Anonymous:
        """sqlglot's, keeping the position of the field's keyword (``EXTRACT(YEAR ...``)."""
        field = self._curr
        extract = super()._parse_extract()
        if isinstance(extract.this, exp.Var) and field is not None:
            extract.this.update_positions(field)
        return extract

    def _parse_position_in(self) -> exp.StrPosition:
        """``position(needle IN haystack)``, PostgreSQL's only form."""
        needle = self._parse_bitwise()
        if not self._match(TokenType.IN):
            self.raise_error("Expected IN")
        position = self.expression(exp.StrPosition(this=self._parse_bitwise(), substr=needle))
        position.meta[WRITTEN_NAME] = "position"
        return position

    def _parse_show_columns(self) -> exp.Show:
        if not self._match_set((TokenType.FROM, TokenType.IN)):
            self.raise_error("Expected FROM")
        return self.expression(exp.Show(this="COLUMNS", target=self._parse_table_parts()))


def _explain_sql(self: PostgresGenerator, expression: Explain) -> str:
    stage, fmt = expression.args.get("stage"), expression.args.get("format")
    options = expression.args.get("options")
    target = self.sql(expression, "this")
    if expression.args.get("view"):
        target = f"MATERIALIZED VIEW {target}"
    if stage == "analyze":
        return " ".join(["EXPLAIN ANALYZE", *([f"AS {fmt.upper()}"] if fmt else []), target])
    words = ["EXPLAIN"]
    if stage:
        words.append("OPTIMIZER TRACE" if stage == "trace" else f"{stage.upper()} PLAN")
    if options:
        words.append("WITH (" + ", ".join(o.name.upper() for o in options) + ")")
    if fmt:
        words.append(f"AS {fmt.upper()}")
    if len(words) > 1:
        words.append("FOR")
    return " ".join([*words, target])


def _mutually_recursive_sql(self: PostgresGenerator, expression: MutuallyRecursive) -> str:
    option = ""
    if expression.args.get("limit") is not None:
        option = (f" ({str(expression.args['at_limit']).upper()} AT RECURSION LIMIT "
                  f"{self.sql(expression, 'limit')})")
    return f"WITH MUTUALLY RECURSIVE{option} {self.expressions(expression, flat=True)}"


def _recursive_binding_sql(self: PostgresGenerator, expression: RecursiveBinding) -> str:
    columns = ", ".join(self.sql(c) for c in expression.args["columns"])
    return (f"{self.sql(expression, 'alias')} ({columns}) AS "
            f"({self.sql(expression, 'this')})")


class MatviewGenerator(PostgresGenerator):
    """PostgreSQL's generator, printing matview's EXPLAIN, SHOW, SUBSCRIBE and WITH
    MUTUALLY RECURSIVE back."""

    TRANSFORMS = {**PostgresGenerator.TRANSFORMS, Explain: _explain_sql,
                  Subscribe: lambda self, e: f"SUBSCRIBE {self.sql(e, 'this')}".rstrip(),
                  MutuallyRecursive: _mutually_recursive_sql,
                  RecursiveBinding: _recursive_binding_sql}

    def show_sql(self, expression: exp.Show) -> str:
        target = self.sql(expression, "target")
        return f"SHOW {expression.name}" + (f" FROM {target}" if target else "")


class Matview(Postgres):
    """The ``matview`` dialect (see the module docstring)."""

    class Tokenizer(Postgres.Tokenizer):
        COMMANDS = Postgres.Tokenizer.COMMANDS - {TokenType.SHOW}
        KEYWORDS = {**Postgres.Tokenizer.KEYWORDS, "EXPLAIN": TokenType.DESCRIBE,
                    "SUBSCRIBE": TokenType.COMMAND}

    Parser = MatviewParser
    Generator = MatviewGenerator

"""The parser of matview's SQL dialect (``dialect`` lists the syntax it adds and changes):
PostgreSQL's parser with matview's statements (EXPLAIN, SHOW, SUBSCRIBE, CREATE and DROP
SINK and SOURCE, WITH MUTUALLY RECURSIVE) and its changes to function calls (names and
argument counts kept as written, ``call_names.CALL_NAMES`` not checked), interval literals,
``date_part``, ``date_trunc``, ``EXTRACT`` and ``position``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from matview.sql.call_names import ARGUMENT_COUNT, CALL_NAMES, WRITTEN_NAME
from matview.sql.dialect_lake import LakeParser
from matview.sql.dialect_nodes import (
    EXPLAIN_FORMATS,
    EXPLAIN_OPTIONS,
    EXPLAIN_STAGES,
    AsOf,
    DatePartCall,
    DateTruncCall,
    Explain,
    JsonbAggCall,
    MutuallyRecursive,
    OctetLengthCall,
    RecursiveBinding,
    Subscribe,
    ToCharCall,
    ToJsonbCall,
)
from matview.sql.errors import InvalidValueError, SqlSyntaxError
from sqlglot import exp
from sqlglot.parsers.postgres import PostgresParser
from sqlglot.tokens import TokenType
from sqlglot.trie import new_trie

E = TypeVar("E", bound=exp.Expr)


_SUBSCRIBED = re.compile(r'\s*(?:TO\s+)?(?:"((?:[^"]|"")+)"|([A-Za-z_][\w$]*))(?![\w$.])',
                         re.IGNORECASE)
"""The relation name at the start of ``SUBSCRIBE``'s text (quoted, or not)."""


_TIME_STARTS = frozenset({TokenType.NUMBER, TokenType.STRING, TokenType.L_PAREN, TokenType.DASH,
                          TokenType.TIMESTAMP, TokenType.TIMESTAMPTZ})
"""The tokens an ``AS OF`` time may start with (after ``AS OF`` anything else is an alias)."""


LEADING_FIELDS = frozenset({"year", "month", "day", "hour", "minute"})
"""The interval units that take a leading field precision, ``INTERVAL '90' DAY (3)``."""


def _show(kind: str) -> Callable[[MatviewParser], exp.Show]:
    def parse(self: MatviewParser) -> exp.Show:
        return self.expression(exp.Show(this=kind))

    return parse


class MatviewParser(LakeParser):
    """PostgreSQL's parser with matview's EXPLAIN and SHOW statements (and its ALTER
    syntax, ``dialect_alter``, its refresh policies, ``dialect_refresh``, its sinks and
    sources, ``dialect_lake``)."""

    STATEMENT_PARSERS = {
        **PostgresParser.STATEMENT_PARSERS,
        TokenType.DESCRIBE: lambda self: self._parse_explain_or_describe(),
        TokenType.SHOW: lambda self: self._parse_show(),
        TokenType.COMMAND: lambda self: self._parse_command(),
    }

    FUNCTIONS = {**PostgresParser.FUNCTIONS, "DATE_PART": DatePartCall.from_arg_list,
                 "DATE_TRUNC": DateTruncCall.from_arg_list,
                 "JSONB_AGG": JsonbAggCall.from_arg_list, "TO_JSONB": ToJsonbCall.from_arg_list,
                 "TO_CHAR": ToCharCall.from_arg_list,
                 "OCTET_LENGTH": OctetLengthCall.from_arg_list}

    FUNCTION_PARSERS = {
        **{name: parse for name, parse in PostgresParser.FUNCTION_PARSERS.items()
           if name != "DATE_PART"},
        "POSITION": lambda self: self._parse_position_in(),
    }

    PLACEHOLDER_PARSERS = {
        **PostgresParser.PLACEHOLDER_PARSERS,
        # a ``?`` keeps where it was written: parameters bind in the order of the text
        TokenType.PLACEHOLDER: lambda self: self.expression(exp.Placeholder()).update_positions(
            self._prev),
    }

    SHOW_PARSERS = {
        "TABLES": _show("TABLES"),
        "VIEWS": _show("VIEWS"),
        "MATERIALIZED VIEWS": _show("MATERIALIZED VIEWS"),
        "SOURCES": _show("SOURCES"),
        "SETTINGS": _show("SETTINGS"),
        "COMMENTS": _show("COMMENTS"),
        "INDEXES": lambda self: self._parse_show_indexes(),
        "COLUMNS": lambda self: self._parse_show_columns(),
        **{f"CREATE {kind}": lambda self, kind=kind: self._parse_show_create(kind)
           for kind in ("TABLE", "VIEW", "MATERIALIZED VIEW", "SOURCE")},
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
        if isinstance(expression, exp.Comment) and expression.expression is None and \
                self._match(TokenType.NULL):  # COMMENT ON ... IS NULL: the comment removed
            expression.set("expression", exp.null())
        return super().validate_expression(expression, args)

    def _parse_create(self) -> exp.Expr:
        """``CREATE SINK`` and ``CREATE SOURCE`` (``dialect_lake``), ``CREATE DEFAULT INDEX
        ON x`` (an index without columns, marked ``default`` in its meta), or another CREATE
        as PostgreSQL's."""
        if self._curr and self._curr.text.upper() == "DEFAULT" and self._next and \
                self._next.text.upper() == "INDEX":
            start = self._prev
            self._advance(2)
            exists = self._match_text_seq("IF", "NOT", "EXISTS")
            if not self._match(TokenType.ON):
                self.raise_error("expected ON after CREATE DEFAULT INDEX")
            index = exp.Index(table=self._parse_table_parts())
            create = self.expression(exp.Create(this=index, kind="INDEX", exists=exists))
            create.meta["default"] = True
            return create.update_positions(start)
        word = self._curr.text.upper() if self._curr else ""
        if word not in ("SINK", "SOURCE"):
            return super()._parse_create()
        start = self._prev
        self._advance()
        return self._parse_create_sink(start) if word == "SINK" else \
            self._parse_create_source(start)

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
        """``DROP SINK`` and ``DROP SOURCE`` (``dialect_lake``), or another DROP."""
        word = self._curr.text.upper() if self._curr else ""
        if word not in ("SINK", "SOURCE"):
            return super()._parse_drop(exists, kind)
        start = self._prev
        self._advance()
        return self._parse_drop_sink(start) if word == "SINK" else \
            self._parse_drop_source(start)

    def _parse_statement(self) -> exp.Expr | None:
        """A statement, and a query's trailing ``AS OF time``."""
        statement = super()._parse_statement()
        if statement is not None and self._match_text_seq("AS", "OF"):
            return self.expression(AsOf(this=statement, expression=self._parse_bitwise()))
        return statement

    def _parse_table_alias(self, alias_tokens: Any = None) -> exp.TableAlias | None:
        return None if self._at_as_of() else super()._parse_table_alias(alias_tokens)

    def _parse_alias(self, this: exp.Expr | None, explicit: bool = False) -> exp.Expr | None:
        return this if self._at_as_of() else super()._parse_alias(this, explicit)

    def _at_as_of(self) -> bool:
        """Whether the next tokens are ``AS OF`` and a time (a query's time, not an alias
        ``of``)."""
        after = self._tokens[self._index + 2] if self._index + 2 < len(self._tokens) else None
        return bool(self._curr and self._next and self._curr.token_type == TokenType.ALIAS
                    and self._next.text.upper() == "OF" and after is not None
                    and after.token_type in _TIME_STARTS)

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
        after = rest[found.end():].strip() if found else ""
        options = exp.Literal.string(after) if target is not None and after else None
        return self.expression(Subscribe(this=target, options=options)).update_positions(start)

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

    def _parse_show_create(self, kind: str) -> exp.Show:
        return self.expression(exp.Show(this=f"CREATE {kind}", target=self._parse_table_parts()))

    def _parse_show_indexes(self) -> exp.Show:
        target = self._parse_table_parts() if self._match(TokenType.ON) else None
        return self.expression(exp.Show(this="INDEXES", target=target))

    def _parse_show_columns(self) -> exp.Show:
        if not self._match_set((TokenType.FROM, TokenType.IN)):
            self.raise_error("Expected FROM")
        return self.expression(exp.Show(this="COLUMNS", target=self._parse_table_parts()))

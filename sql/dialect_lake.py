"""The syntax of matview's statements that connect it to files and lakes, which the parser
(``dialect_parser``) reads beyond PostgreSQL's: ``CREATE SINK name FROM view INTO PARQUET |
DELTA 'directory' [ENVELOPE CHANGES | CONTENTS]`` (``CreateSink``), ``CREATE SOURCE name
[(column type, ...)] FROM DELTA 'uri' | PARQUET 'folder' | STREAM`` (``CreateSource``), and
``DROP SINK | SOURCE [IF EXISTS] name`` (``DropSink``; a source is dropped as an
``exp.Drop`` of kind ``SOURCE``).
"""

from __future__ import annotations

from matview.sql.dialect_nodes import CreateSink, CreateSource, DropSink
from matview.sql.dialect_refresh import RefreshParser
from sqlglot import exp
from sqlglot.tokens import Token, TokenType

SOURCE_KINDS = ("DELTA", "PARQUET", "STREAM")
"""What a source follows: a Delta Lake table, a folder of Parquet files, or the batches a
Spark stream writes (``foreachBatch``)."""


class LakeParser(RefreshParser):
    """PostgreSQL's parser reading matview's sinks and sources (see the module docstring)."""

    def _parse_create_sink(self, start: Token) -> exp.Expr:
        """``CREATE SINK`` after its SINK."""
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
        envelope = self._parse_var(any_token=True) if self._match_text_seq("ENVELOPE") \
            else None
        return self.expression(CreateSink(this=name, view=view, kind=kind, path=path,
                                          envelope=envelope)).update_positions(start)

    def _parse_create_source(self, start: Token) -> exp.Expr:
        """``CREATE SOURCE`` after its SOURCE."""
        exists = self._match_text_seq("IF", "NOT", "EXISTS")
        name = self._parse_table_parts(schema=True)
        schema = self._parse_schema(this=name)
        columns = schema.expressions if isinstance(schema, exp.Schema) else None
        if not self._match(TokenType.FROM):
            self.raise_error("expected FROM after CREATE SOURCE's name and columns")
        kind = self._curr.text.upper() if self._curr else ""
        if kind not in SOURCE_KINDS:
            self.raise_error("expected DELTA 'uri', PARQUET 'folder' or STREAM after FROM")
        self._advance()
        path = None if kind == "STREAM" else self._parse_string()
        if kind != "STREAM" and path is None:
            self.raise_error(f"expected the {kind.lower()} table's location after {kind}")
        return self.expression(CreateSource(this=name, columns=columns, kind=kind, path=path,
                                            exists=exists)).update_positions(start)

    def _parse_drop_sink(self, start: Token) -> exp.Expr:
        """``DROP SINK`` after its SINK."""
        if_exists = self._match_text_seq("IF", "EXISTS")
        return self.expression(DropSink(this=self._parse_table_parts(),
                                        exists=if_exists)).update_positions(start)

    def _parse_drop_source(self, start: Token) -> exp.Expr:
        """``DROP SOURCE [IF EXISTS] name, ... [CASCADE]`` after its SOURCE."""
        if_exists = self._match_text_seq("IF", "EXISTS")
        tables = self._parse_csv(self._parse_table_parts)
        cascade = self._match_text_seq("CASCADE")
        return self.expression(exp.Drop(tables=tables, kind="SOURCE", exists=if_exists,
                                        cascade=cascade)).update_positions(start)

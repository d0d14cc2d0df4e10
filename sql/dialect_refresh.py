"""The refresh policy of a materialized view, which matview's parser (``dialect_parser``)
reads among CREATE's properties: ``WITH (REFRESH POLICY = AUTO | INCREMENTAL | INCREMENTAL
STRICT | FULL)`` (Databricks' words), a ``Property`` named ``refresh policy`` whose value
is the words written, upper case (``sql.ddl`` checks them)."""

from __future__ import annotations

from matview.sql.dialect_alter import AlterParser
from sqlglot import exp
from sqlglot.tokens import TokenType


class RefreshParser(AlterParser):
    """PostgreSQL's parser reading a refresh policy among a CREATE's properties."""

    def _parse_property(self) -> exp.Expr | list[exp.Expr] | None:
        """``REFRESH POLICY = words``, or another property as sqlglot reads it."""
        start = self._curr
        if not self._match_text_seq("REFRESH", "POLICY"):
            return super()._parse_property()
        self._match(TokenType.EQ)
        words = []
        while self._curr and self._curr.token_type not in (TokenType.R_PAREN, TokenType.COMMA):
            words.append(self._curr.text.upper())
            self._advance()
        return self.expression(exp.Property(this=exp.var("refresh policy"),
                                            value=exp.var(" ".join(words)))
                               ).update_positions(start)

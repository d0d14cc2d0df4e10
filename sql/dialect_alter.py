"""The ALTER syntax matview's parser (``dialect_parser``) reads beyond PostgreSQL's as
sqlglot reads it: ``ALTER MATERIALIZED VIEW`` (an ALTER VIEW marked ``materialized`` in its
meta), ``ALTER TABLE ... RENAME CONSTRAINT a TO b`` (``RenameConstraint``), and ``ADD
CHECK (...)`` and ``ADD EXCLUDE ...`` as constraints (sqlglot reads the whole statement as
a command), which the binder refuses by name.
"""

from __future__ import annotations

from typing import ClassVar

from matview.sql.dialect_nodes import RenameConstraint
from sqlglot import exp
from sqlglot.parsers.postgres import PostgresParser


class AlterParser(PostgresParser):
    """PostgreSQL's parser reading matview's ALTER syntax (see the module docstring)."""

    ADD_CONSTRAINT_KEYWORDS: ClassVar[set[str]] = {"CHECK", "EXCLUDE"}

    def _parse_alter(self) -> exp.Alter | exp.Command:
        """An ALTER; ``ALTER MATERIALIZED VIEW`` is an ALTER VIEW marked in its meta."""
        materialized = self._match_text_seq("MATERIALIZED", "VIEW", advance=False)
        self._advance(int(materialized))
        altered = super()._parse_alter()
        altered.meta["materialized"] = materialized
        return altered

    def _parse_alter_table_rename(self) -> exp.Expr | None:
        """``RENAME CONSTRAINT a TO b``, or another RENAME as sqlglot reads it."""
        if not self._match_text_seq("CONSTRAINT"):
            return super()._parse_alter_table_rename()
        old = self._parse_id_var()
        if old is None or not self._match_text_seq("TO"):
            return None
        return self.expression(RenameConstraint(this=old, to=self._parse_id_var()))

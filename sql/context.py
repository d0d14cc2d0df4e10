"""The environment a query is bound in: the catalog and the common table expressions in scope."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from matview.sql.catalog import Catalog
from matview.sql.statements import Query


@dataclass(frozen=True)
class Context:
    """``catalog`` for stored objects; ``ctes`` the WITH queries visible by name (they shadow
    stored objects)."""

    catalog: Catalog
    ctes: Mapping[str, Query] = field(default_factory=dict)

    def with_cte(self, name: str, query: Query) -> Context:
        """This context with one more common table expression."""
        return Context(self.catalog, {**self.ctes, name: query})

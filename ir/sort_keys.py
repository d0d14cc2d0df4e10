"""ORDER BY keys over a row's columns (``SortKey``), as ``relation.TopK`` and window calls
sort by them, and the total order that breaks their ties (``total_order``).
"""

from __future__ import annotations

from collections.abc import Sequence

SortKey = tuple[int, bool, bool]
"""An ORDER BY key: (column, descending, nulls first)."""


def total_order(keys: Sequence[SortKey], arity: int) -> tuple[SortKey, ...]:
    """``keys`` followed by every column they do not name, ascending with NULLs last: an
    order of rows of ``arity`` columns in which only equal rows tie."""
    named = {column for column, _, _ in keys}
    return tuple(keys) + tuple((c, False, False) for c in range(arity) if c not in named)

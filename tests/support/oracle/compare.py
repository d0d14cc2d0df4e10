"""Multiset comparison of matview's rows with DuckDB's, and readable reports of differences.

Values match when both are NULL; numbers (int, Decimal, float; never bool) match by value,
exactly when both are integral and else within a relative tolerance of 1e-9; everything else
(text, booleans, dates, timestamps, intervals: matview's ``PgInterval`` is a ``timedelta``)
matches by equality. Rows match when all their values
do, and two results match when they hold the same rows with the same multiplicities.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from tests.support.oracle.workload import Row, Value

REL_TOL = 1e-9
SHOWN_ROWS = 40
"""Rows listed per section of a report."""


def _is_number(value: Value) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _is_integral(value: Value) -> bool:
    return isinstance(value, int) or (isinstance(value, Decimal) and value == value.to_integral())


def values_match(a: Value, b: Value) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if _is_number(a) and _is_number(b):
        if _is_integral(a) and _is_integral(b):
            return a == b
        return a == b or math.isclose(float(a), float(b), rel_tol=REL_TOL)  # type: ignore[arg-type]
    if isinstance(a, timedelta) and isinstance(b, timedelta):
        return a == b
    if type(a) is not type(b):
        return False
    return a == b


def rows_match(a: Row, b: Row) -> bool:
    return len(a) == len(b) and all(values_match(x, y) for x, y in zip(a, b))


def _key(value: Value) -> tuple[int, object]:
    """A total order over values of mixed types; numbers by value, to 6 significant digits
    (close numbers land together; exact matching is ``values_match``'s job)."""
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (1, value)
    if _is_number(value):
        return (2, float(f"{float(value):.6g}"))  # type: ignore[arg-type]
    if isinstance(value, str):
        return (3, value)
    if isinstance(value, datetime):
        return (5, value)
    if isinstance(value, list):  # an array
        return (6, tuple(_key(v) for v in value))
    return (4, value)


def row_key(row: Row) -> tuple[tuple[int, object], ...]:
    return tuple(_key(v) for v in row)


def canonical(rows: Iterable[Row]) -> list[Row]:
    """``rows`` in a canonical order."""
    return sorted(rows, key=row_key)


def difference(actual: Sequence[Row], expected: Sequence[Row]) -> tuple[list[Row], list[Row]]:
    """The rows of ``expected`` that ``actual`` lacks, and the rows ``actual`` has beyond
    ``expected``, counting multiplicity."""
    buckets: dict[tuple[tuple[int, object], ...], list[Row]] = defaultdict(list)
    for row in actual:
        buckets[row_key(row)].append(row)
    missing: list[Row] = []
    for row in expected:
        bucket = buckets.get(row_key(row), [])
        found = next((i for i, r in enumerate(bucket) if rows_match(r, row)), None)
        if found is None:
            missing.append(row)
        else:
            bucket.pop(found)
    extra = [r for bucket in buckets.values() for r in bucket]
    # Numbers within tolerance of each other may still round to different keys.
    unmatched: list[Row] = []
    for row in missing:
        found = next((i for i, r in enumerate(extra) if rows_match(r, row)), None)
        if found is None:
            unmatched.append(row)
        else:
            extra.pop(found)
    return canonical(unmatched), canonical(extra)


def _listing(title: str, rows: Sequence[Row]) -> list[str]:
    lines = [f"{title} ({len(rows)}):"]
    lines += [f"    {row!r}" for row in rows[:SHOWN_ROWS]]
    if len(rows) > SHOWN_ROWS:
        lines.append(f"    ... {len(rows) - SHOWN_ROWS} more")
    return lines


@dataclass(frozen=True)
class Context:
    """Where a comparison happened: the seed, the view and the operations so far."""

    seed: int
    view: str
    sql: str
    log: Sequence[str]
    """Every statement and operation applied so far, the last one the latest."""

    def render(self, headline: str, details: Sequence[str]) -> str:
        lines = [f"{headline}: seed {self.seed}, view {self.view}", "view query:"]
        lines += ["    " + line.strip() for line in self.sql.strip().splitlines()]
        lines += list(details)
        lines.append("operations so far (the last one just applied):")
        lines += [f"    {i:2d}. {entry}" for i, entry in enumerate(self.log)]
        return "\n".join(lines)


def mismatch_report(actual: Sequence[Row], expected: Sequence[Row],
                    context: Context, headline: str = "matview differs from DuckDB"
                    ) -> str | None:
    """None when ``actual`` and ``expected`` hold the same rows, else a report saying how
    they differ, and where."""
    missing, extra = difference(actual, expected)
    if not missing and not extra:
        return None
    details = (_listing("expected rows matview lacks", missing)
               + _listing("rows matview has beyond the expected", extra)
               + _listing("matview rows", canonical(actual))
               + _listing("expected rows (DuckDB)", canonical(expected)))
    return context.render(headline, details)

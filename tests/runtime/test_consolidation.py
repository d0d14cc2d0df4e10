"""Consolidation of driver-held updates (``runtime.updates.consolidated_arrow``): the diffs
of equal rows summed and rows whose diffs cancel dropped, whether the rows are integers
without NULLs (sorted in numpy) or not (an Arrow ``group_by``)."""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest
from matview.runtime.arrangements.consolidation import consolidated_arrow
from matview.runtime.arrangements.updates import DIFF


def _expected(table: pa.Table) -> Counter[tuple[object, ...]]:
    """Each row's summed diff (none zero), by plain Python."""
    sums: Counter[tuple[object, ...]] = Counter()
    keys = [c for c in table.column_names if c != DIFF]
    for row in table.to_pylist():
        sums[tuple(row[k] for k in keys)] += row[DIFF]
    return Counter({k: v for k, v in sums.items() if v != 0})


def _got(table: pa.Table) -> Counter[tuple[object, ...]]:
    keys = [c for c in table.column_names if c != DIFF]
    rows = [(tuple(r[k] for k in keys), r[DIFF]) for r in table.to_pylist()]
    assert len({k for k, _ in rows}) == len(rows), "a row left twice"
    assert all(d != 0 for _, d in rows), "a row whose diffs cancel left"
    return Counter(dict(rows))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["integers", "nulls", "text"])
def test_consolidation_sums_the_diffs_of_equal_rows(seed: int, kind: str) -> None:
    """Random batches with many copies of few rows (and none at all): the same sums as
    Python's, each row once, of the batch's own schema."""
    rng = random.Random(seed)
    for _ in range(30):
        n = rng.randint(0, 80)
        first: pa.Array
        if kind == "text":
            first = pa.array([rng.choice("abc") for _ in range(n)])
        elif kind == "nulls":
            first = pa.array([None if rng.random() < 0.3 else rng.randint(-2, 2)
                              for _ in range(n)], pa.int64())
        else:
            first = pa.array([rng.randint(-2, 2) for _ in range(n)], pa.int64())
        table = pa.table({
            "c0": first,
            "c1": pa.array([rng.randint(0, 1) for _ in range(n)], pa.int32()),
            "_time": pa.array([rng.randint(0, 2) for _ in range(n)], pa.int64()),
            DIFF: pa.array([rng.randint(-2, 2) for _ in range(n)], pa.int64())})
        out = consolidated_arrow(table)
        assert out.schema == table.schema
        assert _got(out) == _expected(table)

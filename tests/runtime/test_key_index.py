"""Cuts of driver-held batches by key (``runtime.key_index``): through an index for a large
batch of integers, the same rows a hash lookup over the whole batch finds."""

from __future__ import annotations

import gc
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from matview.runtime.arrangements import key_index
from matview.runtime.arrangements.key_index import holding
from matview.runtime.settings import DEFAULTS


def _scanned(table: pa.Table, column: str, values: pa.Array) -> list[int]:
    found = table.filter(pc.is_in(table[column], value_set=values, skip_nulls=False))
    return sorted(found["row"].to_pylist())


@pytest.mark.parametrize("seed", range(4))
def test_an_indexed_cut_finds_the_rows_a_scan_finds(seed: int) -> None:
    """Keys with duplicates and NULLs, values present and absent, repeated, NULL among
    them or not, none at all; the index is made once for the batch and kept while it
    lives."""
    rng = random.Random(seed)
    rows = DEFAULTS.indexed_rows + rng.randint(0, 1000)
    table = pa.table({
        "k": pa.array([None if rng.random() < 0.02 else rng.randint(-300, 300)
                       for _ in range(rows)], pa.int64()),
        "row": pa.array(range(rows))})
    for _ in range(20):
        values = pa.array([None if rng.random() < 0.1 else rng.randint(-320, 320)
                           for _ in range(rng.randint(0, 12))], pa.int32())
        found = holding(table, "k", values)
        assert sorted(found["row"].to_pylist()) == _scanned(table, "k", values)
        assert found.schema == table.schema
    assert (id(table), "k") in key_index._indexes
    held = len(key_index._indexes)
    del table
    gc.collect()
    assert len(key_index._indexes) == held - 1


def test_small_batches_and_other_types_are_scanned() -> None:
    """A batch under ``indexed_rows`` rows, or a column of text, takes no index."""
    small = pa.table({"k": pa.array([1, 2, None, 2], pa.int64()), "row": [0, 1, 2, 3]})
    text = pa.table({"k": pa.array([str(i % 7) for i in range(DEFAULTS.indexed_rows)]),
                     "row": pa.array(range(DEFAULTS.indexed_rows))})
    before = len(key_index._indexes)
    assert sorted(holding(small, "k", pa.array([2, None]))["row"].to_pylist()) == [1, 2, 3]
    three = pa.array(["3"])
    assert sorted(holding(text, "k", three)["row"].to_pylist()) == _scanned(text, "k", three)
    assert len(key_index._indexes) == before


def test_a_trace_indexes_its_driver_batches_when_a_reader_arranges_it(spark) -> None:  # type: ignore[no-untyped-def]
    """``Trace.arrange``, which a dataflow's lookups call when it is built (at CREATE),
    indexes the batches the driver holds by the column then, not at the first step's
    lookup, which uses that index."""
    from matview.runtime.arrangements.trace import Trace
    from matview.runtime.arrangements.updates import stored

    rows = DEFAULTS.indexed_rows
    table = pa.table({"c0": pa.array(range(rows), pa.int64()),
                      "c1": pa.array([i % 97 for i in range(rows)], pa.int64()),
                      "_time": pa.array([1] * rows, pa.int64()),
                      "_diff": pa.array([1] * rows, pa.int64())})
    trace = Trace(spark, 2)
    trace.append(stored(spark, table, local_rows=rows), 1, 1)
    held = trace.batches[0].leaf.in_driver
    assert held is not None and (id(held), "c1") not in key_index._indexes
    trace.arrange("c1")
    made = key_index._indexes[(id(held), "c1")]
    found = trace.matching(1, "c1", pa.array([5], pa.int64()))
    assert key_index._indexes[(id(held), "c1")] is made
    assert found is not None


@pytest.mark.parametrize("keys", [[1, 1, 2, 5, 5, 5, 9], [-3, 0, 0, 7], [2, 1, 3], [1, None, 2]],
                         ids=["ascending", "negative", "unordered", "nulls"])
def test_a_column_in_order_is_its_own_index(keys: list[int | None],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A column already in order with no NULLs (a batch read from files arranged by it)
    is indexed without sorting: its row numbers in order; any other is sorted. Both find
    the rows a scan finds."""
    sorts: list[int] = []
    sort = pc.sort_indices
    monkeypatch.setattr(pc, "sort_indices", lambda *a, **k: sorts.append(1) or sort(*a, **k))
    in_order = None not in keys and keys == sorted(keys)
    rows = len(keys) * 200
    table = pa.table({"k": pa.array(sorted(keys * 200) if in_order else keys * 200, pa.int64()),
                      "row": pa.array(range(rows))})
    made = key_index.KeyIndex.of(table, "k")
    assert bool(sorts) is not in_order
    assert in_order is (made.order.tolist() == list(range(rows)))
    for values in ([keys[0]], [keys[-1], 100], [None], []):
        wanted = pa.array(values, pa.int64())
        found = made.rows(table, wanted)
        assert sorted(found["row"].to_pylist()) == _scanned(table, "k", wanted)

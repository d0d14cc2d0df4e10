"""Fixtures of the runtime's tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from matview.runtime.io import peek
from pyspark.sql import DataFrame


@pytest.fixture()
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The Parquet row groups the driver decodes (``arrangements.row_groups``)."""
    groups: list[int] = []
    read_row_groups = pq.ParquetFile.read_row_groups

    def spy(self: pq.ParquetFile, wanted: list[int], *args: Any, **kwargs: Any) -> pa.Table:
        groups.extend(wanted)
        return read_row_groups(self, wanted, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    return groups


@pytest.fixture()
def peek_collects(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[DataFrame]]:
    """The frames ``peek`` collects through Spark (``to_arrow``), in order."""
    frames: list[DataFrame] = []
    collect = peek.to_arrow

    def spied(df: DataFrame, nullable: bool = False) -> pa.Table:
        frames.append(df)
        return collect(df, nullable)

    monkeypatch.setattr(peek, "to_arrow", spied)
    yield frames

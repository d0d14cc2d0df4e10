"""Fixtures of the runtime's tests."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


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

"""What a statement returns to the connection: named, typed columns and rows, or a count."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from matview.ir.types import SqlType


@dataclass(frozen=True)
class Result:
    """What a statement returns: named, typed columns and rows (as Arrow), or a row count;
    for SUBSCRIBE, the columns of the changes of ``subscribe`` (its name), which the cursor
    follows from time ``as_of`` (now when None)."""

    columns: tuple[str, ...] = ()
    types: tuple[SqlType, ...] = ()
    table: pa.Table | None = None
    rowcount: int = -1
    subscribe: str | None = None
    as_of: int | None = None

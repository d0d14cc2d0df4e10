"""Another process writing a lake while matview follows it (``tests/lake``).

``python lake_writer.py`` reads one JSON command per line from stdin and answers each with
the Delta table's version after it (the folder's files): ``{"op": "create", "path", "rows", "cdf"}``
makes a Delta table of ``ORDERS`` rows (with the change data feed when ``cdf``);
``append`` (``rows``), ``delete`` (``predicate``), ``update`` (``predicate``,
``updates``), ``merge`` (``rows`` upserted by id), ``optimize`` and ``vacuum`` (every file
no version needs any more, at once) write one version of the table at ``path``;
``parquet`` writes ``rows`` as a new file ``name`` of the folder ``path`` (beside, then
renamed: a reader never sees it half-written). A test runs it with ``Writer`` and makes its
rows with ``random_orders``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

ORDERS = pa.schema([("id", pa.int64()), ("cust", pa.int32()), ("amount", pa.decimal128(10, 2)),
                    ("note", pa.string())])
"""The lake table's columns."""


def table(rows: list[list[Any]]) -> pa.Table:
    """``rows`` (id, cust, amount as text, note) as an Arrow table of ``ORDERS``."""
    columns = list(zip(*rows)) if rows else [[] for _ in ORDERS]
    amounts = [None if a is None else Decimal(a) for a in columns[2]]
    return pa.table([pa.array(columns[0], pa.int64()), pa.array(columns[1], pa.int32()),
                     pa.array(amounts, pa.decimal128(10, 2)), pa.array(columns[3], pa.string())],
                    schema=ORDERS)


def run(command: dict[str, Any]) -> str:
    from deltalake import DeltaTable, write_deltalake

    op, path = command["op"], command["path"]
    if op == "parquet":
        staged = os.path.join(path, f".{command['name']}")
        pq.write_table(table(command["rows"]), staged)
        os.replace(staged, os.path.join(path, command["name"]))
        return str(sum(name.endswith(".parquet") for name in os.listdir(path)))
    if op == "create":
        config = {"delta.enableChangeDataFeed": "true"} if command["cdf"] else None
        write_deltalake(path, table(command["rows"]), configuration=config)
    elif op == "append":
        write_deltalake(path, table(command["rows"]), mode="append")
    elif op == "delete":
        DeltaTable(path).delete(command["predicate"])
    elif op == "update":
        DeltaTable(path).update(predicate=command["predicate"], updates=command["updates"])
    elif op == "merge":
        (DeltaTable(path).merge(table(command["rows"]), predicate="t.id = s.id",
                                source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    elif op == "optimize":
        DeltaTable(path).optimize.compact()
    elif op == "vacuum":
        DeltaTable(path).vacuum(retention_hours=0, enforce_retention_duration=False,
                                dry_run=False)
    return str(DeltaTable(path).version())


class Writer:
    """This module run as another process, taking commands (``Writer(op=..., ...)``)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)

    def __call__(self, **command: Any) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def random_orders(rng: random.Random, ids: range) -> list[list[Any]]:
    """Random orders of ids ``ids`` as ``table`` takes them."""
    return [[i, rng.randrange(6), f"{rng.randrange(1, 10000) / 100:.2f}",
             rng.choice([None, "a", "b"])] for i in ids]


def main() -> None:
    for line in sys.stdin:
        print(run(json.loads(line)), flush=True)


if __name__ == "__main__":
    main()

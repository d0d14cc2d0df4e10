"""The statements that change a table's rows: INSERT, INSERT ... ON CONFLICT, DELETE and
UPDATE (run as the plans of their changes that ``sql.dml`` and ``sql.upsert`` bind) and COPY
FROM a file. Each writes one batch (``Engine.write``), checked before anything is appended,
in the open transaction if one is."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from matview import files
from matview.ir.functions import EvalError
from matview.ir.relation import Constant
from matview.result import Result
from matview.rows import update_rows
from matview.runtime.arrangements.updates import DIFF, TIME
from matview.runtime.io import peek, writes
from matview.sql.statements import CopyFrom, Delete, Insert, Update, Upsert

if TYPE_CHECKING:
    from matview.engine import Engine


def insert(engine: Engine, stmt: Insert) -> Result:
    if isinstance(stmt.source, Constant):
        return Result(rowcount=engine.write(stmt.table, writes.constant_updates(stmt.source)))
    df = engine.evaluate(stmt.source)
    return Result(rowcount=0 if df is None else engine.write(
        stmt.table, peek.refusing_negative(df).drop(TIME)))


def upsert(engine: Engine, stmt: Upsert) -> Result:
    """``INSERT ... ON CONFLICT``: refused when DO UPDATE would update a row twice; the
    row count is the rows inserted or updated."""
    if stmt.twice is not None:
        twice = engine.evaluate(stmt.twice)
        if twice is not None and twice.limit(1).collect():
            raise EvalError("ON CONFLICT DO UPDATE command cannot affect row a "
                            "second time: a key is proposed more than once")
    affected = None if stmt.affected is None else engine.evaluate(stmt.affected)
    changes = engine.evaluate(stmt.changes)
    written = 0 if changes is None else engine.write(stmt.table, changes.drop(TIME),
                                                     own_rows=True)
    if stmt.affected is None:  # DO NOTHING: it only inserts
        return Result(rowcount=written)
    return Result(rowcount=0 if affected is None else int(
        affected.select(F.sum(DIFF)).first()[0] or 0))


def delete(engine: Engine, stmt: Delete) -> Result:
    changes = engine.evaluate(stmt.changes)
    return Result(rowcount=0 if changes is None else engine.write(
        stmt.table, changes.drop(TIME), own_rows=True))


def update(engine: Engine, stmt: Update) -> Result:
    matched = engine.evaluate(stmt.matched)
    if matched is None:
        return Result(rowcount=0)
    count = int(matched.select(F.sum(DIFF)).first()[0] or 0)
    changes = engine.evaluate(stmt.changes)
    if changes is not None:
        engine.write(stmt.table, changes.drop(TIME), own_rows=True)
    return Result(rowcount=count)


def copy_from(engine: Engine, stmt: CopyFrom) -> Result:
    item = engine.table_item(stmt.table)
    rows = files.read_rows(files.confined(stmt.path, engine.files), stmt.format, item,
                           stmt.columns)
    return Result(rowcount=engine.write(stmt.table, update_rows(rows, item, 1)))

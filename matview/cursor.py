"""The DB-API 2.0 (PEP 249) cursor: runs a connection's statements and holds the last one's
result, fetched as rows, Arrow, pandas or Spark. After ``SUBSCRIBE name`` it follows the
object's changes: each fetch returns those there are when it runs (the snapshot first),
as ``(mz_timestamp, mz_diff, *columns)`` rows, and none when there are none yet."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import DataFrame

from matview.errors import InterfaceError, ProgrammingError
from matview.result import Result
from matview.rows import rows_of
from matview.statement_text import split
from matview.transaction_sql import block_statement

if TYPE_CHECKING:
    from matview.connection import Connection
    from matview.subscription import Subscription


class Cursor:
    """Runs statements and holds the last one's result (PEP 249)."""

    arraysize = 1

    def __init__(self, connection: Connection, wire: bool = False) -> None:
        self.connection = connection
        self.wire = wire
        """Whether rows hold values as the server prints them (``rows.rows_of``)."""
        self._unread: pa.Table | None = None
        """The result's rows not yet made Python values."""
        self._rows: list[tuple[object, ...]] = []
        self._result: Result | None = None
        self._subscription: Subscription | None = None
        self._closed = False

    @property
    def description(self) -> list[tuple[Any, ...]] | None:
        """One 7-tuple per result column: name, type name, then five unused fields."""
        if self._result is None or (self._result.table is None
                                    and self._result.subscribe is None):
            return None
        return [(name, str(t), None, None, None, None, True)
                for name, t in zip(self._result.columns, self._result.types)]

    @property
    def rowcount(self) -> int:
        return -1 if self._result is None else self._result.rowcount

    def execute(self, sql: str, params: Sequence[object] | None = None) -> Cursor:
        """Run one statement, with ``?`` parameters bound to ``params`` (a sequence)."""
        self._check()
        text, values = sql_text(sql, "execute"), _parameters(params)
        control = block_statement(text)
        if control is not None:
            self.connection.sql_block.run(control, self.connection)
            result = Result()
        else:
            self.connection.sql_block.before(text, self.connection)
            with self.connection._using(beside=True) as engine:
                result = engine.execute(text, values)
        self._keep(result)
        return self

    def executescript(self, sql: str) -> Cursor:
        """Run the ``;``-separated statements of ``sql`` in order (no parameters), stopping
        at the first that fails; the result is the last one's."""
        self._check()
        text = sql_text(sql, "executescript")
        pieces = split(text)
        if any(block_statement(piece.text) for piece in pieces):  # BEGIN ... COMMIT
            for piece in pieces:
                self.execute(piece.text)
            return self
        with self.connection._using(beside=True) as engine:
            result = engine.execute_script(text)
        self._keep(result)
        return self

    def executemany(self, sql: str, seq_of_params: Sequence[Sequence[object]]) -> Cursor:
        """Run one statement once per parameter sequence; ``rowcount`` is the total."""
        if isinstance(seq_of_params, (str, bytes, Mapping)) or not isinstance(
                seq_of_params, Iterable):
            raise ProgrammingError("executemany() takes a sequence of parameter sequences, "
                                   f"not {type(seq_of_params).__name__}")
        total = 0
        for params in seq_of_params:
            self.execute(sql, params)
            total += max(self.rowcount, 0)
        self._result = Result(rowcount=total)
        self._rows, self._unread = [], None
        return self

    def _keep(self, result: Result) -> None:
        """Hold ``result``, ending the subscription of the statement before; a SUBSCRIBE's
        starts following its object."""
        self._end_subscription()
        subscription = None if result.subscribe is None else \
            self.connection.subscribe(result.subscribe, result.as_of)
        self._result, self._subscription = result, subscription
        self._rows, self._unread = [], result.table

    def _check_more(self) -> None:
        """Make the result's rows Python values when first fetched (a value Python cannot
        hold is then a DataError, as in psycopg: ``rows.python_values``); fetch a
        subscription's new changes once the ones fetched are read."""
        self._check()
        if self._unread is not None:
            assert self._result is not None
            table, self._unread = self._unread, None
            self._rows = rows_of(table, self._result.types, self.wire)
        if self._subscription is not None and not self._rows:
            self._rows = self._subscription.fetch(self.wire)

    def fetchone(self) -> tuple[object, ...] | None:
        self._check_more()
        return self._rows.pop(0) if self._rows else None

    def fetchmany(self, size: int | None = None) -> list[tuple[object, ...]]:
        self._check_more()
        size = self.arraysize if size is None else size
        out, self._rows = self._rows[:size], self._rows[size:]
        return out

    def fetchall(self) -> list[tuple[object, ...]]:
        self._check_more()
        out, self._rows = self._rows, []
        return out

    def fetch_arrow(self) -> pa.Table | None:
        """The whole result as an Arrow table with the result's column names (not consumed
        by fetch calls)."""
        if self._result is None or self._result.table is None:
            return None
        return self._result.table.rename_columns(list(self._result.columns))

    def fetch_df(self) -> Any:
        """The whole result as a pandas DataFrame (None when the statement returned no
        rows), as DuckDB's ``fetch_df``; integer, boolean and floating-point columns are of
        pandas' nullable types (``Int64``, ``boolean``, ``Float64``...), so that a NULL is
        ``pd.NA``, not a NaN that turns a BIGINT column into float64."""
        import pandas as pd

        nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(),
                    pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
                    pa.bool_(): pd.BooleanDtype(), pa.float32(): pd.Float32Dtype(),
                    pa.float64(): pd.Float64Dtype()}
        table = self.fetch_arrow()
        return None if table is None else table.to_pandas(types_mapper=nullable.get)

    def fetch_spark(self) -> DataFrame | None:
        """The whole result as a Spark DataFrame on the connection's session (None when the
        statement returned no rows)."""
        table = self.fetch_arrow()
        return None if table is None else self.connection.spark.createDataFrame(table)

    def __iter__(self) -> Iterator[tuple[object, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def setinputsizes(self, sizes: object) -> None:
        """PEP 249: accepted and ignored."""

    def setoutputsize(self, size: object, column: object = None) -> None:
        """PEP 249: accepted and ignored."""

    def close(self) -> None:
        self._end_subscription()
        self._closed = True
        self._rows, self._unread = [], None

    def _end_subscription(self) -> None:
        """End the SUBSCRIBE this cursor follows, if any."""
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("cursor is closed")


def sql_text(sql: object, method: str) -> str:
    """``sql``, which must be text."""
    if not isinstance(sql, str):
        raise ProgrammingError(f"{method}() takes SQL text (a str), not {type(sql).__name__}")
    return sql


def _parameters(params: object) -> list[object] | None:
    """``params`` as the list of values of the statement's ``?`` marks (qmark style): any
    sequence, but not text, a mapping or a set, which could bind by accident."""
    if params is None:
        return None
    if isinstance(params, (str, bytes, bytearray, Mapping, Set)) or not isinstance(
            params, Iterable):
        raise ProgrammingError("parameters must be a sequence (a list or tuple) of values, "
                               f"one per ? in the statement, not {type(params).__name__}")
    return list(params)

"""The DB-API 2.0 (PEP 249) connection and cursor."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from matview.clock import TimestampOracle
from matview.engine import Engine, Result, rows_of
from matview.errors import InterfaceError, ProgrammingError, translated
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.runtime.session import configure, start_session
from matview.runtime.types import column_names, spark_type, update_schema
from matview.runtime.updates import DIFF
from matview.subscription import Subscription


class Cursor:
    """Runs statements and holds the last one's result (PEP 249)."""

    arraysize = 1

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._rows: list[tuple[object, ...]] = []
        self._result: Result | None = None
        self._closed = False

    @property
    def description(self) -> list[tuple[Any, ...]] | None:
        """One 7-tuple per result column: name, type name, then five unused fields."""
        if self._result is None or self._result.table is None:
            return None
        return [(name, str(t), None, None, None, None, True)
                for name, t in zip(self._result.columns, self._result.types)]

    @property
    def rowcount(self) -> int:
        return -1 if self._result is None else self._result.rowcount

    def execute(self, sql: str, params: Sequence[object] | None = None) -> Cursor:
        self._check()
        engine = self.connection._engine_for_use()
        with translated():
            self._result = engine.execute(sql, params)
        table = self._result.table
        self._rows = rows_of(table) if table is not None else []
        return self

    def executemany(self, sql: str, seq_of_params: Sequence[Sequence[object]]) -> Cursor:
        for params in seq_of_params:
            self.execute(sql, params)
        return self

    def fetchone(self) -> tuple[object, ...] | None:
        self._check()
        return self._rows.pop(0) if self._rows else None

    def fetchmany(self, size: int | None = None) -> list[tuple[object, ...]]:
        self._check()
        size = self.arraysize if size is None else size
        out, self._rows = self._rows[:size], self._rows[size:]
        return out

    def fetchall(self) -> list[tuple[object, ...]]:
        self._check()
        out, self._rows = self._rows, []
        return out

    def fetch_arrow(self) -> pa.Table | None:
        """The whole result as an Arrow table (not consumed by fetch calls)."""
        return None if self._result is None else self._result.table

    def __iter__(self) -> Iterator[tuple[object, ...]]:
        while self._rows:
            yield self._rows.pop(0)

    def setinputsizes(self, sizes: object) -> None:
        """PEP 249: accepted and ignored."""

    def setoutputsize(self, size: object, column: object = None) -> None:
        """PEP 249: accepted and ignored."""

    def close(self) -> None:
        self._closed = True
        self._rows = []

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("cursor is closed")


class Connection:
    """A matview database embedded in this process, running on a SparkSession (PEP 249)."""

    def __init__(self, path: str | None = None, *, spark: SparkSession | None = None,
                 master: str | None = None, clock: int | None = None,
                 config: Mapping[str, str] | None = None,
                 max_table_function_rows: int = DEFAULT_ROW_LIMIT) -> None:
        if max_table_function_rows < 1:
            raise ProgrammingError("max_table_function_rows must be at least 1")
        self.path = path
        self._row_limit = max_table_function_rows
        self._spark = spark
        self._master = master
        self._config = dict(config or {})
        self._oracle = TimestampOracle(clock)
        self._engine: Engine | None = None
        self._closed = False

    @property
    def spark(self) -> SparkSession:
        """The SparkSession (started on first use unless one was passed in)."""
        return self._engine_for_use().spark

    def _engine_for_use(self) -> Engine:
        if self._closed:
            raise InterfaceError("connection is closed")
        if self._engine is None:
            with translated():
                if self._spark is None:
                    spark = start_session(self._master, self._config)
                else:
                    spark = self._spark
                    configure(spark)
            self._engine = Engine(spark, self._oracle, self._row_limit)
        return self._engine

    @property
    def now(self) -> int:
        """The current read time (int64 milliseconds)."""
        return self._oracle.now

    def advance_time(self, to: int) -> None:
        """Move the manual clock forward to ``to`` (never backwards)."""
        try:
            self._oracle.advance(to)
        except ValueError as e:
            raise ProgrammingError(str(e)) from e

    def cursor(self) -> Cursor:
        self._engine_for_use()
        return Cursor(self)

    def execute(self, sql: str, params: Sequence[object] | None = None) -> Cursor:
        return self.cursor().execute(sql, params)

    def explain(self, sql: str, stage: str = "optimized", format: str = "text",
                options: Sequence[str] = ()) -> str:
        """``EXPLAIN`` of ``sql`` (one statement, or ``MATERIALIZED VIEW name``): ``stage`` is
        ``raw``, ``decorrelated``, ``optimized``, ``physical``, ``trace`` (the optimizer
        trace) or ``analyze`` (a materialized view's running dataflow); ``format`` is
        ``text``, ``json`` or ``dot``; ``options`` are EXPLAIN's ``WITH`` options."""
        engine = self._engine_for_use()
        with translated():
            return engine.explain(sql, stage, format, options)

    def begin(self) -> None:
        """Open a transaction: the writes until ``commit`` (``INSERT ... VALUES``, ``insert``,
        ``delete``) share one logical time and become visible together. Reads inside it
        are refused, since they could not see its writes."""
        self._engine_for_use().begin()

    def commit(self) -> None:
        """Commit the open transaction, if any (every statement outside one commits on its
        own)."""
        self._engine_for_use().commit()

    def rollback(self) -> None:
        """Discard the open transaction's writes."""
        engine = self._engine_for_use()
        if engine.transaction is None:
            raise ProgrammingError("no transaction is open")
        engine.rollback()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """``with con.transaction():`` writes inside commit together at one time on exit, or
        not at all if the block raises."""
        self.begin()
        try:
            yield self
        except BaseException:
            self._engine_for_use().rollback()
            raise
        self.commit()

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- bulk changes and subscriptions -----------------------------------------------

    def insert(self, table: str, rows: object) -> int:
        """Insert rows (a list of tuples, a pandas or Arrow table, or a Spark DataFrame)."""
        return self._change(table, rows, 1)

    def delete(self, table: str, rows: object) -> int:
        """Delete one copy of each given row (same forms as ``insert``); the rows must be in
        the table."""
        return self._change(table, rows, -1)

    def _change(self, table: str, rows: object, sign: int) -> int:
        engine = self._engine_for_use()
        with translated():
            item, _ = engine._table(table)
            types = [f.type for f in item.fields]
            names = column_names(len(types))
            if isinstance(rows, DataFrame):
                frame = rows.select(*[F.col(c).cast(spark_type(t)).alias(n)
                                      for c, t, n in zip(rows.columns, types, names)],
                                    F.lit(sign).cast("bigint").alias(DIFF))
                return engine.write(table, frame, small=False)
            schema = update_schema(types)
            data = _arrow_rows(rows, names, schema)
            data = data.append_column(DIFF, pa.array([sign] * data.num_rows, pa.int64()))
            return engine.write(table, data)

    def subscribe(self, name: str) -> Subscription:
        """Follow every change of materialized view (or table) ``name``."""
        engine = self._engine_for_use()
        with translated():
            if engine.catalog.lookup(name.lower()) is None:
                raise ProgrammingError(f'relation "{name}" does not exist')
            return Subscription(engine, name.lower())


def _arrow_rows(rows: object, names: list[str], schema: pa.Schema) -> pa.Table:
    """``rows`` as an Arrow table with columns ``names`` of the schema's types."""
    fields = list(schema)[:len(names)]
    if isinstance(rows, pa.Table):
        table = rows
    elif hasattr(rows, "to_numpy") and hasattr(rows, "columns"):
        table = pa.Table.from_pandas(rows, preserve_index=False)
    else:
        columns = list(zip(*rows)) if rows else [[] for _ in names]  # type: ignore[call-overload]
        if len(columns) != len(names):
            raise ProgrammingError(f"rows have {len(columns)} values, the table {len(names)}")
        table = pa.table([pa.array(list(c), f.type) for c, f in zip(columns, fields)],
                         names=names)
    if table.num_columns != len(names):
        raise ProgrammingError(f"rows have {table.num_columns} columns, the table {len(names)}")
    table = table.rename_columns(names)
    return table.cast(pa.schema(fields))

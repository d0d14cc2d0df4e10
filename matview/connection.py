"""The DB-API 2.0 (PEP 249) connection and cursor."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from matview.clock import TimestampOracle
from matview.engine import Engine, Result, rows_of
from matview.errors import (
    DataError,
    InterfaceError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    translated,
)
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.runtime.join import DEFAULT_JOIN_ROWS
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
        """Run one statement, with ``?`` parameters bound to ``params``."""
        self._check()
        with self.connection._using() as engine:
            self._keep(engine.execute(sql, params))
        return self

    def executescript(self, sql: str) -> Cursor:
        """Run the ``;``-separated statements of ``sql`` in order (no parameters), stopping
        at the first that fails; the result is the last one's."""
        self._check()
        with self.connection._using() as engine:
            self._keep(engine.execute_script(sql))
        return self

    def executemany(self, sql: str, seq_of_params: Sequence[Sequence[object]]) -> Cursor:
        """Run one statement once per parameter sequence; ``rowcount`` is the total."""
        total = 0
        for params in seq_of_params:
            self.execute(sql, params)
            total += max(self.rowcount, 0)
        self._result = Result(rowcount=total)
        self._rows = []
        return self

    def _keep(self, result: Result) -> None:
        self._result = result
        self._rows = rows_of(result.table) if result.table is not None else []

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
        """The whole result as an Arrow table with the result's column names (not consumed
        by fetch calls)."""
        if self._result is None or self._result.table is None:
            return None
        return self._result.table.rename_columns(list(self._result.columns))

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
                 max_table_function_rows: int = DEFAULT_ROW_LIMIT,
                 max_join_rows: int = DEFAULT_JOIN_ROWS) -> None:
        if path is not None:
            raise NotSupportedError(
                "durable storage (connect(path=...)) is not supported yet: every table and "
                "view lives in this process only; connect without a path")
        if spark is not None and (master is not None or config):
            raise ProgrammingError("connect(spark=...) runs on that session: master= and "
                                   "config= cannot apply to it")
        for name, value in (("max_table_function_rows", max_table_function_rows),
                            ("max_join_rows", max_join_rows)):
            if not isinstance(value, int) or value < 1:
                raise ProgrammingError(f"{name} must be a positive integer")
        if clock is not None and not isinstance(clock, int):
            raise ProgrammingError("clock must be an integer (milliseconds) or None")
        self.path = path
        self._row_limit = max_table_function_rows
        self._join_limit = max_join_rows
        self._spark = spark
        self._master = master
        self._config = dict(config or {})
        self._oracle = TimestampOracle(clock)
        self._engine: Engine | None = None
        self._closed = False
        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)
        self._owner: int | None = None
        """The thread whose open transaction owns the connection (None: no transaction)."""

    @property
    def closed(self) -> bool:
        """Whether the connection was closed, or lost its Spark session and must be
        reopened."""
        return self._closed

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
            self._engine = Engine(spark, self._oracle, self._row_limit, self._join_limit)
        return self._engine

    @contextlib.contextmanager
    def _using(self) -> Iterator[Engine]:
        """The engine, used by this thread alone: statements of one connection run one at a
        time, and while a thread has a transaction open, other threads wait until it ends.
        Errors come out as DB-API exceptions; one that lost Spark closes the connection."""
        with self._lock:
            me = threading.get_ident()
            while self._owner is not None and self._owner != me:
                self._idle.wait()
            engine = self._engine_for_use()
            try:
                with translated():
                    yield engine
            except OperationalError as error:
                if _spark_lost(engine.spark):
                    self._closed = True
                    raise OperationalError(f"{error}; Spark is gone, so the connection is "
                                           "closed and must be reopened") from error
                raise

    def _release(self) -> None:
        """End this thread's ownership of the connection (its transaction ended)."""
        self._owner = None
        self._idle.notify_all()

    @property
    def now(self) -> int:
        """The current read time (int64 milliseconds)."""
        return self._oracle.now

    def advance_time(self, to: int) -> None:
        """Move the manual clock forward to ``to`` (never backwards)."""
        with self._lock:
            try:
                self._oracle.advance(to)
            except ValueError as e:
                raise ProgrammingError(str(e)) from e

    def cursor(self) -> Cursor:
        self._engine_for_use()
        return Cursor(self)

    def execute(self, sql: str, params: Sequence[object] | None = None) -> Cursor:
        return self.cursor().execute(sql, params)

    def executescript(self, sql: str) -> Cursor:
        """Run the ``;``-separated statements of ``sql`` in order (see ``Cursor``)."""
        return self.cursor().executescript(sql)

    def explain(self, sql: str, stage: str = "optimized", format: str = "text",
                options: Sequence[str] = ()) -> str:
        """``EXPLAIN`` of ``sql`` (one statement, or ``MATERIALIZED VIEW name``): ``stage`` is
        ``raw``, ``decorrelated``, ``optimized``, ``physical``, ``trace`` (the optimizer
        trace) or ``analyze`` (a materialized view's running dataflow); ``format`` is
        ``text``, ``json`` or ``dot``; ``options`` are EXPLAIN's ``WITH`` options."""
        with self._using() as engine:
            return engine.explain(sql, stage, format, options)

    def begin(self) -> None:
        """Open a transaction: the writes until ``commit`` (``INSERT ... VALUES``, ``insert``,
        ``delete``) share one logical time and become visible together. Reads inside it
        are refused, since they could not see its writes. Until it ends, the connection
        belongs to this thread: other threads' statements wait."""
        with self._using() as engine:
            engine.begin()
            self._owner = threading.get_ident()

    def commit(self) -> None:
        """Commit the open transaction, if any (every statement outside one commits on its
        own)."""
        with self._using() as engine:
            try:
                engine.commit()
            finally:
                self._release()

    def rollback(self) -> None:
        """Discard the open transaction's writes."""
        with self._using() as engine:
            if engine.transaction is None:
                raise ProgrammingError("no transaction is open")
            engine.rollback()
            self._release()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """``with con.transaction():`` writes inside commit together at one time on exit, or
        not at all if the block raises."""
        self.begin()
        try:
            yield self
        except BaseException:
            self.rollback()
            raise
        self.commit()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._release()

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
        with self._using() as engine:
            item = engine.table_item(table)
            types = [f.type for f in item.fields]
            names = column_names(len(types))
            if isinstance(rows, DataFrame):
                if len(rows.columns) != len(types):
                    raise ProgrammingError(f'rows have {len(rows.columns)} columns, table '
                                           f'"{table}" has {len(types)}')
                frame = rows.select(*[F.col(c).cast(spark_type(t)).alias(n)
                                      for c, t, n in zip(rows.columns, types, names)],
                                    F.lit(sign).cast("bigint").alias(DIFF))
                return engine.write(table, frame, small=False, retracts=sign < 0)
            schema = update_schema(types)
            data = _arrow_rows(rows, names, schema, table, [f.name for f in item.fields])
            data = data.append_column(DIFF, pa.array([sign] * data.num_rows, pa.int64()))
            return engine.write(table, data)

    def subscribe(self, name: str) -> Subscription:
        """Follow every change of materialized view (or table) ``name``."""
        with self._using() as engine:
            item = engine.catalog.lookup(name.lower())
            if item is None:
                raise ProgrammingError(f'relation "{name}" does not exist')
            if item.kind == "view":
                raise ProgrammingError(
                    f'cannot subscribe to view "{name}": only tables and materialized views '
                    "keep their changes (CREATE MATERIALIZED VIEW it instead)")
            return Subscription(engine, name.lower(), self._using)


def _spark_lost(spark: SparkSession) -> bool:
    """Whether ``spark``'s JVM side is gone (a classic session whose context stopped)."""
    try:
        jsc = spark.sparkContext._jsc
        return jsc is None or bool(jsc.sc().isStopped())
    except Exception:  # no context to ask (Spark Connect), or no JVM to answer: gone
        return not hasattr(spark, "client")


def _arrow_rows(rows: object, names: list[str], schema: pa.Schema, table_name: str,
                columns: list[str]) -> pa.Table:
    """``rows`` (a list of tuples, a pandas or Arrow table) as an Arrow table with columns
    ``names`` of the schema's types; values that do not fit their column are DataErrors
    naming it, and text holding a NUL byte is refused as PostgreSQL refuses it."""
    fields = list(schema)[:len(names)]
    if isinstance(rows, pa.Table):
        table = rows
    elif hasattr(rows, "to_numpy") and hasattr(rows, "columns"):
        table = pa.Table.from_pandas(rows, preserve_index=False)
    elif isinstance(rows, (list, tuple)) and all(isinstance(r, (list, tuple)) for r in rows):
        for row in rows:
            if len(row) != len(names):
                raise ProgrammingError(f'a row has {len(row)} values, table "{table_name}" '
                                       f"has {len(names)} columns: {tuple(row)!r}")
        values = list(zip(*rows)) if rows else [[] for _ in names]
        arrays = [_column(list(c), f.type, table_name, name)
                  for c, f, name in zip(values, fields, columns)]
        table = pa.Table.from_arrays(arrays, names=names)
    else:
        raise ProgrammingError(f"rows must be a list of tuples, a pandas DataFrame, an Arrow "
                               f"table or a Spark DataFrame, not {type(rows).__name__}")
    if table.num_columns != len(names):
        raise ProgrammingError(f'rows have {table.num_columns} columns, table "{table_name}" '
                               f"has {len(names)}")
    table = table.rename_columns(names)
    arrays = [_column(table.column(i), f.type, table_name, name)
              for i, (f, name) in enumerate(zip(fields, columns))]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _column(values: list[object] | pa.ChunkedArray, arrow_type: pa.DataType, table: str,
            name: str) -> pa.Array | pa.ChunkedArray:
    """``values`` as an Arrow column of ``arrow_type`` (a DataError naming the column when
    a value does not fit it)."""
    try:
        if isinstance(values, pa.ChunkedArray):
            column = values.cast(arrow_type)
        else:
            column = pa.array(values, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError) as e:
        raise DataError(f'invalid value for column "{name}" of table "{table}" '
                        f"({arrow_type}): {e}") from None
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        if pc.any(pc.match_substring(column, "\x00")).as_py():
            raise DataError('invalid byte sequence for encoding "UTF8": 0x00 (in column '
                            f'"{name}" of table "{table}")')
    return column

"""The DB-API 2.0 (PEP 249) connection: a matview database embedded in this process, its
Spark session started on first use, its statements run one at a time (a thread's open
transaction holds it for writes until it ends: ``matview.turns``)."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Mapping, Sequence
from os import PathLike

from pyspark.sql import DataFrame, SparkSession

from matview import files as files_module
from matview.clock import TimestampOracle
from matview.connect_args import check_reusable, checked, is_int
from matview.cursor import Cursor, sql_text
from matview.durability import Durability
from matview.engine import Engine
from matview.errors import (
    InterfaceError,
    InternalError,
    OperationalError,
    ProgrammingError,
    translated,
)
from matview.interrupts import Interrupts
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.rows import update_rows
from matview.runtime.arrangements.batch_files import place
from matview.runtime.controller import Limits
from matview.runtime.durable.errors import StateError
from matview.runtime.durable.store import Store, is_uri
from matview.runtime.operators.join import DEFAULT_JOIN_ROWS
from matview.runtime.settings import DEFAULTS, RuntimeSettings, using
from matview.runtime.spark.session import isolated, spark_lost, start_session, without_read_check
from matview.subscription import Subscription
from matview.transaction_sql import SqlBlock
from matview.turns import Turns


class Connection:
    """A matview database embedded in this process, running on a SparkSession (PEP 249)."""

    def __init__(self, path: str | PathLike[str] | None = None, *,
                 spark: SparkSession | None = None, master: str | None = None,
                 clock: int | None = None,
                 config: Mapping[str, str] | None = None,
                 max_table_function_rows: int = DEFAULT_ROW_LIMIT,
                 max_join_rows: int = DEFAULT_JOIN_ROWS, refresh: str = "auto",
                 files: Sequence[str | PathLike[str]] = (), progress: bool = True,
                 settings: RuntimeSettings = DEFAULTS,
                 state_dir: str | PathLike[str] | None = None) -> None:
        checked(path, spark, master, config, state_dir, refresh, clock,
                max_table_function_rows=max_table_function_rows, max_join_rows=max_join_rows)
        self._files = files_module.directories(files)
        self._progress = bool(progress)
        if spark is None:
            with translated():
                check_reusable(master, config or {})
        self.path = path
        self._store: Store | None = None
        if path is not None and not is_uri(path):
            self._store = _opened(path, None)
        self._limits = Limits(max_table_function_rows, max_join_rows)
        self._refresh = refresh
        self._settings = settings
        self._state_dir = os.fspath(state_dir) if state_dir is not None else \
            None if self._store is None else str(self._store.state)
        self._spark = spark
        self._master = master
        self._config = dict(config or {})
        self._oracle = TimestampOracle(clock)
        self._engine: Engine | None = None
        self._closed = False
        self.sql_block = SqlBlock()
        """The savepoints SQL statements made (``transaction_sql``)."""
        self._interrupts = Interrupts()
        self._turns = Turns(
            lambda: None if self._engine is None else self._engine.transactions.owner,
            self._abandon)
        if path is not None and is_uri(path):
            self._engine_for_use()  # a database at a URI is reached through Spark's JVM

    @property
    def closed(self) -> bool:
        """Whether the connection was closed, or lost its Spark session and must be
        reopened."""
        return self._closed

    @property
    def settings(self) -> RuntimeSettings:
        """The runtime settings every statement of this connection runs with
        (``connect(settings=...)``; ``SHOW SETTINGS`` lists them)."""
        return self._settings

    @property
    def spark(self) -> SparkSession:
        """The SparkSession matview runs on: started on first use, or, when one was passed
        in, a new session of it (``newSession()``: same context, matview's SQL settings)."""
        return self._engine_for_use().spark

    def _engine_for_use(self) -> Engine:
        """The engine (Spark started on first use, by one thread only)."""
        with self._turns.lock, using(self._settings):
            if self._closed:
                raise InterfaceError("connection is closed")
            if self._engine is None:
                with translated():
                    if self._spark is None:
                        check_reusable(self._master, self._config)
                        spark = start_session(self._master, self._config)
                    else:
                        spark = isolated(self._spark)
                    without_read_check(spark)
                if self.path is not None and self._store is None:
                    self._store = _opened(self.path, spark)
                    self._state_dir = str(self._store.state)
                place(spark, self._state_dir)
                engine = Engine(spark, self._oracle, self._limits, self._refresh,
                                self._files, self._progress)
                engine.await_writer = self._await_writer
                if self._store is not None:
                    self._resume(engine, self._store)
                self._engine = engine
            return self._engine

    def _resume(self, engine: Engine, store: Store) -> None:
        """Give ``engine`` the durable database's state (``matview.durability``); a
        directory that cannot be read closes the connection."""
        durability = Durability(engine, store)
        try:
            with translated():
                durability.restore()
        except BaseException:
            self._closed = True
            store.close()
            raise
        engine.durability = durability

    def _abandon(self) -> None:
        """Roll back the open transaction of a thread that is gone."""
        if self._engine is not None:
            self._engine.transactions.rollback()

    def _await_writer(self) -> None:
        """Wait until no other thread's transaction is open (``Engine.await_writer``)."""
        self._turns.await_owner()
        if self._closed:
            raise InterfaceError("connection is closed")

    @contextlib.contextmanager
    def _turn(self, beside: bool = False) -> Iterator[None]:
        """This thread's turn at the connection (``Turns.turn``)."""
        with self._turns.turn(beside), using(self._settings):
            yield

    @contextlib.contextmanager
    def _using(self, beside: bool = False) -> Iterator[Engine]:
        """The engine, used by this thread alone (see ``_turn``; ``beside``: for statements
        that may only read, which run beside another thread's open transaction). Errors
        come out as DB-API exceptions; one that lost Spark closes the connection."""
        with self._turn(beside):
            engine = self._engine_for_use()
            try:
                with translated(), self._interrupts.statement(engine.spark):
                    yield engine
            except (OperationalError, InternalError) as error:
                unsaved = engine.durability is not None and engine.durability.failed
                if not unsaved and not spark_lost(engine.spark):
                    raise
                self._closed = True
                engine.transactions.rollback()
                if self._store is not None:
                    self._store.close()
                self._turns.ended()
                why = "its state could not be saved" if unsaved else "Spark is gone"
                raise OperationalError(f"{error}; {why}, so the connection is closed and "
                                       "must be reopened") from error

    @property
    def in_transaction(self) -> bool:
        """Whether this thread has a transaction open (``begin``, or SQL ``BEGIN``)."""
        return self.sql_block.open or self.writing

    @property
    def writing(self) -> bool:
        """Whether this thread's transaction is open in the engine: from ``begin``, or from
        the first write of a block SQL ``BEGIN`` opened (``transaction_sql``)."""
        return self._engine is not None and self._engine.transactions.open is not None

    def interrupt(self, thread: int | None = None, *, why: str = "user request") -> None:
        """Stop the statements running now (only thread ``thread``'s, by its
        ``threading.get_ident()``): each fails with ``QueryCanceled`` (``matview.interrupts``),
        changing nothing, and the connection goes on."""
        self._interrupts.interrupt(thread, why)

    @property
    def now(self) -> int:
        """The current read time (int64 milliseconds)."""
        return self._oracle.now

    def advance_time(self, to: int) -> None:
        """Move the manual clock forward to ``to`` (never backwards)."""
        if not is_int(to):
            raise ProgrammingError(f"advance_time() takes an integer time (milliseconds), not "
                                   f"{type(to).__name__}")
        with self._turn():
            if self._closed:
                raise InterfaceError("connection is closed")
            try:
                self._oracle.advance(to)
            except ValueError as e:
                raise ProgrammingError(str(e)) from e

    def cursor(self, wire: bool = False) -> Cursor:
        """A new cursor; ``wire``: its rows hold values as matview's server prints them
        (TIME 24:00:00 and TIMETZ values, which ``datetime.time`` cannot always hold, as
        matview's own: ``rows.rows_of``)."""
        self._engine_for_use()
        return Cursor(self, wire)

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
        text = sql_text(sql, "explain")
        if isinstance(options, str):
            raise ProgrammingError("explain() takes options as a sequence of strings, "
                                   f"e.g. [{options!r}]")
        with self._using(beside=True) as engine:
            return engine.explain(text, stage, format, options)

    def begin(self) -> None:
        """Open a transaction: its writes until ``commit`` (``INSERT``, ``UPDATE``,
        ``DELETE``, ``COPY FROM``, ``insert``, ``delete``) share one logical time and become
        visible together; its reads see them. Until it ends, other threads read the last
        committed state and their writes wait."""
        with self._using() as engine:
            if engine.transactions.open is not None:
                raise ProgrammingError("a transaction is already open")
            engine.transactions.begin()

    def commit(self) -> None:
        """Commit the open transaction, if any (every statement outside one commits on its
        own)."""
        self.sql_block.ended()
        with self._using() as engine:
            try:
                engine.transactions.commit()
            finally:
                self._turns.ended()

    def rollback(self) -> None:
        """Discard the open transaction's writes."""
        block = self.sql_block.open
        self.sql_block.ended()
        with self._using() as engine:
            if engine.transactions.open is None and not block:
                raise ProgrammingError("no transaction is open")
            engine.transactions.rollback()
            self._turns.ended()

    def savepoint(self) -> int:
        """A mark of the open transaction's writes so far (0: none is open), for
        ``rollback_to`` (the server's SAVEPOINT)."""
        with self._using() as engine:
            return engine.transactions.mark()

    def rollback_to(self, mark: int) -> None:
        """Discard the open transaction's writes after ``mark`` (``savepoint``)."""
        with self._using() as engine:
            engine.transactions.rewind(mark)

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
        """Close the connection, rolling back this thread's open transaction (another
        thread's transaction is waited for, like any statement)."""
        with self._turn():
            if self._engine is not None:
                self._engine.transactions.rollback()
            try:
                if self._store is not None and not self._closed:
                    self._checkpoint()
            finally:
                if self._store is not None and not self._closed:
                    self._store.close()
                self._closed = True
                self._turns.ended()

    def _checkpoint(self) -> None:
        """A durable database's state saved whole before it closes (a reopening then
        replays no log), unless a save failed."""
        engine = self._engine
        if engine is not None and engine.durability is not None and \
                not engine.durability.failed:
            with translated():
                engine.save()

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
        the table, as many times as they are given, else nothing is deleted (DataError)."""
        return self._change(table, rows, -1)

    def _change(self, table: str, rows: object, sign: int) -> int:
        with self._using() as engine:
            updates = update_rows(rows, engine.table_item(table), sign)
            return engine.write(table, updates, small=not isinstance(updates, DataFrame))

    def feed(self, source: str, rows: object, batch: int) -> int:
        """Apply batch ``batch`` of a stream (rows in any form ``insert`` takes) to source
        ``source`` (``CREATE SOURCE ... FROM STREAM``) as one transaction, once: a batch id
        not after the last one applied is a replay and is skipped (0 rows). Spark's
        ``df.writeStream.foreachBatch(lambda rows, batch: con.feed("s", rows, batch))``."""
        with self._using() as engine:
            return engine.sources.feed(source.lower(), rows, batch)

    def subscribe(self, name: str, as_of: int | None = None) -> Subscription:
        """Follow every change of materialized view (or table) ``name``: its contents now
        (or at time ``as_of``, which it must still hold: ``retain_history``), then every
        later change."""
        if not isinstance(name, str):
            raise ProgrammingError(f"subscribe() takes the name of a table or materialized "
                                   f"view, not {type(name).__name__}")
        with self._using() as engine:
            item = engine.catalog.lookup(name.lower())
            if item is None:
                raise ProgrammingError(f'relation "{name}" does not exist')
            if item.kind == "view":
                raise ProgrammingError(
                    f'cannot subscribe to view "{name}": only tables and materialized views '
                    "keep their changes (CREATE MATERIALIZED VIEW it instead)")
            return Subscription(engine, name.lower(), functools.partial(
                self._using, beside=True), as_of)


def _opened(path: str | PathLike[str], spark: SparkSession | None) -> Store:
    """The durable database at ``path`` (``Store``), opened for this connection."""
    try:
        return Store(path, spark)
    except StateError as error:
        raise OperationalError(str(error)) from None

"""matview: incremental materialized views in SQL, maintained on Apache Spark.

    import matview
    con = matview.connect(clock=0)
    con.execute("CREATE TABLE t (a INT)")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

from matview.errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    QueryCanceled,
    Warning,
)
from matview.runtime.settings import RuntimeSettings, active

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from matview.connection import Connection

apilevel = "2.0"
threadsafety = 2
"""Threads may share the module and connections (a connection runs one statement at a time,
and a thread's open transaction holds it until it ends)."""
paramstyle = "qmark"


def connect(path: str | PathLike[str] | None = None, *, spark: SparkSession | None = None,
            master: str | None = None, clock: int | None = None,
            config: Mapping[str, str] | None = None,
            max_table_function_rows: int | None = None,
            max_join_rows: int | None = None, refresh: str = "auto",
            files: Sequence[str | PathLike[str]] = (), progress: bool = True,
            settings: RuntimeSettings | Mapping[str, int | float] | None = None,
            state_dir: str | PathLike[str] | None = None) -> Connection:
    """Open a matview database (PEP 249 connection).

    ``clock=None`` reads the wall clock in milliseconds; an integer starts a manual clock
    there, moved with ``advance_time``. ``spark`` reuses a SparkSession; ``master`` names a
    Spark master or a Spark Connect server (``sc://host:15002``); by default Spark starts in
    local mode on first use. ``config`` overrides Spark settings. ``max_table_function_rows``
    is the most rows a table function may produce for one input row before the statement
    fails (default ``matview.ir.table_functions.DEFAULT_ROW_LIMIT``, a million);
    ``max_join_rows`` the most update rows one join may produce in one step (default
    ``matview.runtime.operators.join.DEFAULT_JOIN_ROWS``). ``refresh`` is how materialized views
    step: ``auto`` (per step, the cheaper of incremental and recompute-and-diff by
    estimate), ``incremental`` or ``recompute`` (``matview.runtime.refresh``). ``files``
    are the directories ``COPY ... FROM | TO 'file'`` may read and write in (none by
    default). ``progress`` shows a progress bar on standard error, when it is a terminal,
    for a statement still running after two seconds (``matview.progress``). ``path``
    is a durable database's directory (made if new; ``matview.durability``): every write
    is on disk when it returns, and opening the directory again, in this process or
    another, resumes its tables and views where they were, without recomputing them; one
    connection at a time may have it open. Without it the database lives in memory.
    ``settings``
    overrides the runtime's thresholds (``matview.runtime.settings.RuntimeSettings``, or a
    mapping of setting names to values); ``SHOW SETTINGS`` lists them. ``state_dir`` is
    where batches too large for the driver are written, as Parquet files Spark reads back
    (``matview.runtime.arrangements.batch_files``): on a cluster a directory (or URI) every
    executor reaches; by default a temporary directory of this process.
    """
    from matview.connection import Connection
    from matview.ir.table_functions import DEFAULT_ROW_LIMIT
    from matview.runtime.operators.join import DEFAULT_JOIN_ROWS

    limit = DEFAULT_ROW_LIMIT if max_table_function_rows is None else max_table_function_rows
    joins = DEFAULT_JOIN_ROWS if max_join_rows is None else max_join_rows
    return Connection(path, spark=spark, master=master, clock=clock, config=config,
                      max_table_function_rows=limit, max_join_rows=joins, refresh=refresh,
                      files=files, progress=progress, settings=_settings(settings),
                      state_dir=state_dir)


def _settings(given: RuntimeSettings | Mapping[str, int | float] | None) -> RuntimeSettings:
    """``connect``'s ``settings``: those in force where it is called (the defaults, unless
    inside ``matview.runtime.settings.using``), a ``RuntimeSettings``, or those in force with
    a mapping's changes (an unknown name or a wrong value is a ``ProgrammingError``)."""
    if given is None or isinstance(given, RuntimeSettings):
        return given or active()
    if not isinstance(given, Mapping):
        raise ProgrammingError("settings must be a RuntimeSettings or a mapping of setting "
                               f"names to values, not {type(given).__name__}")
    try:
        return active().replaced(given)
    except ValueError as error:
        raise ProgrammingError(str(error)) from None


def __getattr__(name: str) -> Any:
    """Connection, Cursor and Subscription load Spark, so they are imported on first use:
    ``import matview.ir`` stays pure Python."""
    if name == "Connection":
        from matview.connection import Connection

        return Connection
    if name == "Cursor":
        from matview.cursor import Cursor

        return Cursor
    if name == "Subscription":
        from matview.subscription import Subscription

        return Subscription
    raise AttributeError(f"module 'matview' has no attribute {name!r}")


__all__ = [
    "Connection", "Cursor", "DataError", "DatabaseError", "Error", "IntegrityError",
    "InterfaceError", "InternalError", "NotSupportedError", "OperationalError",
    "ProgrammingError", "QueryCanceled", "Subscription", "Warning", "apilevel", "connect",
    "paramstyle", "threadsafety",
]

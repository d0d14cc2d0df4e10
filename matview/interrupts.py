"""Stopping a running statement: ``Connection.interrupt`` (from another thread), and on the
server PostgreSQL's cancel request and ``statement_timeout``.

Every Spark job a thread starts for a connection's statements carries a tag naming the
connection and the thread, added once per thread (thread-local: ``SparkContext.addJobTag``
in Spark Classic, whose session tags ``interruptTag`` did not cancel here;
``SparkSession.addTag`` through Spark Connect). An interrupt asks Spark to cancel the jobs
of that tag, again every ``_AGAIN`` seconds while the statement runs (so a
job it starts after the first request is cancelled too); the statement fails with
``QueryCanceled`` (SQLSTATE 57014), whatever the cancelled job raised, and the connection
goes on working. An interrupt while the thread runs no statement does nothing, as a
PostgreSQL cancel arriving between statements.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from matview.errors import QueryCanceled

_AGAIN = 0.2
"""Seconds between two requests to cancel a statement's jobs, until it ends."""


class Interrupts:
    """The statements running on one connection, by thread, and the interrupts asked of
    them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tagged = threading.local()
        """Whether this thread's jobs carry its tag (a thread's own: a thread's id may be
        a finished one's)."""
        self._running: dict[int, SparkSession] = {}
        """The threads running a statement, with the session its jobs run on."""
        self._asked: dict[int, str] = {}
        """The running statements asked to stop: why, by thread."""

    def _tag(self, thread: int) -> str:
        return f"matview-{id(self)}-{thread}"

    @contextmanager
    def statement(self, spark: SparkSession) -> Iterator[None]:
        """Run a statement in this thread (its jobs tagged); ``QueryCanceled`` when it was
        interrupted and failed."""
        thread = threading.get_ident()
        with self._lock:
            nested = thread in self._running
            if not getattr(self._tagged, "done", False):
                if _remote(spark):
                    spark.addTag(self._tag(thread))
                else:  # and its running tasks' threads interrupted, not left to finish
                    spark.sparkContext.addJobTag(self._tag(thread))
                    spark.sparkContext.setLocalProperty("spark.job.interruptOnCancel", "true")
                self._tagged.done = True
            self._running[thread] = spark
        try:
            yield
        except Exception as error:
            why = self._asked.get(thread)
            if why is None or nested:
                raise
            raise QueryCanceled(f"canceling statement due to {why}") from error
        finally:
            if not nested:
                with self._lock:
                    self._running.pop(thread, None)
                    self._asked.pop(thread, None)

    def interrupt(self, thread: int | None = None, why: str = "user request") -> None:
        """Stop the statement running on ``thread`` (every one of this connection's when
        None): its Spark jobs cancelled now and while it runs."""
        with self._lock:
            threads = [t for t in self._running if thread is None or t == thread]
            for t in threads:
                self._asked.setdefault(t, why)
        for t in threads:
            self._cancel(t)

    def _cancel(self, thread: int) -> None:
        """Cancel ``thread``'s jobs, and again after ``_AGAIN`` seconds while its
        interrupted statement runs."""
        with self._lock:
            spark = self._running.get(thread) if thread in self._asked else None
        if spark is None:
            return
        if _remote(spark):
            spark.interruptTag(self._tag(thread))
        else:
            spark.sparkContext.cancelJobsWithTag(self._tag(thread))
        again = threading.Timer(_AGAIN, self._cancel, (thread,))
        again.daemon = True
        again.start()


def _remote(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (no SparkContext of its own)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")

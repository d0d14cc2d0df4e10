"""Progress of long statements on a terminal: a statement (a view's creation, a load, a
refresh before a read) still running after ``DELAY`` seconds shows a rich progress bar of
the Spark tasks of its running jobs, read from Spark's status tracker, with the statement
and its elapsed time; on Spark Connect, which has no status tracker, the bar shows the
statement and its elapsed time. Silent when standard error is not a terminal, or with
``connect(progress=False)``.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
from collections.abc import Iterator

from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

DELAY = 2.0
"""Seconds a statement runs before its progress shows."""

POLL = 0.25
"""Seconds between two reads of Spark's status tracker."""


def tasks(spark: SparkSession) -> tuple[int, int] | None:
    """(completed, total) tasks of the stages of Spark's running jobs; None on Spark Connect
    (no status tracker)."""
    if is_remote():
        return None
    tracker = spark.sparkContext.statusTracker()
    done = total = 0
    for job in tracker.getActiveJobsIds():
        info = tracker.getJobInfo(job)
        for stage in () if info is None else info.stageIds:
            found = tracker.getStageInfo(stage)
            if found is not None:
                done += found.numCompletedTasks
                total += found.numTasks
    return done, total


def described(stmt: object) -> str:
    """How progress names a statement: its kind and the object it is about."""
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", type(stmt).__name__).upper()
    if getattr(stmt, "materialized", False):
        words = words.replace("VIEW", "MATERIALIZED VIEW")
    name = next((getattr(stmt, a) for a in ("name", "table", "view")
                 if isinstance(getattr(stmt, a, None), str)), None)
    return words if name is None else f"{words} {name}"


class Reporter:
    """Shows the progress of the statements run under ``showing`` on ``console`` (standard
    error by default) once they take longer than ``delay`` seconds."""

    def __init__(self, spark: SparkSession, console: Console | None = None,
                 delay: float = DELAY) -> None:
        self.spark = spark
        self.console = console or Console(file=sys.stderr)
        self.delay = delay
        self._watching = False
        """Whether a statement's progress is watched (a nested one shows within it)."""

    @property
    def shown(self) -> bool:
        """Whether progress can show: the console is a terminal."""
        return self.console.is_terminal

    @contextlib.contextmanager
    def showing(self, what: str) -> Iterator[None]:
        """Run the block, showing its progress as ``what`` when it runs long."""
        if not self.shown or self._watching:
            yield
            return
        self._watching = True
        done = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(what, done), daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()
            self._watching = False

    def _watch(self, what: str, done: threading.Event) -> None:
        """Wait ``delay`` seconds, then show the bar until ``done``."""
        if done.wait(self.delay):
            return
        columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("Spark tasks"), TimeElapsedColumn()]
        with Progress(*columns, console=self.console, transient=True) as bar:
            task = bar.add_task(what, total=None)
            while not done.is_set():
                counts = tasks(self.spark)
                if counts is not None and counts[1]:
                    bar.update(task, completed=counts[0], total=counts[1])
                done.wait(POLL)

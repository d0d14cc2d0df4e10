"""The checks of ``connect()``'s arguments, before anything starts: settings that contradict
each other or cannot apply are refused (``ProgrammingError``), never ignored."""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike

from pyspark.sql import SparkSession

from matview.errors import ProgrammingError
from matview.runtime.refresh import STRATEGIES


def checked(path: str | PathLike[str] | None, spark: SparkSession | None,
            master: str | None, config: Mapping[str, str] | None,
            state_dir: str | PathLike[str] | None, refresh: str, clock: int | None,
            **limits: int) -> None:
    """Refuse arguments of ``connect()`` that contradict each other or are out of range
    (``limits``: the row limits by name, each a positive integer)."""
    if path is not None and state_dir is not None:
        raise ProgrammingError("connect(path=...) keeps its state in path: state_dir= "
                               "cannot apply to it")
    if spark is not None and (master is not None or config):
        raise ProgrammingError("connect(spark=...) runs on that session: master= and "
                               "config= cannot apply to it")
    for name, value in limits.items():
        if not is_int(value) or value < 1:
            raise ProgrammingError(f"{name} must be a positive integer")
    if refresh not in STRATEGIES:
        raise ProgrammingError(f"refresh must be one of {', '.join(STRATEGIES)}, not "
                               f"{refresh!r}")
    if clock is not None and not is_int(clock):
        raise ProgrammingError("clock must be an integer (milliseconds) or None")


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_reusable(master: str | None, config: Mapping[str, object]) -> None:
    """Spark runs one classic session per process: when one runs already, it is the one a
    new connection gets, so ``master`` or ``config`` settings that it cannot take (another
    master, a static setting with another value) are refused instead of being ignored."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or (master is not None and master.startswith("sc://")):
        return
    if master is not None and master != context.master:
        raise ProgrammingError(
            f"a Spark session on master {context.master} already runs in this process, so "
            f"master={master!r} cannot apply (Spark runs one per process); leave master out "
            "to share it, or pass spark=")
    session = SparkSession._instantiatedSession
    settings = context.getConf()
    for key, value in config.items():
        modifiable = session is not None and session.conf.isModifiable(key)
        if not modifiable and settings.get(key) != str(value):
            raise ProgrammingError(
                f"config {key}={value!r} cannot apply to the Spark session already running "
                "in this process (it is set when Spark starts); leave it out to share that "
                "session")


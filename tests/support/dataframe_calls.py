"""Counting the DataFrame methods a block calls: a step that reuses its kept plans calls
none (``runtime.spark.templates``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame


@contextmanager
def dataframe_calls() -> Iterator[list[str]]:
    """The DataFrame methods that build plans, called in the block (on a classic session's
    frames: its class overrides every one of them)."""
    names = ["select", "where", "join", "unionByName", "groupBy", "withColumn", "observe",
             "hint", "coalesce", "drop", "alias"]
    called: list[str] = []
    originals = {name: getattr(ClassicFrame, name) for name in names}

    def counting(name: str):  # type: ignore[no-untyped-def]
        def method(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            called.append(name)
            return originals[name](self, *args, **kwargs)
        return method

    for name in names:
        setattr(ClassicFrame, name, counting(name))
    try:
        yield called
    finally:
        for name, original in originals.items():
            setattr(ClassicFrame, name, original)

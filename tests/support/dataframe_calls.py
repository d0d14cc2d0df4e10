"""Counting the DataFrame methods a block calls: a step that reuses its kept plans calls
none (``runtime.spark.templates``); and the frames a refresh's one job computes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from matview.runtime.spark import one_job
from pyspark.sql import DataFrame
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


def wanted_frames(monkeypatch: pytest.MonkeyPatch) -> list[list[DataFrame]]:
    """The frames each run of a refresh's one job computes, one list per run, from now on."""
    wanted: list[list[DataFrame]] = []
    run = one_job.OneJob.run

    def recording(self: one_job.OneJob) -> None:
        wanted.append([frame for frame, _ in self.wanted])
        run(self)

    monkeypatch.setattr(one_job.OneJob, "run", recording)
    return wanted

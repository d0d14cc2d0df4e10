"""Crashes of a durable database (``connect(path=...)``): reopened after a crash at any
point, it holds every transaction that returned and none after the one in flight (which
may or may not have committed), and its views equal their definitions over what it holds.

The workload is ``tests/support/durable_writer.py``'s: numbered atomic transactions
logging their number, inserting orders and deleting earlier ones, views read every third.
Crashes come two ways: in this process, by a fault raised at a chosen durable write (a
batch file, Spark's files of a batch, their sync, the manifest's replacement, the commit
log's append: before or after each), and, as the system does it, by SIGKILL of a writer
process at a random time.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from matview.runtime.arrangements import batch_files
from matview.runtime.durable import log, records, store
from pyspark.sql import SparkSession

import matview
from tests.support import durable_writer
from tests.support.durable_writer import deleted, made, orders, replayed

SMALL = {"driver_batch_rows": 2, "fetched_batch_rows": 0, "table_copy_rows": 0,
         "view_copy_rows": 0, "keyed_read_rows": 0, "driver_merge_rows": 4}
"""Batches of more than two rows held in Spark's files: crashes while Spark writes them."""

CRASHES = 20
"""Crashes in this process: each kind of point twice (``Faults.KINDS``); at a URI, whose
writes run the same code to other file system calls, once."""


class Crash(BaseException):
    """The process dies here (not an ``Exception``: nothing on the way handles it)."""


class Faults:
    """The durable writes (``POINTS``), each wrapped so that the process may die just
    before or just after it (``KINDS``); ``arm(kind, n)`` crashes it at the n-th point of
    that kind from now. ``hit`` counts the crashes by kind."""

    POINTS = ((records, "write_synced"), (records, "_synced_sizes"),
              (store, "replace_atomically"), (batch_files, "_written"),
              (log, "append_synced"))
    KINDS = tuple(f"{when} {name}" for _, name in POINTS for when in ("before", "after"))

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed: tuple[str, int] | None = None
        self.hit: Counter[str] = Counter()
        for module, name in self.POINTS:
            monkeypatch.setattr(module, name, self._wrapped(name, getattr(module, name)))

    def arm(self, kind: str, n: int) -> None:
        self.armed = (kind, n)

    def _wrapped(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self._point(f"before {name}")
            result = real(*args, **kwargs)
            self._point(f"after {name}")
            return result
        return wrapped

    def _point(self, where: str) -> None:
        if self.armed is None or self.armed[0] != where:
            return
        self.armed = (where, self.armed[1] - 1)
        if self.armed[1] == 0:
            self.armed = None
            self.hit[where] += 1
            raise Crash(where)


@pytest.mark.parametrize("uri", [False, True], ids=["directory", "uri"])
def test_crashes_at_every_kind_of_durable_write_lose_nothing_committed(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        uri: bool) -> None:
    """``CRASHES`` crashes, each kind of point in turn, at its first to third occurrence;
    Spark's batch files with settings that hold batches of a few rows in them. In a
    directory, and at a ``file://`` URI (Hadoop's ``FileSystem``: ``hadoop_paths``)."""
    rng = random.Random(5)
    path: Path | str = (tmp_path / "db").as_uri() if uri else tmp_path / "db"
    faults = Faults(monkeypatch)
    with matview.connect(path, spark=spark) as con:
        made(con)
    done = begun = 0
    for crash in range(CRASHES // 2 if uri else CRASHES):
        kind = Faults.KINDS[crash % len(Faults.KINDS)]
        spark_files = "_written" in kind or "_synced_sizes" in kind
        con = matview.connect(path, spark=spark,
                              settings=SMALL if spark_files else rng.choice([{}, SMALL]))
        done = begun = _recovered(con, done, begun)
        faults.arm(kind, rng.randrange(1, 4))
        try:
            for _ in range(40):
                begun = done + 1
                _commit(con, done)
                done = begun
                if done % 3 == 0:
                    con.execute("SELECT * FROM by_cust").fetchall()
            con.close()  # the point was not reached: a clean close
        except Crash:
            assert con._store is not None
            con._store.close()  # the process is gone: the system releases its lock
    with matview.connect(path, spark=spark) as con:
        _recovered(con, done, begun)
    assert set(faults.hit) == set(Faults.KINDS), faults.hit


def _commit(con: matview.Connection, i: int) -> None:
    with con.transaction():
        con.insert("log", [(i,)])
        con.insert("orders", orders(i))
        if deleted(i):
            con.delete("orders", deleted(i))


def _recovered(con: matview.Connection, done: int, begun: int) -> int:
    """How many transactions ``con`` holds, checked: every one of the ``done`` that
    returned, none after the ``begun`` ones, no gap, and its views equal to their
    definitions over its tables."""
    log = sorted(i for (i,) in con.execute("SELECT i FROM log").fetchall())
    k = len(log)
    assert log == list(range(k)), "a gap: a transaction lost while a later one was kept"
    assert done <= k <= begun, (done, k, begun)
    _, kept = replayed(k)
    assert Counter(con.execute("SELECT * FROM orders").fetchall()) == Counter(kept)
    totals: dict[int, tuple[int, int]] = {}
    for _, cust, amount in kept:
        n, total = totals.get(cust, (0, 0))
        totals[cust] = (n + 1, total + amount)
    assert sorted(con.execute("SELECT * FROM by_cust").fetchall()) == sorted(
        (cust, n, total) for cust, (n, total) in totals.items())
    assert con.execute("SELECT * FROM logged").fetchall() == [(k, k - 1 if k else None)]
    return k


@pytest.mark.slow
def test_a_writer_killed_at_random_times_loses_nothing_committed(
        spark: SparkSession, tmp_path: Path) -> None:
    """``MATVIEW_CRASH_KILLS`` kills (1 by default: each writer starts a Spark of its own;
    the note of the durability issue reports a run of 30). ``MATVIEW_CRASH_URI=1``: the
    database at its ``file://`` URI, where the killed writer's ``LOCK`` file stays behind
    and the reopening takes it over, its process being gone."""
    rng, path = random.Random(3), tmp_path / "db"
    if os.environ.get("MATVIEW_CRASH_URI") == "1":
        path = path.as_uri()  # type: ignore[assignment]
    done = begun = 0
    for kill in range(int(os.environ.get("MATVIEW_CRASH_KILLS", "1"))):
        settings = SMALL if kill % 2 else {}
        writer = subprocess.Popen(
            [sys.executable, durable_writer.__file__, str(path), json.dumps(settings),
             str(done)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert writer.stdout is not None
        wanted = done + rng.randrange(1, 8)
        for line in writer.stdout:
            done, begun = _followed(line, done, begun)
            if done >= wanted:
                break
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        for line in writer.stdout.read().splitlines():
            done, begun = _followed(line, done, begun)
        with matview.connect(path, spark=spark) as con:
            done = begun = _recovered(con, done, begun)


def _followed(line: str, done: int, begun: int) -> tuple[int, int]:
    """``done`` and ``begun`` after the writer printed ``line`` (maybe cut by the kill)."""
    word, _, number = line.strip().partition(" ")
    if not number.isdigit():
        return done, begun
    if word == "begin":
        return done, int(number) + 1
    return (int(number) + 1, begun) if word == "done" else (done, begun)

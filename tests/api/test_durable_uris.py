"""A durable database at a URI (``connect(path="hdfs://...")``: ``hadoop_paths``), tested at
``file://`` URIs, which Hadoop's ``FileSystem`` reaches as it does ``hdfs://`` ones: its lock
file and the manifest a replacement left as its temporary. Reopening with every kind of
state, crashes at every durable write and a killed writer are tested at URIs beside
directories (``test_durable.py``, ``test_durable_crashes.py``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import matview
from matview.errors import OperationalError


def _locked_by(path: Path, host: str, pid: int) -> None:
    (path / "LOCK").write_text(json.dumps({"host": host, "pid": pid, "token": "t"}))


def test_the_lock_of_a_process_gone_from_this_host_is_taken_over(
        spark: SparkSession, tmp_path: Path) -> None:
    """A ``LOCK`` naming a live process, or one of another host (which this host cannot
    tell is gone), refuses the opener, naming its holder and the file; one naming a process
    of this host that is gone is taken over, and removed when the database closes."""
    path = tmp_path / "db"
    with matview.connect(path.as_uri(), spark=spark) as con:
        con.execute("CREATE TABLE t (a INT)")
        con.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(OperationalError, match=f"by process {os.getpid()} of host"):
            matview.connect(path.as_uri(), spark=spark)
    assert not (path / "LOCK").exists()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        _locked_by(path, socket.gethostname(), sleeper.pid)
        with pytest.raises(OperationalError, match=f"process {sleeper.pid} .*remove "
                                                   f"{path.as_uri()}/LOCK"):
            matview.connect(path.as_uri(), spark=spark)
    finally:
        sleeper.kill()
        sleeper.wait()
    _locked_by(path, "elsewhere", sleeper.pid)
    with pytest.raises(OperationalError, match="of host elsewhere"):
        matview.connect(path.as_uri(), spark=spark)
    _locked_by(path, socket.gethostname(), sleeper.pid)  # gone now
    with matview.connect(path.as_uri(), spark=spark) as con:
        assert con.execute("SELECT * FROM t").fetchall() == [(1,)]
        assert json.loads((path / "LOCK").read_text())["pid"] == os.getpid()
    assert not (path / "LOCK").exists()


COPIED = {"driver_batch_rows": 1, "fetched_batch_rows": 0, "keyed_read_rows": 0}
"""Batches of more than a row held in Spark's files, the driver keeping a copy of a table's
(read back from a URI by Spark: ``records``)."""


def test_a_manifest_left_as_its_temporary_is_read_only_when_complete(
        spark: SparkSession, tmp_path: Path) -> None:
    """Where rename does not replace (HDFS), the manifest is replaced by deleting the old
    one, then renaming the new one's temporary file: stopped in between, the complete
    temporary is the manifest; one cut while written never replaced a manifest (the
    database's first commit had not happened). The table's batch is held in Spark's files
    under the URI, with a copy in the driver, both read back."""
    path = tmp_path / "db"
    with matview.connect(path.as_uri(), spark=spark, settings=COPIED) as con:
        con.execute("CREATE TABLE t (a INT)")
        con.execute("INSERT INTO t VALUES (1), (2)")
    assert any((path / "state").iterdir())
    manifest, temporary = path / "manifest.json", path / "manifest.json.tmp"
    manifest.rename(temporary)
    with matview.connect(path.as_uri(), spark=spark, settings=COPIED) as con:
        trace = con._engine_for_use().catalog.entries["t"].trace
        assert trace is not None and any(b.leaf.copy is not None for b in trace.batches)
        assert sorted(con.execute("SELECT * FROM t").fetchall()) == [(1,), (2,)]
        con.execute("INSERT INTO t VALUES (3)")
    assert manifest.exists() and not temporary.exists()
    manifest.rename(temporary)
    temporary.write_bytes(temporary.read_bytes()[:-20])
    (path / "log").unlink()
    with matview.connect(path.as_uri(), spark=spark) as con:
        assert con.execute("SHOW TABLES").fetchall() == []

"""The archive of Spark's classes a driver JVM maps at start (``runtime.spark.class_archive``):
written by a first JVM as it exits, taken once written whole, never while incomplete."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from matview.runtime.spark.class_archive import MAGIC, QUIET, archive_options


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("MATVIEW_CLASS_ARCHIVE", raising=False)
    return tmp_path / "matview"


def _option(options: str, name: str) -> Path:
    (value,) = [o.split("=", 1)[1] for o in options.split() if o.startswith(f"-XX:{name}=")]
    return Path(value)


def test_a_first_start_writes_the_archive_to_a_file_of_its_own(cache: Path) -> None:
    first, second = archive_options("-Xss32m"), archive_options("-Xss32m")
    parts = [_option(o, "ArchiveClassesAtExit") for o in (first, second)]
    assert parts[0] != parts[1] and all(p.parent == cache for p in parts)
    assert all(p.suffix == ".part" for p in parts) and QUIET in first
    assert "SharedArchiveFile" not in first


def test_a_file_written_whole_becomes_the_archive_every_later_start_maps(cache: Path) -> None:
    part = _option(archive_options(""), "ArchiveClassesAtExit")
    part.write_bytes(MAGIC + b"classes")  # the JVM wrote its header last: done
    unfinished = cache / f"{part.name.split('.')[0]}.other.part"
    unfinished.write_bytes(bytes(16))  # a JVM still writing another
    options = archive_options("")
    archive = _option(options, "SharedArchiveFile")
    assert archive.read_bytes() == MAGIC + b"classes" and not part.exists()
    assert unfinished.exists()  # not taken, and not removed while it may be written
    assert _option(archive_options(""), "SharedArchiveFile") == archive


def test_a_file_never_completed_is_not_taken_and_goes_when_stale(cache: Path) -> None:
    part = _option(archive_options(""), "ArchiveClassesAtExit")
    part.write_bytes(bytes(16))  # killed before its header
    assert "ArchiveClassesAtExit" in archive_options("") and part.exists()
    day_ago = time.time() - 2 * 24 * 3600
    os.utime(part, (day_ago, day_ago))
    assert "ArchiveClassesAtExit" in archive_options("") and not part.exists()


def test_no_archive_when_turned_off_or_named_by_the_user(cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    assert archive_options("-XX:SharedArchiveFile=/mine.jsa") == ""
    assert archive_options("-XX:ArchiveClassesAtExit=/mine.jsa") == ""
    monkeypatch.setenv("MATVIEW_CLASS_ARCHIVE", "off")
    assert archive_options("-Xss32m") == ""
    assert not cache.exists()

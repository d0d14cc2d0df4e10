"""An archive of the classes Spark's driver loads, so that a new JVM maps them instead of
loading and verifying them again (Java's application class-data sharing, AppCDS).

Starting Spark and running a first query loads tens of thousands of classes; on this machine
(2 cores) ``connect()`` to a first result took 10.1-10.6 s, 6.2-6.3 s with the archive
(``bench small``'s ``connect`` figure measures it). The JVM writes the archive as it exits
(``-XX:ArchiveClassesAtExit``): the first JVM started on a machine, or after Spark or Java
changed, writes it to a file of its own; a later start takes a file that was written whole
as the archive and maps it (``-XX:SharedArchiveFile``), each JVM of the same Java and Spark
from then on. The JVM writes an archive's header last, so a file whose header is not there
yet (a JVM still writing it, or killed while it did) is never taken. A JVM that cannot use
the archive (another Java, a damaged file) starts without it, as it would have; its messages
about the archive are turned off.

The archives live in ``$XDG_CACHE_HOME/matview`` (``~/.cache/matview``), about 160 MB
each; ``MATVIEW_CLASS_ARCHIVE=off`` starts Spark without one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
from pathlib import Path

MAGIC = (0xF00BABA8).to_bytes(4, "little")
"""The first bytes of a dynamic class-data archive's header."""

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
"""The JVM options turning its messages about the archive off."""

_STALE_S = 24 * 3600
"""How old a file never completed may be before a start removes it."""


def archive_options(java_options: str) -> str:
    """The JVM options of a driver about to start, with ``java_options`` (the driver's
    ``extraJavaOptions``), that map the archive of its classes, or write it as it exits
    when there is none yet: nothing when the options name an archive already, or when
    ``MATVIEW_CLASS_ARCHIVE`` is ``off``, or the cache directory cannot be written."""
    if "SharedArchiveFile" in java_options or "ArchiveClassesAtExit" in java_options \
            or os.environ.get("MATVIEW_CLASS_ARCHIVE", "").lower() in ("off", "0", "false"):
        return ""
    directory = _directory()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ""
    if not os.access(directory, os.W_OK):
        return ""
    archive = directory / f"spark-{_key()}.jsa"
    if archive.is_file() or _promote(archive):
        return f"-XX:SharedArchiveFile={archive} {QUIET}"
    return f"-XX:ArchiveClassesAtExit={archive.with_suffix(f'.{uuid.uuid4().hex}.part')} {QUIET}"


def _promote(archive: Path) -> bool:
    """Whether a file a JVM wrote whole for ``archive`` (its header there) was made it;
    files never completed and a day old are removed."""
    found = False
    for part in archive.parent.glob(f"{archive.stem}.*.part"):
        try:
            with open(part, "rb") as file:
                whole = file.read(len(MAGIC)) == MAGIC
            if whole and not found:
                os.replace(part, archive)
                found = True
            elif whole or time.time() - part.stat().st_mtime > _STALE_S:
                part.unlink()
        except OSError:  # another start took or removed it
            continue
    return found


def _directory() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "matview"


def _key() -> str:
    """What the archive depends on: the Java runtime (its executable and when it was
    installed) and Spark's jars (PySpark's version and place)."""
    import pyspark

    home = os.environ.get("JAVA_HOME")
    java = Path(home) / "bin" / "java" if home else Path(shutil.which("java") or "java")
    try:
        java = java.resolve()
        installed = str(java.stat().st_mtime_ns)
    except OSError:
        installed = ""
    spark_home = os.environ.get("SPARK_HOME") or str(Path(pyspark.__file__).parent)
    parts = [str(java), installed, pyspark.__version__, spark_home]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]

"""An append-only folder of Parquet files as changes: each new file's rows are inserts.

The files are the folder's ``*.parquet`` files, in its subfolders too, in the order of
their paths; names starting with ``.`` or ``_`` are left out (a writer's files in progress
and its markers, as Spark writes them: a file appears whole once renamed into place). A
source remembers the files it applied (its progress relation), so each is applied once;
a file that disappears or changes after it was applied is not followed (the folder is
append-only).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from matview.errors import ProgrammingError


class ParquetFolder:
    """The Parquet files of ``folder``."""

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise ProgrammingError(f'"{folder}" is not a folder')
        self.folder = folder

    def listed(self) -> list[str]:
        """The folder's files now, as paths relative to it, in order."""
        return sorted(str(path.relative_to(self.folder)) for path in self.folder.rglob("*.parquet")
                      if not any(part.startswith((".", "_"))
                                 for part in path.relative_to(self.folder).parts))

    def path(self, name: str) -> str:
        """The path of file ``name`` (one of ``listed``)."""
        return str(self.folder / name)

    def schema(self) -> pa.Schema:
        """The schema of the folder's first file."""
        names = self.listed()
        if not names:
            raise ProgrammingError(f'the folder "{self.folder}" holds no Parquet file to read '
                                   "its columns from: write them, CREATE SOURCE name (column "
                                   "type, ...) FROM PARQUET 'folder'")
        return pq.read_schema(self.path(names[0]))

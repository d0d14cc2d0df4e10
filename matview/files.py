"""Files in and out (``COPY ... FROM | TO 'path'``): CSV and Parquet read into a table's rows
and written from a result's rows with pyarrow, at paths inside the directories the
connection allows (``connect(files=[...])``).

CSV follows PostgreSQL's COPY: an unquoted empty field (or the ``NULL`` text) is NULL, a
quoted empty field an empty string; values are converted to the table's column types as
they are read, and one that does not convert fails the statement, which then inserts
nothing. A CSV written by ``COPY TO`` reads back as the same rows; booleans are written
``true``/``false``, timestamps ``YYYY-MM-DD HH:MM:SS.ffffff`` (a TIMESTAMPTZ's with ``+00``,
and offsets read), and times of day (``24:00:00`` too), times with time zone, intervals and
bytea values (``\\xdeadbeef``) in PostgreSQL's text, as PostgreSQL writes them. Parquet
files hold the columns by name and type (a TIME as Parquet's, an INTERVAL and a TIMETZ as
the structs they are stored as; ``COPY FROM`` reads the named columns, converted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from matview.errors import DataError, ProgrammingError
from matview.ir import bytea, interval_values, intervals, times, timetz
from matview.ir.eval_error import EvalError
from matview.ir.types import Kind, SqlType
from matview.runtime.lowering.types import update_schema
from matview.sql.catalog import CatalogItem
from matview.sql.statements import FileFormat

TRUE_TEXTS = ["t", "true", "y", "yes", "on", "1", "TRUE", "True"]
FALSE_TEXTS = ["f", "false", "n", "no", "off", "0", "FALSE", "False"]
"""The boolean spellings COPY FROM reads, as PostgreSQL's boolean input."""


def directories(files: object) -> tuple[Path, ...]:
    """``connect(files=...)``: existing directories, resolved."""
    if isinstance(files, (str, PathLike)) or not isinstance(files, (list, tuple)):
        raise ProgrammingError("files must be a list of directories")
    out = []
    for entry in files:
        directory = Path(entry).expanduser().resolve()
        if not directory.is_dir():
            raise ProgrammingError(f'files: "{entry}" is not a directory')
        out.append(directory)
    return tuple(out)


def confined(path: str, directories: Sequence[Path]) -> Path:
    """``path`` resolved (symbolic links followed), which must lie inside one of
    ``directories`` (themselves resolved)."""
    if not directories:
        raise ProgrammingError(
            f'cannot use the file "{path}": this connection allows no directory for files '
            "(matview.connect(files=['/some/dir']), or matview serve --files DIR)")
    resolved = Path(path).expanduser().resolve()
    for directory in directories:
        if resolved == directory or directory in resolved.parents:
            return resolved
    allowed = ", ".join(str(d) for d in directories)
    raise ProgrammingError(f'cannot use the file "{path}": it is outside the directories this '
                           f"connection allows files in ({allowed})")


def _arrow_type(t: SqlType) -> pa.DataType:
    return update_schema([t]).field(0).type


_FILE_TYPES = {Kind.TIME: pa.time64("us"), Kind.TIMESTAMPTZ: pa.timestamp("us", tz="UTC")}
"""The Arrow types a file holds values of these kinds as (stored otherwise: a TIME as its
microseconds, a TIMESTAMPTZ as a UTC timestamp with no zone), which read back as them."""


_CSV_TEXTS: dict[Kind, Callable[[Any], str]] = {
    Kind.BYTEA: bytea.text_of,
    Kind.INTERVAL: lambda value: intervals.render(interval_values.of_arrow(value)),
    Kind.TIME: lambda value: times.text_of(times.of_micros(value)),
    Kind.TIMETZ: lambda value: timetz.text_of(timetz.of_arrow(value)),
}
"""The kinds CSV holds as PostgreSQL's text (``\\xdeadbeef``, ``1 day 02:00:00``,
``24:00:00``, ``10:00:00+02``), and the text of a value as stored."""


def _file_type(t: SqlType, kind: str) -> pa.DataType:
    """The Arrow type a field of a column of type ``t`` in a file of ``kind`` is read as: the
    CSV text of the kinds of ``_CSV_TEXTS`` as text (``_stored`` reads a TIME's, ``rows``
    the others'); a time of day as one, a TIMESTAMPTZ with its zone (an offset in CSV text
    is read); others as stored."""
    if t.kind in _CSV_TEXTS and kind == "csv":
        return pa.string()
    return _FILE_TYPES.get(t.kind) or _arrow_type(t)


def _stored(column: pa.ChunkedArray, t: SqlType, kind: str) -> pa.ChunkedArray | pa.Array:
    """A column of type ``t`` as read from a file of ``kind`` (``_file_type``) as the table
    stores it: a TIME's CSV text read as PostgreSQL reads it (24:00:00 too), a TIME or a
    TIMESTAMPTZ read as such cast to its stored type."""
    if t.kind is Kind.TIME and kind == "csv":
        return pa.array([None if v is None else times.micros(times.parse(v))
                         for v in column.to_pylist()], pa.int64())
    return column.cast(_arrow_type(t)) if t.kind in _FILE_TYPES else column


def read_rows(path: Path, fmt: FileFormat, item: CatalogItem,
              columns: Sequence[str] | None) -> pa.Table:
    """The rows of the file at ``path`` as an Arrow table of ``item``'s columns in order
    (NULL in those the file does not hold: the file holds ``columns``, or all)."""
    named = list(columns) if columns is not None else [f.name for f in item.fields]
    types = {f.name: _arrow_type(f.type) for f in item.fields}
    read = {f.name: _file_type(f.type, fmt.kind) for f in item.fields}
    sql_types = {f.name: f.type for f in item.fields}
    try:
        if fmt.kind == "csv":
            table = pacsv.read_csv(
                path,
                read_options=pacsv.ReadOptions(column_names=named,
                                               skip_rows=1 if fmt.header else 0),
                parse_options=pacsv.ParseOptions(delimiter=fmt.delimiter),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: read[n] for n in named},
                    null_values=[fmt.null],
                    strings_can_be_null=True, quoted_strings_can_be_null=False,
                    true_values=TRUE_TEXTS, false_values=FALSE_TEXTS))
        else:
            table = pq.read_table(path, columns=named)
            table = pa.table([table.column(n).cast(read[n]) for n in named], names=named)
        table = pa.table([_stored(table.column(n), sql_types[n], fmt.kind) for n in named],
                         names=named)
    except FileNotFoundError:
        raise DataError(f'could not open file "{path}" for reading: No such file or '
                        "directory") from None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError,
            OSError, EvalError) as error:
        raise DataError(f'COPY from "{path}": {error}') from None
    return pa.table([table.column(f.name) if f.name in named
                     else pa.nulls(table.num_rows, types[f.name]) for f in item.fields],
                    names=[f.name for f in item.fields])


def write_rows(table: pa.Table, names: Sequence[str], types: Sequence[SqlType], path: Path,
               fmt: FileFormat) -> None:
    """Write a result's rows (``table``, its columns named ``names``, of ``types``) to
    ``path``."""
    columns = []
    for column, sql_type in zip(table.columns, types, strict=True):
        text = _CSV_TEXTS.get(sql_type.kind) if fmt.kind == "csv" else None
        if text is not None:  # PostgreSQL's text
            column = pa.array([None if v is None else text(v) for v in column.to_pylist()],
                              pa.string())
        elif sql_type.kind in _FILE_TYPES:
            column = column.cast(_FILE_TYPES[sql_type.kind])
        if sql_type.kind is Kind.TIMESTAMPTZ and fmt.kind == "csv":  # PostgreSQL's text
            column = pc.binary_join_element_wise(
                pc.strftime(column, format="%Y-%m-%d %H:%M:%S"), "+00", "")
        elif pa.types.is_timestamp(column.type) and sql_type.kind is Kind.TIMESTAMP:
            column = column.cast(pa.timestamp("us"))  # SQL TIMESTAMP: no zone
        columns.append(column)
    out = pa.table(columns, names=list(names))
    try:
        if fmt.kind == "parquet":
            pq.write_table(out, path)
            return
        if fmt.null:
            raise ProgrammingError("NULL for COPY TO a file is not supported yet: NULL is "
                                   "written as an unquoted empty field")
        if any(pa.types.is_list(c.type) for c in out.columns):
            raise ProgrammingError("array columns cannot be written to CSV yet: use FORMAT "
                                   "parquet")
        pacsv.write_csv(out, path, pacsv.WriteOptions(include_header=fmt.header,
                                                      delimiter=fmt.delimiter,
                                                      quoting_style="needed"))
    except OSError as error:
        raise DataError(f'could not open file "{path}" for writing: {error}') from None

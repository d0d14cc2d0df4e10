"""COPY, which the engine does not know: the statement parsed (``COPY t [(cols)] FROM STDIN``,
``COPY t [(cols)] | (query) TO STDOUT``, with ``FORMAT text | csv``, ``HEADER``,
``DELIMITER``, ``NULL`` in the ``WITH (...)`` or the old ``WITH CSV HEADER`` syntax), and
rows read from and written as PostgreSQL's text and CSV formats."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from matview.server.pgtypes import text_of
from matview.server.sqlstate import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, PgError

_NAME = r'(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)'
_FROM = re.compile(rf"COPY\s+({_NAME})\s*(?:\(([^)]*)\))?\s+FROM\s+STDIN\b(.*)", re.I | re.S)
_TO_TABLE = re.compile(rf"COPY\s+({_NAME})\s*(?:\(([^)]*)\))?\s+TO\s+STDOUT\b(.*)",
                       re.I | re.S)
_TO_QUERY = re.compile(r"COPY\s*\((.*)\)\s*TO\s+STDOUT\b(.*)", re.I | re.S)


@dataclass(frozen=True)
class CopyFormat:
    """How COPY data is written: ``csv`` or ``text``, header line, delimiter, NULL text."""

    csv: bool = False
    header: bool = False
    delimiter: str = "\t"
    null: str = "\\N"


@dataclass(frozen=True)
class Copy:
    """A COPY statement: into ``table`` (FROM STDIN) or out of ``table`` or ``query`` (TO
    STDOUT); ``columns`` named, or None for all."""

    incoming: bool
    format: CopyFormat
    table: str | None = None
    columns: tuple[str, ...] | None = None
    query: str | None = None


def _name(text: str) -> str:
    """A (possibly quoted) name as the catalog stores it."""
    text = text.strip()
    return text[1:-1].replace('""', '"') if text.startswith('"') else text.lower()


def _options(text: str) -> CopyFormat:
    """The format of COPY's trailing options: ``[WITH] (FORMAT csv, HEADER, ...)`` or the
    pre-9.0 ``[WITH] CSV [HEADER] [DELIMITER [AS] 'x'] [NULL [AS] 'x']``."""
    body = re.sub(r"^\s*WITH\b", "", text.strip().rstrip(";"), flags=re.I).strip()
    settings: dict[str, str] = {}
    if body.startswith("(") and body.endswith(")"):
        for part in body[1:-1].split(","):
            key, _, value = part.strip().partition(" ")
            settings[key.lower()] = value.strip().strip("'").lower() if key.lower() in (
                "format", "header") else value.strip()
    else:
        for found in re.finditer(r"(CSV|BINARY|HEADER)|(DELIMITER|NULL)\s+(?:AS\s+)?('[^']*')",
                                 body, re.I):
            if found.group(1):
                word = found.group(1).lower()
                settings["header" if word == "header" else "format"] = (
                    "true" if word == "header" else word)
            else:
                settings[found.group(2).lower()] = found.group(3)
        if re.sub(r"(CSV|BINARY|HEADER)|(DELIMITER|NULL)\s+(?:AS\s+)?'[^']*'", "", body,
                  flags=re.I).strip():
            raise PgError(SYNTAX_ERROR, f"syntax error in COPY options: {text.strip()}")
    kind = settings.pop("format", "text")
    if kind not in ("text", "csv"):
        raise PgError(FEATURE_NOT_SUPPORTED, f"COPY format {kind} is not supported (text and "
                      "csv are)")
    header = settings.pop("header", "false") in ("", "true", "on", "1")
    delimiter = _literal(settings.pop("delimiter", "','" if kind == "csv" else "'\t'"))
    null = _literal(settings.pop("null", "''" if kind == "csv" else "'\\N'"))
    if settings:
        raise PgError(FEATURE_NOT_SUPPORTED,
                      f"COPY option {', '.join(settings)} is not supported")
    if len(delimiter) != 1:
        raise PgError("22023", "COPY delimiter must be a single one-byte character")
    return CopyFormat(kind == "csv", header, delimiter, null)


def _literal(text: str) -> str:
    """A quoted COPY option value without its quotes."""
    text = text.strip()
    if text.startswith("'") and text.endswith("'") and len(text) >= 2:
        return text[1:-1].replace("''", "'")
    return text


def parse_copy(sql: str) -> Copy | None:
    """The COPY statement ``sql`` is, FROM STDIN or TO STDOUT (None: it is no such COPY;
    COPY to or from a file is the engine's, confined to the directories the server's
    connection allows)."""
    body = sql.strip().rstrip(";")
    columns = None
    found = _FROM.fullmatch(body)
    if found:
        if found.group(2) is not None:
            columns = tuple(_name(c) for c in found.group(2).split(","))
        return Copy(True, _options(found.group(3)), _name(found.group(1)), columns)
    found = _TO_QUERY.fullmatch(body)
    if found:
        return Copy(False, _options(found.group(2)), query=found.group(1))
    found = _TO_TABLE.fullmatch(body)
    if found:
        if found.group(2) is not None:
            columns = tuple(_name(c) for c in found.group(2).split(","))
        return Copy(False, _options(found.group(3)), _name(found.group(1)), columns)
    return None  # COPY to or from a server file: the engine runs it


# --- text and CSV -----------------------------------------------------------------------

_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _unescape(field: str) -> str:
    """A text-format field with its backslash escapes resolved."""
    def one(match: re.Match[str]) -> str:
        """The character one escape stands for."""
        code = match.group(1)
        if code[0] in "01234567":
            return chr(int(code, 8))
        if code[0] == "x":
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, code)

    return re.sub(r"\\([0-7]{1,3}|x[0-9A-Fa-f]{1,2}|.)", one, field)


def read_rows(data: str, fmt: CopyFormat) -> Iterator[list[str | None]]:
    """The rows of COPY data ``data`` as fields (None: NULL); a ``\\.`` line ends them."""
    if fmt.csv:
        reader = csv.reader(io.StringIO(data), delimiter=fmt.delimiter, strict=True)
        for number, record in enumerate(reader):
            if (number == 0 and fmt.header) or not record:
                continue
            if record == ["\\."]:
                return
            yield [None if f == fmt.null else f for f in record]
        return
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines):
        line = line.removesuffix("\r")
        if number == 0 and fmt.header:
            continue
        if line == "\\.":
            return
        yield [None if f == fmt.null else _unescape(f) for f in line.split(fmt.delimiter)]


def _text_field(value: object, fmt: CopyFormat) -> str:
    """One value as a field of COPY data (quoted or escaped for the format)."""
    if value is None:
        return fmt.null
    text = text_of(value)
    if fmt.csv:
        if text == "" or any(c in text for c in (fmt.delimiter, '"', "\n", "\r")) \
                or text == fmt.null:
            return '"' + text.replace('"', '""') + '"'
        return text
    return (text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
            .replace("\t", "\\t").replace(fmt.delimiter, "\\" + fmt.delimiter))


def write_row(values: Sequence[object], fmt: CopyFormat) -> bytes:
    """One row as a line of COPY data."""
    return (fmt.delimiter.join(_text_field(v, fmt) for v in values) + "\n").encode()


def header_line(names: Sequence[str], fmt: CopyFormat) -> bytes:
    """The HEADER line of COPY TO data."""
    return write_row(list(names), fmt)

"""``COPY`` to and from files.

``COPY table [(columns)] FROM 'path'`` and ``COPY table | (query) TO 'path'`` with PostgreSQL's
options ``(FORMAT csv | parquet, HEADER [boolean], DELIMITER 'c', NULL 'text')``; the file is
read or written by the engine (``matview/files.py``), which confines paths to the
directories the connection allows. ``COPY ... FROM STDIN`` and ``TO STDOUT`` belong to a
client protocol: ``matview serve`` answers them (psql's ``\\copy`` too).
"""

from __future__ import annotations

from matview.sql.allowlist import check_arguments
from matview.sql.context import Context
from matview.sql.datatypes import storable
from matview.sql.errors import SqlError, SqlTypeError, UnsupportedError
from matview.sql.names import normalize, relation_name
from matview.sql.query import bind_query
from matview.sql.statements import CopyFrom, CopyTo, FileFormat, Query
from sqlglot import exp

_FORMATS = ("csv", "parquet")


def bind_copy(node: exp.Copy, ctx: Context) -> CopyFrom | CopyTo:
    """``COPY`` to or from a file (see the module docstring)."""
    files = node.args.get("files") or []
    if len(files) != 1 or not (isinstance(files[0], exp.Literal) and files[0].is_string):
        raise UnsupportedError.at("COPY reads or writes one file named by a string: COPY t "
                                  "FROM '/path/file.csv' (FORMAT csv); FROM STDIN and TO "
                                  "STDOUT work through matview serve (psql's \\copy)", node)
    path, fmt = files[0].name, _format(node)
    target = node.this
    if node.args.get("kind"):  # FROM
        table = target.this if isinstance(target, exp.Schema) else target
        if not isinstance(table, exp.Table):
            raise SqlError.at("COPY FROM needs a table", target)
        name = relation_name(table)
        item = ctx.catalog.lookup(name)
        if item is None or item.kind != "table":
            what = "does not exist" if item is None else f"is a {item.kind}"
            raise SqlError.at(f'table "{name}" {what}', table)
        columns = None
        if isinstance(target, exp.Schema):
            columns = tuple(normalize(c) for c in target.expressions)
            known = {f.name for f in item.fields}
            for column, written in zip(columns, target.expressions, strict=True):
                if column not in known:
                    raise SqlError.at(f'column "{column}" of relation "{name}" does not exist',
                                      written)
        return CopyFrom(name, columns, path, fmt)
    if isinstance(target, exp.Subquery):
        query = bind_query(target.this, ctx, sorting=True)
    elif isinstance(target, exp.Table):
        query = bind_query(exp.select("*").from_(target.copy()), ctx)
    else:
        raise SqlError.at("COPY TO needs a table or a (query)", target)
    _check_storable(query, target)
    return CopyTo(query, path, fmt)


def _check_storable(query: Query, node: exp.Expr) -> None:
    for name, t in zip(query.column_names, query.plan.types, strict=True):
        if not storable(t):
            raise SqlTypeError.at(f'column "{name}" has type {t}, which a table or file '
                                  "cannot hold", node)


def _format(node: exp.Copy) -> FileFormat:
    """The options of ``node`` (FORMAT, HEADER, DELIMITER, NULL)."""
    options: dict[str, exp.Expr | None] = {}
    for param in node.args.get("params") or []:
        check_arguments(param, frozenset({"this", "expression"}))
        key = param.this.name.lower()
        if key in options:
            raise SqlError.at(f"option {key} given more than once", param)
        options[key] = param.args.get("expression")
    unknown = set(options) - {"format", "header", "delimiter", "null"}
    if unknown:
        raise UnsupportedError.at(f"COPY option {sorted(unknown)[0]} is not supported", node)
    kind = (options["format"].name.lower() if options.get("format") is not None
            else "text")
    if kind not in _FORMATS:
        raise UnsupportedError.at(f"COPY to or from a file in FORMAT {kind} is not supported: "
                                  "write FORMAT csv or FORMAT parquet", node)
    header = options.get("header")
    header_on = "header" in options and (header is None or _truth(header, node))
    text = {k: _text(options[k], node, k) for k in ("delimiter", "null") if k in options}
    if kind == "parquet" and (header_on or text):
        raise SqlError.at("HEADER, DELIMITER and NULL apply to FORMAT csv only", node)
    delimiter = text.get("delimiter", ",")
    if len(delimiter) != 1:
        raise SqlError.at("COPY delimiter must be a single one-byte character", node)
    return FileFormat(kind, header_on, delimiter, text.get("null", ""))  # type: ignore[arg-type]


def _truth(value: exp.Expr, node: exp.Expr) -> bool:
    """A boolean option's value (``true``, ``false``, ``on``, ``off``, 1, 0)."""
    word = value.name.lower() if not isinstance(value, exp.Boolean) else str(value.this).lower()
    if word in ("true", "on", "1"):
        return True
    if word in ("false", "off", "0"):
        return False
    raise SqlError.at(f"HEADER requires a Boolean value, not {word}", node)


def _text(value: exp.Expr | None, node: exp.Expr, key: str) -> str:
    if not (isinstance(value, exp.Literal) and value.is_string):
        raise SqlError.at(f"COPY {key.upper()} must be a string literal", node)
    return value.name

"""The sql layer's entry points: split a script into statement trees, bind a tree against the
catalog as it is when the statement runs, or both at once (``parse``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import sqlglot
from matview.sql import ddl, dml, sources
from matview.sql.allowlist import check_supported
from matview.sql.alter import bind_alter, bind_comment
from matview.sql.array_sizes import subscripts_as_series
from matview.sql.as_of import bind_time
from matview.sql.catalog import Catalog
from matview.sql.context import Context
from matview.sql.copy import bind_copy
from matview.sql.dialect import Matview
from matview.sql.dialect_nodes import (
    EXPLAIN_FORMATS,
    EXPLAIN_OPTIONS,
    EXPLAIN_STAGES,
    AsOf,
    Explain,
    Subscribe,
)
from matview.sql.dialect_nodes import CreateSink as CreateSinkNode
from matview.sql.dialect_nodes import CreateSource as CreateSourceNode
from matview.sql.dialect_nodes import DropSink as DropSinkNode
from matview.sql.errors import SqlError, SqlSyntaxError, UnknownObjectError, UnsupportedError
from matview.sql.names import relation_name
from matview.sql.query import bind_query
from matview.sql.schemas import unqualified
from matview.sql.statement_time import statement_clock
from matview.sql.statements import CreateView, Query, Statement, SubscribeTo
from matview.sql.statements import Explain as ExplainStatement
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

TOO_DEEP = "statement is too deeply nested (too many nested expressions or parentheses)"

_STAGE_NAMES = {"trace": "OPTIMIZER TRACE", "analyze": "ANALYZE"}
_STATEMENT_NAMES = {
    exp.TruncateTable: "TRUNCATE", exp.Transaction: "BEGIN", exp.Commit: "COMMIT",
    exp.Rollback: "ROLLBACK", exp.Describe: "DESCRIBE",
}


def parse(sql: str, catalog: Catalog) -> list[Statement]:
    """Every statement of ``sql``, each bound against ``catalog`` as it is now."""
    return [bind_statement(tree, catalog) for tree in split(sql)]


def one_statement(sql: str, method: str = "execute") -> exp.Expr:
    """The syntax tree of ``sql``, which must hold exactly one statement (several would let
    text built from user input run statements of its own); ``method`` names the API call in
    the error."""
    trees = split(sql)
    if len(trees) != 1:
        raise SqlError(f"{method}() takes one statement, "
                       + ("got none" if not trees else f"got {len(trees)}")
                       + ("; use executescript() to run several" if method == "execute" else ""))
    return trees[0]


def explain_statement(sql: str, stage: str, fmt: str, options: Sequence[str]) -> Explain:
    """The EXPLAIN of ``sql`` (one statement, or ``MATERIALIZED VIEW name``) at ``stage`` (a
    plan stage, ``trace`` or ``analyze``) in format ``fmt`` with ``options``: the statement
    ``con.explain`` runs."""
    stages = (*EXPLAIN_STAGES, "trace", "analyze")
    for value, allowed, what in ((stage, stages, "stage"), (fmt, EXPLAIN_FORMATS, "format"),
                                 *((o, EXPLAIN_OPTIONS, "option") for o in options)):
        if value.lower() not in [a.lower() for a in allowed]:
            raise SqlError(f"unknown EXPLAIN {what} {value!r}; expected one of "
                           + ", ".join(a.lower() for a in allowed))
    view = re.fullmatch(r"\s*materialized\s+view\s+(.+?)\s*;?\s*", sql, re.I | re.S)
    if view is not None:
        target = exp.to_table(view.group(1), dialect=Matview)
    else:
        target = one_statement(sql, "explain")
    return Explain(this=target, stage=stage.lower(), format=fmt.lower(),
                   options=[exp.var(o.lower()) for o in options], view=view is not None)


def split(sql: str) -> list[exp.Expr]:
    """The syntax trees of the ``;``-separated statements of ``sql``."""
    try:
        trees = sqlglot.parse(sql, dialect=Matview)
    except ParseError as error:
        raise _syntax_error(error) from None
    except TokenError as error:
        raise _token_error(error, sql) from None
    except RecursionError:
        raise SqlSyntaxError(TOO_DEEP) from None
    return [tree for tree in trees if tree is not None]


def bind_statement(tree: exp.Expr, catalog: Catalog) -> Statement:
    """The bound statement ``tree`` (from ``split``) denotes against ``catalog``; only the
    clauses the binder implements are accepted (``allowlist``)."""
    if isinstance(tree, (exp.Condition, exp.Alias)):  # words that are no statement
        first = tree.sql(dialect=Matview).split()[0]
        raise SqlSyntaxError.at(f'syntax error at or near "{first}"', tree)
    check_supported(subscripts_as_series(unqualified(tree)))
    ctx = Context(catalog)
    try:
        with statement_clock(query=_reads_once(tree)):
            if isinstance(tree, Explain):
                return _bind_explain(tree, ctx)
            return _bind(tree, ctx)
    except RecursionError:
        raise SqlError(TOO_DEEP) from None


def _reads_once(tree: exp.Expr) -> bool:
    """Whether ``tree`` is a query read once: SELECT (set operations, VALUES; AS OF a
    time), or COPY or EXPLAIN of one."""
    if isinstance(tree, Explain | exp.Copy | AsOf):
        tree = tree.this.this if isinstance(tree.this, exp.Subquery) else tree.this
    return isinstance(tree, exp.Query)


def _bind_explain(tree: Explain, ctx: Context) -> ExplainStatement:
    stage = tree.args.get("stage") or "optimized"
    fmt = tree.args.get("format") or "text"
    if fmt == "dot" and stage in ("trace", "analyze"):
        raise UnsupportedError.at(f"EXPLAIN {_STAGE_NAMES[stage]} has no DOT format", tree)
    options = tuple(o.name for o in tree.args.get("options") or ())
    if tree.args.get("view"):
        name = relation_name(tree.this)
        item = ctx.catalog.lookup(name)
        if item is None or item.kind != "materialized view":
            what = "does not exist" if item is None else f"is a {item.kind}"
            raise UnknownObjectError.at(
                f'materialized view "{name}" {what}', tree.this)
        return ExplainStatement(stage, fmt, options, view=name)
    explained = _bind(tree.this, ctx)
    if not isinstance(explained, (Query, CreateView)):
        raise UnsupportedError.at(f"EXPLAIN {_name(tree.this)} is not supported", tree)
    return ExplainStatement(stage, fmt, options, query=explained)


def _bind(tree: exp.Expr, ctx: Context) -> Statement:
    if isinstance(tree, (exp.Query, exp.Subquery, exp.Values)):
        return bind_query(tree, ctx, sorting=True)
    if isinstance(tree, AsOf):
        query = _bind(tree.this, ctx)
        if not isinstance(query, Query):
            raise UnsupportedError.at(f"AS OF applies to a query, not to {_name(tree.this)}",
                                      tree)
        return dataclasses.replace(query, as_of=bind_time(tree.expression))
    if isinstance(tree, exp.Create) and tree.kind == "TABLE":
        return ddl.bind_create_table(tree, ctx)
    if isinstance(tree, exp.Copy):
        return bind_copy(tree, ctx)
    if isinstance(tree, CreateSinkNode):
        return ddl.bind_create_sink(tree, ctx)
    if isinstance(tree, DropSinkNode):
        return ddl.bind_drop_sink(tree)
    if isinstance(tree, CreateSourceNode):
        return sources.bind_create_source(tree)
    if isinstance(tree, exp.Create) and tree.kind == "VIEW":
        return ddl.bind_create_view(tree, ctx)
    if isinstance(tree, exp.Create) and tree.kind == "INDEX":
        return ddl.bind_create_index(tree, ctx)
    if isinstance(tree, exp.Insert):
        return dml.bind_insert(tree, ctx)
    if isinstance(tree, exp.Delete):
        return dml.bind_delete(tree, ctx)
    if isinstance(tree, exp.Update):
        return dml.bind_update(tree, ctx)
    if isinstance(tree, exp.Drop):
        return ddl.bind_drop(tree)
    if isinstance(tree, exp.Show):
        return ddl.bind_show(tree)
    if isinstance(tree, exp.Alter):
        return bind_alter(tree, ctx)
    if isinstance(tree, exp.Comment):
        return bind_comment(tree)
    if isinstance(tree, Subscribe):
        if not isinstance(tree.this, exp.Table):
            raise UnsupportedError.at("SUBSCRIBE to a query is not supported yet: create a "
                                      "materialized view of it and subscribe to that", tree)
        options = tree.args.get("options")
        if options is None:
            return SubscribeTo(relation_name(tree.this))
        found = re.fullmatch(r"AS\s+OF\s+(.+?)\s*;?\s*", options.this, re.IGNORECASE | re.DOTALL)
        if found is None:
            raise UnsupportedError.at(f'SUBSCRIBE {options.this} is not supported yet: '
                                      "SUBSCRIBE takes a name and AS OF alone", tree)
        time = sqlglot.parse_one(found.group(1), read=Matview)
        return SubscribeTo(relation_name(tree.this), bind_time(time))
    raise UnsupportedError.at(f"{_name(tree)} is not supported", tree)


def _name(tree: exp.Expr) -> str:
    """The statement's name as written (``CREATE INDEX``, ``ALTER TABLE``, ``SHOW FOO``)."""
    if isinstance(tree, exp.Command):
        words = str(tree.args.get("expression") or "").split()
        return " ".join([tree.name, *words[:1]]).upper()
    if isinstance(tree, (exp.Create, exp.Alter, exp.Drop)) and tree.args.get("kind"):
        return f"{tree.key.upper()} {tree.args['kind'].upper()}"
    return _STATEMENT_NAMES.get(type(tree), tree.key.upper())


def _token_error(error: TokenError, sql: str) -> SqlSyntaxError:
    """A tokenizer error positioned where its token starts: sqlglot says ``Missing ' from
    <line>:<offset>`` for an unterminated string or quoted name, and runs off the end of the
    text on an unterminated ``/*`` comment (positioned at its opening ``/*``)."""
    cause = str(error.__cause__ or error)
    found = re.fullmatch(r"Missing (.+) from (\d+):(\d+)", cause)
    if found is None:
        opened: list[int] = []  # comments nest
        for mark in re.finditer(r"/\*|\*/", sql):
            if mark.group() == "/*":
                opened.append(mark.start())
            elif opened:
                opened.pop()
        if isinstance(error.__cause__, IndexError) and opened:
            return SqlSyntaxError("unterminated /* comment", *_line_column(sql, opened[0]))
        return SqlSyntaxError(f"syntax error: {error}")
    delimiter, line, offset = found.group(1), int(found.group(2)), int(found.group(3))
    what = "string" if delimiter == "'" else "quoted name" if delimiter == '"' else "token"
    return SqlSyntaxError(f"unterminated {what}: missing {delimiter}", line,
                          _line_column(sql, offset)[1])


def _line_column(sql: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of character ``offset`` of ``sql``."""
    return sql.count("\n", 0, offset) + 1, offset - sql.rfind("\n", 0, offset)


def _syntax_error(error: ParseError) -> SqlSyntaxError:
    detail = error.errors[0] if error.errors else {}
    near = detail.get("highlight")
    line, col = detail.get("line"), detail.get("col")
    if near:
        message = f'syntax error at or near "{near}"'
        col = max(1, col - len(near) + 1) if col is not None else None
    else:
        message = f"syntax error: {str(error).splitlines()[0]}"
    return SqlSyntaxError(message, line, col)

"""The ``eval`` cases of the scalar golden files (``fixtures/scalar_eval*.test``): an
expression in the IR text form evaluated by the reference evaluator on ``row (...)`` lines,
each value shown with its type or as ``error: MESSAGE``."""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.evaluate import evaluate
from matview.ir.functions import EvalError
from matview.ir.parse import parse_scalar
from matview.ir.render import render_scalar
from matview.ir.scalar import Call, Lit, Scalar, type_of
from matview.ir.types import SqlType


def show_value(value: object, sql_type: SqlType) -> str:
    """``value`` of ``sql_type`` as a literal of the IR text form, always with its type:
    ``2::int``, ``null::bigint``, ``'a'::text``. Raises ``ValueError`` when ``value`` is not
    held in the Python representation of ``sql_type`` (an ``int`` for a DOUBLE, say)."""
    text = render_scalar(Lit(value, sql_type))
    return text if text.endswith(f"::{sql_type}") else f"{text}::{sql_type}"


def read_row(line: str) -> tuple[tuple[object, ...], tuple[SqlType, ...]]:
    """The values and column types of a line ``row (LITERAL, ...)``."""
    row = parse_scalar(line)
    assert isinstance(row, Call) and row.func == "row", f"not a row: {line!r}"
    literals = [value for value in row.args if isinstance(value, Lit)]
    assert len(literals) == len(row.args), f"a row holds literals only: {line!r}"
    return tuple(v.value for v in literals), tuple(v.type for v in literals)


def eval_text(directive: str, text: str) -> str:
    """The output of an ``eval`` case: its expression (the first line, in the IR text form)
    evaluated on each ``row (...)`` line after it, or once on the empty row when there is
    none; one line per row, the value with its type or ``error: MESSAGE``."""
    assert directive == "eval", f"unknown directive {directive!r}"
    expr_text, *row_lines = text.split("\n")
    expr = parse_scalar(expr_text)
    rows = [read_row(line) for line in row_lines] or [((), ())]
    return "\n".join(_result(expr, row, types) for row, types in rows)


def _result(expr: Scalar, row: Sequence[object], types: Sequence[SqlType]) -> str:
    try:
        value = evaluate(expr, row, types)
    except EvalError as error:
        return f"error: {error}"
    return show_value(value, type_of(expr, types))


"""The parser of the IR's text form (``matview.ir.render`` prints it and describes it):
``parse_plan`` and ``parse_scalar``, built with lark from ``grammar.lark``: this module reads
a plan line by line (indentation, inputs, subquery blocks) and reports syntax errors; the
transformer that builds the IR from a line's parse tree is ``parse_relations.PlanBuilder``
(operator lines) over ``parse_scalars.ScalarBuilder`` (scalars, values, types, names).

A ``//`` outside a quoted string or name starts a comment, which runs to the end of the line; a
line holding only a comment is skipped. ``#i{name}`` parses as column i whatever the name. So
parsing reads past annotations and names: ``render_plan(parse_plan(t), o) == t`` for every text
``t`` that ``render_plan`` printed with options ``o``.

``parse_plan(render_plan(p, o)) == p``, whatever the options ``o``, for every plan whose
literals hold values of their type (``int`` for int, ``float`` for double, ``Decimal`` for
numeric, ...) and whose types are in the normal form of ``types.type_from_name``;
``render_plan`` raises ``ValueError`` on other plans. (``arity``, ``types`` and ``keys`` also
need the plan's column types, as ``humanized`` needs those before a ``flat_map``: rendering
with them raises what ``Relation.types`` raises on a plan that does not type-check.) NaN never
equals itself: a double NaN parses as ``math.nan``, so only plans holding that very object
compare equal after a round trip. ``parse_plan`` skips lines of spaces; malformed text raises
``PlanSyntaxError``.

A subquery in an expression prints as ``@N`` (``exists(@0)``, ``in(#1, @1)``, ``@2``); the
plan of subquery N of an operator follows the operator's inputs, one level deeper, under a
line ``subquery @N``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedToken
from lark.lexer import PatternStr
from matview.ir.parse_relations import Header, PlanBuilder
from matview.ir.parse_scalars import Invalid, Slot
from matview.ir.relation import (
    Relation,
)
from matview.ir.scalar import (
    Exists,
    InSubquery,
    Scalar,
    ScalarSubquery,
    transform,
)
from matview.ir.subquery import map_own_scalars, with_rel

INDENT = "  "
"""The indentation of an input below its consumer."""


class PlanSyntaxError(ValueError):
    """Text that is no plan (or scalar); the message starts with ``line L, column C:``."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.line = line
        self.column = column


# A name that may print unquoted (unless it is one of the ``KEYWORDS``).
BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_plan(text: str) -> Relation:
    """The plan ``text`` (as ``render_plan`` prints it, with any options) denotes; lines of
    spaces and lines of a comment alone are skipped."""
    lines = [(n, line) for n, line in enumerate(text.split("\n"), 1) if not _blank(line)]
    if not lines:
        raise PlanSyntaxError("no plan", 1, 1)
    at = 0

    def node(depth: int) -> Relation:
        nonlocal at
        number, line = lines[at]
        indent = _indent(line)
        if indent != len(INDENT) * depth:
            raise PlanSyntaxError(
                f"expected an indentation of {len(INDENT) * depth} spaces, found {indent}",
                number,
                indent + 1,
            )
        header = _parse(line, "header", number)
        assert isinstance(header, Header)
        at += 1
        children = []
        while at < len(lines) and _indent(lines[at][1]) > indent:
            children.append(node(depth + 1))
        inputs = [c for c in children if not isinstance(c, Slot)]
        if header.inputs is not None and len(inputs) != header.inputs:
            raise PlanSyntaxError(
                f"{header.operator} takes {_INPUTS.get(header.inputs, f'{header.inputs} inputs')}, "
                f"found {len(inputs)}",
                number,
                indent + 1,
            )
        plans = {c.number: c.plan for c in children if isinstance(c, Slot)}
        return _fill(header.build(tuple(inputs)), plans, number, indent)

    plan = node(0)
    if at < len(lines):
        number, line = lines[at]
        raise PlanSyntaxError("a plan has one root operator", number, _indent(line) + 1)
    return plan


def with_subplans(rel: Relation, plans: Sequence[Relation]) -> Relation:
    """``rel`` whose operator's subqueries were parsed as references ``@N`` (a plan's JSON
    carries their plans apart), each given the plan ``plans[N]``."""
    return _fill(rel, dict(enumerate(plans)), 1, 0)


def _fill(rel: Relation, plans: dict[int, Relation | None], line: int, indent: int
          ) -> Relation:
    """``rel`` with each subquery ``@N`` of its operator given the plan ``plans[N]``."""

    def fill(node: Scalar) -> Scalar:
        if isinstance(node, (Exists, InSubquery, ScalarSubquery)) and isinstance(node.rel,
                                                                                  Slot):
            plan = plans.get(node.rel.number)
            if plan is None:
                raise PlanSyntaxError(f"no plan for subquery @{node.rel.number}", line,
                                      indent + 1)
            return with_rel(node, plan)
        return node

    return map_own_scalars(rel, lambda e: transform(e, fill))


def parse_scalar(text: str) -> Scalar:
    """The scalar expression ``text`` (as ``render_scalar`` prints it) denotes."""
    expr = _parse(text, "scalar", 1)
    assert isinstance(expr, Scalar)
    return expr


def _blank(line: str) -> bool:
    """Whether ``line`` holds nothing but spaces and a comment."""
    return line.lstrip(" ")[:2] in ("", "//")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _parse(text: str, start: str, first_line: int) -> object:
    """What ``text`` builds from rule ``start``; ``first_line`` is the number of its first line."""
    try:
        return _PARSER.parse(text, start=start)
    except UnexpectedCharacters as e:
        message, line, column = f"unexpected character {e.char!r}", e.line, e.column
    except UnexpectedToken as e:
        # ``accepts`` is empty when nothing but the end of the text could follow.
        expected = ", ".join(sorted({_spell(name) for name in e.accepts})) or "end of text"
        if e.token.type == "$END":
            lines = text.split("\n")
            message = f"unexpected end of text, expected {expected}"
            line, column = len(lines), len(lines[-1]) + 1
        else:
            message = f"unexpected {e.token.value!r}, expected {expected}"
            line, column = e.line, e.column
    except Invalid as e:
        message, line, column = e.message, e.token.line, e.token.column
    raise PlanSyntaxError(message, first_line + line - 1, column)


def _spell(terminal: str) -> str:
    """A terminal as a reader knows it: ``'('`` for a string, its name for the others."""
    if terminal in ("$END", "<END-OF-FILE>"):
        return "end of text"
    pattern = _PARSER.get_terminal(terminal).pattern
    return repr(pattern.value) if isinstance(pattern, PatternStr) else terminal.lower()


_INPUTS = {0: "no inputs", 1: "one input"}


_PARSER = Lark(
    (Path(__file__).parent / "grammar.lark").read_text(),
    parser="lalr",
    start=["header", "scalar"],
    maybe_placeholders=True,
    transformer=PlanBuilder(),
)
# The grammar's keywords: a name spelled as one prints quoted.
KEYWORDS = frozenset(
    t.pattern.value
    for t in _PARSER.terminals
    if isinstance(t.pattern, PatternStr) and BARE_NAME.fullmatch(t.pattern.value)
)

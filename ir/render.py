"""The printer of the IR's text form: ``render_plan`` and ``render_line`` (the one printer of an
operator's line; EXPLAIN's renderers call it). ``matview.ir.render_scalars`` prints the
scalars, values, types and names in a line; ``matview.ir.parse`` reads the text back.

A plan is an indented tree in the style of Materialize's EXPLAIN: one operator per line, each
input two spaces deeper than its consumer, inputs in order::

    Reduce group_key=(#3) aggregates=(count(*), sum(#2), max(#2))
      Linear [filter (#2 > 0); map (#0 + 1); project (#0, #1, #2, #5)]
        Join on=(#1 = #4) plan=delta[(1), (0)]
          Get orders (id int, cust int, amount bigint, note text)
          Get customers (id int, region text)

Operators (the grammar is ``grammar.lark``):

- ``Get NAME (FIELD TYPE, ...)``
- ``Constant (TYPE, ...) [(VALUE, ...) xMULTIPLICITY; ...]``, e.g.
  ``Constant (int, text) [(1, 'a') x1; (2, null) x-3]``; ``Constant (int) []`` is empty.
- ``Linear [STEP; ...]`` with steps ``filter PRED, ...``, ``map EXPR, ...``,
  ``project (#i, ...)``, ``flat_map CALL, ... [with ordinality]`` (table functions) and
  ``repeat_row EXPR``: ``Linear [filter (#2 > 0), (mz_now() < #1); map lower(#1);
  flat_map generate_series(1, #0) with ordinality; project (#3)]``.
- ``Join on=(A = B = C, D = E) where=(PRED, ...) plan=KIND[(1, 2), (0, 2), (0, 1)]``: the
  equivalence classes (``on=()`` when none), the predicates evaluated inside the join
  (``where=`` left out when none), then the join plan's kind and one order of input indexes
  per path; ``plan=`` is left out when the join has no plan. An empty class has no text form.
- ``AsOfJoin [outer] left_keys=(EXPR, ...) right_keys=(EXPR, ...) where=(PRED, ...)
  unique=(#i, ...)``: the as-of join on transaction time, each left key (over the left
  input) equal to the right key at its position (over the right input's own columns), the
  predicates over both (``where=`` left out when none), the left input's unique key.
- ``Reduce group_key=(EXPR, ...) aggregates=(count(*), sum(EXPR), ...)``, ``*`` standing for
  an aggregate without an expression; an aggregate of values in order prints its separator
  and its ORDER BY: ``string_agg(#1, ', ' order by #2 desc)``.
- ``Union``.
- ``TopK order_by=(#i [desc] [nulls first|nulls last], ...) [limit=N] [offset=M]``: the
  null order is printed only where it is not PostgreSQL's default (last ascending, first
  descending); ``limit=`` is left out when there is none, ``offset=`` when it is 0.
- ``Window partition_by=(#i, ...) calls=(CALL, ...)``, each call ``name(ARG, ...)
  order_by=(SORT_KEY, ...) [FRAME]``, its frame printed for value functions and aggregates
  as ``rows|range between BOUND and BOUND`` with bounds ``unbounded preceding``,
  ``N preceding``, ``current row``, ``N following``, ``unbounded following``:
  ``Window partition_by=(#0) calls=(rank() order_by=(#2 desc), sum(#2) order_by=(#1) rows
  between 2 preceding and current row)``.
- ``LetRec bindings=(NAME, ...) result=N limit=N error|return``, its inputs the values of
  its bindings in order (``N``: an index into ``bindings``); ``Recur N NAME (TYPE, ...)``
  reads binding ``N`` of the innermost enclosing LetRec:
  ``LetRec bindings=(reach) result=0 limit=1000 error``.
- ``subquery @N``, a line below an operator's inputs (one level deeper) whose one input is
  the plan of the operator's subquery ``@N`` (see scalars).

Scalars, values, types and names print as ``render_scalars`` describes. Subqueries print by
number within their operator, numbered in the order they appear on its line (equal plans
share a number): ``exists(@0)``, ``in(#1, @1)`` and the scalar subquery ``@2``; their plans
follow the operator's inputs::

    Linear [filter exists(@0)]
      Get t (a int)
      subquery @0
        Linear [filter (#0 = ^#0::int)]
          Get u (b int)

EXPLAIN options (``RenderOptions``) add to what a line says about its operator, never change
the plan the text denotes:

- ``arity``, ``types`` and ``keys`` append an annotation in the style of Materialize's EXPLAIN:
  two spaces, then a comment holding the fields asked for, in this order::

      Linear [project (#1, #0)]  // { arity: 2, types: (bigint, text), keys: ((#1)) }

  ``arity`` is the number of output columns, ``types`` their types, ``keys`` the unique keys
  (``keys.unique_keys``), each a parenthesized list of columns: ``keys: ((#0), (#1, #2))``;
  ``keys: ()`` when none is known, ``keys: (())`` for the empty key (at most one row).
- ``humanized`` prints a column reference ``#i`` whose name is known (``column_names``) as
  ``#i{name}``, the name bare or quoted as other names: ``#0{id}``, ``#1{"two words"}``. A
  reference is named after the row it reads: in a Linear step, the row after the steps before
  it (in a map, also after the expressions before it in the map); in a Join's ``on=`` and
  ``where=``, the inputs' rows concatenated; in a Reduce, its input's row; in ``keys``, the
  operator's output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matview.ir import windows
from matview.ir.aggregate_call import Aggregate
from matview.ir.column_names import column_names, linear_column_names
from matview.ir.keys import unique_keys
from matview.ir.parse import INDENT
from matview.ir.relation import (
    AsOfJoin,
    Constant,
    Get,
    Join,
    LetRec,
    Linear,
    Recur,
    Reduce,
    Relation,
    TopK,
    Union,
    Window,
    inputs_of,
)
from matview.ir.render_scalars import (
    numbered,
    render_column,
    render_name,
    render_scalar,
    render_type,
    render_value,
)
from matview.ir.scalar import Scalar
from matview.ir.sort_keys import SortKey
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, Step
from matview.ir.subquery import own_scalars, subqueries
from matview.ir.types import (
    TEXT,
    SqlType,
)
from matview.ir.window_call import WindowCall


@dataclass(frozen=True)
class RenderOptions:
    """What ``render_plan`` and ``render_line`` add to the plain text of each operator line:
    its ``arity``, column ``types`` and unique ``keys`` (``keys.unique_keys``) in a trailing
    annotation, and (``humanized``) the name of each column reference where it is known."""

    arity: bool = False
    types: bool = False
    keys: bool = False
    humanized: bool = False


PLAIN = RenderOptions()
"""The options of the plain text form: no annotation, bare column references."""


def render_plan(rel: Relation, options: RenderOptions = PLAIN) -> str:
    """The text of the plan ``rel``: one line per operator (``render_line``), without a final
    newline."""
    lines: list[str] = []
    _render_node(rel, 0, lines, options)
    return "\n".join(lines)


def render_line(rel: Relation, options: RenderOptions = PLAIN) -> str:
    """The line of ``rel``'s own operator, without indentation and without its inputs,
    followed by its annotation when ``options`` ask for one."""
    text = _render_header(rel, options.humanized)
    annotation = _render_annotation(rel, options)
    return f"{text}  // {{ {annotation} }}" if annotation else text


def own_subplans(rel: Relation) -> tuple[Relation, ...]:
    """The plans of the subqueries in ``rel``'s own operator, numbered (``@N``) in order."""
    return tuple(dict.fromkeys(n.rel for e in own_scalars(rel) for n in subqueries(e)))


def _render_node(rel: Relation, depth: int, lines: list[str], options: RenderOptions) -> None:
    plans = own_subplans(rel)
    with numbered(plans):
        lines.append(INDENT * depth + render_line(rel, options))
    for child in inputs_of(rel):
        _render_node(child, depth + 1, lines, options)
    for number, plan in enumerate(plans):
        lines.append(f"{INDENT * (depth + 1)}subquery @{number}")
        _render_node(plan, depth + 2, lines, options)


def _render_header(rel: Relation, humanized: bool) -> str:
    """The operator line of ``rel``; ``humanized`` names the columns its expressions read."""
    if isinstance(rel, Get):
        fields = ", ".join(f"{render_name(f.name)} {render_type(f.type)}" for f in rel.fields)
        return f"Get {render_name(rel.name)} ({fields})"
    if isinstance(rel, Constant):
        types = ", ".join(render_type(t) for t in rel.column_types)
        rows = "; ".join(_render_row(values, n, rel.column_types) for values, n in rel.rows)
        return f"Constant ({types}) [{rows}]"
    if isinstance(rel, Linear):
        names = linear_column_names(rel) if humanized else [()] * (len(rel.steps) + 1)
        steps = map(_render_step, rel.steps, names, names[1:])
        return f"Linear [{'; '.join(steps)}]"
    if isinstance(rel, Join):
        names = column_names(rel) if humanized else ()
        classes = ", ".join(_render_equivalence(e, names) for e in rel.equivalences)
        text = f"Join on=({classes})"
        if rel.predicates:
            text += f" where=({_render_scalars(rel.predicates, names)})"
        if rel.plan is not None:
            orders = ", ".join(f"({', '.join(map(_render_path_step, o))})" for o in rel.plan.orders)
            text += f" plan={render_name(rel.plan.kind)}[{orders}]"
        return text
    if isinstance(rel, AsOfJoin):
        names = column_names(rel) if humanized else ()
        left, right = names[:rel.left.arity], names[rel.left.arity:]
        text = (f"AsOfJoin{' outer' if rel.outer else ''} left_keys=("
                f"{_render_scalars(rel.left_keys, left)}) right_keys=("
                f"{_render_scalars(rel.right_keys, right)})")
        if rel.predicates:
            text += f" where=({_render_scalars(rel.predicates, names)})"
        return text + f" unique={_render_columns(rel.unique, left)}"
    if isinstance(rel, Reduce):
        names = column_names(rel.input) if humanized else ()
        group_key = _render_scalars(rel.group_key, names)
        aggregates = ", ".join(render_aggregate(a, names) for a in rel.aggregates)
        return f"Reduce group_key=({group_key}) aggregates=({aggregates})"
    if isinstance(rel, Union):
        return "Union"
    if isinstance(rel, TopK):
        names = column_names(rel.input) if humanized else ()
        text = f"TopK order_by=({', '.join(_render_sort_key(k, names) for k in rel.order_by)})"
        if rel.limit is not None:
            text += f" limit={rel.limit}"
        return text + (f" offset={rel.offset}" if rel.offset else "")
    if isinstance(rel, Window):
        names = column_names(rel.input) if humanized else ()
        calls = ", ".join(_render_window_call(c, names) for c in rel.calls)
        return f"Window partition_by={_render_columns(rel.partition_by, names)} calls=({calls})"
    if isinstance(rel, LetRec):
        bindings = ", ".join(render_name(n) for n in rel.names)
        return (f"LetRec bindings=({bindings}) result={rel.result} limit={rel.limit} "
                f"{rel.at_limit}")
    if isinstance(rel, Recur):
        types = ", ".join(render_type(t) for t in rel.column_types)
        return f"Recur {rel.index} {render_name(rel.name)} ({types})"
    raise TypeError(f"not a relation: {rel!r}")


def _render_window_call(call: WindowCall, names: Sequence[str | None]) -> str:
    """``name(args) order_by=(...) [frame]``: the frame of a value function or an
    aggregate."""
    order = ", ".join(_render_sort_key(k, names) for k in call.order_by)
    text = f"{render_name(call.func)}({_render_scalars(call.args, names)}) order_by=({order})"
    if windows.lookup(call.func).kind in (windows.Kind.VALUE, windows.Kind.AGGREGATE):
        frame = call.frame
        text += (f" {frame.units} between {_render_bound(frame.start, 'preceding')}"
                 f" and {_render_bound(frame.end, 'following')}")
    return text


def _render_bound(offset: int | None, unbounded: str) -> str:
    """A frame bound: ``unbounded preceding|following``, ``N preceding``, ``current row``
    or ``N following``."""
    if offset is None:
        return f"unbounded {unbounded}"
    if offset == 0:
        return "current row"
    return f"{abs(offset)} {'preceding' if offset < 0 else 'following'}"


def _render_sort_key(key: SortKey, names: Sequence[str | None]) -> str:
    """``#i [desc] [nulls first|nulls last]``, the null order only when not the default."""
    column, descending, nulls_first = key
    return render_column(column, names) + _render_direction(descending, nulls_first)


def _render_direction(descending: bool, nulls_first: bool) -> str:
    """`` desc`` and the null order, each only when not the default."""
    text = " desc" if descending else ""
    if nulls_first != descending:
        text += " nulls first" if nulls_first else " nulls last"
    return text


def _render_annotation(rel: Relation, options: RenderOptions) -> str:
    """The fields of ``rel``'s annotation that ``options`` ask for, in the order arity, types,
    keys (empty when none)."""
    fields = []
    if options.arity:
        fields.append(f"arity: {rel.arity}")
    if options.types:
        fields.append(f"types: ({', '.join(render_type(t) for t in rel.types)})")
    if options.keys:
        names = column_names(rel) if options.humanized else ()
        keys = ", ".join(_render_columns(key, names) for key in unique_keys(rel))
        fields.append(f"keys: ({keys})")
    return ", ".join(fields)


def _render_columns(indexes: Sequence[int], names: Sequence[str | None]) -> str:
    """``(#i, #j, ...)``."""
    return f"({', '.join(render_column(i, names) for i in indexes)})"


def _render_row(values: tuple[object, ...], multiplicity: int, types: tuple[SqlType, ...]) -> str:
    if len(values) != len(types):
        raise ValueError(f"constant row {values!r} does not have {len(types)} values")
    return f"({', '.join(map(render_value, values, types))}) x{multiplicity}"


def _render_step(step: Step, names: Sequence[str | None], after: Sequence[str | None]) -> str:
    """``step``, reading a row whose columns have ``names`` and making one whose columns have
    ``after``: each expression of a map also reads the columns appended before it."""
    if isinstance(step, Map) and step.exprs:
        exprs = (render_scalar(e, after[: len(names) + i]) for i, e in enumerate(step.exprs))
        return f"map {', '.join(exprs)}"
    if isinstance(step, Project):
        return f"project {_render_columns(step.outputs, names)}"
    if isinstance(step, FlatMap):
        return f"flat_map {_render_scalars(step.calls, names)}" + (
            " with ordinality" if step.ordinality else "")
    if isinstance(step, Repeat):
        return f"repeat_row {render_scalar(step.count, names)}"
    name, exprs = ("filter", step.predicates) if isinstance(step, Filter) else ("map", step.exprs)
    return f"{name} {_render_scalars(exprs, names)}" if exprs else name


def _render_equivalence(exprs: tuple[Scalar, ...], names: Sequence[str | None]) -> str:
    if not exprs:
        raise ValueError("a join equivalence class must not be empty")
    return " = ".join(render_scalar(e, names) for e in exprs)


def render_aggregate(aggregate: Aggregate, names: Sequence[str | None] = ()) -> str:
    """``name(ARG[, 'SEPARATOR'][ order by EXPR [desc] [nulls first|last], ...])``."""
    arg = "*" if aggregate.expr is None else render_scalar(aggregate.expr, names)
    if aggregate.separator is not None:
        arg += f", {render_value(aggregate.separator, TEXT)}"
    if aggregate.order_by:
        arg += " order by " + ", ".join(
            render_scalar(e, names) + _render_direction(d, n) for e, d, n in aggregate.order_by)
    return f"{render_name(aggregate.func)}({arg})"


def _render_scalars(exprs: tuple[Scalar, ...], names: Sequence[str | None]) -> str:
    return ", ".join(render_scalar(e, names) for e in exprs)


def _render_path_step(step: int | tuple[int, ...]) -> str:
    """A step of a join's delta path: an input, or a group extending it by counts."""
    return str(step) if isinstance(step, int) else f"({', '.join(map(str, step))})"

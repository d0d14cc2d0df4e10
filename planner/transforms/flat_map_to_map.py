"""Replace table functions whose row count is known by Maps and Filters.

    FlatMap([f1..fn], ord)  =>  Map(v1 ++ .. ++ vn ++ [1::bigint if ord])
                                    when the longest fi yields exactly one row
    FlatMap([f1..fn], ord)  =>  Filter(FALSE), Map(NULL, ..)   when every fi yields no row
    Repeat(1)               =>  (nothing)
    Repeat(0), Repeat(NULL) =>  Filter(FALSE)

A call yields a known number of rows when its arguments are constant (no column, no
``mz_now()``, no ``gen_random_uuid()``) and its cost is bounded (not ``costly``: regular
expressions run in Spark only): at most one of its rows is computed now (a call asking
more is left as it is), and ``vi`` are its values (NULLs for a call with no row, padded
as the lockstep FlatMap pads it). ``unnest(array(e))`` yields exactly the one row ``e``.
The one row of a FlatMap is the input row with ``vi`` appended and ordinality
1, which is what the Map appends; a Repeat of 1 multiplies diffs by one. A call whose
arguments raise now (or ask too many rows) is left for run time, as is a value without a
literal text form.
"""

from __future__ import annotations

from matview.ir.evaluate import evaluate
from matview.ir.functions import EvalError
from matview.ir.linear_logic import is_temporal
from matview.ir.relation import Linear, Relation
from matview.ir.render_scalars import render_scalar
from matview.ir.scalar import Call, Cast, Lit, Scalar, columns_used, type_of, volatile
from matview.ir.steps import Filter, FlatMap, Map, Repeat, Step, step_types
from matview.ir.table_functions import lookup, output_types, rows
from matview.ir.types import BIGINT, BOOLEAN, SqlType
from matview.ir.walk import bottom_up

NO_ROW = Filter((Lit(False, BOOLEAN),))


def _constant(expr: Scalar) -> bool:
    return not columns_used(expr) and not is_temporal(expr) and not volatile(expr)


def _typed(expr: Scalar, want: SqlType, types: tuple[SqlType, ...]) -> Scalar:
    return expr if type_of(expr, types) == want else Cast(expr, want)


def _call_rows(call: Call, types: tuple[SqlType, ...]) -> list[tuple[Scalar, ...]] | None:
    """The rows ``call`` yields on every input row, as expressions; None when unknown."""
    out = output_types(call, types)
    if all(_constant(a) for a in call.args) and not lookup(call.func).costly:
        try:
            values = rows(call.func, [evaluate(a, [], []) for a in call.args], 1)
            literals = [tuple(Lit(v, t) for v, t in zip(row, out)) for row in values[:2]]
            for row in literals:
                for literal in row:
                    render_scalar(literal)
        except (EvalError, ValueError, TypeError):
            return None  # TooManyRows (an EvalError) past one row
        return literals if len(values) <= 1 else None
    if (call.func == "unnest" and isinstance(call.args[0], Call)
            and call.args[0].func == "array" and len(call.args[0].args) == 1):
        return [(_typed(call.args[0].args[0], out[0], types),)]
    return None


def _rewrite(step: Step, types: tuple[SqlType, ...]) -> list[Step]:
    """The Map or Filter ``step`` is (or the step itself); none when it is the identity."""
    if isinstance(step, Repeat) and _constant(step.count):
        try:
            count = evaluate(step.count, [], [])
        except EvalError:
            return [step]
        return [] if count == 1 else [NO_ROW] if not count else [step]
    if not isinstance(step, FlatMap):
        return [step]
    results = [_call_rows(c, types) for c in step.calls]
    if any(r is None for r in results):
        return [step]
    length = max(len(r) for r in results if r is not None)
    if length == 0:
        # The columns the FlatMap would append, so that the types stay.
        return [NO_ROW, Map(tuple(Lit(None, t) for t in step_types(step, types)[len(types):]))]
    exprs: list[Scalar] = []
    for call, result in zip(step.calls, results):
        assert result is not None
        exprs.extend(result[0] if result else
                     (Lit(None, t) for t in output_types(call, types)))
    if step.ordinality:
        exprs.append(Lit(1, BIGINT))
    return [Map(tuple(exprs))]


def _to_map(plan: Relation) -> Relation:
    if not isinstance(plan, Linear):
        return plan
    steps: list[Step] = []
    types = plan.input.types
    for step in plan.steps:
        steps.extend(_rewrite(step, types))
        types = step_types(step, types)
    return Linear(plan.input, tuple(steps)) if steps else plan.input


def flat_map_to_map(plan: Relation) -> Relation:
    """Every table function call that yields at most one row made a map (and a filter)."""
    return bottom_up(plan, _to_map)

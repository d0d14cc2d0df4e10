"""Fold constant scalar expressions, and the relations they make empty.

Scalars (each rewrite keeps the expression's type, or is not made):

    f(l1, .., ln)                       =>  l        l = evaluate(f(l1, .., ln)), literals li,
                                                     f not ``costly`` (LIKE runs in Spark)
    f(.., NULL, ..)                     =>  NULL     f strict (not ``handles_null``)
    TRUE AND x  =>  x      FALSE AND x  =>  FALSE     (and symmetrically, and for OR:
    FALSE OR x  =>  x      TRUE OR x    =>  TRUE       NULL stays, as three-valued logic says)
    NOT NOT x   =>  x
    CASE WHEN c THEN v .. END           =>  CASE .. END    c a conjunction with a FALSE|NULL
    CASE WHEN TRUE THEN v .. END        =>  v
    CASE ELSE d END                     =>  d

Relations (``∅`` is ``Constant (types) []``):

    Linear(X, [.., Filter(.., TRUE, ..), ..])       =>  Linear(X, [.., Filter(..), ..])
    Linear(X, [.., Filter(.., p AND q, ..), ..])    =>  Linear(X, [.., Filter(.., p, q, ..), ..])
    Linear(X, [.., Filter(.., FALSE|NULL, ..), ..]) =>  ∅
    Linear(∅, S)  =>  ∅        Join(.., ∅, ..)  =>  ∅        Join(I, E, [.., FALSE|NULL, ..]) => ∅
    Union(.., ∅, ..)  =>  Union(..)                 Reduce(∅, K ≠ ())  =>  ∅
    TopK(∅, ..)  =>  ∅         TopK(X, limit 0)  =>  ∅

An expression whose evaluation raises (``EvalError``) is left for run time, ``mz_now()``
and ``volatile`` functions (``gen_random_uuid()``: a new value for each row) are never
evaluated, and a value without a literal text form (an ARRAY, say) is not made a literal.
A Filter that lets no row through makes every output of its Linear vanish;
dropping it can only remove errors of the steps around it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from matview.ir.evaluate import evaluate
from matview.ir.functions import EvalError, lookup
from matview.ir.linear_logic import MZ_NOW
from matview.ir.relation import Constant, Join, Linear, Reduce, Relation, TopK, Union
from matview.ir.render_scalars import render_scalar
from matview.ir.scalar import (
    TRUE,
    Call,
    Case,
    Cast,
    Lit,
    Scalar,
    children,
    conjuncts,
    transform,
    type_of,
)
from matview.ir.steps import Filter, FlatMap, Map, Repeat, Step, step_types
from matview.ir.types import BOOLEAN, SqlType
from matview.ir.walk import bottom_up

FALSE = Lit(False, BOOLEAN)


def fold_scalar(expr: Scalar, types: Sequence[SqlType]) -> Scalar:
    """``expr`` (over rows of ``types``) with its constant parts folded."""

    def fold(node: Scalar) -> Scalar:
        simpler = _simplify(node)
        if simpler is not node:
            want = type_of(node, types)
            if type_of(simpler, types) == want:
                return simpler
            if isinstance(simpler, Lit):
                cast = _evaluated(Cast(simpler, want), types)
                if isinstance(cast, Lit):
                    return cast
        return _evaluated(node, types)

    return transform(expr, fold)


def _simplify(node: Scalar) -> Scalar:
    """``node`` by the rules of three-valued logic and CASE (``node`` itself when none apply)."""
    if isinstance(node, Call) and node.func in ("and", "or"):
        absorbing, neutral = (FALSE, TRUE) if node.func == "and" else (TRUE, FALSE)
        if absorbing in node.args:
            return absorbing
        rest = [a for a in node.args if a != neutral]
        if len(rest) < len(node.args):
            return rest[0] if len(rest) == 1 else neutral if not rest else Call(
                node.func, tuple(rest))
    if isinstance(node, Call) and node.func == "not":
        (arg,) = node.args
        if isinstance(arg, Call) and arg.func == "not":
            return arg.args[0]
    if isinstance(node, Case):
        whens = []
        for cond, value in node.whens:
            if cond == TRUE:
                return Case(tuple(whens), value) if whens else value
            if any(is_false(c) for c in conjuncts(cond)):
                continue
            whens.append((cond, value))
        if len(whens) < len(node.whens):
            return Case(tuple(whens), node.default) if whens else node.default
    return node


def _evaluated(node: Scalar, types: Sequence[SqlType]) -> Scalar:
    """``node`` as a literal, when its operands are literals and it evaluates to a value
    with a text form."""
    if not isinstance(node, (Call, Cast, Case)) or node == MZ_NOW:
        return node
    if isinstance(node, Call) and not lookup(node.func).handles_null and any(
            c == Lit(None, c.type) for c in node.args if isinstance(c, Lit)):
        return Lit(None, type_of(node, types))  # a strict function of NULL
    # not constant, costly to compute in the driver (LIKE backtracks), or a new value each
    # time (gen_random_uuid())
    if not all(isinstance(c, Lit) for c in children(node)) or (
            isinstance(node, Call) and (lookup(node.func).costly or lookup(node.func).volatile)):
        return node
    try:
        literal = Lit(evaluate(node, [], []), type_of(node, types))
        render_scalar(literal)
    except (EvalError, ValueError, TypeError, KeyError):
        return node
    return literal


def is_false(pred: Scalar) -> bool:
    """Whether ``pred`` is a literal that is not TRUE (FALSE or NULL): it keeps no row."""
    return isinstance(pred, Lit) and pred.value is not True


def is_empty(plan: Relation) -> bool:
    return isinstance(plan, Constant) and not plan.rows


def _empty(plan: Relation) -> Constant:
    return Constant((), plan.types)


def _fold_step(step: Step, types: tuple[SqlType, ...]) -> Step | None:
    """``step`` folded over rows of ``types``; None when it drops every row."""
    if isinstance(step, Map):
        exprs: list[Scalar] = []
        for expr in step.exprs:
            exprs.append(fold_scalar(expr, types))
            types = (*types, type_of(exprs[-1], types))
        return Map(tuple(exprs))
    if isinstance(step, Filter):
        preds = [c for p in step.predicates for c in conjuncts(fold_scalar(p, types))]
        if any(is_false(p) for p in preds):
            return None
        return Filter(tuple(p for p in preds if p != TRUE))
    if isinstance(step, FlatMap):
        return FlatMap(tuple(Call(c.func, tuple(fold_scalar(a, types) for a in c.args))
                             for c in step.calls), step.ordinality)
    if isinstance(step, Repeat):
        return Repeat(fold_scalar(step.count, types))
    return step


def _fold(plan: Relation) -> Relation:
    if isinstance(plan, Linear):
        if is_empty(plan.input):
            return _empty(plan)
        steps: list[Step] = []
        types = plan.input.types
        for step in plan.steps:
            new = _fold_step(step, types)
            if new is None:
                return _empty(plan)
            if not (isinstance(new, Filter) and not new.predicates):
                steps.append(new)
            types = step_types(new, types)
        return Linear(plan.input, tuple(steps)) if steps else plan.input
    if isinstance(plan, Join):
        if any(is_empty(i) for i in plan.inputs):
            return _empty(plan)
        types = plan.types
        preds = [c for p in plan.predicates for c in conjuncts(fold_scalar(p, types))]
        if any(is_false(p) for p in preds):
            return _empty(plan)
        return replace(
            plan, predicates=tuple(p for p in preds if p != TRUE),
            equivalences=tuple(tuple(fold_scalar(e, types) for e in cls)
                               for cls in plan.equivalences))
    if isinstance(plan, Union):
        inputs = tuple(i for i in plan.inputs if not is_empty(i))
        if not inputs:
            return _empty(plan)
        if inputs[0].types != plan.types:
            return plan
        return inputs[0] if len(inputs) == 1 else Union(inputs)
    if isinstance(plan, Reduce):
        if is_empty(plan.input) and plan.group_key:
            return _empty(plan)
        types = plan.input.types
        return Reduce(plan.input, tuple(fold_scalar(k, types) for k in plan.group_key),
                      tuple(a.mapped(lambda e: fold_scalar(e, types))
                            for a in plan.aggregates))
    if isinstance(plan, TopK) and (is_empty(plan.input) or plan.limit == 0):
        return _empty(plan)
    return plan


def fold_constants(plan: Relation) -> Relation:
    """Every constant subexpression evaluated, and every operator that keeps no row emptied."""
    return bottom_up(plan, _fold)

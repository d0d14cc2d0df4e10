"""``INSERT ... ON CONFLICT [(k, ...) | ON CONSTRAINT name] DO NOTHING | DO UPDATE SET ...
[WHERE w]``: the plans of an upsert's changes over the table ``t`` it writes.

The conflict target names one of ``t``'s unique keys ``K`` (its columns, in any order, or
its name); DO NOTHING may omit it when ``t`` has one key. With ``P`` the proposed rows and
``E = δ_K(t)`` the keys ``t`` holds, the rows inserted are those of ``P`` whose key ``t``
does not hold (a NULL in the key never conflicts):

    fresh(P)  =  P ⊎ −π_P(P ⋈_K E)

DO NOTHING inserts ``fresh(P')``, ``P'`` one row of ``P`` per key (the least, by every
column; rows with a NULL in the key all kept: ``P' = σ_{rn = 1}(row_number() over
(partition by K))`` of the rows with no NULL there, plus the others). DO UPDATE (whose
``P`` may not propose a key twice: ``twice = σ_{count > 1}(γ_K(P))`` must be empty, as
PostgreSQL's "cannot affect row a second time"; rows with a NULL in ``K`` do not count)
retracts and updates the rows of ``t`` it
matches, where ``w`` holds:

    M        =  σ_w(t ⋈_K P)          (t's row, then the proposed one, named ``excluded``)
    changes  =  −π_t(M) ⊎ assigned(M) ⊎ fresh(P)

The assignments and ``w`` read ``t``'s columns by name (or by ``t``'s alias) and the
proposed row's as ``excluded.c``.
"""

from __future__ import annotations

import functools

from matview.ir.aggregate_call import Aggregate
from matview.ir.plans import linear, negated
from matview.ir.relation import Get, Join, Reduce, Relation, Union, Window
from matview.ir.scalar import Call, Col, Lit, Scalar
from matview.ir.steps import Filter, Project
from matview.ir.types import BIGINT
from matview.ir.window_call import WindowCall
from matview.sql.assignments import assigned, bind_assignments, column_index
from matview.sql.catalog import CatalogItem, UniqueKey
from matview.sql.context import Context
from matview.sql.errors import SqlError, UnknownObjectError, UnsupportedError
from matview.sql.names import normalize
from matview.sql.scalars import ExprBinder
from matview.sql.scope import FromItem, RangeVar, Scope
from matview.sql.statements import Upsert
from sqlglot import exp


def bind_upsert(conflict: exp.OnConflict, item: CatalogItem, proposed: Relation, alias: str,
                ctx: Context) -> Upsert:
    """The upsert of ``proposed`` rows (whole rows of table ``item``, known as ``alias``)
    under ``conflict`` (the module's plans)."""
    if conflict.args.get("duplicate"):
        raise UnsupportedError.at("ON DUPLICATE KEY UPDATE is not supported: write ON "
                                  "CONFLICT (key) DO UPDATE SET ...", conflict)
    if conflict.args.get("index_predicate"):
        raise UnsupportedError.at("a conflict target's WHERE is not supported", conflict)
    action = conflict.args["action"].name.upper()
    key = _arbiter(conflict, item, action == "DO NOTHING")
    arity = len(item.fields)
    if action == "DO NOTHING":
        rows = _fresh(_one_per_key(proposed, key.columns), item, key.columns)
        return Upsert(item.name, rows, None, None)
    binder = ExprBinder(_scope(item, alias, ctx),
                        "aggregate functions are not allowed in ON CONFLICT DO UPDATE")
    assignments = bind_assignments(conflict.expressions, item, binder)
    table = Get(item.name, item.fields)
    matched: Relation = Join((table, proposed), tuple(
        (Col(i), Col(arity + i)) for i in key.columns))
    where = conflict.args.get("where")
    if where is not None:
        matched = linear(matched, [Filter((binder.predicate(where.this, "WHERE").expr,))])
    old = linear(matched, [Project(tuple(range(arity)))])
    new = assigned(matched, assignments, arity)
    fresh = _fresh(proposed, item, key.columns)
    counts = Reduce(linear(proposed, [Filter((Call("not", (_nulls(key.columns),)),))]),
                    tuple(Col(i) for i in key.columns), (Aggregate("count", None),))
    twice = linear(counts, [Filter((Call("gt", (Col(len(key.columns)), Lit(1, BIGINT))),))])
    return Upsert(item.name, Union((negated(old), new, fresh)), Union((new, fresh)), twice)


def _arbiter(conflict: exp.OnConflict, item: CatalogItem, nothing: bool) -> UniqueKey:
    """The unique key the conflict target names (the table's only key when there is none
    and the action is DO NOTHING)."""
    named = conflict.args.get("constraint")
    targets = conflict.args.get("conflict_keys") or []
    if named is not None:
        name = normalize(named)
        for key in item.keys:
            if key.name == name:
                return key
        raise UnknownObjectError.at(f'constraint "{name}" for table "{item.name}" does not '
                                    "exist", named)
    if not targets:
        if not nothing:
            raise SqlError.at("ON CONFLICT DO UPDATE requires inference specification or "
                              "constraint name", conflict)
        if len(item.keys) == 1:
            return item.keys[0]
        if not item.keys:
            raise SqlError.at("there is no unique or exclusion constraint matching the ON "
                              "CONFLICT specification", conflict)
        raise UnsupportedError.at(f'ON CONFLICT DO NOTHING without a conflict target on '
                                  f'table "{item.name}", which has several unique keys, is '
                                  "not supported yet: name one", conflict)
    columns = set()
    for target in targets:
        column = target.this if isinstance(target, exp.Ordered) else target
        if not isinstance(column, exp.Column | exp.Identifier):
            raise UnsupportedError.at("a conflict target must name columns", column)
        columns.add(column_index(item, column.this if isinstance(column, exp.Column)
                                 else column, column))
    for key in item.keys:
        if set(key.columns) == columns:
            return key
    raise SqlError.at("there is no unique or exclusion constraint matching the ON CONFLICT "
                      "specification", conflict)


def _fresh(proposed: Relation, item: CatalogItem, key: tuple[int, ...]) -> Relation:
    """The rows of ``proposed`` whose key the table does not hold: ``P ⊎ −π_P(P ⋈_K E)``."""
    arity = len(item.fields)
    held = Reduce(Get(item.name, item.fields), tuple(Col(i) for i in key), ())
    conflicting = Join((proposed, held), tuple(
        (Col(i), Col(arity + k)) for k, i in enumerate(key)))
    return Union((proposed, negated(linear(conflicting, [Project(tuple(range(arity)))]))))


def _one_per_key(proposed: Relation, key: tuple[int, ...]) -> Relation:
    """One row of ``proposed`` per value of ``key`` (the least; rows with a NULL in the key
    all kept)."""
    arity = proposed.arity
    nulls = _nulls(key)
    keyed = linear(proposed, [Filter((Call("not", (nulls,)),))])
    numbered = Window(keyed, key, (WindowCall("row_number", (), ()),))
    first = linear(numbered, [Filter((Call("eq", (Col(arity), Lit(1, BIGINT))),)),
                              Project(tuple(range(arity)))])
    return Union((first, linear(proposed, [Filter((nulls,))])))


def _nulls(key: tuple[int, ...]) -> Scalar:
    """Whether a row holds NULL in a column of ``key`` (it then conflicts with none)."""
    return functools.reduce(lambda a, b: Call("or", (a, b)),
                            [Call("is_null", (Col(i),)) for i in key])


def _scope(item: CatalogItem, alias: str, ctx: Context) -> Scope:
    """The row a DO UPDATE reads: the table's (known as ``alias``; its columns by
    unqualified names too), then the proposed row's (as ``excluded``)."""
    names = tuple(f.name for f in item.fields)
    table, excluded = RangeVar(alias, names, 0), RangeVar("excluded", names, len(names))
    types = tuple(f.type for f in item.fields)
    return Scope((FromItem(table.columns(), (table,)), FromItem((), (excluded,))),
                 types + types, ctx=ctx)

"""Values of an IR node computed once per node and kept on it: nodes are immutable trees,
so what is derived from a node's fields and its inputs' derived values never changes, while
computing it anew on each ask walks the whole tree below the node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from matview.ir.types import SqlType

R = TypeVar("R", bound=type)


def hashed_once(cls: R) -> R:
    """``cls`` (a frozen dataclass) with its hash by value computed once per node: nodes are
    immutable trees, and a dataflow's operators key their plans and state by them, each
    lookup otherwise hashing the whole tree below the node again."""
    by_value = cls.__hash__

    def __hash__(self: object) -> int:
        return kept(self, "_hash", by_value)  # type: ignore[no-any-return]

    cls.__hash__ = __hash__  # type: ignore[assignment]
    return cls


def typed_once(compute: Callable[[Any], tuple[SqlType, ...]]) -> property:
    """A ``types`` property computing ``compute(node)`` once per node: a node's types are
    its inputs' types carried through its own columns, so every uncached ask walked the
    whole tree below it again, and a planner pass asking each node of a tree (a join's
    ``offsets`` asks every input's arity) was quadratic: SQLAlchemy's reflection of a
    table's columns (four correlated subqueries over the system catalogs) was planned in
    2.4-3.4 s, and in 1.2-1.5 s with each node's types kept (bench/README.md)."""

    def types(self: Any) -> tuple[SqlType, ...]:
        return kept(self, "_types", compute)  # type: ignore[no-any-return]

    return property(types, doc=compute.__doc__)


def kept(node: Any, name: str, compute: Callable[[Any], object]) -> object:
    """``compute(node)``, computed at the first ask and kept on the (frozen) node as
    attribute ``name``."""
    found = node.__dict__.get(name)
    if found is None:
        found = compute(node)
        object.__setattr__(node, name, found)
    return found

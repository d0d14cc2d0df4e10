"""The parts of a ``relation.Join`` beside its inputs: how it runs (``JoinPlan``, chosen by
``planner/join_plan.py``), and where each input's columns sit in the concatenated row
(``offsets_of``, ``input_at``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PathStep = int | tuple[int, ...]
"""One step of a delta path's order: an input looked up, or a group of inputs extending the
path by one attribute worst-case optimally (seed 003: count, propose, validate)."""


@dataclass(frozen=True)
class JoinPlan:
    """How a join runs: ``kind`` ``delta`` has one path per input, ``orders[i]`` being the
    order in which path i (driven by input i's changes) looks up the other inputs; a step
    that is a group of inputs looks them all up at once, in an order chosen per path row by
    their counts (``physical.Extension``)."""

    kind: str
    orders: tuple[tuple[PathStep, ...], ...]


def offsets_of(arities: Sequence[int]) -> list[int]:
    """The position of each part's first column when rows of ``arities`` are concatenated."""
    out, at = [], 0
    for arity in arities:
        out.append(at)
        at += arity
    return out


def input_at(offsets: Sequence[int], column: int) -> int:
    """The part (of a concatenation with ``offsets``) that ``column`` comes from."""
    return max(i for i, off in enumerate(offsets) if off <= column)

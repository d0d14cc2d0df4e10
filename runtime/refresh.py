"""How a materialized view's step runs: incrementally, its dataflow computing the change
from the inputs' changes, or by recompute-and-diff, a fresh dataflow computing the view
from the inputs' snapshots and the step's change being the new contents less the old.

Incremental work grows with the change, recompute with the data, and each has a fixed cost
(Spark jobs, planning): which is cheaper is estimated from the step's size and the times
this view's own steps took (as Databricks' Enzyme does). A view's first step reads every
input's snapshot: it is a recompute, and its time the first estimate of one.

  incremental estimate  median seconds of recent incremental steps (a dataflow's first
                        one, which builds the plans the others reuse, left out)
                        * max(1, changed rows / their median changed rows)
  recompute estimate    most seconds per input row of recent recomputes * input rows
                        + median seconds of recent first incremental steps (a recompute
                        starts a fresh dataflow, whose first one builds its plans again)

A step no input change reaches (time passing a temporal filter), or changing less than a
tenth of the rows its inputs held before it, runs incrementally. Without incremental steps
to go by, a step recomputes when it changes at least half as many rows as its inputs held
before it. Recompute puts the whole change at one time (that of the inputs' changes when
they have one, else the step's last), so a step whose changes have several times (or a
temporal filter's) runs incrementally, whatever the setting, when a subscription reads the
view or a view over it: the subscription sees every time. A view with an as-of join on
transaction time always runs incrementally after its first step: its contents depend on
when each row arrived, which a recompute from the snapshots cannot know.

In a step ``auto`` runs incrementally, an operator whose own inputs changed beyond a bound
may still recompute its output and diff it while the rest steps incrementally
(``runtime.operator_recompute``; ``RefreshPolicy.per_operator``).

A view's own ``REFRESH POLICY`` (``POLICIES``) takes the place of the connection's setting
for it. Every step's choice, both estimates and what it measured are kept (``history``:
``matview_refresh_history``).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import deque
from dataclasses import dataclass

from matview.runtime.settings import active

STRATEGIES = ("auto", "incremental", "recompute")
"""The refresh settings of ``matview.connect(refresh=...)``: ``auto`` picks per step."""

POLICIES = {"AUTO": "auto", "INCREMENTAL": "incremental", "INCREMENTAL STRICT": "strict",
            "FULL": "recompute"}
"""A view's ``REFRESH POLICY`` as its setting: ``strict`` steps incrementally, as
``incremental`` does, and a change its inputs cannot give incrementally fails instead of
being recomputed (a source whose lake lost the versions it had to read:
``matview.sources``)."""


@dataclass(frozen=True)
class Choice:
    """How one step runs (``incremental`` or ``recompute``) and why, in words, with the
    seconds each strategy was estimated to take (None: nothing to estimate from)."""

    strategy: str
    reason: str
    incremental: float | None = None
    recompute: float | None = None


@dataclass(frozen=True)
class Measured:
    """A step that ran: the input update rows it read (``changed``), the rows its inputs
    held (``held``) and its wall-clock ``seconds``; ``warming`` when it was the first
    incremental step of its dataflow (after the view's first step or a recompute, which
    start a fresh one), which builds the Spark plans and slots the small steps after it
    reuse (``runtime.spark.templates``), so its time says little of theirs."""

    changed: int
    held: int
    seconds: float
    warming: bool = False
    recomputed: tuple[str, ...] = ()
    """The operators an incremental step recomputed and diffed, each with why
    (``runtime.operator_recompute``)."""


@dataclass(frozen=True)
class Refresh:
    """A step that ran at time ``at``: its ``choice`` and what was ``measured``."""

    at: int
    choice: Choice
    measured: Measured


class RefreshPolicy:
    """The choice of strategy for one view's steps (``setting`` one of ``STRATEGIES``) and
    the measured steps it is made from."""

    def __init__(self, setting: str = "auto", pinned: str | None = None) -> None:
        assert setting in STRATEGIES
        self.setting, self.pinned = setting, pinned
        """``pinned``: why every step after the first runs incrementally, whatever the
        setting (a view whose contents depend on its inputs' history), or None."""
        self.policy: str | None = None
        """The view's ``REFRESH POLICY`` as written (None: the connection's setting)."""
        history = active().refresh_history
        self.measured: dict[str, deque[Measured]] = {
            "incremental": deque(maxlen=history), "recompute": deque(maxlen=history)}
        self.counts = {"incremental": 0, "recompute": 0}
        self.last: Choice | None = None
        self.history: deque[Refresh] = deque(maxlen=history)
        """The latest steps (``matview_refresh_history``)."""

    def written(self, policy: str | None) -> None:
        """Follow the view's ``REFRESH POLICY`` ``policy`` (None: keep the setting)."""
        if policy is not None:
            self.policy, self.setting = policy, POLICIES[policy]

    @property
    def per_operator(self) -> bool:
        """Whether an incremental step may recompute some of its operators (``auto``, with
        no reason pinning every step incremental: ``runtime.operator_recompute``)."""
        return self.setting == "auto" and self.pinned is None

    @property
    def strict(self) -> bool:
        """Whether a change its inputs cannot give incrementally must fail."""
        return self.setting == "strict"

    def choose(self, changed: int, held: int, first: bool, keep_times: bool) -> Choice:
        """``decide``, with the seconds each strategy is estimated to take."""
        incremental, recompute = self.estimate_incremental(changed), \
            self.estimate_recompute(held)
        return dataclasses.replace(self.decide(changed, held, first, keep_times, incremental,
                                               recompute), incremental=incremental,
                                   recompute=recompute)

    def decide(self, changed: int, held: int, first: bool, keep_times: bool,
               incremental: float | None, recompute: float | None) -> Choice:
        """The strategy of a step reading ``changed`` input update rows of inputs holding
        ``held`` (these included), estimated to take ``incremental`` and ``recompute``
        seconds; ``first``: the view's first step; ``keep_times``: the step spans several
        times that a subscription must see apart."""
        if first:
            return Choice("recompute", "first step: the inputs' snapshots")
        if not changed:
            return Choice("incremental", "no input changed")
        if self.pinned is not None:
            return Choice("incremental", self.pinned)
        if keep_times:
            return Choice("incremental", "a subscription reads each of the step's times")
        if self.setting != "auto":
            said = f"refresh={self.setting}" if self.policy is None else \
                f"REFRESH POLICY = {self.policy}"
            return Choice("incremental" if self.strict else self.setting, said)
        before = held - changed
        size = f"{changed} changed rows, {before} held before"
        small = active().refresh_small_change
        if changed < small * before:
            return Choice("incremental", f"{size}: less than {small:.0%}")
        if incremental is None or recompute is None:
            if 2 * changed >= before:
                return Choice("recompute", f"{size}: at least half")
            return Choice("incremental", f"{size}: less than half")
        if recompute < incremental:
            return Choice("recompute", f"estimated {recompute:.3f}s recompute < "
                                       f"{incremental:.3f}s incremental")
        return Choice("incremental", f"estimated {incremental:.3f}s incremental <= "
                                     f"{recompute:.3f}s recompute")

    def estimate_incremental(self, changed: int) -> float | None:
        """Seconds an incremental step reading ``changed`` rows should take (None: no
        incremental step to go by; a dataflow's first, ``warming``, is none: over tables of
        a few rows it took 1.4 s where the steps after it took 0.05 s, and a view stepping
        by the estimate from it recomputed at its next step, starting a fresh dataflow whose
        first incremental step paid the plans again)."""
        steps = [m for m in self.measured["incremental"] if m.changed and not m.warming]
        if not steps:
            return None
        typical = statistics.median(m.changed for m in steps)
        return statistics.median(m.seconds for m in steps) * max(1.0, changed / typical)

    def estimate_recompute(self, held: int) -> float | None:
        """Seconds a recompute of inputs holding ``held`` rows should take (None: no
        recompute to go by): at the slowest rate per row measured lately, since a wrong
        recompute costs the whole view, plus the typical ``warming`` step, which the fresh
        dataflow it starts pays at its first incremental step."""
        steps = [m for m in self.measured["recompute"] if m.held]
        if not steps:
            return None
        warming = [m.seconds for m in self.measured["incremental"] if m.warming]
        return max(m.seconds / m.held for m in steps) * held + (
            statistics.median(warming) if warming else 0.0)

    def record(self, choice: Choice, measured: Measured, at: int) -> None:
        """Remember a step to time ``at`` that ran as ``choice`` said (in ``history`` when
        an input changed)."""
        if measured.changed:
            self.history.append(Refresh(at, choice, measured))
        self.measured[choice.strategy].append(measured)
        self.counts[choice.strategy] += 1
        self.last = choice

    def stats(self) -> RefreshStats:
        """What EXPLAIN ANALYZE reports of the view's refreshes."""
        return RefreshStats(self.setting, self.counts["incremental"],
                            self.counts["recompute"], self.last,
                            self.history[-1].measured.recomputed if self.history else ())


@dataclass(frozen=True)
class RefreshStats:
    """A view's refreshes so far: its ``setting``, how many steps ran ``incremental`` and
    how many by ``recompute`` (its first step is one), the ``last`` step's choice and the
    operators the last step an input changed ``recomputed`` (``runtime.operator_recompute``)."""

    setting: str
    incremental: int
    recompute: int
    last: Choice | None
    recomputed: tuple[str, ...] = ()

"""Logical times: the least and the greatest, as the runtime names them.

An update's time (``_time``) is an int64 of milliseconds since the Unix epoch. ``MIN_TIME``
is before every time (a trace's compaction frontier before any compaction, the stored state
a step's changes are summed with); ``MAX_TIME`` is after every time (an unbounded read, a
temporal filter's open upper bound). They are the IR's own bounds (``ir.linear_logic``'s
``BOTTOM`` and ``TOP``, which the reference interpreter uses), defined there once.
"""

from __future__ import annotations

from matview.ir.linear_logic import BOTTOM, TOP

MIN_TIME = BOTTOM
"""The least logical time (the least int64)."""

MAX_TIME = TOP
"""The greatest logical time (the greatest int64)."""

READ_TIME = MAX_TIME - 1
"""The time of every update a kept read computes (``Dataflow.reread``): after every time it
reads, the same at every read (so that no plan it keeps names the time read), before
``MAX_TIME``."""

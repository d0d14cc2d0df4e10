"""Logical times: the least and the greatest.

An update's time (``_time``) is an int64 of milliseconds since the Unix epoch. ``MIN_TIME``
is before every time (a trace's compaction frontier before any compaction, the stored state
a step's changes are summed with); ``MAX_TIME`` is after every time (an unbounded read).
"""

MIN_TIME = -(2**63)
"""The least logical time (the least int64)."""

MAX_TIME = 2**63 - 1
"""The greatest logical time (the greatest int64)."""

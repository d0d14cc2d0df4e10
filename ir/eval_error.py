"""The error a scalar expression raises on a value, in the reference interpreter."""

from __future__ import annotations


class EvalError(Exception):
    """A scalar expression failed on a value (division by zero, overflow, bad cast)."""

"""The error of a database directory that cannot be opened or read."""

from __future__ import annotations


class StateError(RuntimeError):
    """A database directory cannot be opened or read: locked by another opener, written in
    another format, or holding a corrupted or missing file."""

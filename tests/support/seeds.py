"""The seeds of the seeded randomized loops (the SQL feature tests' maintained views against
DuckDB, the runtime's random histories): by default the fewest that reach every path the loop
checks, ``MATVIEW_TEST_SEEDS`` of them when set (``MATVIEW_TEST_SEEDS=4 make test`` runs each
loop over four consecutive seeds from its first). The DuckDB oracle's own seeds are
``oracle.harness.oracle_seeds``."""

from __future__ import annotations

import os


def seeds(first: int = 0, default: int = 1) -> list[int]:
    """``MATVIEW_TEST_SEEDS`` consecutive seeds from ``first`` (``default`` of them if unset)."""
    count = int(os.environ.get("MATVIEW_TEST_SEEDS", default))
    return list(range(first, first + count))

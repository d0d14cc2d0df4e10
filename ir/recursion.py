"""The limit of a recursive query's iterations (``relation.LetRec``) and the error of
reaching it."""

from __future__ import annotations

from matview.ir.functions import EvalError

DEFAULT_RECURSION_LIMIT = 1000
"""The iterations a recursive query may run without reaching a fixed point before it fails
(``LetRec.limit`` when the query names none)."""

class RecursionLimit(EvalError):
    """A recursive query did not reach a fixed point within its iteration limit."""


def recursion_limit_message(names: tuple[str, ...], limit: int) -> str:
    return (f"recursive query {', '.join(names)} did not reach a fixed point within {limit} "
            f"iterations (write WITH MUTUALLY RECURSIVE (RETURN AT RECURSION LIMIT n) for "
            f"the rows after n iterations, or ERROR AT RECURSION LIMIT n to allow more)")

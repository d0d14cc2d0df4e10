"""``text ~ pattern`` (and ``~*``, case-insensitive): whether a match of the regular
expression ``pattern`` occurs anywhere in ``text``, as PostgreSQL's operators (``!~`` and
``!~*`` are their negations). ``.`` matches a newline, as in PostgreSQL. Spark runs Java's
regular expressions (``regexp_like``), Python its own: they agree on the common syntax, as
for ``regexp_replace`` (``sql.regexes``). A pattern that is no regular expression is an
error.
"""

from __future__ import annotations

import re
from typing import Any

from matview.ir.eval_error import EvalError
from matview.ir.types import BOOLEAN, SqlType


def _returns(types: list[SqlType]) -> SqlType:
    return BOOLEAN


def _matcher(flags: int) -> Any:
    def meaning(text: str, pattern: str) -> bool:
        try:
            return re.search(pattern, text, flags | re.DOTALL) is not None
        except re.error as error:
            raise EvalError(f"invalid regular expression: {error}") from None
    return meaning


FUNCTIONS = [
    ("regex_match", _returns, _matcher(0),
     lambda F, text, pattern: F.regexp_like(text, F.concat(F.lit("(?s)"), pattern)), (2, 2)),
    ("regex_match_ci", _returns, _matcher(re.IGNORECASE),
     lambda F, text, pattern: F.regexp_like(text, F.concat(F.lit("(?si)"), pattern)), (2, 2)),
]
"""Name, type rule, Python meaning, Spark lowering and arity of ``~`` and ``~*``."""

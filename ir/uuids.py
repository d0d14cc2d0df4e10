"""UUID values: PostgreSQL's input forms read into one canonical text, lower-case and
hyphenated (``a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11``), which is how a UUID is stored (Spark:
a string), so that equal UUIDs have equal texts and the texts' order is the bytes' order,
PostgreSQL's order of UUIDs.

The input forms are PostgreSQL's: 32 hexadecimal digits in either case, a hyphen allowed
after any group of four (but not at the end), the whole optionally in braces; nothing else
(not even spaces around).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from matview.ir.eval_error import EvalError

_DIGITS = "[0-9a-fA-F]{4}(?:-?[0-9a-fA-F]{4}){7}"
_FORM = f"\\{{{_DIGITS}\\}}|{_DIGITS}"
_PYTHON_FORM = re.compile(_FORM)
JAVA_FORM = f"^(?:{_FORM})\\z"
"""The input forms as a Java regular expression matching the whole text (Spark's ``rlike``)."""
_GROUPS = ("^(.{8})(.{4})(.{4})(.{4})(.{12})$", "$1-$2-$3-$4-$5")
"""The 32 digits of a UUID cut into its canonical groups, by ``regexp_replace``."""
ZERO = "00000000-0000-0000-0000-000000000000"


def canonical(text: str) -> str:
    """The canonical text of the UUID spelled ``text``; ``EvalError`` when it spells none."""
    if _PYTHON_FORM.fullmatch(text) is None:
        raise EvalError(f'invalid input syntax for type uuid: "{text}"')
    return str(uuid.UUID(text.strip("{}")))


def spark_canonical(F: Any, text: Any) -> Any:
    """``canonical`` in Spark: NULL where ``text`` spells no UUID."""
    digits = F.lower(F.regexp_replace(text, F.lit("[{}-]"), F.lit("")))
    return F.when(text.rlike(JAVA_FORM),
                  F.regexp_replace(digits, F.lit(_GROUPS[0]), F.lit(_GROUPS[1])))

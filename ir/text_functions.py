"""The text functions' meanings in the reference interpreter and their Spark lowerings,
registered in ``functions``: LIKE, ``substring``, ``strpos``, ``replace``, ``concat_ws``
and ``split_part``, as PostgreSQL has them; ``regexp_replace`` as Java has it (``sql.regexes``
binds PostgreSQL's to it). (``concat`` is bound as ``||`` of its
arguments' texts, NULL as '': ``sql.calls``.)"""

from __future__ import annotations

import re
from typing import Any

from matview.ir.eval_error import EvalError


def like(text: str, pattern: str) -> bool:
    """``text LIKE pattern``: ``%`` any characters, ``_`` one, ``\\`` escapes the next."""
    regex = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 == len(pattern):
                raise EvalError("LIKE pattern must not end with escape character")
            regex.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        regex.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(regex), text, re.DOTALL) is not None


def substr(s: str, start: int, length: int | None = None) -> str:
    """PostgreSQL's ``substring(s FROM start FOR length)``: the characters at positions
    ``start`` to ``start + length - 1`` (counted from 1) that ``s`` has, so a start below 1
    shortens the result; without ``length``, to the end. A negative length is an error."""
    if length is not None and length < 0:
        raise EvalError("negative substring length not allowed")
    end = None if length is None else start + length - 1
    begin = max(start, 1) - 1
    return s[begin:] if end is None else s[begin:max(end, 0)]


def spark_substr(F: Any, s: Any, start: Any, length: Any = None) -> Any:
    """``substr`` in Spark, whose ``substr`` counts a start below 1 from the end of the
    text: the start is raised to 1 and the length shortened to match (computed as BIGINT,
    so ``start + length`` cannot overflow; a negative length gives '' here, its error is
    ``runtime.checked``'s)."""
    first = F.when(start < 1, F.lit(1)).otherwise(start)
    if length is None:
        return F.substr(s, first)
    count = start.cast("bigint") + length - first
    return F.substr(s, first, F.when(count < 0, F.lit(0)).otherwise(count).cast("int"))


def strpos(s: str, sub: str) -> int:
    """``strpos(s, sub)``, ``position(sub IN s)``: where ``sub`` first starts in ``s``,
    counted from 1 (0 when it is not there, 1 when it is empty)."""
    return s.find(sub) + 1


def replace(s: str, old: str, new: str) -> str:
    """``replace(s, old, new)``: every ``old`` in ``s`` replaced by ``new`` (none when
    ``old`` is empty)."""
    return s.replace(old, new) if old else s


def concat_ws(separator: str | None, *parts: str | None) -> str | None:
    """``concat_ws(separator, ...)``: the texts that are not NULL, joined by ``separator``;
    NULL when it is."""
    if separator is None:
        return None
    return separator.join(p for p in parts if p is not None)


def spark_concat_ws(F: Any, separator: Any, *parts: Any) -> Any:
    """``concat_ws`` in Spark, whose own skips NULL texts and is NULL for a NULL separator
    (``F.concat_ws`` takes only a constant separator)."""
    return F.call_function("concat_ws", separator, *parts)


def split_part(s: str, delimiter: str, n: int) -> str:
    """``split_part(s, delimiter, n)``: the ``n``-th field of ``s`` split at each
    ``delimiter`` (not split when it is empty), counted from 1, or from the end when ``n``
    is negative; '' when there is no such field. ``n`` = 0 is an error."""
    if n == 0:
        raise EvalError("field position must not be zero")
    fields = s.split(delimiter) if delimiter else [s]
    at = n - 1 if n > 0 else len(fields) + n
    return fields[at] if 0 <= at < len(fields) else ""


def regexp_replace(s: str, pattern: str, replacement: str) -> str:
    """Spark's (Java's) ``regexp_replace``: every match of ``pattern`` replaced by
    ``replacement``, where ``$n`` is group n (its first digit always, the next ones while
    they name a group) and a backslash escapes the character after it."""
    regex = re.compile(pattern)

    def expanded(match: re.Match[str]) -> str:
        out, i = [], 0
        while i < len(replacement):
            ch = replacement[i]
            if ch == "\\" and i + 1 < len(replacement):
                out.append(replacement[i + 1])
                i += 2
            elif ch == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
                group, i = int(replacement[i + 1]), i + 2
                while (i < len(replacement) and replacement[i].isdigit()
                       and group * 10 + int(replacement[i]) <= regex.groups):
                    group, i = group * 10 + int(replacement[i]), i + 1
                if group > regex.groups:
                    raise EvalError(f"no group {group} in regular expression {pattern}")
                out.append(match.group(group) or "")
            else:
                out.append(ch)
                i += 1
        return "".join(out)

    return regex.sub(expanded, s)

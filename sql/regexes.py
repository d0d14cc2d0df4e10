"""PostgreSQL's ``regexp_replace(source, pattern, replacement [, flags])`` bound to a
replacement in Java's syntax, which Spark's ``regexp_replace`` runs (``ir.functions``:
every match of the pattern replaced).

PostgreSQL replaces the first match unless ``flags`` holds ``g``; ``i`` makes the match
case-insensitive; ``.`` matches a newline. Its replacement reads ``\\1`` .. ``\\9`` as the
groups, ``\\&`` as the match, ``\\\\`` as a backslash, anything else as itself (``$`` too).
The pattern, replacement and flags must be constants (PostgreSQL takes any text); they
become

    g:      (?s)[(?i)]P                  every match,  \\n -> $n,     \\& -> $0
    else:   (?s)[(?i)]^(.*?)(P)          one match,    \\n -> $(n+2), \\& -> $2, after $1

the lazy prefix finding the first match and keeping the text before it. A group the
pattern does not have is empty, as in PostgreSQL. Java's and PostgreSQL's regular
expressions agree on the common syntax, not all of it: alternatives are tried in order,
as Java (and DuckDB) do, where PostgreSQL prefers the longest match.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from matview.ir.scalar import Lit
from matview.ir.types import TEXT
from matview.sql.calls import check_arity
from matview.sql.coerce import TypedScalar, call, coerce
from matview.sql.errors import InvalidValueError, SqlTypeError, UnsupportedError
from sqlglot import exp

if TYPE_CHECKING:
    from matview.sql.scalars import ExprBinder


def bind_regexp_replace(binder: ExprBinder, node: exp.RegexpReplace) -> TypedScalar:
    """``regexp_replace(source, pattern, replacement [, flags])`` as Java's replacement of
    every match of a pattern (the module's rules)."""
    check_arity(node, (3, 4))
    names = ("this", "expression", "replacement", "modifiers")
    args = [binder.bind(node.args[n]) for n in names if node.args.get(n) is not None]
    texts = [coerce(a, TEXT) for a in args]
    if any(t is None for t in texts):
        shown = ", ".join(str(a.type) for a in args)
        raise SqlTypeError.at(f"function regexp_replace({shown}) does not exist", node)
    source, *constants = [t for t in texts if t is not None]
    values: list[str | None] = []
    for constant in constants:
        if not isinstance(constant.expr, Lit):
            raise UnsupportedError.at("regexp_replace with a pattern, replacement or flags "
                                      "that are not constants is not supported yet", node)
        values.append(constant.expr.value)  # type: ignore[arg-type]
    if any(v is None for v in values):
        return TypedScalar(Lit(None, TEXT), TEXT)
    pattern, replacement = str(values[0]), str(values[1])
    flags = str(values[2]) if len(values) > 2 else ""
    java_pattern, java_replacement = java_forms(pattern, replacement, flags, node)
    return call("regexp_replace", [source, _text(java_pattern), _text(java_replacement)],
                node)


def java_forms(pattern: str, replacement: str, flags: str,
               node: exp.Expr) -> tuple[str, str]:
    """The pattern and replacement in Java's syntax of PostgreSQL's ``pattern``,
    ``replacement`` and ``flags`` (the module's table)."""
    unknown = sorted(set(flags) - {"g", "i", "c"})
    if unknown:
        raise InvalidValueError.at(f'invalid regular expression option: "{unknown[0]}"', node)
    try:
        groups = re.compile(pattern).groups
    except re.error as error:
        raise InvalidValueError.at(f"invalid regular expression: {error}", node) from None
    every = "g" in flags
    fold = "i" in flags and flags.rfind("i") > flags.rfind("c")
    head = "(?si)" if fold else "(?s)"
    shift = 0 if every else 2
    out = [] if every else ["$1"]
    i = 0
    while i < len(replacement):
        ch = replacement[i]
        following = replacement[i + 1] if i + 1 < len(replacement) else ""
        if ch == "\\" and following.isdigit() and following != "0":
            if int(following) <= groups:  # else empty, as PostgreSQL's
                out.append(f"${int(following) + shift}")
            i += 2
        elif ch == "\\" and following == "&":
            out.append(f"${shift}")
            i += 2
        elif ch == "\\" and following == "\\":
            out.append("\\\\")
            i += 2
        else:
            literal = "\\\\" if ch == "\\" else "\\$" if ch == "$" else ch
            escape = bool(out) and out[-1].startswith("$") and ch.isdigit()
            out.append("\\" + ch if escape else literal)
            i += 1
    body = pattern if every else f"^(.*?)({pattern})"
    return head + body, "".join(out)


def _text(value: str) -> TypedScalar:
    return TypedScalar(Lit(value, TEXT), TEXT)

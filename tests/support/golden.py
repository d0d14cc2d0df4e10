"""Golden files: test cases whose expected output is kept in a text file, and rewritten on demand.

A ``.test`` file is a sequence of cases. Each case is

- a directive line saying what to do with the input, e.g. ``plan stage=optimized``;
- the input lines (any number, blank lines included);
- a line ``----``;
- the expected output lines, which end at the first blank line (or at the end of the file).

So an expected output never holds a blank line, and an input never holds a line ``----``.
Blank lines between cases are ignored, and so are lines starting with ``#`` before a
directive: they are comments, kept when the file is rewritten (with the blank lines between
them). For example::

    # a comment about the next case
    roundtrip
    Union
    ----
    Union

``run_golden`` evaluates every case and fails with a diff of each case whose output differs
from the expected one; with ``rewrite`` (``pytest --rewrite``) it writes the actual outputs into
the file instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SEPARATOR = "----"


@dataclass(frozen=True)
class Case:
    """One case of a golden file; ``line`` is the line number of its directive."""

    comments: tuple[str, ...]
    directive: str
    input: str
    expected: str
    line: int


def read_cases(text: str) -> list[Case]:
    """The cases of a golden file's ``text``."""
    lines = text.split("\n")
    cases: list[Case] = []
    at = 0
    while at < len(lines):
        while at < len(lines) and not lines[at].strip():
            at += 1
        comments_start = at
        while at < len(lines) and (not lines[at].strip() or lines[at].startswith("#")):
            at += 1
        if at == len(lines):
            if comments_start < at:
                raise ValueError(f"line {comments_start + 1}: comments after the last case")
            break
        comments = lines[comments_start:at]
        start = at
        try:
            end = lines.index(SEPARATOR, start + 1)
        except ValueError:
            raise ValueError(f"line {start + 1}: case without a {SEPARATOR!r} line") from None
        output_end = end + 1
        while output_end < len(lines) and lines[output_end].strip():
            output_end += 1
        cases.append(Case(
            tuple(comments),
            lines[start],
            "\n".join(lines[start + 1:end]),
            "\n".join(lines[end + 1:output_end]),
            start + 1,
        ))
        at = output_end
    return cases


def write_cases(cases: list[Case]) -> str:
    """The text of a golden file holding ``cases``."""
    blocks = []
    for case in cases:
        if case.expected and any(not line.strip() for line in case.expected.split("\n")):
            raise ValueError(
                f"line {case.line}: the output of {case.directive!r} holds a blank line:\n"
                f"{case.expected}"
            )
        lines = [*case.comments, case.directive]
        if case.input:
            lines.append(case.input)
        lines.append(SEPARATOR)
        if case.expected:
            lines.append(case.expected)
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def run_golden(path: Path, evaluate: Callable[[str, str], str], rewrite: bool) -> None:
    """Check (or, with ``rewrite``, rewrite) the golden file ``path``.

    ``evaluate(directive, input)`` returns a case's actual output, without a final newline.
    """
    cases = read_cases(path.read_text())
    actual = [
        Case(c.comments, c.directive, c.input, evaluate(c.directive, c.input), c.line)
        for c in cases
    ]
    if rewrite:
        path.write_text(write_cases(actual))
        return
    failures = [
        f"{path}:{want.line}: {want.directive}\n"
        + "\n".join(difflib.unified_diff(
            want.expected.split("\n"), got.expected.split("\n"), "expected", "actual",
            lineterm="",
        ))
        for want, got in zip(cases, actual, strict=True)
        if want.expected != got.expected
    ]
    assert not failures, (
        f"{len(failures)} of {len(cases)} cases differ (pytest --rewrite updates the file):\n\n"
        + "\n\n".join(failures)
    )

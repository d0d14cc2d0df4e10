"""The shell: statements and meta-commands read from a prompt_toolkit prompt or from lines of
text, results printed as tables with rich."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from decimal import Decimal
from pathlib import Path
from typing import TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.filters import Condition
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

import matview
from matview.server.statements import words
from matview.shell.backend import Backend, Embedded, Outcome
from matview.shell.completion import Catalog, SqlCompleter
from matview.statement_text import split

DEFAULT_HISTORY = "~/.matview_history"
PROMPT, CONTINUATION = "matview=> ", "matview-> "
CATALOG_CHANGES = frozenset({"CREATE", "DROP", "ALTER"})
"""First words of the statements after which the completer reads the catalog again."""

HELP = """\
Statements end with ; (outside strings and comments) and may span several lines.
  \\d            list tables, views and materialized views
  \\d NAME       the columns of NAME and their types
  \\explain SQL  the optimized plan of SQL
  \\timing [on|off]  show how long each statement takes
  \\?            this help
  \\q            quit (Ctrl-D too; Ctrl-C clears the line being typed)"""


class Quit(Exception):
    """``\\q``: the shell stops."""


def complete(text: str) -> bool:
    """Whether ``text`` is ready to run: blank, a meta-command (starts with ``\\``), or
    statements the last of which ends with a ``;`` outside strings, quoted names and
    comments (the engine's statement splitting, as the server splits a query)."""
    stripped = text.strip()
    if not stripped or stripped.startswith("\\"):
        return True
    pieces = split(text)
    if not pieces:  # only comments and semicolons
        return stripped.endswith(";")
    last = pieces[-1]
    return last.offset + len(last.text) < len(text)


class Shell:
    """An interactive SQL shell on ``backend`` (a ``Backend``, or a ``matview.Connection``
    for the embedded engine). ``input`` and ``output`` are prompt_toolkit's (the terminal
    by default); results go to ``stdout`` and errors, as ``error: ...``, to ``stderr``;
    ``history`` is the file of past input (None: ``~/.matview_history``)."""

    def __init__(self, backend: Backend | matview.Connection, *, input: Input | None = None,
                 output: Output | None = None, history: str | Path | None = None,
                 stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.backend = backend if isinstance(backend, Backend) else Embedded(backend)
        self.catalog = Catalog(self.backend)
        self.completer = SqlCompleter(self.catalog)
        self.timing = False
        self._input, self._output = input, output
        self._history = Path(history or DEFAULT_HISTORY).expanduser()
        self._out = _console(stdout or sys.stdout)
        self._err = _console(stderr or sys.stderr)

    # --- reading --------------------------------------------------------------------------

    def interact(self) -> None:
        """Prompt for statements and meta-commands until ``\\q`` or Ctrl-D; an error is
        printed and the shell goes on; Ctrl-C drops the input being typed."""
        session: PromptSession[str] = PromptSession(
            PROMPT, multiline=Condition(lambda: not complete(session.default_buffer.text)),
            prompt_continuation=CONTINUATION, history=FileHistory(str(self._history)),
            completer=self.completer, complete_while_typing=False,
            input=self._input, output=self._output)
        self._out.print(Text("matview shell: \\? for help, \\q to quit"))
        while True:
            self.catalog.refresh()
            try:
                text = session.prompt()
            except KeyboardInterrupt:
                continue
            except EOFError:
                return
            try:
                self.run(text)
            except Quit:
                return
            except KeyboardInterrupt:
                self._err.print(Text("error: canceled"))

    def run_lines(self, lines: Iterable[str]) -> bool:
        """Run the statements and meta-commands (one a line, at the start of a statement) of
        ``lines`` as they complete, and what is left at the end, until the first error or
        ``\\q``; whether none failed."""
        pending = ""
        try:
            for line in lines:
                pending += line if line.endswith("\n") else line + "\n"
                if complete(pending):
                    text, pending = pending, ""
                    if not self.run(text):
                        return False
            return self.run(pending)
        except Quit:
            return True

    # --- running --------------------------------------------------------------------------

    def run(self, text: str) -> bool:
        """Run a meta-command or the statements of ``text``, stopping at the first error
        (printed); whether none failed. ``\\q`` raises ``Quit``."""
        stripped = text.strip()
        if stripped.startswith("\\"):
            return self._meta(stripped)
        for piece in split(text):
            if not self._timed(self._statement, piece.text):
                return False
        return True

    def _timed(self, step: Callable[[str], None], argument: str) -> bool:
        """``step(argument)`` with errors printed, then its time if ``\\timing`` is on;
        whether it succeeded."""
        started = time.perf_counter()
        try:
            step(argument)
        except self.backend.errors as error:
            self._error(str(error).strip())
            return False
        if self.timing:
            self._out.print(Text(f"Time: {(time.perf_counter() - started) * 1000:.3f} ms"))
        return True

    def _statement(self, sql: str) -> None:
        """Run one statement and print its rows, or its command tag."""
        outcome = self.backend.execute(sql)
        if set(words(sql, 1)) & CATALOG_CHANGES:
            self.catalog.stale = True
        self._print(outcome)

    def _meta(self, command: str) -> bool:
        """Run the meta-command ``command`` (``\\d``, ``\\explain``, ...); whether it
        succeeded."""
        name, _, argument = command.partition(" ")
        argument = argument.strip().rstrip(";").strip()
        if name == "\\q":
            raise Quit
        if name == "\\?":
            self._out.print(Text(HELP))
        elif name == "\\timing" and argument.lower() in ("", "on", "off"):
            self.timing = argument.lower() == "on" or (not argument and not self.timing)
            self._out.print(Text(f"Timing is {'on' if self.timing else 'off'}."))
        elif name == "\\explain" and argument:
            return self._timed(self._explain, argument)
        elif name == "\\d":
            return self._timed(self._describe, argument)
        else:
            self._error(f"invalid command {command}; \\? lists the commands")
            return False
        return True

    def _explain(self, sql: str) -> None:
        """Print the optimized plan of ``sql``."""
        self._out.print(Text(self.backend.explain(sql)), soft_wrap=True)

    def _describe(self, name: str) -> None:
        """Print the relations (no ``name``) or the columns of relation ``name``."""
        if not name:
            relations = self.backend.relations()
            self._print(Outcome(["name", "kind"], [tuple(r) for r in relations]))
            return
        kinds = dict(self.backend.relations())
        columns = self.backend.columns(name)
        title = next((f'{kinds[n].capitalize()} "{n}"' for n in (name, name.lower())
                      if n in kinds), None)
        self._print(Outcome(["column", "type"], [tuple(c) for c in columns]), title)

    # --- printing -------------------------------------------------------------------------

    def _print(self, outcome: Outcome, title: str | None = None) -> None:
        """Print rows as a table with a ``(n rows)`` footer, or the command tag."""
        if outcome.columns is None:
            if outcome.status:
                self._out.print(Text(outcome.status))
            return
        numeric = [all(_number(row[i]) for row in outcome.rows if row[i] is not None)
                   for i in range(len(outcome.columns))]
        table = Table(*outcome.columns, box=box.SIMPLE_HEAD, title=title, title_justify="left",
                      show_edge=False, pad_edge=False, highlight=False)
        for column, right in zip(table.columns, numeric):
            column.justify = "right" if right and outcome.rows else "left"
        for row in outcome.rows:
            table.add_row(*(_cell(value) for value in row))
        self._out.print(table)
        count = len(outcome.rows)
        self._out.print(Text(f"({count} row{'' if count == 1 else 's'})"))

    def _error(self, message: str) -> None:
        """Print ``error: message``."""
        self._err.print(Text(f"error: {message}"), soft_wrap=True)


def _console(file: TextIO) -> Console:
    """A rich console on ``file``: no markup or highlighting of the data; a file that is no
    terminal gets lines as wide as the table (no wrapping)."""
    terminal = file.isatty()
    return Console(file=file, markup=False, highlight=False, emoji=False,
                   width=None if terminal else 1_000_000)


def _number(value: object) -> bool:
    """Whether ``value`` is a number (right-aligned)."""
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _cell(value: object) -> Text:
    """A value as text: NULL for None, ``t`` / ``f`` for booleans (as PostgreSQL prints)."""
    if value is None:
        return Text("NULL", style="dim")
    if isinstance(value, bool):
        return Text("t" if value else "f")
    return Text(str(value))

"""Completion of SQL keywords and of the catalog's relation and column names."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from sqlglot import exp

from matview.shell.backend import Backend
from matview.sql.dialect import Matview

KEYWORDS = sorted({word for key in Matview.Tokenizer.KEYWORDS for word in key.split()
                   if word.isalpha()} | {"MATERIALIZED", "TABLES", "VIEWS", "COLUMNS", "IF"})
"""The words of matview's SQL tokenizer's keywords, and those of matview's own statements."""

RELATION_BEFORE = frozenset({"FROM", "JOIN", "INTO", "UPDATE", "TABLE", "VIEW", "TO", "\\D"})
"""Words after which only a relation name can follow."""

_WORD = re.compile(r"[\w$]+$")
_PREVIOUS = re.compile(r"([\w\\]+)\W*$")


class Catalog:
    """The relations and columns of the backend, read again when marked ``stale`` (after a
    statement that may change the catalog) and the backend is idle; a read that fails keeps
    what was read before."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.stale = True
        self._relations: list[tuple[str, str]] = []
        self._columns: dict[str, list[str]] = {}

    def refresh(self) -> None:
        """Read the catalog again if it is stale and the backend is outside a transaction
        block."""
        if not self.stale or not self.backend.idle():
            return
        self.stale = False
        try:
            relations = self.backend.relations()
            columns = {name: [c for c, _ in self.backend.columns(_quoted(name))]
                       for name, _ in relations}
        except self.backend.errors:
            return
        self._relations, self._columns = relations, columns

    @property
    def relations(self) -> list[str]:
        """The relation names (read first if stale)."""
        self.refresh()
        return [name for name, _ in self._relations]

    @property
    def columns(self) -> list[str]:
        """Every relation's column names, each once (read first if stale)."""
        self.refresh()
        return sorted({c for names in self._columns.values() for c in names})


class SqlCompleter(Completer):
    """Completes the word before the cursor: with a relation name after ``FROM``, ``JOIN``,
    ``INTO``, ``UPDATE``, ``TABLE``, ``VIEW``, ``TO`` and ``\\d``, else with a relation,
    column or keyword (keywords in the case the word is typed in)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterator[Completion]:
        """The completions of the word before the cursor."""
        before = document.text_before_cursor
        found = _WORD.search(before)
        word = found.group() if found else ""
        previous = _PREVIOUS.search(before[:len(before) - len(word)])
        if previous is not None and previous.group(1).upper() in RELATION_BEFORE:
            candidates: Iterable[tuple[str, str]] = (
                (name, "relation") for name in self.catalog.relations)
        else:
            case = str.lower if word.islower() else str.upper
            candidates = [*((n, "relation") for n in self.catalog.relations),
                          *((c, "column") for c in self.catalog.columns),
                          *((case(k), "keyword") for k in KEYWORDS)]
        seen = set()
        for text, meta in candidates:
            if text.lower().startswith(word.lower()) and text not in seen:
                seen.add(text)
                yield Completion(text, -len(word), display_meta=meta)


def _quoted(name: str) -> str:
    """``name`` as a quoted SQL identifier (sqlglot's quoting in matview's dialect)."""
    return exp.to_identifier(name, quoted=True).sql(dialect=Matview)

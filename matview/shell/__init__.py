"""``matview shell``: an interactive SQL shell on the embedded engine or, through psycopg 3, on
a ``matview serve`` server.

    import matview
    from matview.shell import Shell
    Shell(matview.connect()).interact()

``Shell.interact`` prompts with prompt_toolkit (history, multi-line statements, completion
of keywords and catalog names, meta-commands ``\\d``, ``\\explain``, ``\\timing``, ``\\q``,
``\\?``); ``Shell.run_lines`` runs a script without a prompt. Results are printed as tables
with rich.
"""

from matview.shell.backend import Backend, Embedded, Outcome, Remote, connect_remote
from matview.shell.session import Shell, complete

__all__ = ["Backend", "Embedded", "Outcome", "Remote", "Shell", "complete", "connect_remote"]

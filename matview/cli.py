"""The ``matview`` command line.

    matview explain [--setup FILE.sql] [--stage STAGE] [--format FORMAT] [--with OPTION]...
                    [--output FILE] SQL

``explain`` opens an in-process database (``matview.connect()``), runs the statements of
the setup file (``CREATE TABLE ...; CREATE MATERIALIZED VIEW ...;``), then prints
``Connection.explain(SQL, stage, format, options)``. ``SQL`` is one statement, or
``MATERIALIZED VIEW name`` for a view the setup created. ``--stage`` is ``raw``,
``decorrelated``, ``optimized`` (the default), ``physical``, ``trace`` (the optimizer trace)
or ``analyze``; ``--format`` is ``text`` (the default), ``json`` or ``dot``, printed or
written to ``--output``, or ``png`` / ``svg``: the DOT drawn by Graphviz's ``dot`` into
``--output`` (install Graphviz: ``apt install graphviz`` or ``brew install graphviz``).
``--with`` adds an EXPLAIN option (``arity``, ``types``, ``keys``,
``humanized expressions``); it may repeat.

    matview serve [--host 127.0.0.1] [--port 6875] [--password-file FILE] [--files DIR]...
                  [--path DIR]

``serve`` opens an in-process database on the wall clock and serves it over the PostgreSQL
wire protocol (``matview.server``) until SIGINT or SIGTERM, printing ``listening on
HOST:PORT`` (``--port 0`` picks a free port). Clients are trusted unless
``--password-file`` names a file whose first line is the password, then checked with
SCRAM-SHA-256; a host other than loopback needs a password. ``--files`` names a directory
COPY and sinks may use files in (``connect(files=...)``). ``--path DIR`` serves the durable
database in ``DIR`` (``connect(path=...)``: made if new, its tables and views resumed if
not; one opener at a time).

    matview shell [--connect postgresql://HOST:PORT/DB | --host HOST --port PORT]
                  [-c SQL | -f FILE] [--history FILE]

``shell`` is an SQL shell (``matview.shell``) on an in-process database on the wall clock,
or, with ``--connect`` (or ``--host`` / ``--port``, by default 127.0.0.1 and 6875), on a
``matview serve`` server through psycopg 3 (``pip install 'matview[shell]'``). On a
terminal it prompts: statements end with ``;`` and may span lines; Tab completes keywords
and relation and column names; history is kept in ``--history`` (default
``~/.matview_history``); ``\\d [NAME]``, ``\\explain SQL``, ``\\timing``, ``\\?`` and ``\\q``
are meta-commands. ``-c SQL`` runs SQL, ``-f FILE`` the file, and, when standard input is
no terminal, the statements read from it; these stop at the first error.

Exit status: 0 on success, 1 when matview (or Graphviz) reports an error, printed as
``error: ...`` on stderr, 2 for a usage error or when Graphviz (or, for a shell on a
server, psycopg) is missing.
"""

from __future__ import annotations

import argparse
import ipaddress
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import matview
from matview.planner.pipeline import STAGES
from matview.runtime.settings import parsed
from matview.sql.dialect_nodes import EXPLAIN_OPTIONS

if TYPE_CHECKING:
    from matview.shell import Backend

TEXT_FORMATS = ("text", "json", "dot")
IMAGE_FORMATS = ("png", "svg")
MISSING_DOT = (
    "--format {fmt} draws the plan with Graphviz, but graphviz's `dot` is not on "
    "PATH; install Graphviz (`apt install graphviz` or `brew install graphviz`), or use "
    "--format dot and render the DOT text elsewhere"
)

MISSING_PSYCOPG = ("the shell reaches a server through psycopg 3, which is not installed: "
                   "pip install 'matview[shell]'")


class UsageError(Exception):
    """The command line asks for something that cannot run; exit status 2."""


class Failure(Exception):
    """A step of the command failed; exit status 1."""


def main(argv: list[str] | None = None) -> int:
    """Run the ``matview`` command with ``argv`` (default ``sys.argv[1:]``); the exit status."""
    try:
        args = _parser().parse_args(argv)
        commands = {"serve": serve, "shell": shell, "explain": explain}
        return commands[args.command](args)
    except SystemExit as stop:  # argparse: --help, or a usage error already printed
        return stop.code if isinstance(stop.code, int) else 2
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (matview.Error, Failure, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


def explain(args: argparse.Namespace) -> int:
    """``matview explain``: print (or draw) the plan ``args`` ask for."""
    dot = _graphviz(args.format, args.output)
    with matview.connect() as con:
        if args.setup is not None:
            con.executescript(args.setup.read_text())
        fmt = "dot" if dot is not None else args.format
        text = con.explain(args.sql, stage=args.stage, format=fmt, options=args.options)
    if dot is not None:
        _draw(dot, args.format, text, args.output)
    elif args.output is not None:
        args.output.write_text(_line_ended(text))
    else:
        sys.stdout.write(_line_ended(text))
    return 0


def serve(args: argparse.Namespace) -> int:
    """``matview serve``: serve a new database over the PostgreSQL protocol until SIGINT or
    SIGTERM."""
    from matview.server import serve as start

    password = _password(args.password_file, args.host)
    try:
        settings = dict(parsed(text) for text in args.settings)
    except ValueError as error:
        raise UsageError(str(error)) from None
    with matview.connect(args.path, files=args.files, settings=settings) as con:
        server = start(con, args.host, args.port, password)
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, lambda *_: server.close())
        print(f"listening on {server.host}:{server.port}", flush=True)
        server.wait()
    return 0


def shell(args: argparse.Namespace) -> int:
    """``matview shell``: run ``-c``, ``-f`` or piped statements (status 1 when one fails),
    or prompt for them on a terminal."""
    from matview.shell import Shell

    script = (args.command_sql if args.command_sql is not None
              else args.file.read_text() if args.file is not None
              else None if sys.stdin.isatty() else sys.stdin)
    backend = _shell_backend(args)
    try:
        console = Shell(backend, history=args.history)
        if script is None:
            console.interact()
            return 0
        lines = script.splitlines(keepends=True) if isinstance(script, str) else script
        return 0 if console.run_lines(lines) else 1
    finally:
        backend.close()


def _shell_backend(args: argparse.Namespace) -> Backend:
    """What ``matview shell`` runs on: the server ``--connect`` or ``--host`` / ``--port``
    name (127.0.0.1 and 6875 by default), else a new in-process database."""
    from matview.shell import Embedded, connect_remote

    if args.connect is None and args.host is None and args.port is None:
        return Embedded(matview.connect())
    if args.connect is not None and (args.host is not None or args.port is not None):
        raise UsageError("give --connect or --host / --port, not both")
    try:
        if args.connect is not None:
            return connect_remote(args.connect)
        return connect_remote(host=args.host or "127.0.0.1",
                              port=6875 if args.port is None else args.port)
    except ImportError as error:
        raise UsageError(MISSING_PSYCOPG) from error


def _password(path: Path | None, host: str) -> str | None:
    """The password in the first line of ``path`` (None: trust); a non-loopback ``host``
    needs one."""
    if path is None:
        if not _loopback(host):
            raise UsageError(f"--host {host} accepts connections from other machines: give "
                             "--password-file too")
        return None
    lines = path.read_text().splitlines()
    if not lines or not lines[0]:
        raise UsageError(f"--password-file {path} holds no password on its first line")
    return lines[0]


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="matview", description="matview: incremental "
                                     "materialized views in SQL, maintained on Apache Spark")
    commands = parser.add_subparsers(dest="command", required=True)
    sub = commands.add_parser("explain", help="show the plan of a query",
                              description="Show the plan of a query at a stage, in a format.")
    sub.add_argument("sql", metavar="SQL",
                     help="one statement, or MATERIALIZED VIEW name (made by --setup)")
    sub.add_argument("--setup", type=Path, metavar="FILE.sql",
                     help="statements to run first (CREATE TABLE ...; ...)")
    sub.add_argument("--stage", default="optimized", choices=(*STAGES, "trace", "analyze"))
    sub.add_argument("--format", default="text", choices=TEXT_FORMATS + IMAGE_FORMATS,
                     help="png and svg need Graphviz's dot and --output")
    sub.add_argument("--with", dest="options", action="append", default=[],
                     choices=EXPLAIN_OPTIONS, metavar="OPTION",
                     help="an EXPLAIN option: " + ", ".join(EXPLAIN_OPTIONS))
    sub.add_argument("--output", type=Path, metavar="FILE",
                     help="write to FILE instead of standard output")
    sub = commands.add_parser("serve", help="serve a database over the PostgreSQL protocol",
                              description="Serve an in-process database to PostgreSQL "
                              "clients (psql, psycopg) until SIGINT or SIGTERM.")
    sub.add_argument("--host", default="127.0.0.1", help="address to listen on")
    sub.add_argument("--port", type=int, default=6875, help="port (0: any free port)")
    sub.add_argument("--password-file", type=Path, metavar="FILE",
                     help="check clients' passwords (SCRAM-SHA-256) against FILE's first "
                     "line; without it clients are trusted")
    sub.add_argument("--path", metavar="DIR",
                     help="the durable database's directory (default: in memory)")
    sub.add_argument("--files", metavar="DIR", action="append", default=[],
                     help="a directory COPY and sinks may read and write files in (repeat "
                     "for several)")
    sub.add_argument("--setting", metavar="NAME=VALUE", action="append", default=[],
                     dest="settings", help="a runtime setting (repeat for several; SHOW "
                     "SETTINGS lists them)")
    sub = commands.add_parser("shell", help="an interactive SQL shell",
                              description="An SQL shell on an in-process database, or on a "
                              "matview serve server (--connect, --host, --port).")
    sub.add_argument("--connect", metavar="URL",
                     help="a server to use, as postgresql://HOST:PORT/DB")
    sub.add_argument("--host", help="the server's host (default 127.0.0.1 with --port)")
    sub.add_argument("--port", type=int, help="the server's port (default 6875 with --host)")
    script = sub.add_mutually_exclusive_group()
    script.add_argument("-c", dest="command_sql", metavar="SQL", help="run SQL and exit")
    script.add_argument("-f", dest="file", type=Path, metavar="FILE",
                        help="run the statements of FILE and exit")
    sub.add_argument("--history", type=Path, metavar="FILE",
                     help="the file of past input (default ~/.matview_history)")
    return parser


def _graphviz(fmt: str, output: Path | None) -> str | None:
    """The path of Graphviz's ``dot`` when ``fmt`` is an image format (checked before any
    work is done), else None."""
    if fmt not in IMAGE_FORMATS:
        return None
    if output is None:
        raise UsageError(f"--format {fmt} needs --output FILE")
    dot = shutil.which("dot")
    if dot is None:
        raise UsageError(MISSING_DOT.format(fmt=fmt))
    return dot


def _draw(dot: str, fmt: str, text: str, output: Path) -> None:
    """Render the DOT ``text`` into ``output`` as ``fmt`` with Graphviz's ``dot``."""
    done = subprocess.run([dot, f"-T{fmt}", "-o", str(output)], input=text, text=True,
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise Failure(f"graphviz's dot exited with status {done.returncode}: {done.stderr.strip()}")


def _line_ended(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


if __name__ == "__main__":
    sys.exit(main())

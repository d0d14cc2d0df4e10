"""``matview shell`` (``matview.shell``): the interactive shell driven through prompt_toolkit's
pipe input on the test run's SparkSession, completion, the ``-c`` / ``-f`` / piped modes
through ``matview.cli.main`` in this process, a shell on ``matview serve`` over psycopg, and
the real command in a pseudo-terminal (pexpect) against a server started in this process."""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

import matview
from matview.cli import main
from matview.server import Server, serve
from matview.shell import Shell, complete, connect_remote

ROOT = Path(__file__).resolve().parents[2]
ENTER, CTRL_C, CTRL_D = "\r", "\x03", "\x04"


@pytest.fixture()
def orders(con: matview.Connection) -> matview.Connection:
    """The conftest connection with two orders, one with a NULL note."""
    con.execute("INSERT INTO orders VALUES (1, 1, 250, 'first'), (2, 2, 40, NULL)")
    return con


@pytest.fixture()
def server(orders: matview.Connection) -> Iterator[Server]:
    """A ``matview serve`` server on ``orders`` in background threads, on a free port."""
    with serve(orders, "127.0.0.1", 0) as running:
        yield running


def interact(connection: matview.Connection, keys: str, history: Path) -> tuple[str, Shell]:
    """Run a shell on ``connection`` whose terminal types ``keys``; what it printed (results
    and errors) and the shell."""
    printed = io.StringIO()
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        shell = Shell(connection, input=pipe, output=DummyOutput(), history=history,
                      stdout=printed, stderr=printed)
        shell.interact()
    return printed.getvalue(), shell


def lines_of(text: str) -> list[str]:
    """The lines of ``text`` with runs of blanks made one and ends stripped."""
    return [re.sub(r"\s+", " ", line).strip() for line in text.splitlines()]


def test_statement_ends_at_a_semicolon_outside_strings_and_comments() -> None:
    assert complete("SELECT 1;") and complete("SELECT 1; -- done\n") and complete("  ")
    assert complete("\\d orders") and complete(";")
    assert not complete("SELECT 1") and not complete("SELECT ';")
    assert not complete("SELECT 1 -- ;") and not complete("SELECT 1 /* ; */")
    assert not complete("SELECT 1; SELECT 2") and not complete('SELECT "a;b" FROM t')


def test_multi_line_statement_table_errors_and_history(orders: matview.Connection,
                                                       tmp_path: Path) -> None:
    history = tmp_path / "history"
    keys = ("SELECT bogus" + CTRL_C            # dropped: never runs
            + "SELECT *\rFROM orders -- a comment; not the end\r;" + ENTER
            + "SELECT nope FROM orders;" + ENTER  # an error, then the shell goes on
            + "SELECT * FROM customers;" + ENTER + CTRL_D)
    printed, _ = interact(orders, keys, history)
    lines = lines_of(printed)
    header = lines.index("id cust amount note")
    assert sorted(lines[header + 2:header + 4]) == ["1 1 250 first", "2 2 40 NULL"]
    assert lines[header + 4] == "(2 rows)"
    assert "bogus" not in printed
    assert any(line.startswith("error: ") and "nope" in line for line in lines)
    assert lines[-5:] == ["id region", lines[-4], *sorted(lines[-3:-1]), "(2 rows)"]
    assert sorted(lines[-3:-1]) == ["1 eu", "2 us"]
    saved = history.read_text()
    assert "+SELECT *\n+FROM orders -- a comment; not the end\n+;\n" in saved
    assert "+SELECT * FROM customers;" in saved and "bogus" not in saved


def test_timing_describe_explain_help_and_quit(orders: matview.Connection,
                                               tmp_path: Path) -> None:
    orders.execute("CREATE VIEW big AS SELECT id, amount FROM orders WHERE amount > 100")
    keys = ("\\timing" + ENTER + "SELECT * FROM customers;" + ENTER + "\\timing off" + ENTER
            + "\\d" + ENTER + "\\d orders" + ENTER + "\\explain SELECT id FROM big" + ENTER
            + "\\?" + ENTER + "\\nope" + ENTER + "\\q" + ENTER + "SELECT 'after quit';" + ENTER)
    printed, _ = interact(orders, keys, tmp_path / "history")
    lines = lines_of(printed)
    assert "Timing is on." in lines and "Timing is off." in lines
    assert len(re.findall(r"^Time: \d+\.\d{3} ms$", printed, re.M)) == 1
    assert lines[lines.index("name kind") + 2:][:4] == [
        "big view", "customers table", "orders table", "(3 rows)"]
    described = lines[lines.index('Table "orders"'):][:8]
    assert described[1] == "column type" and described[-1] == "(4 rows)"
    assert described[3:7] == [f"{name} {kind}" for name, kind in orders.execute(
        "SHOW COLUMNS FROM orders").fetchall()]
    assert orders.explain("SELECT id FROM big").strip() in printed
    assert "\\explain SQL" in printed and "error: invalid command \\nope" in printed
    assert "after quit" not in printed


def test_completion_of_relations_columns_and_keywords(orders: matview.Connection,
                                                      tmp_path: Path) -> None:
    shell = Shell(orders, history=tmp_path / "history", stdout=io.StringIO())

    def completions(text: str) -> list[str]:
        found = shell.completer.get_completions(Document(text), CompleteEvent())
        return [c.text for c in found]

    assert completions("SELECT * FROM ord") == ["orders"]
    assert completions("select amo") == ["amount"]
    assert "select" in completions("sel") and "SELECT" in completions("SEL")
    assert completions("SELECT * FROM orders JOIN c") == completions("\\d cu") == ["customers"]
    assert shell.run_lines(["CREATE TABLE ordinals (n INT);\n"])
    assert completions("SELECT * FROM ord") == ["orders", "ordinals"]


def test_c_file_and_piped_stdin_through_main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str],
                                             spark) -> None:  # type: ignore[no-untyped-def]
    history = ["--history", str(tmp_path / "history")]
    setup = "CREATE TABLE t (a INT, b TEXT); INSERT INTO t VALUES (1, 'x'), (NULL, 'y');"
    assert main(["shell", *history, "-c", setup + " SELECT * FROM t"]) == 0
    out = lines_of(capsys.readouterr().out)
    assert out[:3] == ["CREATE TABLE", "INSERT 0 2", "a b"]
    assert sorted(out[4:6]) == ["1 x", "NULL y"] and out[6:] == ["(2 rows)"]

    assert main(["shell", *history, "-c", "SHOW TABLES; SELECT bogus; SHOW VIEWS"]) == 1
    captured = capsys.readouterr()
    assert lines_of(captured.out) == ["name", lines_of(captured.out)[1], "(0 rows)"]
    assert captured.err.startswith("error: ") and "bogus" in captured.err

    script = tmp_path / "script.sql"
    script.write_text(setup.replace("; ", ";\n") + "\n\\d t\nSELECT *\nFROM t;\n")
    assert main(["shell", *history, "-f", str(script)]) == 0
    out = lines_of(capsys.readouterr().out)
    assert out[:2] == ["CREATE TABLE", "INSERT 0 2"]
    assert out[2:8] == ['Table "t"', "column type", out[4], "a int", "b text", "(2 rows)"]
    assert out[8] == "a b" and sorted(out[10:12]) == ["1 x", "NULL y"]

    piped = ("CREATE TABLE p (n INT);\nINSERT INTO p\nVALUES (42);\nSELECT * FROM p\n;\n"
             "\\q\nSELECT 9;\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO(piped))
    assert main(["shell", *history]) == 0
    out = lines_of(capsys.readouterr().out)
    assert out == ["CREATE TABLE", "INSERT 0 1", "n", out[3], "42", "(1 row)"]


def test_shell_on_a_server_keeps_transaction_blocks(server: Server, tmp_path: Path) -> None:
    remote = connect_remote(f"postgresql://127.0.0.1:{server.port}/matview")
    printed = io.StringIO()
    shell = Shell(remote, history=tmp_path / "history", stdout=printed, stderr=printed)
    try:
        completions = shell.completer.get_completions(Document("SELECT * FROM cu"),
                                                      CompleteEvent())
        assert [c.text for c in completions] == ["customers"]
        assert shell.run_lines(["BEGIN;\n", "CREATE TABLE later (a INT);\n",
                                "INSERT INTO orders VALUES (3, 1, 5, 'x');\n"])
        shell.catalog.refresh()  # inside the block: not read now, so the block stays intact
        assert shell.run_lines(["COMMIT;\n", "SELECT * FROM customers;\n",
                                "\\explain SELECT id FROM orders"])
        assert "later" in shell.catalog.relations  # read after the block ended
    finally:
        remote.close()
    out = lines_of(printed.getvalue())
    assert out[:3] == ["BEGIN", "CREATE TABLE", "INSERT 0 1"]
    assert out[3:9] == ["COMMIT", "id region", out[5], *sorted(out[6:8]), "(2 rows)"]
    assert sorted(out[6:8]) == ["1 eu", "2 us"]
    assert "orders" in printed.getvalue().split("(2 rows)")[1]


def test_matview_shell_command_in_a_terminal(server: Server, tmp_path: Path) -> None:
    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm", "COLUMNS": "120"}
    child = pexpect.spawn(sys.executable, ["-m", "matview.cli", "shell", "--connect",
                                           f"postgresql://127.0.0.1:{server.port}/matview",
                                           "--history", str(tmp_path / "history")],
                          cwd=ROOT, env=env, encoding="utf-8", timeout=30)
    try:
        child.expect_exact("matview=>")
        child.send("SELECT *\rFROM orders;\r")
        child.expect_exact("(2 rows)")
        assert "first" in child.before and "NULL" in child.before
        child.send("\\q\r")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "+SELECT *\n+FROM orders;" in (tmp_path / "history").read_text()

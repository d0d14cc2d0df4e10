"""The ``matview`` command (``matview.cli.main``), run in this process so that it reuses the
test run's SparkSession; Graphviz is replaced by a fake ``dot`` on PATH."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest

import matview
from matview.cli import main

SETUP = """\
CREATE TABLE customers (id INT, region TEXT);
CREATE TABLE orders (id INT, cust INT, amount BIGINT);
-- a view the plans can name
CREATE MATERIALIZED VIEW big AS SELECT id, amount FROM orders WHERE amount > 100;
"""
JOIN = ("SELECT c.region, count(*) FROM orders o JOIN customers c ON o.cust = c.id "
        "WHERE o.amount > 0 GROUP BY c.region")


@pytest.fixture()
def setup(tmp_path: Path) -> Path:
    path = tmp_path / "setup.sql"
    path.write_text(SETUP)
    return path


@pytest.fixture()
def con(spark):  # type: ignore[no-untyped-def]
    """A connection holding what ``SETUP`` creates, to compare the command's output with."""
    connection = matview.connect(spark=spark)
    connection.executescript(SETUP)
    return connection


@pytest.fixture()
def fake_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``dot`` first on PATH that records its arguments in ``dot.args`` and copies its
    standard input to the file after ``-o``; exits 3 when the input holds ``FAIL``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "dot"
    script.write_text(f"""#!/bin/sh
printf '%s\\n' "$@" > {tmp_path / "dot.args"}
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; fi
  shift
done
cat > "$out"
if grep -q FAIL "$out"; then echo "syntax error in line 1" >&2; exit 3; fi
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return tmp_path / "dot.args"


@pytest.mark.parametrize(("stage", "fmt"), [
    ("optimized", "text"), ("raw", "json"), ("decorrelated", "text"), ("physical", "text"),
    ("physical", "json"), ("physical", "dot"), ("optimized", "dot"), ("trace", "text"),
])
def test_explain_prints_what_connection_explain_returns(
        stage: str, fmt: str, setup: Path, con, capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
) -> None:
    assert main(["explain", "--setup", str(setup), "--stage", stage, "--format", fmt,
                 JOIN]) == 0
    out = capsys.readouterr().out
    assert out == con.explain(JOIN, stage=stage, format=fmt) + "\n"
    if fmt == "json":
        assert json.loads(out)["stage"] == stage
    if fmt == "dot":
        assert out.startswith("digraph ")


def test_defaults_options_and_materialized_views(
        setup: Path, con, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    assert main(["explain", "--setup", str(setup), JOIN]) == 0
    assert capsys.readouterr().out == con.explain(JOIN) + "\n"
    assert main(["explain", "--setup", str(setup), "--with", "arity", "--with",
                 "humanized expressions", JOIN]) == 0
    assert capsys.readouterr().out == con.explain(
        JOIN, options=["arity", "humanized expressions"]) + "\n"
    assert main(["explain", "--setup", str(setup), "--stage", "physical",
                 "MATERIALIZED VIEW big"]) == 0
    out = capsys.readouterr().out
    assert out == con.explain("MATERIALIZED VIEW big", stage="physical") + "\n"
    assert "orders" in out


def test_output_file(setup: Path, tmp_path: Path, con,  # type: ignore[no-untyped-def]
                     capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "plan.json"
    assert main(["explain", "--setup", str(setup), "--format", "json", "--output",
                 str(target), JOIN]) == 0
    assert capsys.readouterr().out == ""
    assert target.read_text() == con.explain(JOIN, format="json") + "\n"


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_images_are_drawn_by_dot(fmt: str, fake_dot: Path, setup: Path, tmp_path: Path,
                                 con) -> None:  # type: ignore[no-untyped-def]
    image = tmp_path / f"plan.{fmt}"
    assert main(["explain", "--setup", str(setup), "--stage", "physical", "--format", fmt,
                 "--output", str(image), JOIN]) == 0
    assert fake_dot.read_text().split("\n")[:-1] == [f"-T{fmt}", "-o", str(image)]
    assert image.read_text() == con.explain(JOIN, stage="physical", format="dot")


def test_a_failing_dot_is_an_error(fake_dot: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str], spark) -> None:  # type: ignore[no-untyped-def]
    setup = tmp_path / "fail.sql"
    setup.write_text('CREATE TABLE "FAIL" (a INT)')
    assert main(["explain", "--setup", str(setup), "--format", "svg", "--output",
                 str(tmp_path / "x.svg"), "SELECT a FROM \"FAIL\""]) == 1
    err = capsys.readouterr().err
    assert err == "error: graphviz's dot exited with status 3: syntax error in line 1\n"


def test_missing_dot_says_how_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Checked before any work: no session is needed, no file is written."""
    monkeypatch.setenv("PATH", str(tmp_path))
    image = tmp_path / "plan.png"
    assert main(["explain", "--format", "png", "--output", str(image), "SELECT 1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --format png draws the plan with Graphviz")
    for part in ("`dot` is not on PATH", "apt install graphviz", "brew install graphviz",
                 "--format dot"):
        assert part in err
    assert not image.exists()


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--format", "svg", "SELECT 1"]) == 2
    assert capsys.readouterr().err == "error: --format svg needs --output FILE\n"
    assert main(["explain", "--stage", "fast", "SELECT 1"]) == 2
    assert "invalid choice: 'fast'" in capsys.readouterr().err
    assert main([]) == 2
    assert main(["explain", "--help"]) == 0
    assert "--setup FILE.sql" in capsys.readouterr().out


def test_matview_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                        spark) -> None:  # type: ignore[no-untyped-def]
    assert main(["explain", "SELECT * FROM nowhere"]) == 1
    assert capsys.readouterr().err.startswith('error: relation "nowhere" does not exist')
    assert main(["explain", "SELEC 1"]) == 1
    assert capsys.readouterr().err.startswith("error: ")
    assert main(["explain", "--setup", str(tmp_path / "none.sql"), "SELECT 1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "none.sql" in err


def test_console_script_entry_point() -> None:
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"matview": "matview.cli:main"}

"""dbt (``dbt-postgres``) against a real ``matview serve``: ``dbt run`` of a project with a
table, a view over it and a materialized view over it, ``dbt test`` of its schema tests,
and ``dbt run`` again (dbt then renames and drops the relations it replaces). dbt runs from
its own virtualenv, ``.venv-dbt`` (``make test`` makes it: its protobuf pin conflicts with
Spark Connect's)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import matview
from matview.server import Server, serve

DBT = Path(__file__).parents[2] / ".venv-dbt" / "bin" / "dbt"

MODELS = {
    "orders.sql": "{{ config(materialized='table') }}\n"
                  "select 1 as id, 10 as amount union all select 2, 20 union all select 3, 5",
    "doubled.sql": "{{ config(materialized='view') }}\n"
                   "select id, amount * 2 as doubled from {{ ref('orders') }}",
    "totals.sql": "{{ config(materialized='materialized_view') }}\n"
                  "select count(*) as n, sum(amount) as total from {{ ref('orders') }}",
    "schema.yml": "version: 2\nmodels:\n  - name: orders\n    columns:\n      - name: id\n"
                  "        data_tests: [unique, not_null]\n  - name: doubled\n    columns:\n"
                  "      - name: doubled\n        data_tests: [not_null]\n",
}


@pytest.fixture(scope="module")
def server(spark) -> Iterator[Server]:  # type: ignore[no-untyped-def]
    con = matview.connect(clock=None, spark=spark)
    running = serve(con, port=0, poll=0.05)
    yield running
    running.close()


def _project(root: Path, port: int) -> Path:
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        "name: shop\nversion: '1.0'\nprofile: shop\nmodel-paths: [models]\n")
    (root / "profiles.yml").write_text(
        "shop:\n  target: dev\n  outputs:\n    dev:\n      type: postgres\n"
        f"      host: 127.0.0.1\n      port: {port}\n      user: u\n      password: ''\n"
        "      dbname: matview\n      schema: public\n      threads: 1\n")
    for name, text in MODELS.items():
        (root / "models" / name).write_text(text)
    return root


def _dbt(project: Path, *command: str) -> str:
    done = subprocess.run([str(DBT), *command, "--profiles-dir", str(project),
                           "--project-dir", str(project)], capture_output=True, text=True,
                          timeout=600, cwd=project)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return done.stdout


@pytest.mark.skipif(not DBT.exists(), reason="dbt's virtualenv is made by `make test`")
def test_dbt_run_test_and_run_again(server: Server, tmp_path: Path) -> None:
    project = _project(tmp_path / "shop", server.port)
    assert "PASS=3" in _dbt(project, "run")
    assert "PASS=3" in _dbt(project, "test")
    with psycopg.connect(host="127.0.0.1", port=server.port, user="u", dbname="matview",
                         autocommit=True) as conn:
        conn.execute("INSERT INTO orders VALUES (4, 100)")
        assert conn.execute("SELECT n, total FROM totals").fetchone() == (4, 135)
    assert "PASS=3" in _dbt(project, "run")  # replaces each relation: the insert is gone
    with psycopg.connect(host="127.0.0.1", port=server.port, user="u", dbname="matview",
                         autocommit=True) as conn:
        assert conn.execute("SELECT n, total FROM totals").fetchone() == (3, 35)
        assert conn.execute("SELECT id, doubled FROM doubled ORDER BY id").fetchall() == [
            (1, 20), (2, 40), (3, 10)]
        kinds = conn.execute("SELECT relname, relkind FROM pg_class WHERE relname IN "
                             "('orders', 'doubled', 'totals') ORDER BY 1").fetchall()
        assert kinds == [("doubled", "v"), ("orders", "r"), ("totals", "m")]

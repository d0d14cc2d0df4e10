"""SQLAlchemy (``postgresql+psycopg``), pandas and pgcli against a real ``matview serve``: connect
(psycopg's type lookup, ``DEALLOCATE ALL``), reflection of tables, views, materialized views,
columns and keys (answered from the system catalogs: the results are PostgreSQL 15's for the
same tables), ``text()`` with parameters, ``pandas.read_sql``, ``to_sql`` into a new and an
existing table."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import psycopg
import pytest
from sqlalchemy import Engine, create_engine, inspect, text

import matview
from matview.server import serve


@pytest.fixture(scope="module")
def engine(spark) -> Iterator[Engine]:  # type: ignore[no-untyped-def]
    con = matview.connect(clock=None, spark=spark)
    running = serve(con, port=0, poll=0.05)
    engine = create_engine(f"postgresql+psycopg://u@127.0.0.1:{running.port}/matview")
    yield engine
    engine.dispose()
    running.close()


def test_reflection_and_pandas(engine: Engine) -> None:
    with engine.connect() as c:
        c.execute(text("CREATE TABLE sa_items (id INT PRIMARY KEY, name TEXT NOT NULL, "
                       "price NUMERIC(10,2) DEFAULT 0, UNIQUE (name))"))
        c.execute(text("INSERT INTO sa_items VALUES (:a, :b, :c)"),
                  [{"a": 1, "b": "x", "c": 2.5}, {"a": 2, "b": "y", "c": 3}])
        c.commit()  # DDL after a block's first write is refused (README, Connecting)
        c.execute(text("CREATE MATERIALIZED VIEW sa_dear AS SELECT id, name FROM sa_items "
                       "WHERE price > 2.6"))
        c.execute(text("CREATE VIEW sa_names AS SELECT name FROM sa_items"))
        c.commit()
    found = inspect(engine)
    assert "sa_items" in found.get_table_names()
    assert "sa_names" in found.get_view_names()
    assert "sa_dear" in found.get_materialized_view_names()
    columns = [(c["name"], str(c["type"]), c["nullable"], c["default"])
               for c in found.get_columns("sa_items")]
    assert columns == [("id", "INTEGER", False, None), ("name", "TEXT", False, None),
                       ("price", "NUMERIC(10, 2)", True, "0")]
    assert [c["name"] for c in found.get_columns("sa_dear")] == ["id", "name"]
    assert found.get_pk_constraint("sa_items")["constrained_columns"] == ["id"]
    assert [(u["name"], u["column_names"]) for u in found.get_unique_constraints(
        "sa_items")] == [("sa_items_name_key", ["name"])]
    assert found.get_foreign_keys("sa_items") == []
    assert [(i["name"], i["unique"], i["column_names"], i["duplicates_constraint"])
            for i in found.get_indexes("sa_items")] == [  # as PostgreSQL: the key's index
        ("sa_items_name_key", True, ["name"], "sa_items_name_key")]
    assert found.has_table("sa_items") and not found.has_table("sa_nothing")
    read = pd.read_sql(text("SELECT id, name FROM sa_items WHERE price > :p ORDER BY id"),
                       engine, params={"p": 2.6})
    assert read.to_dict("list") == {"id": [2], "name": ["y"]}
    frame = pd.DataFrame({"a": [1.5, None], "b": ["p", None]})
    frame.to_sql("sa_frame", engine, index=False)
    frame.to_sql("sa_frame", engine, index=False, if_exists="append")
    back = pd.read_sql("SELECT a, b FROM sa_frame ORDER BY a, b", engine)
    assert back["a"].tolist()[:2] == [1.5, 1.5] and back["b"].tolist()[:2] == ["p", "p"]
    assert back["a"].isna().sum() == 2


def test_deallocate(engine: Engine) -> None:
    url = engine.url
    with psycopg.connect(host=url.host, port=url.port, user="u", dbname="matview",
                         autocommit=True, prepare_threshold=0) as conn:
        for _ in range(2):
            assert conn.execute("SELECT 1 + %s", [1]).fetchone() == (2,)
        conn.execute("DEALLOCATE ALL")
        assert conn.execute("SELECT 1 + %s", [2]).fetchone() == (3,)
        with pytest.raises(psycopg.errors.InvalidSqlStatementName):
            conn.execute("DEALLOCATE nothing_prepared")


def test_pgcli_completion_and_describe(engine: Engine) -> None:
    """pgcli's completion queries (its ``PGExecute``) and pgspecial's ``\\d NAME`` run on
    the system catalogs; the answers are PostgreSQL 15's for the same objects."""
    from pgcli.pgexecute import PGExecute
    from pgspecial.main import PGSpecial

    url = engine.url
    with engine.connect() as c:
        c.execute(text("CREATE TABLE pc_t (id INT PRIMARY KEY, name TEXT)"))
        c.execute(text("CREATE VIEW pc_v AS SELECT name FROM pc_t"))
        c.commit()
    pgcli = PGExecute("matview", "u", None, url.host, url.port, None)
    assert pgcli.search_path() == ["pg_catalog", "public"]
    assert ("public", "pc_t") in list(pgcli.tables())
    assert ("public", "pc_v") in list(pgcli.views())
    assert [c for c in pgcli.table_columns() if c[1] == "pc_t"] == [
        ("public", "pc_t", "id", "integer", False, None),
        ("public", "pc_t", "name", "text", False, None)]
    assert list(pgcli.databases()) == ["matview"]
    [(_, rows, headers, footer, *_)] = list(pgcli.run("\\d pc_t", pgspecial=PGSpecial()))
    assert rows == [["id", "integer", " not null"], ["name", "text", ""]]
    assert headers == ["Column", "Type", "Modifiers"]
    assert footer == 'Indexes:\n    "pc_t_pkey" PRIMARY KEY, btree (id)\n'

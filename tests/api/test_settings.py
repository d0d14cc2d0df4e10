"""Runtime settings (``matview.runtime.settings``): every threshold in one record, set by
``connect(settings=...)`` or ``matview serve --setting``, listed by ``SHOW SETTINGS``, in
force for the statements of the connection that holds them and no other."""

from __future__ import annotations

import dataclasses

import pytest
from matview.runtime.settings import DEFAULTS, RuntimeSettings, active, parsed, using
from pyspark.sql import SparkSession

import matview
from matview.cli import main


def test_every_setting_has_a_meaning_and_a_default() -> None:
    described = DEFAULTS.described()
    assert [name for name, _, _ in described] == [
        f.name for f in dataclasses.fields(RuntimeSettings)]
    assert len(described) >= 20
    for name, value, meaning in described:
        assert value == str(getattr(DEFAULTS, name)) and len(meaning) > 30, name


def test_changes_are_checked_by_name_and_value() -> None:
    changed = DEFAULTS.replaced({"plans_kept": 2, "refresh_small_change": 0.5})
    assert (changed.plans_kept, changed.refresh_small_change) == (2, 0.5)
    assert DEFAULTS.plans_kept == 4  # frozen: the defaults are untouched
    with pytest.raises(ValueError, match="unknown runtime setting 'plan_kept'"):
        DEFAULTS.replaced({"plan_kept": 2})
    with pytest.raises(ValueError, match="'plans_kept' must be an integer of at least 0"):
        DEFAULTS.replaced({"plans_kept": -1})
    with pytest.raises(ValueError, match="'plans_kept' must be an integer"):
        DEFAULTS.replaced({"plans_kept": True})
    with pytest.raises(ValueError, match="between 0 and 1"):
        DEFAULTS.replaced({"refresh_small_change": 2})
    assert DEFAULTS.replaced({"large_lookup_rows": -1}).large_lookup_rows == -1
    assert parsed("max_batches=3") == ("max_batches", 3)
    assert parsed(" refresh_small_change = 0.25") == ("refresh_small_change", 0.25)
    with pytest.raises(ValueError, match="NAME=VALUE"):
        parsed("max_batches")


def test_using_sets_the_settings_of_a_block_only() -> None:
    with using(DEFAULTS.replaced({"max_batches": 3})):
        assert active().max_batches == 3
        with using(DEFAULTS):
            assert active().max_batches == 8
        assert active().max_batches == 3
    assert active() is DEFAULTS


def test_connect_refuses_unknown_settings() -> None:
    with pytest.raises(matview.ProgrammingError, match="unknown runtime setting 'bogus'"):
        matview.connect(settings={"bogus": 1})
    with pytest.raises(matview.ProgrammingError, match="must be a RuntimeSettings"):
        matview.connect(settings=[("plans_kept", 1)])  # type: ignore[arg-type]


def test_serve_refuses_a_setting_without_a_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "0", "--setting", "plans_kept"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err


def test_show_settings_lists_the_connection_s_settings(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark, settings={"table_copy_rows": 0})
    rows = con.execute("SHOW SETTINGS").fetchall()
    assert [d[0] for d in con.execute("SHOW SETTINGS").description] == [
        "name", "setting", "description"]
    shown = {name: value for name, value, _ in rows}
    assert shown["table_copy_rows"] == "0" and shown["plans_kept"] == "4"
    assert len(shown) == len(dataclasses.fields(RuntimeSettings))
    other = matview.connect(clock=0, spark=spark)
    assert dict(r[:2] for r in other.execute("SHOW SETTINGS").fetchall())[
        "table_copy_rows"] == str(DEFAULTS.table_copy_rows)


def test_a_connection_s_settings_decide_where_its_tables_keep_rows(
        spark: SparkSession) -> None:
    """``table_copy_rows`` decides whether a table keeps a driver copy of the batches it
    holds in Spark: two connections in one process, each with its own."""
    copied = matview.connect(clock=0, spark=spark)
    uncopied = matview.connect(clock=0, spark=spark, settings={"table_copy_rows": 0})
    rows = DEFAULTS.driver_batch_rows + 10
    for con in (copied, uncopied):
        con.execute("CREATE TABLE t (a INT)")
        con.insert("t", [(i,) for i in range(rows)])
        assert con.execute("SELECT count(*) FROM t").fetchall() == [(rows,)]
    assert copied.settings.table_copy_rows == DEFAULTS.table_copy_rows
    assert uncopied.settings.table_copy_rows == 0
    traces = [con._engine_for_use().catalog.entries["t"].trace for con in (copied, uncopied)]
    assert [trace.copy_rows for trace in traces] == [DEFAULTS.table_copy_rows, 0]
    assert [any(b.leaf.copy is not None for b in trace.batches) for trace in traces] == [
        True, False]

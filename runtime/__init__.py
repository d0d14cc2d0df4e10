"""matview's incremental runtime: executes dataflow plans on Spark DataFrames.

Imports ``matview.ir`` and pyspark only; never ``matview.sql`` or ``matview.planner``.
"""

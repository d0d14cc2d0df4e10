"""Helpers the test modules share (no test module imports another): the differential SQL
environment, golden files, catalogs, the DuckDB oracle's workloads and harness, and the
checks the cluster runs reuse."""

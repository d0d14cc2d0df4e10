"""Benchmarks of matview, run as ``python -m bench.<name>`` from the repository root."""

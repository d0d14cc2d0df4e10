"""Operators of a dataflow: one module per operator, the contract in ``base``, their meters
in ``metering``."""

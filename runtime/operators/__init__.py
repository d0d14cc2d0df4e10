"""Operators of a dataflow: one module per operator, the contract in ``base``."""

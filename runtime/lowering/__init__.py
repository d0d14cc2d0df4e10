"""Lowering IR to Spark: scalar expressions (plain and checked), types, orderings."""

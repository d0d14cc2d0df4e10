"""Arrangements: spines of update batches, batches on Spark and in Arrow, reads by key."""

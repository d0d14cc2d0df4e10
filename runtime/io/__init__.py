"""Reads out of the runtime (peeks) and writes into it (batches, checks, transactions)."""

"""matview's data model: types, scalar expressions, relational IR, its text form and the
reference interpreter. Pure Python: imports neither sqlglot nor Spark."""

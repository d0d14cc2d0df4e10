"""Decorrelation: the transforms of ``pipeline.DECORRELATE``, which rewrite the subqueries
in expressions of a RAW plan (``scalar.Exists``, ``InSubquery``, ``ScalarSubquery`` and
their ``Outer`` references) into joins and reductions, so that no subquery remains (the
runtime cannot run them). ``domain`` holds the rewrite they share; ``lateral`` applies it to
``LATERAL (SELECT ...)`` in FROM, for the binder."""

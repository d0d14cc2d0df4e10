"""Decorrelation: the transforms of ``pipeline.DECORRELATE``, which rewrite the subqueries
in expressions of a RAW plan (``scalar.Exists``, ``InSubquery``, ``ScalarSubquery`` and
their ``Outer`` references) into joins and reductions, so that no subquery remains (the
runtime cannot run them). ``domain`` holds the rewrite they share, ``values`` the joins
that read a subquery's value from it; ``lateral`` applies it to ``LATERAL (SELECT ...)`` in
FROM, for the binder.

They live in the IR, not the planner, because the SQL binder (which imports no planner
module) runs the LATERAL rewrite while binding, so that the RAW plan already shows the join;
the planner's ``pipeline.DECORRELATE`` runs ``semi_joins`` and ``subquery_values``."""

"""Spark itself: the session, JVM helpers and their Java sources, slots and kept plans,
the one job."""

"""A checkpointed frame stays in the session of the frame it checkpoints.

Spark Connect's client binds what ``localCheckpoint`` returns to the client's active
session rather than the checkpointed frame's (``proto_to_remote_cached_dataframe``). matview
plans in a session of its own beside the user's (``spark.newSession()``), so a checkpointed
table joined with that session's frames failed with ``SESSION_NOT_SAME`` and, read alone,
found no such relation in the user's session (``python -m bench w1 --session connect``
failed creating its view). The suite runs one classic session, so the client's behaviour is
reproduced here by the frame it returns.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from matview.runtime.spark import jvm_plans


class _Frame:
    """What the Spark Connect client returns: a frame and its cached relation, both bound to
    a session (the client's active one when checkpointed)."""

    def __init__(self, session: object, checkpoint_session: object) -> None:
        self._session = session
        self._plan = SimpleNamespace(_spark_session=session)
        self._checkpoint_session = checkpoint_session

    @property
    def sparkSession(self) -> object:  # noqa: N802 (PySpark's name)
        return self._session

    def localCheckpoint(self, eager: bool) -> _Frame:  # noqa: N802 (PySpark's name)
        assert eager
        return _Frame(self._checkpoint_session, self._checkpoint_session)


def test_a_connect_checkpoint_is_bound_to_the_checkpointed_frames_session(
        monkeypatch: pytest.MonkeyPatch) -> None:
    own, users = object(), object()
    monkeypatch.setattr(jvm_plans, "is_remote", lambda: True)
    leaf = jvm_plans.checkpointed(_Frame(own, checkpoint_session=users))  # type: ignore[arg-type]
    assert leaf.sparkSession is own
    assert leaf._plan._spark_session is own  # released (and resolved) in the session holding it


def test_a_checkpoint_already_in_the_right_session_is_kept_as_it_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    own = object()
    monkeypatch.setattr(jvm_plans, "is_remote", lambda: True)
    frame = _Frame(own, checkpoint_session=own)
    leaf = jvm_plans.checkpointed(frame)  # type: ignore[arg-type]
    assert leaf is not frame and leaf.sparkSession is own and leaf._plan._spark_session is own


def test_a_classic_checkpoint_is_computed_in_its_session(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.range(5)
    leaf = jvm_plans.checkpointed(df)
    assert leaf.sparkSession is spark
    assert sorted(r.id for r in leaf.collect()) == [0, 1, 2, 3, 4]

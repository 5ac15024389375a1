"""An analysis pass in a child process with hard limits (compaction/child.py), the cap on the
passes of a session whose worker died under it, and the slot kept free for other projects
(compaction/fair.py).

The child tests run the pass as the worker does, outside any transaction (the child cannot
share one), on the real database: the worker's own process forks a real child and the kernel
enforces its limits. What exceeds them stands in for a hostile session: an engine that sleeps
for ever, or allocates past the limit, whatever the machine's speed.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import Any

import pytest
from celery import Celery
from django.db import OperationalError, connection
from django.test import override_settings
from django.utils import timezone

from compaction import fair, pipeline, recovery
from compaction.engine import analysis
from compaction.models import AnalysisStatus, SessionAnalysis
from tests.compaction.test_worker_integration import (  # noqa: F401 (fixtures)
    Worker,
    broker,
    send,
    wait_for,
)
from tests.factories import make_project, make_session, make_sweeps_steady


def _small() -> list[dict[str, Any]]:
    return [
        {"seq": 0, "role": "user", "content": "Fix the login bug in auth.py"},
        {"seq": 1, "role": "assistant", "content": "Reading auth.py"},
        {"seq": 2, "role": "user", "content": "thanks"},
    ]


def _sleeps(*args: Any, **kwargs: Any) -> Any:
    time.sleep(3600)


def _hoards(*args: Any, **kwargs: Any) -> Any:
    hoard = [bytearray(16 * 1024 * 1024) for _ in range(64)]  # 1 GiB, 16 MiB at a time
    return hoard


@pytest.mark.django_db(transaction=True)
def test_a_pass_runs_whole_in_a_child_and_the_workers_connection_still_works() -> None:
    session = make_session(make_project(), messages=_small())
    parent = os.getpid()
    row = pipeline.analysis_next()
    assert row is not None
    assert row.session_id == session.pk
    assert row.status == AnalysisStatus.DONE
    assert row.message_count == 3
    assert row.attempts == 0  # the pass ended with its worker alive
    assert os.getpid() == parent
    with connection.cursor() as cursor:  # closed before the fork, opened again here
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


@pytest.mark.django_db(transaction=True)
def test_a_pass_past_its_time_budget_is_killed_marked_and_not_retried(monkeypatch) -> None:
    monkeypatch.setattr(analysis, "analyse", _sleeps)
    session = make_session(make_project(), messages=_small())
    started = time.monotonic()
    with override_settings(ANALYSIS_BUDGET_SECONDS=0.5, ANALYSIS_BUDGET_SECONDS_PER_MB=0.0):
        assert pipeline.analysis_next() is None
    assert time.monotonic() - started < 60  # not the engine's hour
    row = SessionAnalysis.objects.get(session=session)
    assert row.status == AnalysisStatus.FAILED
    assert row.error.startswith("analysis stopped: killed at its time budget of 0.5 s for ")
    assert "ANALYSIS_BUDGET_SECONDS" in row.error
    assert row.queued_at is None
    assert row.attempts == 0
    # the slot is free: the next turn runs another project's session whole
    monkeypatch.undo()
    other = make_session(make_project(name="other"), messages=_small())
    done = pipeline.analysis_next()
    assert done is not None
    assert done.session_id == other.pk


@pytest.mark.django_db(transaction=True)
def test_a_pass_over_its_memory_limit_is_marked_with_the_limit(monkeypatch) -> None:
    monkeypatch.setattr(analysis, "analyse", _hoards)
    session = make_session(make_project(), messages=_small())
    with override_settings(ANALYSIS_MEMORY_LIMIT_MB=200, ANALYSIS_MEMORY_LIMIT_MB_PER_MB=0):
        assert pipeline.analysis_next() is None
    row = SessionAnalysis.objects.get(session=session)
    assert row.status == AnalysisStatus.FAILED
    assert row.error.startswith("analysis stopped: over its memory limit of 200 MB for ")
    assert "ANALYSIS_MEMORY_LIMIT_MB" in row.error
    assert row.queued_at is None


def test_the_memory_limit_grows_with_the_session() -> None:
    from compaction import child

    with override_settings(ANALYSIS_MEMORY_LIMIT_MB=4096, ANALYSIS_MEMORY_LIMIT_MB_PER_MB=256):
        assert child.memory_limit_mb(0) == 4096
        assert child.memory_limit_mb(10 * 1024 * 1024) == 6656
    with override_settings(ANALYSIS_MEMORY_LIMIT_MB=0):
        assert child.memory_limit_mb(10 * 1024 * 1024) == 0  # no limit


@pytest.mark.django_db(transaction=True)
def test_a_database_moment_in_the_child_is_raised_in_the_worker_and_the_row_waits(
    monkeypatch,
) -> None:
    def moment(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(analysis, "analyse", moment)
    session = make_session(make_project(), messages=_small())
    with pytest.raises(OperationalError, match="in the analysis process"):
        pipeline.analysis_next()
    row = SessionAnalysis.objects.get(session=session)
    assert row.status == AnalysisStatus.PENDING  # the task's retry takes it up again
    assert row.queued_at is not None


@pytest.mark.django_db
def test_a_pass_inside_a_transaction_runs_in_the_process() -> None:
    from compaction import child

    assert connection.in_atomic_block
    assert not child.wanted()
    with override_settings(ANALYSIS_IN_CHILD=False):
        assert not child.wanted()


# The cap on passes whose worker died under them.


@pytest.mark.django_db
def test_a_session_whose_worker_dies_under_it_is_failed_after_the_attempts_not_requeued(
    settings,
) -> None:
    settings.WORKER_DEAD_SECONDS = 10
    settings.ANALYSIS_MAX_ATTEMPTS = 3
    make_sweeps_steady()
    session = make_session(make_project(), messages=_small())
    for attempt in range(1, 4):
        row = fair.analysis_claim_next()  # a worker takes it up ...
        assert row is not None
        assert row.session_id == session.pk
        assert row.attempts == attempt
        # ... and is killed under it (Celery's time limit, the OOM killer): it stops beating
        SessionAnalysis.objects.filter(pk=row.pk).update(
            heartbeat_at=timezone.now() - timedelta(seconds=11)
        )
        requeued = recovery.abandoned_work_requeue()
        assert requeued == (1 if attempt < 3 else 0)
    row = SessionAnalysis.objects.get(session=session)
    assert row.status == AnalysisStatus.FAILED
    assert row.queued_at is None
    assert row.error.startswith("analysis stopped: its worker died under it 3 times in a row")
    assert "ANALYSIS_MAX_ATTEMPTS (3)" in row.error
    assert fair.analysis_claim_next() is None  # nothing waits: not queued again
    # a new batch is one more try, and a pass that ends resets the count
    more = [{"seq": 3, "role": "assistant", "content": "Fixed auth.py"}]
    make_session(session.project, external_id=session.external_id, messages=more)
    assert pipeline.analysis_next() is not None
    row.refresh_from_db()
    assert row.status == AnalysisStatus.DONE
    assert row.attempts == 0


@pytest.mark.django_db
def test_a_pass_that_ends_in_a_live_worker_does_not_count() -> None:
    session = make_session(make_project(), messages=_small())
    assert pipeline.session_analyse(session_id=session.pk) is not None
    assert SessionAnalysis.objects.get(session=session).attempts == 0


# One slot always free for other projects.


@pytest.mark.django_db
@pytest.mark.parametrize(("slots", "first_project_runs"), [(2, 1), (3, 2), (4, 3)])
def test_one_project_runs_at_most_all_the_slots_but_one(
    settings, slots: int, first_project_runs: int
) -> None:
    settings.ANALYSIS_SLOTS = slots
    busy = make_project(name="busy")
    for _ in range(slots + 2):
        make_session(busy, messages=_small())
    taken = []
    while (row := fair.analysis_claim_next()) is not None:
        taken.append(row)
    assert len(taken) == first_project_runs  # the rest wait, though slots are free
    assert fair.analysis_capped_waiting(taken[0].pk)
    # another project's session finds the free slot at once
    other = make_session(make_project(name="other"), messages=_small())
    row = fair.analysis_claim_next()
    assert row is not None
    assert row.session_id == other.pk
    # one of the first project's passes ends: its slot is the project's again
    SessionAnalysis.objects.filter(pk=taken[0].pk).update(status=AnalysisStatus.DONE)
    row = fair.analysis_claim_next()
    assert row is not None
    assert row.session.project_id == busy.pk


@pytest.mark.django_db
def test_with_one_slot_there_is_no_cap(settings) -> None:
    settings.ANALYSIS_SLOTS = 1
    busy = make_project(name="busy")
    make_session(busy, messages=_small())
    assert fair.analysis_project_cap() is None
    assert fair.analysis_claim_next() is not None
    assert not fair.analysis_capped_waiting(SessionAnalysis.objects.get().pk)


@pytest.mark.django_db
def test_a_capped_projects_pass_sends_a_turn_when_it_ends(
    settings, django_capture_on_commit_callbacks
) -> None:
    settings.ANALYSIS_SLOTS = 2
    busy = make_project(name="busy")
    first, second = (make_session(busy, messages=_small()) for _ in range(2))
    with django_capture_on_commit_callbacks() as sent:
        row = pipeline.analysis_next()
    assert row is not None
    assert row.session_id == first.pk
    assert len(sent) == 1  # the turn the second session's spent turn no longer gives
    assert SessionAnalysis.objects.get(session=second).queued_at is not None


# Through a real prefork worker.


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_kills_a_pass_at_its_budget_and_goes_on(
    broker: tuple[Celery, str],  # noqa: F811
    tmp_path,
) -> None:
    _, queue = broker
    worker = Worker(queue, tmp_path / "worker.log", concurrency=2)
    # A budget no pass can meet (the child is forked, connects, reads, computes): killed.
    worker.env.update(ANALYSIS_BUDGET_SECONDS="0.001", ANALYSIS_BUDGET_SECONDS_PER_MB="1e-9")
    worker.start()
    try:
        sessions = [make_session(make_project(name=f"p{i}"), messages=_small()) for i in range(3)]
        for session in sessions:
            send(broker, "session_analyse", session.pk)

        def stopped() -> bool:
            rows = SessionAnalysis.objects.filter(session__in=sessions)
            return rows.filter(status=AnalysisStatus.FAILED).count() == 3

        wait_for(stopped, timeout=90, what="the three passes stopped", log=worker.log)
        for row in SessionAnalysis.objects.filter(session__in=sessions):
            assert row.error.startswith(
                "analysis stopped: killed at its time budget of 0.001 s for "
            ), row.error
            assert row.queued_at is None
            assert row.attempts == 0
    finally:
        worker.stop()


@pytest.mark.django_db(transaction=True)
def test_a_pass_off_the_main_thread_runs_in_the_process() -> None:
    import threading

    from compaction import child

    seen: list[bool] = []
    thread = threading.Thread(target=lambda: seen.append(child.wanted()))
    thread.start()
    thread.join()
    assert seen == [False]  # a thread pool's: no fork beside other threads
    assert child.wanted()  # the main thread, outside a transaction

"""Liveness and the sweep for abandoned work: the analyses and replays of a dead worker are
queued again within seconds, a live worker keeps its work however long it runs."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from unittest import mock

import psycopg
import pytest
from django.db import connection
from django.db.models.functions import Now
from django.utils import timezone

from compaction import liveness, pipeline, recovery, services, tasks
from compaction.models import (
    AnalysisStatus,
    ReplayRun,
    ReplayStatus,
    SessionAnalysis,
    SweepMark,
)
from tests.factories import coding_session_messages, make_session, make_sweeps_steady

pytestmark = pytest.mark.django_db

SMALL_POLICY = {"soft_limit": 6000, "hard_limit": 9000, "keep_last": 2}


@pytest.fixture(autouse=True)
def _liveness(settings):
    settings.WORKER_HEARTBEAT_SECONDS = 2
    settings.WORKER_DEAD_SECONDS = 10
    settings.ANALYSIS_STALE_SECONDS = 60
    settings.ABANDONED_WORK_REQUEUE_EVERY_SECONDS = 2
    make_sweeps_steady()  # the normal case; the tests of an outage say otherwise


def _ago(seconds: float) -> datetime:
    return timezone.now() - timedelta(seconds=seconds)


def _running_analysis(*, beaten: datetime | None, started: datetime) -> SessionAnalysis:
    session = make_session(messages=4)
    SessionAnalysis.objects.filter(session=session).update(
        status=AnalysisStatus.RUNNING, started_at=started, heartbeat_at=beaten
    )
    return SessionAnalysis.objects.get(session=session)


def _running_replay(*, beaten: datetime) -> ReplayRun:
    session = make_session(messages=coding_session_messages(turns=6, tool_chars=4000))
    run = services.replay_run_start(session=session, policy=SMALL_POLICY)
    ReplayRun.objects.filter(pk=run.pk).update(
        status=ReplayStatus.RUNNING, attempts=1, started_at=_ago(3600), heartbeat_at=beaten
    )
    return ReplayRun.objects.get(pk=run.pk)


def test_an_analysis_its_worker_beats_for_is_never_requeued_however_long_it_runs():
    row = _running_analysis(beaten=_ago(1), started=_ago(7200))
    assert recovery.abandoned_work_requeue() == 0
    assert recovery.analyses_requeue_stuck() == 0
    row.refresh_from_db()
    assert row.status == AnalysisStatus.RUNNING


def test_an_analysis_whose_worker_stopped_beating_is_queued_again_once_and_completes(
    django_capture_on_commit_callbacks,
):
    row = _running_analysis(beaten=_ago(11), started=_ago(12))
    with (
        mock.patch.object(tasks.session_analyse, "delay") as sent,
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert recovery.abandoned_work_requeue() == 1
        assert recovery.abandoned_work_requeue() == 0
    sent.assert_called_once_with(row.session_id)
    row.refresh_from_db()
    assert row.status == AnalysisStatus.PENDING
    pipeline.session_analyse(session_id=row.session_id)
    row.refresh_from_db()
    assert row.status == AnalysisStatus.DONE
    assert row.is_current


def test_an_analysis_silent_for_less_than_the_dead_time_is_left_alone():
    _running_analysis(beaten=_ago(9), started=_ago(600))
    assert recovery.abandoned_work_requeue() == 0


def test_starting_an_analysis_counts_as_its_first_beat():
    row = _running_analysis(beaten=_ago(3600), started=_ago(3600))
    SessionAnalysis.objects.filter(pk=row.pk).update(requested_generation=5)
    with mock.patch.object(pipeline, "_session_analyse_running") as run:
        pipeline.session_analyse(session_id=row.session_id)
        run.assert_called_once()
    assert recovery.abandoned_work_requeue() == 0


def test_a_replay_whose_worker_stopped_beating_is_queued_again_once_and_completes(
    django_capture_on_commit_callbacks,
):
    run = _running_replay(beaten=_ago(11))
    with (
        mock.patch.object(tasks.replay_run_execute, "delay") as sent,
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert recovery.abandoned_work_requeue() == 1
        assert recovery.abandoned_work_requeue() == 0
    sent.assert_called_once_with(run.pk)
    pipeline.replay_run_execute(run_id=run.pk)
    pipeline.replay_run_execute(run_id=run.pk)  # the duplicate does nothing
    run.refresh_from_db()
    assert (run.status, run.attempts) == (ReplayStatus.DONE, 2)


def test_a_replay_its_worker_beats_for_is_neither_requeued_nor_taken_over():
    # Running for an hour, no progress reported for a while (a slow model call): its worker's
    # heartbeat says it is alive.
    run = _running_replay(beaten=_ago(1))
    assert recovery.abandoned_work_requeue() == 0
    pipeline.replay_run_execute(run_id=run.pk)  # a redelivered task
    run.refresh_from_db()
    assert (run.status, run.attempts) == (ReplayStatus.RUNNING, 1)


def test_a_redelivered_replay_takes_over_a_run_whose_worker_stopped_beating():
    run = _running_replay(beaten=_ago(11))
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert (run.status, run.attempts) == (ReplayStatus.DONE, 2)


def test_a_replay_finished_by_a_worker_presumed_dead_does_not_overwrite_the_new_attempt():
    run = _running_replay(beaten=_ago(11))
    assert recovery.abandoned_work_requeue() == 1
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert (run.status, run.attempts) == (ReplayStatus.DONE, 2)
    # The first worker was only paused: its rows (attempt 1) match nothing any more, so
    # neither its last beat nor its result lands.
    first = ReplayRun.objects.filter(pk=run.pk, status=ReplayStatus.RUNNING, attempts=1)
    assert first.update(status=ReplayStatus.FAILED) == 0


def test_the_sweep_with_nothing_to_do_is_two_queries(django_assert_num_queries):
    _running_analysis(beaten=_ago(1), started=_ago(7200))
    _running_replay(beaten=_ago(1))
    with django_assert_num_queries(3):  # the sweep's own run, running replays, running analyses
        assert recovery.abandoned_work_requeue() == 0


def test_the_sweep_reads_running_rows_through_an_index():
    if connection.vendor != "postgresql":
        pytest.skip("reads PostgreSQL's plan; run with DATABASE_URL pointing at PostgreSQL")
    queries = {
        "analysis_running": SessionAnalysis.objects.filter(
            recovery.analysis_abandoned(timezone.now())
        ),
        "replay_stuck": ReplayRun.objects.filter(recovery.replay_abandoned()),
    }
    with connection.cursor() as cursor:
        # Tables this small are read whole; without that choice the plan shows which index
        # the query can use, as it will on a table of millions of finished rows.
        cursor.execute("SET LOCAL enable_seqscan = off")
        for index, queryset in queries.items():
            sql, params = queryset.values("pk").query.sql_with_params()
            cursor.execute(f"EXPLAIN {sql}", params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert index in plan, plan


@pytest.mark.django_db(transaction=True)  # the heartbeat thread has its own connection
def test_a_worker_beats_for_its_rows_while_the_block_runs_and_not_after(settings, monkeypatch):
    settings.WORKER_HEARTBEAT_SECONDS = 0.05
    monkeypatch.setattr(liveness, "_enabled", True)
    row = _running_analysis(beaten=_ago(3600), started=_ago(3600))
    rows = SessionAnalysis.objects.filter(pk=row.pk, status=AnalysisStatus.RUNNING)

    def beaten_within(seconds: float) -> bool:
        return rows.filter(heartbeat_at__gte=_ago(seconds)).exists()

    with liveness.heartbeat(rows):
        deadline = time.monotonic() + 10
        while not beaten_within(1) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert beaten_within(1)
        assert recovery.abandoned_work_requeue() == 0
    rows.update(heartbeat_at=_ago(3600))
    time.sleep(0.3)  # several beat periods: none may touch the row now
    assert not beaten_within(1)
    assert recovery.abandoned_work_requeue() == 1


@pytest.mark.django_db(transaction=True)  # the lock is held by another connection
def test_the_sweep_skips_a_row_locked_by_its_worker_storing_results_instead_of_waiting():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL; run with DATABASE_URL pointing at PostgreSQL")
    row = _running_analysis(beaten=_ago(11), started=_ago(12))
    db = connection.settings_dict
    url = f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    with psycopg.connect(url) as storing:  # what _analysis_store holds while it writes
        storing.execute(
            "SELECT id FROM compaction_sessionanalysis WHERE id = %s FOR UPDATE", [row.pk]
        )
        started = time.monotonic()
        assert recovery.abandoned_work_requeue() == 0
        assert time.monotonic() - started < 2
        storing.rollback()  # the store failed: the row is abandoned after all
    assert recovery.abandoned_work_requeue() == 1


def _sweeps_last_ran(*, seconds_ago: float, gap_ended: float = 3600) -> None:
    """The last run of the sweep recorded, and when it last found a gap before that."""
    SweepMark.objects.filter(pk=liveness.SWEEP_MARK).update(
        swept_at=_ago(seconds_ago), reachable_since=_ago(gap_ended)
    )


def test_after_a_database_outage_live_work_is_kept_and_dead_work_waits_the_dead_time_again():
    # PostgreSQL was down for a minute: no sweep ran and no worker could beat.
    _sweeps_last_ran(seconds_ago=60)
    live = _running_analysis(beaten=_ago(62), started=_ago(600))
    dead = _running_analysis(beaten=_ago(62), started=_ago(600))
    live_replay = _running_replay(beaten=_ago(62))
    # Back up: every row has been silent for a minute, and none is judged by that.
    assert recovery.abandoned_work_requeue() == 0
    assert SweepMark.objects.get().reachable_since > _ago(5)
    # Live workers beat again within a heartbeat or two; the dead one never does.
    SessionAnalysis.objects.filter(pk=live.pk).update(heartbeat_at=Now())
    ReplayRun.objects.filter(pk=live_replay.pk).update(heartbeat_at=Now())
    pipeline.replay_run_execute(run_id=live_replay.pk)  # a redelivered task takes nothing
    # Sweeps every two seconds since: 9 s after the outage the dead one still waits, at 11 s
    # it has been silent for WORKER_DEAD_SECONDS with the database up, and is queued again.
    _sweeps_last_ran(seconds_ago=2, gap_ended=9)
    assert recovery.abandoned_work_requeue() == 0
    _sweeps_last_ran(seconds_ago=2, gap_ended=11)
    assert recovery.abandoned_work_requeue() == 1
    statuses = dict(
        SessionAnalysis.objects.filter(pk__in=[live.pk, dead.pk]).values_list("pk", "status")
    )
    assert statuses == {live.pk: AnalysisStatus.RUNNING, dead.pk: AnalysisStatus.PENDING}
    live_replay.refresh_from_db()
    assert (live_replay.status, live_replay.attempts) == (ReplayStatus.RUNNING, 1)


@pytest.mark.parametrize(("last_run", "requeued"), [(3, 1), (5, 0)])
def test_a_gap_is_a_pause_between_sweeps_longer_than_twice_their_period(last_run, requeued):
    _sweeps_last_ran(seconds_ago=last_run)
    _running_analysis(beaten=_ago(11), started=_ago(12))
    assert recovery.abandoned_work_requeue() == requeued


def test_the_first_sweep_ever_counts_as_the_end_of_a_gap():
    SweepMark.objects.all().delete()
    _running_analysis(beaten=_ago(11), started=_ago(12))
    assert recovery.abandoned_work_requeue() == 0
    assert SweepMark.objects.get().reachable_since > _ago(5)


@pytest.mark.django_db(transaction=True)  # the connection is dropped, as a restart would
def test_an_analysis_computed_through_a_database_restart_stores_its_result_at_once(monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("ends a PostgreSQL backend; run with DATABASE_URL pointing at PostgreSQL")
    session = make_session(messages=8)
    db = connection.settings_dict
    url = f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    compute = services.analysis.analyse

    def analyse_while_the_server_restarts(*args, **kwargs):  # type: ignore[no-untyped-def]
        pid = connection.connection.info.backend_pid
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        return compute(*args, **kwargs)

    monkeypatch.setattr(services.analysis, "analyse", analyse_while_the_server_restarts)
    pipeline.session_analyse(session_id=session.pk)  # no OperationalError for Celery to retry
    row = SessionAnalysis.objects.get(session=session)
    assert (row.status, row.is_current, row.message_count) == (AnalysisStatus.DONE, True, 8)

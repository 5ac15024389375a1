"""No lost work: the outbox, the sweeps, and a retryable 503 while the database is down."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.db import DataError, OperationalError
from django.test import Client
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerDown

from compaction import outbox, pipeline, recovery, services, tasks
from compaction.models import (
    AnalysisStatus,
    OutboxTask,
    ReplayRun,
    ReplayStatus,
    SessionAnalysis,
)
from sessions import services as session_services
from tests.factories import conversation, make_key, make_project, make_session, make_user

pytestmark = pytest.mark.django_db

DOWN = BrokerDown("[Errno 111] Connection refused")


@pytest.fixture
def project():
    return make_project(name="acme")


@pytest.fixture
def auth(project) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_key(project)}"}


def _upload(client: Client, auth: dict[str, str], external_id: str = "run-1", *, start: int = 0):
    return client.post(
        f"/api/v1/sessions/{external_id}/events",
        data={"messages": conversation(4, start=start)},
        content_type="application/json",
        headers=auth,
    )


def test_an_upload_with_the_broker_down_answers_202_and_keeps_the_analysis_in_the_outbox(
    client: Client, auth, django_capture_on_commit_callbacks
):
    with (
        mock.patch.object(tasks.session_analyse, "delay", side_effect=DOWN) as down,
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = _upload(client, auth)
    assert response.status_code == 202, response.content
    assert response.json() == {"received": 4, "duplicates": 0}
    down.assert_called_once()
    [row] = OutboxTask.objects.all()
    assert (row.kind, row.sent_at, row.attempts) == ("session_analyse", None, 1)
    assert row.last_error == "OperationalError: [Errno 111] Connection refused"

    with mock.patch.object(tasks.session_analyse, "delay") as up:
        assert outbox.outbox_drain() == 1
        assert outbox.outbox_drain() == 0
    session_id = SessionAnalysis.objects.get().session_id
    up.assert_called_once_with(session_id)
    row.refresh_from_db()
    assert row.sent_at is not None


def test_a_replay_asked_for_with_the_broker_down_is_sent_once_it_is_back(
    client: Client, project, auth, django_capture_on_commit_callbacks
):
    make_session(project, external_id="run-1", messages=6)
    with (
        mock.patch.object(tasks.replay_run_execute, "delay", side_effect=DOWN),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(
            "/api/v1/sessions/run-1/replays",
            data={},
            content_type="application/json",
            headers=auth,
        )
    assert response.status_code == 202
    run = ReplayRun.objects.get()
    assert run.status == ReplayStatus.QUEUED
    with mock.patch.object(tasks.replay_run_execute, "delay") as up:
        tasks.outbox_drain()
    up.assert_called_once_with(run.pk)


def test_an_experiment_is_one_outbox_row_sending_every_run(
    client: Client, project, auth, django_capture_on_commit_callbacks
):
    for n in range(2):
        make_session(project, external_id=f"run-{n}", messages=6)
    with (
        mock.patch.object(outbox, "experiment_fan_out", side_effect=DOWN),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(
            "/api/v1/experiments",
            data={"name": "grid", "policies": [{"keep_last": 2}, {"keep_last": 4}]},
            content_type="application/json",
            headers=auth,
        )
    assert response.status_code == 202
    row = OutboxTask.objects.get(kind="replay_runs_execute")
    assert sorted(row.args) == sorted(ReplayRun.objects.values_list("pk", flat=True))
    with mock.patch.object(outbox, "experiment_fan_out") as up:
        outbox.outbox_drain()
    up.assert_called_once_with(row.args)


def test_the_drain_stops_at_the_first_failure_and_keeps_the_order(
    django_capture_on_commit_callbacks,
):
    project = make_project()
    with mock.patch.object(tasks.session_analyse, "delay", side_effect=DOWN):
        with django_capture_on_commit_callbacks(execute=True):
            first = make_session(project, messages=2)
        with django_capture_on_commit_callbacks(execute=True):
            second = make_session(project, messages=2)
        assert outbox.outbox_drain() == 0
    assert outbox.outbox_pending_count() == 2
    with mock.patch.object(tasks.session_analyse, "delay") as up:
        assert outbox.outbox_drain() == 2
    assert [c.args for c in up.call_args_list] == [(first.pk,), (second.pk,)]


def test_rows_sent_more_than_a_day_ago_are_cleaned_up():
    OutboxTask.objects.create(kind="session_analyse", args=[1], sent_at=timezone.now())
    old = OutboxTask.objects.create(
        kind="session_analyse", args=[2], sent_at=timezone.now() - timedelta(days=2)
    )
    outbox.outbox_drain()
    assert not OutboxTask.objects.filter(pk=old.pk).exists()
    assert OutboxTask.objects.count() == 1


def test_an_analysis_left_running_without_heartbeats_is_queued_again_after_its_stale_time(
    django_capture_on_commit_callbacks, settings
):
    settings.ANALYSIS_STALE_SECONDS = 60
    session = make_session(messages=4)
    SessionAnalysis.objects.filter(session=session).update(
        status=AnalysisStatus.RUNNING, started_at=timezone.now()
    )
    assert recovery.abandoned_work_requeue() == 0  # still within its time
    with time_machine.travel(timezone.now() + timedelta(seconds=61), tick=False):
        with (
            mock.patch.object(tasks.session_analyse, "delay") as sent,
            django_capture_on_commit_callbacks(execute=True),
        ):
            assert recovery.abandoned_work_requeue() == 1
        sent.assert_called_once_with(session.pk)
        assert recovery.abandoned_work_requeue() == 0  # not twice
        assert recovery.analyses_requeue_stuck() == 0  # nor by the sweep for lost tasks
    pipeline.session_analyse(session_id=session.pk)
    analysis = SessionAnalysis.objects.get(session=session)
    assert analysis.status == AnalysisStatus.DONE
    assert analysis.is_current


def test_an_analysis_asked_for_but_never_started_is_queued_again(settings):
    settings.ANALYSIS_STALE_SECONDS = 60
    session = make_session(messages=4)  # its task: lost (never sent in this test)
    done = make_session(messages=4)
    pipeline.session_analyse(session_id=done.pk)
    with time_machine.travel(timezone.now() + timedelta(seconds=61), tick=False):
        assert recovery.analyses_requeue_stuck() == 1
    assert OutboxTask.objects.filter(args=[session.pk]).count() == 2  # ingest's, the sweep's


def test_a_queued_replay_whose_task_was_lost_is_sent_again_once_per_period(
    django_capture_on_commit_callbacks, settings
):
    settings.REPLAY_RESEND_QUEUED_SECONDS = 600
    session = make_session(messages=6)
    run = services.replay_run_start(session=session, policy={})
    assert recovery.replay_runs_requeue_stuck() == 0
    later = timezone.now() + timedelta(seconds=601)
    with time_machine.travel(later, tick=False):
        with (
            mock.patch.object(tasks.replay_run_execute, "delay") as sent,
            django_capture_on_commit_callbacks(execute=True),
        ):
            assert recovery.replay_runs_requeue_stuck() == 1
            assert recovery.replay_runs_requeue_stuck() == 0
        sent.assert_called_once_with(run.pk)
    pipeline.replay_run_execute(run_id=run.pk)
    pipeline.replay_run_execute(run_id=run.pk)  # the duplicate does nothing
    run.refresh_from_db()
    assert (run.status, run.attempts) == (ReplayStatus.DONE, 1)


def _database_down():
    return mock.patch.object(
        session_services,
        "api_key_authenticate",
        side_effect=OperationalError("connection to server at 127.0.0.1 failed"),
    )


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("post", "/api/v1/sessions/run-1/events"),
        ("get", "/api/v1/sessions"),
        ("post", "/api/v1/imports/claude-code"),
        ("post", "/api/v1/imports"),
        ("post", "/v1/traces"),
    ],
)
def test_every_api_door_answers_503_json_with_retry_after_while_the_database_is_down(
    client: Client, auth, method, url, settings
):
    settings.DATABASE_RETRY_AFTER_SECONDS = 7
    with _database_down():
        response = getattr(client, method)(
            url, data={"messages": []}, content_type="application/json", headers=auth
        )
    assert response.status_code == 503
    assert response.json() == {"error": "database: unavailable, retry later"}
    assert response["Retry-After"] == "7"


def test_a_page_answers_503_too(client: Client, project):
    client.force_login(make_user(project=project))
    with mock.patch(
        "sessions.views.selectors.session_search",
        side_effect=OperationalError("server closed the connection unexpectedly"),
    ):
        response = client.get("/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"


def test_results_the_database_refuses_fail_the_analysis_instead_of_leaving_it_running():
    session = make_session(messages=4)
    with mock.patch.object(
        services.CompactionSpan.objects,
        "bulk_create",
        side_effect=DataError("value too long for type character varying(30)"),
    ):
        assert pipeline.session_analyse(session_id=session.pk) is None
    analysis = SessionAnalysis.objects.get(session=session)
    assert analysis.status == AnalysisStatus.FAILED
    assert analysis.error == "DataError: the results could not be stored"


def test_the_drain_leaves_a_fresh_untried_row_to_its_request_but_not_forever():
    session = make_session(messages=2)  # no on-commit here: its row is never tried
    [row] = OutboxTask.objects.filter(args=[session.pk])
    with mock.patch.object(tasks.session_analyse, "delay") as sent:
        assert outbox.outbox_drain() == 0
        with time_machine.travel(timezone.now() + timedelta(seconds=11), tick=False):
            assert outbox.outbox_drain() == 1
    sent.assert_called_once_with(session.pk)
    row.refresh_from_db()
    assert row.sent_at is not None


def test_webhook_deliveries_go_through_the_outbox_too(django_capture_on_commit_callbacks):
    from alerts import tasks as alert_tasks
    from alerts import webhooks
    from alerts.models import Alert
    from tests.factories import make_webhook

    project = make_project()
    session = make_session(project, messages=2)
    make_webhook(project)
    alert = Alert.objects.create(
        project=project, session=session, rule="orphan_pairs", severity="warning", title="O"
    )
    with (
        mock.patch.object(alert_tasks.webhook_deliver, "delay", side_effect=DOWN),
        django_capture_on_commit_callbacks(execute=True),
    ):
        [delivery] = webhooks.alert_announce(alert=alert, event="opened")
    row = OutboxTask.objects.get(kind="webhook_deliver")
    assert (row.args, row.sent_at, row.attempts) == ([delivery.pk], None, 1)
    with mock.patch.object(alert_tasks.webhook_deliver, "delay") as up:
        outbox.outbox_drain()
    up.assert_called_once_with(delivery.pk)


def test_batches_for_a_waiting_session_share_its_one_turn_and_a_claim_opens_the_next(
    client, auth, project
):
    """A turn is sent when a session begins waiting, not per batch: the batches that land
    while it waits are read by that turn's pass. Once a worker takes it up (queued_at
    cleared), the next batch makes it wait again, and sends a turn."""
    assert _upload(client, auth).status_code == 202
    session = session_services.AgentSession.objects.get(project=project, external_id="run-1")
    for start in (4, 8, 12):  # three more batches while it waits
        reply = _upload(client, auth, start=start)
        assert reply.status_code == 202, reply.content
    turns = OutboxTask.objects.filter(kind=outbox.SESSION_ANALYSE, args=[session.pk])
    assert turns.count() == 1
    analysis = SessionAnalysis.objects.get(session=session)
    assert (analysis.requested_generation, analysis.queued_at is not None) == (4, True)
    waiting_since = analysis.queued_at

    SessionAnalysis.objects.filter(pk=analysis.pk).update(  # a worker takes it up
        status=AnalysisStatus.RUNNING, queued_at=None, serving_since=waiting_since
    )
    reply = _upload(client, auth, start=16)
    assert reply.status_code == 202, reply.content
    assert turns.count() == 2
    analysis.refresh_from_db()
    assert analysis.requested_generation == 5
    assert analysis.queued_at is not None
    assert analysis.queued_at > waiting_since

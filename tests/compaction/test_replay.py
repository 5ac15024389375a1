"""Replay runs and experiments through their services; queueing checked on commit."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.test import override_settings
from django.utils import timezone

from compaction import outbox, pipeline, recovery, services, tasks
from compaction.engine import session_replay
from compaction.models import CompactionSpan, Experiment, ReplayRun, ReplayStatus, SpanOrigin
from sessions.errors import BadRequest
from tests.factories import (
    coding_session_messages,
    make_project,
    make_session,
    make_sweeps_steady,
)

pytestmark = pytest.mark.django_db

SMALL_POLICY = {"soft_limit": 6000, "hard_limit": 9000, "keep_last": 2}


@pytest.fixture
def session():
    return make_session(
        messages=coding_session_messages(turns=10, tool_chars=8000),
        probes=[{"seq": 8, "text": "do not change the public API"}],
    )


def test_starting_a_replay_queues_it_on_commit(session, django_capture_on_commit_callbacks):
    with (
        mock.patch.object(tasks.replay_run_execute, "delay") as delay,
        django_capture_on_commit_callbacks(execute=True),
    ):
        run = services.replay_run_start(session=session, policy=SMALL_POLICY)
    delay.assert_called_once_with(run.pk)
    assert run.status == ReplayStatus.QUEUED
    assert run.policy["hard_limit"] == 9000
    assert run.policy["context_window"] == 200_000


@pytest.mark.parametrize(
    ("policy", "error"),
    [
        ({"soft_limit": 5, "hard_limit": 2}, "policy.soft_limit: must not exceed hard_limit"),
        ({"keep_last": 0}, "policy.keep_last: must keep at least 1 unit"),
        ({"bogus": 1}, "policy.bogus: unknown field"),
    ],
)
def test_a_bad_policy_is_refused_naming_the_field(session, policy, error):
    with pytest.raises(BadRequest) as excinfo:
        services.replay_run_start(session=session, policy=policy)
    assert excinfo.value.message == error
    assert not ReplayRun.objects.exists()


def test_external_summarizer_is_refused_unless_the_project_allows_it(session):
    with pytest.raises(BadRequest) as excinfo:
        services.replay_run_start(session=session, policy={"summarizer": "anthropic"})
    assert excinfo.value.message == (
        f"policy.summarizer: 'anthropic' sends trace content to an external model, "
        f"which project {session.project.name!r} does not allow"
    )


@override_settings(ANTHROPIC_API_KEY="")
def test_external_summarizer_needs_a_key_even_when_allowed():
    project = make_project(allow_external_models=True)
    session = make_session(project)
    with pytest.raises(BadRequest, match="needs ANTHROPIC_API_KEY, which is not set"):
        services.replay_run_start(session=session, policy={"summarizer": "anthropic"})


def test_executing_a_replay_stores_curve_spans_totals_and_evals(session):
    run = services.replay_run_start(session=session, policy=SMALL_POLICY)
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == ReplayStatus.DONE, run.error
    assert run.progress == 1.0
    assert run.calls_done == run.calls_total == 20
    assert len(run.curve) == 20
    assert run.totals["clears"] >= 1
    spans = CompactionSpan.objects.filter(replay=run, origin=SpanOrigin.REPLAYED)
    assert spans.count() == run.totals["compactions"] + run.totals["clears"]
    assert run.evals["difference"]["input_tokens"] < 0
    assert run.evals["observed"]["calls"] == 20
    assert max(p["context_tokens"] for p in run.curve) < 12_000


def test_a_replay_delivered_twice_runs_once(session):
    run = services.replay_run_start(session=session, policy=SMALL_POLICY)
    pipeline.replay_run_execute(run_id=run.pk)
    spans = CompactionSpan.objects.filter(replay=run).count()
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.attempts == 1
    assert CompactionSpan.objects.filter(replay=run).count() == spans


def test_a_running_replay_with_a_fresh_heartbeat_is_not_taken_over(session):
    run = services.replay_run_start(session=session, policy=SMALL_POLICY)
    ReplayRun.objects.filter(pk=run.pk).update(
        status=ReplayStatus.RUNNING, heartbeat_at=timezone.now(), attempts=1
    )
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == ReplayStatus.RUNNING
    assert run.attempts == 1


def test_a_stale_running_replay_is_requeued_and_completes_once(
    session, django_capture_on_commit_callbacks
):
    run = services.replay_run_start(session=session, policy=SMALL_POLICY)
    ReplayRun.objects.filter(pk=run.pk).update(
        status=ReplayStatus.RUNNING,
        heartbeat_at=timezone.now() - timedelta(minutes=10),
        attempts=1,
    )
    make_sweeps_steady()
    with (
        mock.patch.object(tasks.replay_run_execute, "delay") as delay,
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert recovery.abandoned_work_requeue() == 1
    delay.assert_called_once_with(run.pk)
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == ReplayStatus.DONE
    assert run.attempts == 2


def test_an_engine_error_fails_the_run_with_its_message(session):
    run = services.replay_run_start(session=session, policy=SMALL_POLICY)
    with mock.patch.object(
        session_replay.replay, "replay", side_effect=ValueError("boom at seq 7")
    ):
        pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == ReplayStatus.FAILED
    assert run.error == "ValueError: boom at seq 7"


def test_experiment_replays_each_policy_over_each_session_and_aggregates():
    project = make_project()
    sessions = [
        make_session(project, messages=coding_session_messages(turns=10, tool_chars=8000))
        for _ in range(2)
    ]
    with mock.patch.object(outbox, "experiment_fan_out") as fan_out:
        experiment = services.experiment_start(
            project=project,
            name="limits",
            policies=[
                {"soft_limit": 3000, "hard_limit": 5000, "keep_last": 1},
                {"soft_limit": 15_000, "hard_limit": 20_000, "keep_last": 1},
            ],
            sessions=sessions,
        )
    runs = list(experiment.runs.order_by("pk"))
    assert len(runs) == 4
    for run in runs:
        pipeline.replay_run_execute(run_id=run.pk)
    experiment.refresh_from_db()
    assert experiment.status == ReplayStatus.DONE
    rows = experiment.aggregate["policies"]
    assert [row["sessions"] for row in rows] == [2, 2]
    tight, loose = rows
    assert tight["compactions_per_session"] > loose["compactions_per_session"] == 0
    assert tight["input_tokens_saved"] > loose["input_tokens_saved"]
    assert tight["retention_score"] is not None
    fan_out.assert_not_called()  # queued only once the transaction commits


def test_experiment_needs_a_policy_and_a_session():
    project = make_project()
    with pytest.raises(BadRequest, match="policies: give at least one policy"):
        services.experiment_start(project=project, name="x", policies=[], sessions=[])
    with pytest.raises(BadRequest, match="sessions: no session matches"):
        services.experiment_start(project=project, name="x", policies=[{}], sessions=[])
    assert not Experiment.objects.exists()


def test_a_replay_that_never_compacts_reproduces_the_observed_curve(session):
    pipeline.session_analyse(session_id=session.pk)
    run = services.replay_run_start(
        session=session,
        policy={"soft_limit": 900_000, "hard_limit": 900_000, "context_window": 1_000_000},
    )
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    observed = [(p["seq"], p["context_tokens"]) for p in session.analysis.curve]
    assert [(p["seq"], p["context_tokens"]) for p in run.curve] == observed
    assert run.evals["difference"]["input_tokens"] == 0


def test_clearing_tool_results_is_not_judged_a_failed_splice(session):
    run = services.replay_run_start(session=session, policy=SMALL_POLICY)
    pipeline.replay_run_execute(run_id=run.pk)
    clears = CompactionSpan.objects.filter(replay=run, stage="clear_tool_results")
    assert clears.exists()
    assert not clears.filter(failed=True).exists()


def test_an_unknown_summarizer_is_refused_before_anything_is_queued(session):
    with pytest.raises(BadRequest) as excinfo:
        services.replay_run_start(session=session, policy={"summarizer": "gpt-9"})
    assert excinfo.value.message == "policy.summarizer: unknown summarizer 'gpt-9'"
    with pytest.raises(BadRequest, match=r"^policies\[0\]: policy.summarizer: unknown"):
        services.experiment_start(
            project=session.project,
            name="x",
            policies=[{"summarizer": "gpt-9"}],
            sessions=[session],
        )
    assert not ReplayRun.objects.exists()

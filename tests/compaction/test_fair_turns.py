"""Fair turns: a free worker takes up the waiting work of the project whose turn it is, so one
project's flood delays another's work by a turn, not by the flood (compaction/fair.py).

These check the order of the work, never its time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import OperationalError
from django.utils import timezone

from compaction import fair, pipeline, recovery, services
from compaction.models import (
    AnalysisStatus,
    ReplayRun,
    ReplayStatus,
    SessionAnalysis,
    WorkShare,
)
from sessions.models import AgentSession
from tests.factories import make_project, make_session

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_the_project_with_fewest_running_goes_first_then_the_one_served_longest_ago():
    waiting = {1: _at(0), 2: _at(5), 3: _at(9)}
    assert fair.turn_order(waiting, running={}, served_at={}) == [1, 2, 3]
    # 1 waits longest but runs two already
    assert fair.turn_order(waiting, running={1: 2, 2: 1}, served_at={}) == [3, 2, 1]
    # none running: never served first, then served longest ago
    served = {1: _at(30), 2: _at(20)}
    assert fair.turn_order(waiting, running={}, served_at=served) == [3, 2, 1]


def _analysed(session: AgentSession) -> bool:
    return SessionAnalysis.objects.get(session=session).is_current


def _turns_until(done, turn) -> int:
    """How many turns the workers take before ``done()`` holds."""
    for taken in range(1, 100):
        turn()
        if done():
            return taken
    raise AssertionError("never done")


def test_one_session_of_a_quiet_project_waits_one_turn_behind_another_projects_flood():
    flood, quiet = make_project(name="flood"), make_project(name="quiet")
    for n in range(20):
        make_session(flood, external_id=f"f-{n}", messages=4)
    late = make_session(quiet, external_id="q-1", messages=4)  # asked for after all 20
    # One turn goes to the flood (it waits longest), the next to the quiet project, whose
    # turn has come: not the 21st, as on one first-in first-out queue.
    assert _turns_until(lambda: _analysed(late), pipeline.analysis_next) == 2
    assert SessionAnalysis.objects.filter(session__project=flood, status="done").count() == 1


def test_turns_go_round_the_projects_with_waiting_work():
    projects = [make_project(name=name) for name in ("a", "b", "c")]
    for project in projects:
        for n in range(3):
            make_session(project, external_id=f"{project.name}-{n}", messages=4)
    served = []
    for _ in range(9):
        analysis = pipeline.analysis_next()
        assert analysis is not None
        served.append(analysis.session.project.name)
    assert served == ["a", "b", "c"] * 3
    assert pipeline.analysis_next() is None  # nothing waits: a spare turn does nothing


def test_a_project_running_work_already_waits_for_one_that_runs_none():
    busy, idle = make_project(name="busy"), make_project(name="idle")
    running = make_session(busy, external_id="running", messages=4)
    SessionAnalysis.objects.filter(session=running).update(status=AnalysisStatus.RUNNING)
    make_session(busy, external_id="next", messages=4)
    mine = make_session(idle, external_id="mine", messages=4)
    WorkShare.objects.create(project=idle, analysis_served_at=timezone.now())  # served last
    assert _turns_until(lambda: _analysed(mine), pipeline.analysis_next) == 1


def test_a_waiting_analysis_is_taken_up_once():
    session = make_session(messages=4)
    claimed = fair.analysis_claim_next()
    assert claimed is not None
    assert claimed.session_id == session.pk
    assert fair.analysis_claim_next() is None  # running: no second worker takes it


def test_a_batch_landing_while_its_session_is_analysed_gets_a_turn_of_its_own(monkeypatch):
    session = make_session(external_id="growing", messages=4)
    run = pipeline._session_analyse_running

    def with_a_batch_meanwhile(row, session_id, generation):
        make_session(session.project, external_id="growing", messages=8)  # 4 more
        return run(row, session_id, generation)

    monkeypatch.setattr(pipeline, "_session_analyse_running", with_a_batch_meanwhile)
    turns = []
    monkeypatch.setattr(
        services.outbox,
        "outbox_add",
        lambda *, kind, args: turns.append((kind, args)),
    )
    pipeline.analysis_next()
    analysis = SessionAnalysis.objects.get(session=session)
    assert not analysis.is_current
    assert analysis.queued_at is not None
    # the batch's own turn, and one more sent when the pass ended (the batch's may be spent)
    assert turns == [("session_analyse", [session.pk])] * 2
    monkeypatch.setattr(pipeline, "_session_analyse_running", run)
    pipeline.analysis_next()
    analysis.refresh_from_db()
    assert analysis.is_current
    assert analysis.message_count == 8
    assert analysis.queued_at is None


def test_an_analysis_analysed_directly_meanwhile_is_not_run_again_by_its_turn():
    session = make_session(messages=4)
    pipeline.session_analyse(session_id=session.pk)
    assert SessionAnalysis.objects.get(session=session).queued_at is None
    assert pipeline.analysis_next() is None


def _lost_memory(*args, **kwargs):
    raise OperationalError("cannot allocate memory for output buffer")


def test_results_too_big_for_the_database_fail_the_analysis_for_good(monkeypatch):
    session = make_session(messages=4)
    monkeypatch.setattr(pipeline, "_analysis_store", _lost_memory)
    assert pipeline.analysis_next() is None  # not raised: the task does not retry it
    analysis = SessionAnalysis.objects.get(session=session)
    assert analysis.status == AnalysisStatus.FAILED
    assert analysis.error == (
        "OperationalError: the results could not be stored "
        "(too big for the database; a retry would fail alike)"
    )
    assert analysis.queued_at is None  # and no turn takes it up again
    assert pipeline.analysis_next() is None


def test_a_lost_connection_is_retried_and_the_analysis_waits_for_the_retry(monkeypatch):
    session = make_session(messages=4)

    def restarted(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(pipeline, "_analysis_store", restarted)
    with pytest.raises(OperationalError):
        pipeline.analysis_next()  # the task retries
    analysis = SessionAnalysis.objects.get(session=session)
    assert analysis.status == AnalysisStatus.PENDING
    assert analysis.queued_at is not None
    monkeypatch.undo()
    assert pipeline.analysis_next() is not None
    assert _analysed(session)


@pytest.mark.parametrize(
    ("message", "lasting"),
    [
        ("out of memory\nDETAIL: Failed on request of size 1073741824.", True),
        ("cannot allocate memory for output buffer", True),
        ("server closed the connection unexpectedly", False),
        ("terminating connection due to administrator command", False),
    ],
)
def test_which_database_errors_a_retry_would_meet_again(message, lasting):
    assert pipeline.lasting(OperationalError(message)) is lasting


def _experiment(project, sessions: int) -> None:
    for n in range(sessions):
        session = make_session(project, external_id=f"{project.name}-{n}", messages=6)
        services.replay_run_start(session=session, policy={"keep_last": 2})


def test_one_replay_of_a_quiet_project_waits_one_turn_behind_another_projects_batch():
    grid, quiet = make_project(name="grid"), make_project(name="quiet")
    _experiment(grid, 8)
    mine = services.replay_run_start(
        session=make_session(quiet, external_id="q", messages=6), policy={}
    )

    def done() -> bool:
        return ReplayRun.objects.get(pk=mine.pk).status == ReplayStatus.DONE

    assert _turns_until(done, pipeline.replay_run_next) == 2
    assert ReplayRun.objects.filter(session__project=grid, status="done").count() == 1


def test_a_spare_replay_turn_does_nothing():
    assert pipeline.replay_run_next() is None
    assert not WorkShare.objects.exists()


def test_lost_analysis_turns_are_sent_again_only_when_no_analysis_has_started_lately(
    settings, monkeypatch
):
    settings.ANALYSIS_STALE_SECONDS = 60
    project = make_project()
    make_session(project, messages=4)  # its turn: lost (never sent in this test)
    later = timezone.now() + timedelta(seconds=61)
    with time_machine.travel(later, tick=False):
        # a worker took up another analysis within the period: the turns are busy, not lost
        WorkShare.objects.create(project=project, analysis_served_at=timezone.now())
        assert recovery.analyses_requeue_stuck() == 0
    with time_machine.travel(later + timedelta(seconds=61), tick=False):
        assert recovery.analyses_requeue_stuck() == 1
        assert recovery.analyses_requeue_stuck() == 0  # once per period


def test_lost_replay_turns_are_sent_again_after_a_minute_by_default(settings):
    assert settings.REPLAY_RESEND_QUEUED_SECONDS == settings.ANALYSIS_STALE_SECONDS == 60
    run = services.replay_run_start(session=make_session(messages=6), policy={})
    with time_machine.travel(timezone.now() + timedelta(seconds=61), tick=False):
        assert recovery.replay_runs_requeue_stuck() == 1
    ReplayRun.objects.filter(pk=run.pk).update(heartbeat_at=None)
    with time_machine.travel(timezone.now() + timedelta(seconds=61), tick=False):
        WorkShare.objects.create(project=run.session.project, replay_served_at=timezone.now())
        assert recovery.replay_runs_requeue_stuck() == 0  # replays keep starting

"""Re-analysis as an action: the API, the session page's button (engineers and admins), the
command with its progress, and a threshold change that re-judges the stored analyses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any
from unittest import mock

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.test import Client

from alerts import tasks as alert_tasks
from alerts.models import Alert, AlertSettings
from alerts.webhooks import THRESHOLD_RULES
from compaction import outbox, pipeline
from compaction.models import AnalysisStatus, OutboxTask, SessionAnalysis
from sessions.models import AgentSession, Role
from tests.alerts.test_alerts import THREE, analysed_session
from tests.factories import make_key, make_project, make_session, make_user

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def waiting(session: AgentSession) -> bool:
    row = SessionAnalysis.objects.get(session=session)
    return not row.is_current and row.queued_at is not None


def analysed(**kwargs: Any) -> AgentSession:
    session = make_session(**kwargs)
    pipeline.session_analyse(session_id=session.pk)
    assert not waiting(session)
    return session


def test_the_api_queues_a_pass_and_answers_202(client: Client) -> None:
    session = analysed()
    key = make_key(session.project)
    response = client.post(
        f"/api/v1/sessions/{session.external_id}/reanalyze",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert (response.status_code, response.json()) == (202, {"queued": True})
    assert waiting(session)
    assert OutboxTask.objects.filter(kind=outbox.SESSION_ANALYSE, args=[session.pk]).exists()
    pipeline.analysis_next()  # what the worker does with the turn
    assert SessionAnalysis.objects.get(session=session).status == AnalysisStatus.DONE
    assert not waiting(session)


def test_the_api_answers_404_for_another_projects_session(client: Client) -> None:
    session = analysed()
    other_key = make_key(make_project())
    response = client.post(
        f"/api/v1/sessions/{session.external_id}/reanalyze",
        headers={"Authorization": f"Bearer {other_key}"},
    )
    assert response.status_code == 404
    assert "error" in response.json()
    assert not waiting(session)


@pytest.mark.parametrize(
    ("role", "status"),
    [(Role.VIEWER, 403), (Role.ENGINEER, 302), (Role.PRIVACY_REVIEWER, 302), (Role.ADMIN, 302)],
)
def test_the_page_button_is_for_engineers_and_admins(
    client: Client, role: str, status: int
) -> None:
    session = analysed()
    client.force_login(make_user(project=session.project, role=role))
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert ("Re-analyse</button>" in page) == (status == 302)
    response = client.post(f"/sessions/{session.pk}/reanalyze/")
    assert response.status_code == status
    assert waiting(session) == (status == 302)
    if status == 302:
        assert response["Location"] == f"/sessions/{session.pk}/"
        # the page shows the pass in progress, polling until it is done
        page = client.get(f"/sessions/{session.pk}/").content.decode()
        assert "Analysis pass waiting for a worker" in page
        assert f'hx-get="/sessions/{session.pk}/analysis-status/"' in page


def test_the_page_hides_another_projects_session(client: Client) -> None:
    session = analysed()
    client.force_login(make_user(project=make_project(), role=Role.ADMIN))
    assert client.post(f"/sessions/{session.pk}/reanalyze/").status_code == 404
    assert client.get(f"/sessions/{session.pk}/reanalyze/").status_code in (404, 405)
    assert not waiting(session)


def test_the_command_reanalyses_a_project_with_progress() -> None:
    project = make_project()
    first = analysed(project=project, external_id="first")
    analysed(project=project, external_id="second")
    out = StringIO()
    call_command("reanalyze", project.name, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines == [
        f"Re-analysing 2 sessions of {project.name!r}",
        "[1/2] first: done",
        "[2/2] second: done",
        "done: 2, failed: 0",
    ]
    row = SessionAnalysis.objects.get(session=first)
    assert row.is_current
    assert row.analysed_generation == row.requested_generation


def test_the_command_takes_one_session_or_a_date_range() -> None:
    project = make_project()
    analysed(project=project, external_id="old", session={"started_at": "2026-10-01T10:00:00Z"})
    analysed(project=project, external_id="new", session={"started_at": "2026-11-02T10:00:00Z"})
    out = StringIO()
    call_command("reanalyze", project.name, "--session", "old", stdout=out)
    assert "[1/1] old: done" in out.getvalue()
    out = StringIO()
    call_command("reanalyze", project.name, "--since", "2026-11-01", stdout=out)
    assert out.getvalue().splitlines()[1:] == ["[1/1] new: done", "done: 1, failed: 0"]
    out = StringIO()
    call_command("reanalyze", project.name, "--until", "2026-10-01", "--background", stdout=out)
    assert out.getvalue().splitlines()[1:] == ["[1/1] old: queued", "queued: 1, failed: 0"]
    with pytest.raises(CommandError, match="session 'nope' not found"):
        call_command("reanalyze", project.name, "--session", "nope", stdout=StringIO())
    with pytest.raises(CommandError, match="'yesterday': give a date"):
        call_command("reanalyze", project.name, "--since", "yesterday", stdout=StringIO())


def test_a_threshold_change_queues_the_rules_over_recent_stored_analyses(
    client: Client, django_capture_on_commit_callbacks
) -> None:
    project = make_project()
    with time_machine.travel(NOW - timedelta(days=40), tick=False):
        stale = analysed_session(project=project, compactions=THREE[:2])
    with time_machine.travel(NOW - timedelta(days=3), tick=False):
        recent = analysed_session(project=project, compactions=THREE[:2])
    assert not Alert.objects.filter(project=project).exists()  # 2 compactions: below 3
    client.force_login(make_user(project=project, role=Role.ADMIN))
    form = {"form": "thresholds", "storm_compactions": 6, "storm_window_minutes": 60,
            "repeated_compaction_count": 2, "thrash_compactions": 2,
            "thrash_window_calls": 20, "near_overflow_percent": 95}  # fmt: skip
    with (
        time_machine.travel(NOW, tick=False),
        mock.patch.object(alert_tasks.alerts_reevaluate_project, "delay") as delay,
        mock.patch.object(pipeline, "_session_analyse_running") as full_pass,
    ):
        with django_capture_on_commit_callbacks(execute=True):
            client.post(f"/projects/{project.pk}/settings/", form)
        delay.assert_called_once_with(project.pk, sorted(THRESHOLD_RULES))
        assert not Alert.objects.filter(project=project).exists()  # not yet: in the background
        judged = alert_tasks.alerts_reevaluate_project(project.pk, sorted(THRESHOLD_RULES))
    assert judged == 1
    assert not full_pass.called  # the rules only, over the stored analysis
    assert list(Alert.objects.filter(project=project).values_list("session", "rule")) == [
        (recent.pk, "repeated_compaction")
    ]
    assert not Alert.objects.filter(session=stale).exists()
    # saving the e-mail recipients alone judges nothing again
    with mock.patch.object(alert_tasks.alerts_reevaluate_project, "delay") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            client.post(f"/projects/{project.pk}/settings/",
                        {**form, "email_recipients": "oncall@example.com"})  # fmt: skip
        assert not delay.called
    assert AlertSettings.objects.get(project=project).email_list == ["oncall@example.com"]

"""Deleting a session (page, API, command) and the retention purge: one service, one
implementation, everything derived deleted with the session; masking at ingest."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.test import Client

from compaction import pipeline
from compaction.models import CompactionSpan, ReplayRun, SessionAnalysis
from config.settings import CELERY_BEAT_SCHEDULE
from privacy.models import AuditEvent, SubjectToken
from sessions import services, tasks
from sessions.errors import BadRequest
from sessions.models import AgentSession, CompactionEvent, Message, Role
from tests.factories import make_key, make_project, make_session, make_user, wire_message

pytestmark = pytest.mark.django_db

CPF = "530.582.439-79"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def session_with_derived_rows(project=None, external_id: str = "run-1") -> AgentSession:
    session = make_session(
        project or make_project(),
        external_id=external_id,
        messages=[
            wire_message(0, "user", f"Meu CPF é {CPF}"),
            wire_message(1, "assistant", "Anotado."),
        ],
        compactions=[{"seq": 1, "summary": f"Cliente com CPF {CPF}."}],
    )
    pipeline.session_analyse(session_id=session.pk)
    ReplayRun.objects.create(session=session, policy={})
    return session


def derived_rows(session_pk: int) -> dict[str, int]:
    return {
        "messages": Message.objects.filter(session_id=session_pk).count(),
        "events": CompactionEvent.objects.filter(session_id=session_pk).count(),
        "analysis": SessionAnalysis.objects.filter(session_id=session_pk).count(),
        "spans": CompactionSpan.objects.filter(session_id=session_pk).count(),
        "replays": ReplayRun.objects.filter(session_id=session_pk).count(),
        "index": SubjectToken.objects.filter(session_id=session_pk).count(),
    }


def test_session_delete_removes_the_session_and_everything_derived() -> None:
    session = session_with_derived_rows()
    before = derived_rows(session.pk)
    assert all(before.values()), before
    admin = make_user(project=session.project, role=Role.ADMIN)
    deleted = services.session_delete(session=session, by=admin, reason="customer asked")
    assert deleted.external_id == "run-1"
    event = AuditEvent.objects.get(project=session.project)
    assert (event.action, event.actor, event.target) == ("erasure", admin, f"session:{session.pk}")
    assert event.reason == "customer asked"
    assert not AgentSession.objects.filter(pk=session.pk).exists()
    assert not any(derived_rows(session.pk).values())


def test_session_delete_needs_a_reason() -> None:
    session = make_session()
    with pytest.raises(BadRequest, match="reason: required"):
        services.session_delete(session=session, by=None, reason="  ")
    assert AgentSession.objects.filter(pk=session.pk).exists()


def test_an_analysis_queued_before_the_delete_does_nothing() -> None:
    session = make_session()
    services.session_delete(session=session, by=None, reason="test")
    assert pipeline.session_analyse(session_id=session.pk) is None


def test_retention_purge_deletes_only_sessions_older_than_their_projects_retention() -> None:
    keeps_30 = make_project(retention_days=30)
    forever = make_project()
    with time_machine.travel(NOW - timedelta(days=31)):
        old = session_with_derived_rows(keeps_30, "old")
        old_forever = make_session(forever, external_id="old-forever")
    with time_machine.travel(NOW - timedelta(days=29)):
        recent = make_session(keeps_30, external_id="recent")
    with time_machine.travel(NOW):
        assert tasks.sessions_purge_expired() == 1
        assert services.sessions_purge_expired() == 0
    assert not AgentSession.objects.filter(pk=old.pk).exists()
    assert not any(derived_rows(old.pk).values())
    assert AgentSession.objects.filter(pk__in=[recent.pk, old_forever.pk]).count() == 2
    purge = AuditEvent.objects.get(project=keeps_30)
    assert (purge.actor_name, purge.reason) == ("system", "retention: 30 days")


def test_retention_purge_is_bounded_per_run() -> None:
    project = make_project(retention_days=1)
    with time_machine.travel(NOW - timedelta(days=5)):
        for n in range(3):
            make_session(project, external_id=f"s{n}")
    with time_machine.travel(NOW):
        assert services.sessions_purge_expired(limit=2) == 2
        assert services.sessions_purge_expired(limit=2) == 1


def test_beat_runs_the_retention_purge() -> None:
    entry = CELERY_BEAT_SCHEDULE["purge-expired-sessions"]
    assert entry["task"] == tasks.sessions_purge_expired.name


def test_delete_session_api_needs_the_projects_key(client: Client) -> None:
    project = make_project()
    session = session_with_derived_rows(project)
    other_key = make_key()
    response = client.delete(
        "/api/v1/sessions/run-1", headers={"Authorization": f"Bearer {other_key}"}
    )
    assert response.status_code == 404
    assert response.json() == {"error": "session 'run-1' not found in this project"}
    response = client.delete("/api/v1/sessions/run-1")
    assert response.status_code == 401

    key = make_key(project)
    response = client.delete(
        "/api/v1/sessions/run-1?reason=customer%20asked", headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 200
    assert response.json()["external_id"] == "run-1"
    assert response.json()["rows"] >= 6
    assert not AgentSession.objects.filter(pk=session.pk).exists()


def test_delete_session_api_refuses_an_empty_reason(client: Client) -> None:
    project = make_project()
    make_session(project, external_id="run-1")
    key = make_key(project)
    response = client.delete(
        "/api/v1/sessions/run-1?reason=", headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("reason:")
    assert AgentSession.objects.filter(external_id="run-1").exists()


def test_delete_session_command() -> None:
    project = make_project(name="acme")
    session = session_with_derived_rows(project)
    out = StringIO()
    call_command("delete_session", "acme", "run-1", "--reason", "cleanup", stdout=out)
    assert json.loads(out.getvalue())["deleted"] == "run-1"
    assert not AgentSession.objects.filter(pk=session.pk).exists()
    with pytest.raises(CommandError, match="session 'run-1' not found in project 'acme'"):
        call_command("delete_session", "acme", "run-1")


@pytest.mark.parametrize("role", [Role.VIEWER, Role.ENGINEER, Role.PRIVACY_REVIEWER])
def test_only_admins_may_delete_a_session_from_its_page(client: Client, role: str) -> None:
    project = make_project()
    session = make_session(project, external_id="run-1")
    client.force_login(make_user(project=project, role=role))
    assert "Delete session" not in client.get(f"/sessions/{session.pk}/").content.decode()
    assert client.get(f"/sessions/{session.pk}/delete/").status_code == 403
    response = client.post(f"/sessions/{session.pk}/delete/", {"confirm": "run-1", "reason": "x"})
    assert response.status_code == 403
    assert AgentSession.objects.filter(pk=session.pk).exists()


def test_an_admin_deletes_a_session_after_confirming(client: Client) -> None:
    project = make_project()
    session = make_session(project, external_id="run-1")
    other = make_session(make_project(), external_id="not-mine")
    client.force_login(make_user(project=project, role=Role.ADMIN))
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'href="/sessions/{session.pk}/delete/"' in page
    confirm = client.get(f"/sessions/{session.pk}/delete/")
    assert confirm.status_code == 200
    assert "cannot be undone" in confirm.content.decode()

    wrong = client.post(f"/sessions/{session.pk}/delete/", {"confirm": "run-2", "reason": "x"})
    assert wrong.status_code == 200
    assert "Does not match" in wrong.content.decode()
    assert AgentSession.objects.filter(pk=session.pk).exists()

    done = client.post(f"/sessions/{session.pk}/delete/", {"confirm": "run-1", "reason": "x"})
    assert done.status_code == 302
    assert not AgentSession.objects.filter(pk=session.pk).exists()
    assert client.get(f"/sessions/{other.pk}/delete/").status_code == 404


def test_mask_at_ingest_stores_only_the_masked_text() -> None:
    project = make_project(mask_at_ingest=True)
    batch = {
        "session": {"metadata": {"customer": "camila@gmail.com"}},
        "messages": [wire_message(0, "user", f"Meu CPF é {CPF}")],
        "compactions": [{"seq": 0, "summary": f"CPF {CPF}", "kept": {"note": f"CPF {CPF}"}}],
        "probes": [{"seq": 0, "text": f"CPF {CPF} must survive"}],
    }
    session = make_session(project, external_id="masked", messages=batch.pop("messages"), **batch)
    message = Message.objects.get(session=session)
    assert "530" not in json.dumps(message.content)
    assert "[cpf ***.***.***-79]" in json.dumps(message.content)
    assert "530" not in CompactionEvent.objects.get(session=session).summary
    assert CompactionEvent.objects.get(session=session).kept == {"note": "CPF [cpf ***.***.***-79]"}
    assert "530" not in session.probes.get().text
    assert "camila" not in json.dumps(session.metadata)
    # A resend of the same raw batch is a duplicate, not a conflict.
    again = services.events_ingest(
        project=project,
        external_id="masked",
        batch=services.EventBatch.model_validate(
            {"messages": [wire_message(0, "user", f"Meu CPF é {CPF}")]}
        ),
    )
    assert (again.received, again.duplicates) == (0, 1)


def test_without_the_switch_ingest_stores_what_was_sent() -> None:
    session = make_session(messages=[wire_message(0, "user", f"Meu CPF é {CPF}")])
    assert CPF in json.dumps(Message.objects.get(session=session).content, ensure_ascii=False)


@pytest.mark.parametrize("role", [Role.VIEWER, Role.ENGINEER, Role.PRIVACY_REVIEWER])
def test_only_admins_set_the_project_policy(client: Client, role: str) -> None:
    project = make_project()
    client.force_login(make_user(project=project, role=role))
    assert client.get(f"/projects/{project.pk}/policy/").status_code == 403
    response = client.post(f"/projects/{project.pk}/policy/", {"retention_days": "7"})
    assert response.status_code == 403
    project.refresh_from_db()
    assert project.retention_days is None


def test_an_admin_sets_retention_and_masking(client: Client) -> None:
    project = make_project()
    client.force_login(make_user(project=project, role=Role.ADMIN))
    assert client.get(f"/projects/{project.pk}/policy/").status_code == 200
    bad = client.post(f"/projects/{project.pk}/policy/", {"retention_days": "0"})
    assert "greater than or equal to 1" in bad.content.decode()
    done = client.post(
        f"/projects/{project.pk}/policy/", {"retention_days": "30", "mask_at_ingest": "on"}
    )
    assert done.status_code == 302
    project.refresh_from_db()
    assert (project.retention_days, project.mask_at_ingest) == (30, True)
    assert project.allow_external_models is False
    assert client.get(f"/projects/{make_project().pk}/policy/").status_code == 404


@pytest.mark.parametrize(
    ("external_id", "session", "field"),
    [
        (f"cliente-{CPF}", {}, "external_id"),
        ("run-1", {"agent": "suporte camila.figueiredo98@gmail.com"}, "session.agent"),
        ("run-1", {"model": f"ft:haiku:{CPF}"}, "session.model"),
    ],
)
def test_mask_at_ingest_refuses_an_id_agent_or_model_holding_personal_data(
    client: Client, external_id: str, session: dict[str, str], field: str
) -> None:
    project = make_project(mask_at_ingest=True)
    key = make_key(project)
    response = client.post(
        f"/api/v1/sessions/{external_id}/events",
        {"session": session, "messages": [wire_message(0, "user", "oi")]},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error.startswith(f"{field}: holds personal data (")
    assert "masks personal data at ingest" in error
    assert not AgentSession.objects.filter(project=project).exists()

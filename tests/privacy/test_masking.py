"""Masked by default: the example support chat through every page and API read a viewer, an
engineer or an ingest key can reach, and the reveal a privacy reviewer asks for."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from compaction import pipeline
from compaction import services as compaction_services
from compaction.models import CompactionSpan, ReplayRun
from privacy import masking
from privacy.models import AuditAction, AuditEvent
from sessions.models import AgentSession, Project, Role
from tests.factories import make_key, make_project, make_user
from tests.privacy.support import CPF, EMAIL, leaks, support_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def project() -> Project:
    return make_project(name="casa-aurora")


@pytest.fixture
def session(project: Project) -> AgentSession:
    return support_session(project)


@pytest.fixture
def replay(session: AgentSession) -> ReplayRun:
    run = compaction_services.replay_run_start(
        session=session, policy={"hard_limit": 9000, "soft_limit": 6000, "keep_last": 2}
    )
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "done", run.error
    return run


def page_urls(session: AgentSession, replay: ReplayRun) -> list[str]:
    """Every page a member can open on this session: the lists, every page of the timeline,
    every content block in full, every span (observed and replayed) and its hidden middle,
    the replay and its poll (and the replay form, which is the engineer's)."""
    urls = ["/", "/experiments/", f"/sessions/{session.pk}/analysis-status/"]
    pages = session.message_count // 100 + 1
    urls += [f"/sessions/{session.pk}/?page={n}" for n in range(1, pages + 1)]
    for message in session.messages.order_by("seq"):
        for index in range(len(message.content)):
            urls.append(f"/sessions/{session.pk}/messages/{message.seq}/blocks/{index}/")
    for span in CompactionSpan.objects.filter(session=session):
        urls.append(span.get_absolute_url())
        urls.append(span.url(middle=True))
    urls += [f"/replays/{replay.pk}/", f"/replays/{replay.pk}/status/"]
    return urls


def test_the_example_chat_holds_the_values_in_clear_as_stored(session: AgentSession) -> None:
    stored = json.dumps(list(session.messages.values_list("content", flat=True)))
    assert CPF in stored
    assert EMAIL in stored
    summaries = list(
        CompactionSpan.objects.filter(session=session).values_list("summary", flat=True)
    )
    assert any(CPF in s for s in summaries), "the example's summaries copy the CPF"


@pytest.mark.parametrize("role", [Role.VIEWER, Role.ENGINEER])
def test_a_viewer_or_an_engineer_never_receives_a_raw_value_from_any_page(
    client: Client, project: Project, session: AgentSession, replay: ReplayRun, role: str
) -> None:
    client.force_login(make_user(project=project, role=role))
    shown_masked = 0
    replay_form = [f"/sessions/{session.pk}/replay/"] if role == Role.ENGINEER else []
    for url in page_urls(session, replay) + replay_form:
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert leaks(body) == [], url
        shown_masked += body.count("[cpf ")
        assert 'name="reason"' not in body, f"{url} offers a reveal to a {role}"
    assert shown_masked > 10  # the values are there, masked, not dropped


def test_an_ingest_key_never_receives_a_raw_value_from_any_api_read(
    client: Client, project: Project, session: AgentSession, replay: ReplayRun
) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {make_key(project)}"}
    ext = session.external_id
    urls = [
        "/api/v1/sessions",
        f"/api/v1/sessions/{ext}",
        f"/api/v1/sessions/{ext}/messages?limit=1000",
        f"/api/v1/sessions/{ext}/compactions",
        f"/api/v1/sessions/{ext}/curve",
        f"/api/v1/replays/{replay.pk}",
    ]
    bodies = []
    for url in urls:
        response = client.get(url, **auth)
        assert response.status_code == 200, url
        bodies.append(response.content.decode())
        assert leaks(bodies[-1]) == [], url
    messages = json.loads(bodies[2])["messages"]
    assert len(messages) == session.message_count
    compactions = json.loads(bodies[3])
    assert all("[cpf ***.***.***-79]" in c["summary"] for c in compactions if "cpf" in c["summary"])
    assert any("[email c***@***.com]" in c["summary"] for c in compactions)


def _reviewer(client: Client, project: Project) -> Client:
    client.force_login(make_user(project=project, role=Role.PRIVACY_REVIEWER, username="rita"))
    return client


def test_a_reviewer_sees_masked_values_with_a_reveal_form_beside_each(
    client: Client, project: Project, session: AgentSession
) -> None:
    _reviewer(client, project)
    body = client.get(f"/sessions/{session.pk}/").content.decode()
    assert leaks(body) == []
    assert f'name="target" value="message:{session.pk}:2:0"' in body
    assert 'name="reason"' in body


def test_a_reveal_with_a_reason_returns_that_one_value_and_writes_an_audit_row(
    client: Client, project: Project, session: AgentSession
) -> None:
    _reviewer(client, project)
    target = f"message:{session.pk}:2:0"  # "Meu CPF é 530.582.439-79. O e-mail ... é ..."
    reason = "Titular pediu confirmação do cadastro (protocolo 2026-118)"
    first = client.post("/reveal/", {"target": target, "index": 0, "reason": reason})
    assert first.status_code == 200
    assert CPF in first.content.decode()
    assert EMAIL not in first.content.decode()
    second = client.post("/reveal/", {"target": target, "index": 1, "reason": reason})
    assert EMAIL in second.content.decode()
    assert CPF not in second.content.decode()
    rows = list(AuditEvent.objects.order_by("pk"))
    assert [(r.action, r.actor_name, r.target, r.reason, r.detail) for r in rows] == [
        (AuditAction.REVEAL, "rita", f"{target}#0", reason, {"kind": "cpf"}),
        (AuditAction.REVEAL, "rita", f"{target}#1", reason, {"kind": "email"}),
    ]
    assert all(r.project_id == project.pk for r in rows)


def test_a_summary_value_is_revealed_from_its_span(
    client: Client, project: Project, session: AgentSession
) -> None:
    _reviewer(client, project)
    span = CompactionSpan.objects.filter(session=session, summary__contains=CPF).first()
    assert span is not None
    page = client.get(span.get_absolute_url()).content.decode()
    assert leaks(page) == []
    assert f'value="summary:{span.pk}"' in page
    cpf_index = [o.kind for o in masking.occurrences(span.summary)].index("cpf")
    response = client.post(
        "/reveal/",
        {"target": f"summary:{span.pk}", "index": cpf_index, "reason": "LGPD art. 18 request"},
    )
    assert response.status_code == 200
    assert CPF in response.content.decode()
    assert AuditEvent.objects.get().target == f"summary:{span.pk}#{cpf_index}"


@pytest.mark.parametrize("role", [Role.VIEWER, Role.ENGINEER])
def test_below_the_reviewer_role_a_reveal_is_refused_and_nothing_is_logged(
    client: Client, project: Project, session: AgentSession, role: str
) -> None:
    client.force_login(make_user(project=project, role=role))
    response = client.post(
        "/reveal/",
        {"target": f"message:{session.pk}:2:0", "index": 0, "reason": "just curious, honestly"},
    )
    assert response.status_code == 403
    assert CPF not in response.content.decode()
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize("reason", ["", "   ", "because"])
def test_a_reveal_needs_a_reason(
    client: Client, project: Project, session: AgentSession, reason: str
) -> None:
    _reviewer(client, project)
    response = client.post(
        "/reveal/", {"target": f"message:{session.pk}:2:0", "index": 0, "reason": reason}
    )
    assert response.status_code == 400
    assert "reason: required, at least 10 characters" in response.content.decode()
    assert CPF not in response.content.decode()
    assert not AuditEvent.objects.exists()


def test_a_reviewer_of_another_project_cannot_reveal(client: Client, session: AgentSession) -> None:
    client.force_login(make_user(project=make_project(), role=Role.PRIVACY_REVIEWER))
    response = client.post(
        "/reveal/",
        {"target": f"message:{session.pk}:2:0", "index": 0, "reason": "wrong project reviewer"},
    )
    assert response.status_code == 404
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize(
    ("target", "index", "status"),
    [("message:1:2", "0", 400), ("nonsense", "0", 400), ("summary:x", "0", 400), ("", "a", 400)],
)
def test_a_malformed_reveal_is_a_clear_400(
    client: Client, project: Project, session: AgentSession, target: str, index: str, status: int
) -> None:
    _reviewer(client, project)
    response = client.post(
        "/reveal/", {"target": target, "index": index, "reason": "a valid long reason"}
    )
    assert response.status_code == status
    assert not AuditEvent.objects.exists()


def test_an_index_past_the_last_masked_value_is_a_404(
    client: Client, project: Project, session: AgentSession
) -> None:
    _reviewer(client, project)
    response = client.post(
        "/reveal/",
        {"target": f"message:{session.pk}:2:0", "index": 9, "reason": "a valid long reason"},
    )
    assert response.status_code == 404
    assert not AuditEvent.objects.exists()


def test_redacting_a_finding_is_an_audited_erasure(
    client: Client, project: Project, session: AgentSession
) -> None:
    from privacy.models import Finding

    _reviewer(client, project)
    finding = Finding.objects.filter(session=session, kind="cpf", where="message").first()
    assert finding is not None
    response = client.post(
        f"/privacy/findings/{finding.pk}/redact/", {"reason": f"titular pediu, CPF {CPF}"}
    )
    assert response.status_code == 302
    event = AuditEvent.objects.get()
    assert event.action == AuditAction.ERASURE
    assert event.actor_name == "rita"
    assert event.target == f"finding:{finding.pk}"
    assert event.reason == "titular pediu, CPF [cpf ***.***.***-79]"
    assert event.detail == {"kind": "cpf", "where": "message", "seq": finding.seq}
    assert CPF not in json.dumps(event.detail)


def test_a_value_repeated_in_one_text_gets_one_reveal_control() -> None:
    text = "Rastreio: " + " | ".join(["CEP 04717-020"] * 22) + f" · CPF {CPF}"
    found = masking.occurrences(text)
    assert [(o.kind, o.index, o.repeats) for o in found] == [("cep", 0, 22), ("cpf", 22, 1)]
    assert masking.occurrence_value(text, found[1].index) == ("cpf", CPF)

"""Secrets through the app: a finding shows kind, prefix, length and a keyed fingerprint; a
reveal refuses it for every role; the ``secret`` alert fires on a message or a summary and
``personal_data`` never does on a secret; erased by finding or with its session."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from alerts.models import Alert
from compaction import pipeline
from compaction.models import CompactionSpan
from privacy import findings, masking, services
from privacy.models import AuditEvent, Finding, FindingStatus
from sessions.models import AgentSession, CompactionEvent, Message, Project, Role
from tests.factories import make_project, make_session, make_user, wire_message

pytestmark = pytest.mark.django_db

KEY = "sk-ant-api03-" + "Qx7vB2mZ" * 11 + "-AA"
PASSWORD = "Xk9#mQ2vLp"
SUMMARY_KEY = "ghp_" + "Z8yX3wV7uT6sR5qP4oN2mL1kJ0iH9gF8eD7c"


@pytest.fixture
def project() -> Project:
    return make_project(name="deploys")


def deploy_session(project: Project, *, summary: str = "Goal: deploy the shop.") -> AgentSession:
    session = make_session(
        project,
        external_id="deploy-1",
        messages=[
            wire_message(0, "user", f"Use ANTHROPIC_API_KEY={KEY} for the summarizer."),
            wire_message(1, "assistant", "Noted."),
            wire_message(
                2, "user", f"The database is postgres://shop:{PASSWORD}@db.internal:5432/shop"
            ),
            wire_message(3, "assistant", "Connected."),
        ],
        compactions=[
            {
                "seq": 4,
                "trigger": "auto",
                "summary": summary,
                "replaced": {"from_seq": 0, "to_seq": 3},
            }
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


def test_a_secret_finding_shows_kind_prefix_length_and_a_keyed_fingerprint(project) -> None:
    session = deploy_session(project)
    rows = {f.seq: f for f in Finding.objects.filter(session=session, kind="secret")}
    key_hash = findings.finding_value_hash(KEY)
    assert rows[0].masked == f"sk-ant-… {len(KEY)} chars #{key_hash[:8]}"
    assert rows[2].masked == f"… {len(PASSWORD)} chars #{findings.finding_value_hash(PASSWORD)[:8]}"
    stored = json.dumps(list(Finding.objects.values("masked", "value_hash", "path")))
    assert KEY[8:20] not in stored
    assert PASSWORD not in stored


def test_no_role_can_reveal_a_secret_and_nothing_is_logged(
    client: Client, project: Project
) -> None:
    session = deploy_session(project)
    client.force_login(make_user(project=project, role=Role.PRIVACY_REVIEWER))
    text = Message.objects.get(session=session, seq=0).content[0]["text"]
    assert masking.occurrences(text) == []  # no reveal control is offered for it
    response = client.post(
        "/reveal/",
        {"target": f"message:{session.pk}:0:0", "index": 0, "reason": "rotate the key today"},
    )
    assert response.status_code == 403
    assert KEY not in response.content.decode()
    assert not AuditEvent.objects.exists()


def test_a_secret_in_a_message_opens_the_secret_alert_and_not_personal_data(project) -> None:
    session = deploy_session(project)
    alert = Alert.objects.get(session=session, rule="secret")
    assert alert.severity == "critical"
    assert len(alert.evidence["items"]) == 2
    assert alert.evidence["items"][0].startswith("@0 message: sk-ant-… ")
    assert KEY not in json.dumps(alert.evidence)
    assert PASSWORD not in json.dumps(alert.evidence)
    assert not Alert.objects.filter(session=session, rule="personal_data").exists()


def test_a_secret_in_a_summary_fires_secret_never_personal_data(project) -> None:
    session = deploy_session(project, summary=f"Deployed with token {SUMMARY_KEY}.")
    alert = Alert.objects.get(session=session, rule="secret")
    assert any(item.startswith("@4 summary: ghp_… ") for item in alert.evidence["items"])
    assert alert.evidence["spans"] == [4]
    assert not Alert.objects.filter(session=session, rule="personal_data").exists()
    assert list(findings.summary_personal_data_detector(session_id=session.pk)(SUMMARY_KEY)) == []


def test_a_session_without_secrets_raises_no_secret_alert(project) -> None:
    session = make_session(
        project,
        external_id="clean",
        messages=[
            wire_message(0, "user", "password: str is a type"),
            wire_message(1, "assistant", "ok"),
        ],
        compactions=[{"seq": 2, "trigger": "auto", "summary": "Goal: types."}],
    )
    pipeline.session_analyse(session_id=session.pk)
    assert not Alert.objects.filter(session=session, rule="secret").exists()


def test_a_rejected_secret_no_longer_counts_for_the_alert(project) -> None:
    session = deploy_session(project)
    for finding in Finding.objects.filter(session=session, kind="secret", seq=2):
        services.finding_review(finding=finding, status=FindingStatus.FALSE_POSITIVE, user=None)
    hits = findings.session_secret_hits(session_id=session.pk)
    assert [h.seq for h in hits] == [0]


def test_a_secret_is_erased_by_its_finding_in_messages_and_summaries(project) -> None:
    session = deploy_session(project, summary=f"Deployed with token {SUMMARY_KEY}.")
    for finding in Finding.objects.filter(session=session, kind="secret"):
        if finding.status != FindingStatus.REDACTED:
            services.finding_redact(finding=finding, user=None, reason="leaked key, rotated")
    stored = json.dumps(
        [
            list(Message.objects.filter(session=session).values_list("content", flat=True)),
            CompactionEvent.objects.get(session=session).summary,
            list(CompactionSpan.objects.filter(session=session).values_list("summary", flat=True)),
        ]
    )
    for value in (KEY, PASSWORD, SUMMARY_KEY):
        assert value not in stored
    assert "[secret sk-ant-… " in json.dumps(json.loads(stored), ensure_ascii=False)


def test_a_secret_is_erased_with_its_session(client: Client, project: Project) -> None:
    session = deploy_session(project)
    client.force_login(make_user(project=project, role=Role.ADMIN))
    response = client.post(
        f"/sessions/{session.pk}/delete/", {"confirm": session.external_id, "reason": "key leak"}
    )
    assert response.status_code == 302
    assert not AgentSession.objects.filter(pk=session.pk).exists()
    assert not Message.objects.filter(session_id=session.pk).exists()
    assert not Finding.objects.filter(session_id=session.pk).exists()

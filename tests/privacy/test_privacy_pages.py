"""The privacy review queue, the session page's findings and the example support chat."""

from __future__ import annotations

import pytest
from django.test import Client

from compaction import pipeline
from privacy.models import Finding, FindingStatus
from sessions import example_data
from sessions import services as session_services
from sessions.models import CompactionEvent, Role
from sessions.schemas import EventBatch
from tests.factories import make_project, make_session, make_user, wire_message
from tests.privacy.test_findings import CPF, EMAIL, NEW_CPF, support_chat

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return make_project(name="loja")


@pytest.fixture
def chat(project):
    session = support_chat(project)
    pipeline.session_analyse(session_id=session.pk)
    return session


def logged_in(project, role: str) -> Client:
    client = Client()
    client.force_login(make_user(project=project, role=role))
    return client


@pytest.mark.parametrize("role", [Role.VIEWER, Role.ENGINEER])
def test_the_queue_and_its_actions_are_for_privacy_reviewers_only(project, chat, role):
    client = logged_in(project, role)
    assert client.get("/privacy/findings/").status_code == 403
    finding = Finding.objects.filter(session=chat).first()
    assert client.post(f"/privacy/findings/{finding.pk}/confirm/").status_code == 403
    assert client.post(f"/privacy/findings/{finding.pk}/redact/").status_code == 403
    finding.refresh_from_db()
    assert finding.status == FindingStatus.OPEN


def test_a_reviewer_of_another_project_sees_nothing_of_this_one(project, chat):
    client = logged_in(make_project(), Role.PRIVACY_REVIEWER)
    page = client.get("/privacy/findings/")
    assert page.status_code == 200
    assert "chat-1" not in page.content.decode()
    finding = Finding.objects.filter(session=chat).first()
    assert client.post(f"/privacy/findings/{finding.pk}/confirm/").status_code == 404
    assert client.get(f"/privacy/findings/?project={project.pk}").status_code == 403


def test_the_queue_lists_masked_findings_and_filters_them(project, chat):
    client = logged_in(project, Role.PRIVACY_REVIEWER)
    body = client.get("/privacy/findings/").content.decode()
    assert "***.***.***-25" in body
    assert ">introduced</span>" in body
    for raw in (CPF, EMAIL, NEW_CPF):
        assert raw not in body
    only_emails = client.get("/privacy/findings/?kind=email&where=summary").content.decode()
    assert "c***@***.com" in only_emails
    assert "***.***.***-25" not in only_emails
    bad = client.get("/privacy/findings/?kind=shoe-size")
    assert bad.status_code == 200
    assert "kind:" in bad.content.decode()


def test_confirm_false_positive_and_redact_from_the_queue(project, chat):
    client = logged_in(project, Role.PRIVACY_REVIEWER)
    new_copy = Finding.objects.get(session=chat, where="summary", masked="***.***.***-25")
    email = Finding.objects.get(session=chat, where="summary", kind="email")
    response = client.post(f"/privacy/findings/{new_copy.pk}/confirm/", {"next": "kind=cpf"})
    assert response.status_code == 302
    assert response["Location"] == "/privacy/findings/?kind=cpf"
    client.post(f"/privacy/findings/{email.pk}/false_positive/")
    new_copy.refresh_from_db()
    email.refresh_from_db()
    assert (new_copy.status, email.status) == (
        FindingStatus.CONFIRMED,
        FindingStatus.FALSE_POSITIVE,
    )
    assert new_copy.reviewed_by is not None
    # A redaction first says what it will change and asks why; without a reason nothing moves.
    asked = client.get(f"/privacy/findings/{new_copy.pk}/redact/?next=kind%3Dcpf")
    page = asked.content.decode()
    assert "Redact this cpf?" in page
    assert "the summary of the compaction at #" in page
    assert "It cannot be undone." in page
    refused = client.post(f"/privacy/findings/{new_copy.pk}/redact/", {"reason": "x"}, follow=True)
    assert "reason: required to redact, at least 10 characters" in refused.content.decode()
    assert NEW_CPF in CompactionEvent.objects.get(session=chat).summary
    client.post(f"/privacy/findings/{new_copy.pk}/redact/", {"reason": "copied into a summary"})
    assert NEW_CPF not in CompactionEvent.objects.get(session=chat).summary
    assert client.post(f"/privacy/findings/{new_copy.pk}/shred/").status_code == 404
    assert client.get(f"/privacy/findings/{new_copy.pk}/confirm/").status_code == 404


def test_a_value_repeated_in_one_message_is_one_row_and_one_decision(project):
    listing = "\n".join(f"evento {n}: CEP 01310-200, São Paulo" for n in range(12))
    session = make_session(
        project,
        external_id="tracking",
        messages=[wire_message(0, "user", listing), wire_message(1, "user", "CEP 01310-200")],
    )
    pipeline.session_analyse(session_id=session.pk)
    ceps = Finding.objects.filter(session=session, kind="cep").order_by("pk")
    assert [f.seq for f in ceps] == [0] * 12 + [1]
    client = logged_in(project, Role.PRIVACY_REVIEWER)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    findings_table = page[page.index('id="findings"') :]
    assert findings_table.count("<code>*****-*00</code>") == 2
    assert "\N{MULTIPLICATION SIGN}12" in findings_table
    body = client.get("/privacy/findings/?kind=cep").content.decode()
    assert body.count("data-finding=") == 2
    assert "\N{MULTIPLICATION SIGN}12" in body
    assert "\N{MULTIPLICATION SIGN}1<" not in body
    response = client.post(f"/privacy/findings/{ceps[3].pk}/false_positive/", follow=True)
    assert "Marked false positive (all 12 times it occurs there)." in response.content.decode()
    statuses = [f.status for f in ceps.all()]
    assert statuses == [FindingStatus.FALSE_POSITIVE] * 12 + [FindingStatus.OPEN]
    body = client.get("/privacy/findings/?kind=cep&status=open").content.decode()
    assert body.count("data-finding=") == 1
    client.post(f"/privacy/findings/{ceps[0].pk}/redact/", {"reason": "tracking CEP, LGPD"})
    redacted = Finding.objects.filter(session=session, status=FindingStatus.REDACTED)
    assert redacted.count() == 12
    assert "01310-200" in str(session.messages.get(seq=1).content)
    assert "01310-200" not in str(session.messages.get(seq=0).content)


def test_the_session_page_shows_its_findings_masked(project, chat):
    client = logged_in(project, Role.VIEWER)
    body = client.get(f"/sessions/{chat.pk}/").content.decode()
    assert "Personal data" in body
    assert "***.***.***-25" in body


def test_the_sessions_list_filters_personal_data_in_summaries(project, chat):
    clean = make_session(project, external_id="clean-run", messages=[wire_message(0, "user", "oi")])
    pipeline.session_analyse(session_id=clean.pk)
    client = logged_in(project, Role.VIEWER)
    body = client.get("/?problems=pii").content.decode()
    assert "chat-1" in body
    assert "clean-run" not in body
    assert "Personal data in summary" in body


def test_the_example_support_chat_shows_its_findings():
    project = make_project(name="demo")
    (example,) = [
        e for e in example_data.example_sessions() if e.external_id == "example-support-triage"
    ]
    for batch in example.batches:
        result = session_services.events_ingest(
            project=project,
            external_id=example.external_id,
            batch=EventBatch.model_validate(batch),
        )
    pipeline.session_analyse(session_id=result.session.pk)
    summary = Finding.objects.filter(session=result.session, where="summary")
    kinds = {f.kind for f in summary}
    assert {"cpf", "email", "person_name"} <= kinds
    assert all(f.copied_from_raw for f in summary if f.kind in ("cpf", "email"))
    assert CompactionEvent.objects.filter(session=result.session).count() == len(
        {f.seq for f in summary}
    )

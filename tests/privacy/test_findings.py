"""Personal data findings: stored by the analysis pass, served masked, reviewed, redacted."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from compaction import pipeline
from compaction.models import CompactionSpan, SessionAnalysis
from privacy import findings, selectors, services
from privacy.models import Finding, FindingStatus
from sessions import selectors as session_selectors
from sessions.models import AgentSession, CompactionEvent, Message
from tests.factories import make_key, make_project, make_session, make_user, wire_message

pytestmark = pytest.mark.django_db

CPF = "530.582.439-79"
CPF_DIGITS = "53058243979"
EMAIL = "camila.figueiredo98@gmail.com"
NEW_CPF = "529.982.247-25"  # only in the summary


def support_chat(project, external_id="chat-1"):
    return make_session(
        project,
        external_id=external_id,
        session={"metadata": {"customer": {"email": EMAIL}, "locale": "pt-BR"}},
        messages=[
            wire_message(0, "user", "Oi, preciso de ajuda com um pedido."),
            wire_message(1, "assistant", [{"type": "text", "text": "Qual o CPF do titular?"}]),
            wire_message(2, "user", f"Meu CPF é {CPF}. O e-mail é {EMAIL}."),
            wire_message(
                3,
                "assistant",
                [{"type": "tool_use", "id": "t1", "name": "buscar", "input": {"cpf": CPF}}],
            ),
            wire_message(
                4, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]
            ),
            wire_message(5, "assistant", [{"type": "text", "text": "Achei o pedido."}]),
        ],
        compactions=[
            {
                "seq": 6,
                "trigger": "auto",
                "strategy": "summarize",
                "summary": f"Cliente CPF {CPF}, e-mail {EMAIL}; cônjuge CPF {NEW_CPF}.",
                "replaced": {"from_seq": 0, "to_seq": 5},
            }
        ],
    )


@pytest.fixture
def project():
    return make_project(name="loja")


@pytest.fixture
def chat(project):
    session = support_chat(project)
    pipeline.session_analyse(session_id=session.pk)
    return session


def rows(session):
    return sorted(
        (f.where, f.seq, f.kind, f.masked, f.copied_from_raw)
        for f in Finding.objects.filter(session=session)
    )


def test_the_analysis_pass_records_findings_in_messages_summaries_and_metadata(chat):
    assert rows(chat) == [
        ("message", 2, "cpf", "***.***.***-79", False),
        ("message", 2, "email", "c***@***.com", False),
        ("message", 3, "cpf", "***.***.***-79", False),
        ("metadata", None, "email", "c***@***.com", False),
        ("summary", 6, "cpf", "***.***.***-25", False),  # a new copy, not from the raw history
        ("summary", 6, "cpf", "***.***.***-79", True),
        ("summary", 6, "email", "c***@***.com", True),
    ]
    summary = Finding.objects.filter(session=chat, where="summary").first()
    assert summary.event == CompactionEvent.objects.get(session=chat)
    assert summary.span == CompactionSpan.objects.get(event=summary.event)
    message = Finding.objects.get(session=chat, where="message", seq=3)
    assert message.message == Message.objects.get(session=chat, seq=3)
    assert message.path == "content[0].input.cpf"


def test_no_finding_stores_the_value_only_a_keyed_hash(chat):
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM compaction_finding")
        dump = json.dumps(cursor.fetchall(), default=str)
    for raw in (CPF, CPF_DIGITS, EMAIL, NEW_CPF):
        assert raw not in dump
    cpf = Finding.objects.filter(session=chat, kind="cpf").first()
    assert cpf.value_hash == findings.finding_value_hash(CPF_DIGITS)
    assert len(cpf.value_hash) == 64


def test_the_keyed_hash_depends_on_the_server_secret(settings):
    settings.SAWTOOTH_PII_KEY = "one secret"
    first = findings.finding_value_hash(CPF_DIGITS)
    settings.SAWTOOTH_PII_KEY = "another secret"
    assert findings.finding_value_hash(CPF_DIGITS) != first
    settings.SAWTOOTH_PII_KEY = ""
    assert findings.finding_value_hash(CPF_DIGITS) not in (first, "")


def test_a_second_pass_changes_nothing_and_keeps_review_decisions(chat):
    before = rows(chat)
    confirmed = Finding.objects.get(session=chat, where="summary", masked="***.***.***-25")
    services.finding_review(finding=confirmed, status=FindingStatus.CONFIRMED, user=None)
    make_session(chat.project, external_id="chat-1", messages=[wire_message(6, "user", "ok")])
    pipeline.session_analyse(session_id=chat.pk)
    assert rows(chat) == before
    again = Finding.objects.get(session=chat, where="summary", masked="***.***.***-25")
    assert again.status == FindingStatus.CONFIRMED


def test_only_new_messages_are_scanned_again(chat):
    make_session(
        chat.project,
        external_id="chat-1",
        messages=[wire_message(6, "user", "tel (11) 98765-4321")],
    )
    pipeline.session_analyse(session_id=chat.pk)
    phones = Finding.objects.filter(session=chat, kind="phone")
    assert [(f.where, f.seq) for f in phones] == [("message", 6)]
    assert Finding.objects.filter(session=chat, where="message").count() == 4


def test_the_api_lists_findings_masked_and_scoped_to_the_key(client: Client, project, chat):
    auth = {"Authorization": f"Bearer {make_key(project)}"}
    response = client.get("/api/v1/sessions/chat-1/findings", headers=auth)
    assert response.status_code == 200
    items = response.json()["items"]
    assert {"kind", "where", "seq", "masked", "copied_from_raw", "summary_delta", "status",
            "level"} == set(items[0])  # fmt: skip
    assert {"kind": "cpf", "where": "summary", "seq": 6, "masked": "***.***.***-25",
            "copied_from_raw": False, "summary_delta": "introduced", "status": "open",
            "level": "finding"} in items  # fmt: skip
    body = response.content.decode()
    assert CPF not in body
    assert EMAIL not in body
    other = {"Authorization": f"Bearer {make_key(make_project())}"}
    assert client.get("/api/v1/sessions/chat-1/findings", headers=other).status_code == 404
    assert client.get("/api/v1/sessions/chat-1/findings").status_code == 401


def test_summary_personal_data_is_what_the_alert_rule_and_the_list_filter_read(project, chat):
    assert selectors.session_has_summary_personal_data(session_id=chat.pk)
    clean = make_session(project, external_id="clean", messages=[wire_message(0, "user", "oi")])
    pipeline.session_analyse(session_id=clean.pk)
    assert not selectors.session_has_summary_personal_data(session_id=clean.pk)
    listed = session_selectors.session_search(
        projects=session_selectors.projects_for_user(make_user(is_superuser=True)),
        filters={"problems": "pii"},
    )
    assert list(listed) == [chat]
    for finding in Finding.objects.filter(session=chat, where="summary"):
        services.finding_review(finding=finding, status=FindingStatus.FALSE_POSITIVE, user=None)
    assert not selectors.session_has_summary_personal_data(session_id=chat.pk)


def test_a_name_alone_in_a_summary_is_for_review_not_an_alert(project):
    session = make_session(
        project,
        messages=[wire_message(0, "user", "oi")],
        compactions=[{"seq": 1, "summary": "Atendimento de Maria Souza: pediu reembolso."}],
    )
    pipeline.session_analyse(session_id=session.pk)
    (name,) = Finding.objects.filter(session=session)
    assert (name.kind, name.confidence) == ("person_name", "review")
    assert not selectors.session_has_summary_personal_data(session_id=session.pk)


def test_a_name_a_cue_marks_as_a_customers_in_a_summary_is_sure_and_alerts(project):
    session = make_session(
        project,
        messages=[wire_message(0, "user", "oi")],
        compactions=[{"seq": 1, "summary": "Cliente: Maria Souza pediu reembolso."}],
    )
    pipeline.session_analyse(session_id=session.pk)
    (name,) = Finding.objects.filter(session=session)
    assert (name.kind, name.confidence, name.masked) == ("person_name", "high", "M*** S***")
    assert selectors.session_has_summary_personal_data(session_id=session.pk)


def test_redact_rewrites_the_summary_and_its_span_and_nothing_else(chat):
    finding = Finding.objects.get(session=chat, where="summary", masked="***.***.***-79")
    services.finding_redact(finding=finding, user=None, reason="LGPD request 12, redact")
    event = CompactionEvent.objects.get(session=chat)
    assert CPF not in event.summary
    assert "[cpf ***.***.***-79]" in event.summary
    assert NEW_CPF in event.summary  # another value is left for its own decision
    assert CPF not in CompactionSpan.objects.get(event=event).summary
    assert CPF in json.dumps(Message.objects.get(session=chat, seq=2).content)
    finding.refresh_from_db()
    assert finding.status == FindingStatus.REDACTED
    pipeline.session_analyse(session_id=chat.pk)  # a later pass keeps the record
    assert Finding.objects.get(pk=finding.pk).status == FindingStatus.REDACTED


def test_redact_a_message_value_rewrites_every_block_that_holds_it(chat):
    finding = Finding.objects.get(session=chat, where="message", seq=3)
    services.finding_redact(finding=finding, user=None, reason="LGPD request 12, redact")
    content = Message.objects.get(session=chat, seq=3).content
    assert content[0]["input"]["cpf"] == "[cpf ***.***.***-79]"


def test_redact_metadata(chat):
    finding = Finding.objects.get(session=chat, where="metadata")
    services.finding_redact(finding=finding, user=None, reason="LGPD request 12, redact")
    chat.refresh_from_db()
    assert chat.metadata == {"customer": {"email": "[email c***@***.com]"}, "locale": "pt-BR"}


def test_a_project_that_masks_at_ingest_never_stores_the_raw_values():
    project = make_project(mask_at_ingest=True)
    session = support_chat(project)
    stored = json.dumps(
        [
            list(Message.objects.filter(session=session).values_list("content", flat=True)),
            CompactionEvent.objects.get(session=session).summary,
            AgentSession.objects.get(pk=session.pk).metadata,
        ]
    )
    for raw in (CPF, EMAIL, NEW_CPF):
        assert raw not in stored
    assert "[cpf ***.***.***-79]" in stored
    # An identical resend is still a duplicate, not a conflict.
    again = support_chat(project)
    assert again.pk == session.pk
    assert Message.objects.filter(session=session).count() == 6


def test_a_failing_scan_does_not_undo_the_analysis(project, monkeypatch):
    session = support_chat(project, external_id="chat-2")

    def broken(*, session_id):
        raise ValueError("detector bug")

    monkeypatch.setattr(findings, "session_findings_scan", broken)
    analysis = pipeline.session_analyse(session_id=session.pk)
    assert analysis is not None
    assert analysis.status == "done"
    assert not Finding.objects.filter(session=session).exists()


def test_scan_personal_data_fills_in_sessions_stored_before_the_scan(chat):
    expected = rows(chat)
    Finding.objects.all().delete()
    SessionAnalysis.objects.filter(session=chat).update(pii_scanned_message_pk=0)
    out = StringIO()
    call_command("scan_personal_data", "loja", stdout=out)
    assert rows(chat) == expected
    assert out.getvalue() == f"1 sessions scanned, {len(expected)} findings stored.\n"
    with pytest.raises(CommandError, match="project: no project named 'nope'"):
        call_command("scan_personal_data", "nope")


def test_personal_data_in_a_summary_raises_an_alert_that_follows_the_review(chat):
    from alerts.models import Alert

    alert = Alert.objects.get(session=chat, rule="personal_data")
    assert alert.state == "open"
    assert sorted(alert.evidence["items"]) == [
        "@6 cpf: ***.***.***-25",
        "@6 cpf: ***.***.***-79",
        "@6 email: c***@***.com",
    ]
    assert CPF not in json.dumps(alert.evidence)
    assert EMAIL not in json.dumps(alert.evidence)

    # a reviewer decides the summary's findings are false positives: the rule stops citing them
    for finding in Finding.objects.filter(session=chat, where="summary"):
        services.finding_review(finding=finding, status=FindingStatus.FALSE_POSITIVE, user=None)
    assert not list(
        findings.summary_personal_data_detector(session_id=chat.pk)(
            f"Cliente CPF {CPF}, e-mail {EMAIL}; cônjuge CPF {NEW_CPF}."
        )
    )


def test_a_summary_without_personal_data_raises_no_alert(project):
    from alerts.models import Alert

    session = make_session(
        project,
        external_id="clean",
        messages=[wire_message(0, "user", "Migrate billing."), wire_message(1, "assistant", "ok")],
        compactions=[{"seq": 2, "trigger": "auto", "summary": "Goal: migrate billing."}],
    )
    pipeline.session_analyse(session_id=session.pk)
    assert not Alert.objects.filter(session=session, rule="personal_data").exists()


def test_each_summary_finding_says_whether_it_was_carried_introduced_or_reworded(project):
    session = make_session(
        project,
        external_id="delta",
        messages=[
            wire_message(0, "user", f"Meu CPF é {CPF} e o e-mail {EMAIL}."),
            wire_message(1, "assistant", "Ok."),
        ],
        compactions=[
            {
                "seq": 2,
                "trigger": "auto",
                # the e-mail as written (carried), the CPF without its punctuation (reworded),
                # a CPF the history never held (introduced)
                "summary": f"Cliente {EMAIL}, CPF {CPF_DIGITS}; cônjuge CPF {NEW_CPF}.",
                "replaced": {"from_seq": 0, "to_seq": 1},
            }
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    deltas = sorted(
        (f.kind, f.masked, f.summary_delta, f.copied_from_raw)
        for f in Finding.objects.filter(session=session, where="summary")
    )
    assert deltas == [
        ("cpf", "*********79", "reworded", True),
        ("cpf", "***.***.***-25", "introduced", False),
        ("email", "c***@***.com", "carried", True),
    ]
    assert set(Finding.objects.filter(session=session, where="message").values_list(
        "summary_delta", flat=True)) == {""}  # fmt: skip


def test_summary_delta_is_in_the_api_the_queue_filter_and_the_compaction_page(
    client: Client, project, chat
):
    key = make_key(project)
    body = client.get(
        f"/api/v1/sessions/{chat.external_id}/findings", HTTP_AUTHORIZATION=f"Bearer {key}"
    ).json()
    summary = [item for item in body["items"] if item["where"] == "summary"]
    assert {item["summary_delta"] for item in summary} == {"carried", "introduced"}
    assert all(
        item["copied_from_raw"] == (item["summary_delta"] != "introduced") for item in summary
    )

    from sessions.models import Role

    client.force_login(make_user(project=project, role=Role.PRIVACY_REVIEWER))
    page = client.get("/privacy/findings/?summary_delta=introduced").content.decode()
    assert "***.***.***-25" in page
    assert "c***@***.com" not in page
    span = CompactionSpan.objects.get(session=chat, replay=None)
    page = client.get(span.get_absolute_url()).content.decode()
    assert "Personal data and secrets in this summary" in page
    assert ">introduced</span> cpf <code>***.***.***-25</code>" in page

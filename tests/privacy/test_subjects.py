"""Data-subject requests: a keyed-hash index finds a person's identifier everywhere it was
copied, and an erasure leaves no copy of it in any form in any table of the database."""

from __future__ import annotations

import getpass
import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from compaction import pipeline, tasks
from compaction.models import CompactionSpan, ReplayRun, ReplayStatus
from privacy import masking, subjects
from privacy.detect import pii
from privacy.models import AuditEvent, Finding, SubjectAction, SubjectRequest, SubjectToken
from sessions import example_data
from sessions.errors import BadRequest
from sessions.models import AgentSession, Message, Project, Role
from sessions.schemas import EventBatch
from sessions.services import events_ingest
from tests.dump import cells_holding
from tests.factories import make_project, make_session, make_user

pytestmark = pytest.mark.django_db(transaction=True)

CPF = "530.582.439-79"
CPF_FORMS = ["530.582.439-79", "53058243979", "530 582 439 79"]
EMAIL = "camila.figueiredo98@gmail.com"
SUPPORT = "example-support-triage"


def support_chat(project: Project) -> AgentSession:
    """The example Portuguese support chat, uploaded batch by batch and analysed."""
    example = example_data.example_session(SUPPORT)
    for batch in example.batches:
        events_ingest(project=project, external_id=SUPPORT, batch=EventBatch.model_validate(batch))
    session = AgentSession.objects.get(project=project, external_id=SUPPORT)
    pipeline.session_analyse(session_id=session.pk)
    return session


def replayed(session: AgentSession) -> ReplayRun:
    """A finished replay whose summary copied the customer's CPF, as a model's summary of this
    chat does (the offline extractive one leaves it out): a derived copy the index must find."""
    run = ReplayRun.objects.create(
        session=session,
        policy={"soft_limit": 20_300, "hard_limit": 20_600, "keep_last": 1, "unit": "step"},
    )
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == ReplayStatus.DONE, run.error
    span = CompactionSpan.objects.filter(replay=run, stage="summarize").order_by("seq").first()
    assert span is not None, "the replay summarized"
    span.summary = f"{span.summary}\nCliente: CPF {CPF}."
    span.save(update_fields=["summary"])
    subjects.subject_index_replay(run=run)
    return run


def test_the_search_of_every_table_sees_each_form_of_the_cpf_before_an_erasure() -> None:
    # The check below is only worth something if it can fail: before erasure it finds copies.
    project = make_project()
    session = support_chat(project)
    replayed(session)
    hits = cells_holding(CPF_FORMS)
    assert any("traces_message.content" in hit for hit in hits)
    assert any("compaction_compactionspan.summary" in hit for hit in hits)
    assert any("compactionevent.summary" in hit for hit in hits)


def test_find_subject_reports_every_place_through_the_keyed_index() -> None:
    project = make_project()
    session = support_chat(project)
    run = replayed(session)
    other = make_session(project, messages=[{"seq": 0, "role": "user", "content": "no data"}])

    for form in CPF_FORMS:
        report = subjects.subject_find(
            project=project, subject=subjects.subject_parse(identifier=form)
        )
        assert [s["external_id"] for s in report["sessions"]] == [SUPPORT]
        assert report["kind"] == "cpf"
        assert report["masked"] == "*********79"
    wheres = {place["where"] for place in report["sessions"][0]["places"]}
    assert {"message", "summary", "span", "replay"} <= wheres
    assert report["sessions"][0]["replays"] == [run.pk]
    found = report["sessions"][0]["findings"]
    assert {f["where"] for f in found} == {"message", "summary"}
    assert all(f["kind"] == "cpf" and f["masked"].endswith("79") for f in found)
    excerpts = [e for p in report["sessions"][0]["places"] for e in p["excerpts"]]
    assert excerpts
    assert not any(form in e for e in excerpts for form in CPF_FORMS)
    assert other.pk not in [s["session_id"] for s in report["sessions"]]


def test_the_index_holds_keyed_hashes_never_the_identifier() -> None:
    project = make_project()
    support_chat(project)
    subject = subjects.subject_parse(identifier=CPF)
    tokens = SubjectToken.objects.filter(project=project, digest=subject.digest)
    assert tokens.exists()
    assert not any(CPF_FORMS[1] in t.digest for t in SubjectToken.objects.all())
    # The same identifier in another project is found only there.
    assert not subjects.subject_find(project=make_project(), subject=subject)["sessions"]


def test_erase_subject_leaves_no_copy_of_the_identifier_in_any_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = make_project()
    session = support_chat(project)
    run = replayed(session)
    reviewer = make_user(project=project, role="privacy_reviewer")

    queued: list[tuple[str, int]] = []
    monkeypatch.setattr(tasks.session_analyse, "delay", lambda pk: queued.append(("analyse", pk)))
    monkeypatch.setattr(tasks.replay_run_execute, "delay", lambda pk: queued.append(("replay", pk)))
    request = subjects.subject_erase(
        project=project,
        subject=subjects.subject_parse(identifier="530 582 439 79"),
        by=reviewer,
        reason="Titular pediu exclusão (LGPD art. 18, VI)",
    )

    assert cells_holding(CPF_FORMS) == []
    assert request.action == SubjectAction.ANONYMIZE
    assert request.result["rows"]["findings_removed"] >= 2
    assert not Finding.objects.filter(session=session, kind="cpf").exists()
    assert request.result["sessions"] == [session.pk]
    assert sorted(queued) == [("analyse", session.pk), ("replay", run.pk)]
    # The raw history kept everything else: the e-mail was not asked for.
    message = Message.objects.get(session=session, seq=2)
    assert "[cpf erased]" in str(message.content)
    assert EMAIL in str(message.content)

    # Derived data rebuilt from the anonymized history holds no copy either.
    pipeline.session_analyse(session_id=session.pk)
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == ReplayStatus.DONE
    assert CompactionSpan.objects.filter(replay=run).exists()
    assert cells_holding(CPF_FORMS) == []
    report = subjects.subject_find(project=project, subject=subjects.subject_parse(identifier=CPF))
    assert report["sessions"] == []
    assert SubjectRequest.objects.filter(project=project).count() == 1
    event = AuditEvent.objects.get(project=project)
    assert (event.action, event.actor, event.target) == (
        "erasure",
        reviewer,
        "subject:cpf *********79",
    )
    assert event.reason == "Titular pediu exclusão (LGPD art. 18, VI)"


def test_erase_subject_can_delete_the_sessions_instead() -> None:
    project = make_project()
    session = support_chat(project)
    kept = make_session(project, messages=[{"seq": 0, "role": "user", "content": "sem dados"}])
    request = subjects.subject_erase(
        project=project,
        subject=subjects.subject_parse(identifier=EMAIL.upper()),
        by=None,
        reason="pedido do titular",
        delete_sessions=True,
    )
    assert not AgentSession.objects.filter(pk=session.pk).exists()
    assert AgentSession.objects.filter(pk=kept.pk).exists()
    assert request.action == SubjectAction.DELETE
    assert cells_holding([EMAIL, *CPF_FORMS]) == []


def test_an_identifier_that_is_no_cpf_email_or_phone_is_refused() -> None:
    with pytest.raises(BadRequest, match="identifier: not a valid CPF"):
        subjects.subject_parse(identifier="530.582.439-78")  # wrong check digit
    with pytest.raises(BadRequest, match="identifier"):
        subjects.subject_parse(identifier="   ")


def test_an_erasure_needs_a_reason() -> None:
    project = make_project()
    with pytest.raises(BadRequest, match="reason: required"):
        subjects.subject_erase(
            project=project, subject=subjects.subject_parse(identifier=CPF), by=None, reason=" "
        )


# --- commands ------------------------------------------------------------------------------


def test_find_subject_command_prints_json_and_records_an_export() -> None:
    project = make_project(name="loja")
    support_chat(project)
    out = StringIO()
    call_command("find_subject", "loja", CPF, stdout=out)
    report = json.loads(out.getvalue())
    assert report["kind"] == "cpf"
    assert [s["external_id"] for s in report["sessions"]] == [SUPPORT]
    assert CPF not in out.getvalue()
    assert CPF_FORMS[1] not in out.getvalue()
    assert SubjectRequest.objects.get(project=project).action == SubjectAction.EXPORT
    assert AuditEvent.objects.get(project=project).action == "export"


def test_erase_subject_command_anonymizes_and_says_what_it_did() -> None:
    project = make_project(name="loja")
    session = support_chat(project)
    out = StringIO()
    call_command("erase_subject", "loja", EMAIL, "--reason", "pedido do titular", stdout=out)
    done = json.loads(out.getvalue())
    assert done["action"] == "anonymize"
    assert done["sessions"] == [session.pk]
    assert done["rows"]["traces.Message"] >= 1
    assert cells_holding([EMAIL]) == []


def test_subject_commands_explain_bad_input() -> None:
    make_project(name="loja")
    with pytest.raises(CommandError, match="project 'nope' not found"):
        call_command("find_subject", "nope", CPF)
    with pytest.raises(CommandError, match="identifier: not a valid CPF"):
        call_command("find_subject", "loja", "12345")
    with pytest.raises(CommandError, match="reason: required"):
        call_command("erase_subject", "loja", CPF, "--reason", " ")


# --- pages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("role", [Role.VIEWER, Role.ENGINEER])
def test_subject_pages_need_the_privacy_reviewer_role(client: Client, role: str) -> None:
    project = make_project()
    support_chat(project)
    client.force_login(make_user(project=project, role=role))
    assert client.get("/privacy/subjects/").status_code == 403
    response = client.post(
        "/privacy/subjects/",
        {"project": project.pk, "identifier": CPF, "reason": "x", "action": "erase"},
    )
    assert response.status_code == 403
    assert CPF in str(Message.objects.get(session__project=project, seq=2).content)


def test_a_reviewer_cannot_reach_another_projects_subjects(client: Client) -> None:
    mine, theirs = make_project(), make_project()
    support_chat(theirs)
    client.force_login(make_user(project=mine, role=Role.PRIVACY_REVIEWER))
    response = client.post(
        "/privacy/subjects/", {"project": theirs.pk, "identifier": CPF, "action": "find"}
    )
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert SUPPORT not in response.content.decode()


def test_a_reviewer_finds_exports_and_erases_a_subject(client: Client) -> None:
    project = make_project()
    support_chat(project)
    reviewer = make_user(project=project, role=Role.PRIVACY_REVIEWER)
    client.force_login(reviewer)
    assert client.get("/privacy/subjects/").status_code == 200

    found = client.post(
        "/privacy/subjects/", {"project": project.pk, "identifier": CPF, "action": "find"}
    ).content.decode()
    assert SUPPORT in found
    assert "*********79" in found
    assert "Erase…" in found
    assert CPF_FORMS[1] not in found.replace(f'value="{CPF}"', "")

    refused = client.post(
        "/privacy/subjects/", {"project": project.pk, "identifier": CPF, "action": "export"}
    )
    assert "required to export" in refused.content.decode()
    export = client.post(
        "/privacy/subjects/",
        {"project": project.pk, "identifier": CPF, "action": "export", "reason": "art. 18 II"},
    )
    assert export["Content-Type"] == "application/json"
    assert json.loads(export.content)["sessions"][0]["external_id"] == SUPPORT

    asked = {"project": project.pk, "identifier": CPF, "action": "erase", "reason": "art. 18 VI"}
    too_short = client.post("/privacy/subjects/", {**asked, "reason": "lgpd"}).content.decode()
    assert "required to erase, at least 10 characters" in too_short
    preview = client.post(
        "/privacy/subjects/", {**asked, "reason": "art. 18 VI, pedido 7"}
    ).content.decode()
    assert "Erase CPF *********79 from" in preview
    assert "in 1 session (raw messages" in preview
    assert 'name="confirm" value="yes"' in preview
    assert CPF in str(Message.objects.get(session__project=project, seq=2).content)  # not yet
    erased = client.post(
        "/privacy/subjects/", {**asked, "reason": "art. 18 VI, pedido 7", "confirm": "yes"}
    ).content.decode()
    assert "Request" in erased
    assert "anonymize" in erased
    assert cells_holding(CPF_FORMS) == []
    actions = list(SubjectRequest.objects.values_list("action", "requested_by"))
    assert sorted(actions) == [
        (SubjectAction.ANONYMIZE, reviewer.pk),
        (SubjectAction.EXPORT, reviewer.pk),
    ]


def test_the_subject_page_escapes_what_it_shows(client: Client) -> None:
    project = make_project()
    payload = '<script>alert("x")</script>'
    tag = '<img src=x onerror=alert("x")>'  # an id holds no '/', so no closing tag
    make_session(
        project,
        external_id=f"run-{tag}",
        messages=[{"seq": 0, "role": "user", "content": f"{payload} CPF {CPF} {payload}"}],
    )
    pipeline.session_analyse(session_id=AgentSession.objects.get(project=project).pk)
    client.force_login(make_user(project=project, role=Role.PRIVACY_REVIEWER))
    body = client.post(
        "/privacy/subjects/", {"project": project.pk, "identifier": CPF, "action": "find"}
    ).content.decode()
    assert "&lt;script&gt;" in body
    assert payload not in body
    assert tag not in body


def test_the_index_scans_each_raw_message_once(monkeypatch: pytest.MonkeyPatch, settings) -> None:
    settings.ANALYSIS_IN_CHILD = False  # the scans are counted in this process
    project = make_project()
    first = f"Meu CPF é {CPF}"
    session = make_session(project, messages=[{"seq": 0, "role": "user", "content": first}])
    pipeline.session_analyse(session_id=session.pk)
    scanned: list[str] = []

    class CountingMemo(pii.ScanMemo):
        """The detector as the analysis pass uses it for the index and the findings, counting
        the texts it is asked to scan (other steps, such as the masked session title, scan on
        their own)."""

        def scan(self, text: str) -> list[pii.Detection]:
            scanned.append(text)
            return super().scan(text)

    monkeypatch.setattr(pii, "ScanMemo", CountingMemo)
    events_ingest(
        project=project,
        external_id=session.external_id,
        batch=EventBatch.model_validate(
            {"messages": [{"seq": 1, "role": "assistant", "content": f"Anotei {EMAIL}"}]}
        ),
    )
    pipeline.session_analyse(session_id=session.pk)
    assert f"Anotei {EMAIL}" in scanned
    assert first not in scanned
    places = set(SubjectToken.objects.filter(session=session).values_list("kind", "where", "seq"))
    assert places == {("cpf", "message", 0), ("email", "message", 1)}


def test_a_replay_running_during_an_erasure_writes_nothing_and_runs_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = make_project()
    session = support_chat(project)
    run = ReplayRun.objects.create(
        session=session,
        policy={"soft_limit": 20_300, "hard_limit": 20_600, "keep_last": 1, "unit": "step"},
    )
    queued: list[int] = []
    monkeypatch.setattr(tasks.replay_run_execute, "delay", queued.append)
    real_replay = pipeline.session_replay.replay_session

    def erase_mid_replay(*args: object, **kwargs: object) -> object:
        outcome = real_replay(*args, **kwargs)  # computed from the history before erasure
        subjects.subject_erase(
            project=project, subject=subjects.subject_parse(identifier=CPF), by=None, reason="r"
        )
        return outcome

    monkeypatch.setattr(pipeline.session_replay, "replay_session", erase_mid_replay)
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == ReplayStatus.QUEUED
    assert queued == [run.pk]
    assert not CompactionSpan.objects.filter(replay=run).exists()
    assert cells_holding(CPF_FORMS) == []


def test_the_export_lists_session_ids_masked_like_every_other_page() -> None:
    # Before: the reviewer's export listed the session id raw, the e-mail in it with it.
    project = make_project(name="loja")
    named = f"ticket-{EMAIL}"
    example = example_data.example_session(SUPPORT)
    for batch in example.batches:
        events_ingest(project=project, external_id=named, batch=EventBatch.model_validate(batch))
    pipeline.session_analyse(session_id=AgentSession.objects.get(external_id=named).pk)
    report = subjects.subject_export(
        project=project, subject=subjects.subject_parse(identifier=CPF), by=None, reason="art. 18"
    )
    assert [s["external_id"] for s in report["sessions"]] == [masking.text_mask(named)]
    assert EMAIL not in json.dumps(report)


@pytest.mark.parametrize("command", ["erase_subject", "find_subject"])
def test_command_line_requests_are_audited_with_their_operator(command: str) -> None:
    # Before: audited as "system", with no name on the request.
    project = make_project(name="loja")
    support_chat(project)
    call_command(
        command, "loja", CPF, "--reason", "pedido 7", "--operator", "ana", stdout=StringIO()
    )
    assert SubjectRequest.objects.get(project=project).requested_by_name == "cli:ana"
    audit = AuditEvent.objects.filter(project=project, action__in=["erasure", "export"]).get()
    assert audit.actor_name == "cli:ana"
    call_command(command, "loja", CPF, "--reason", "pedido 8", stdout=StringIO())
    names = set(AuditEvent.objects.values_list("actor_name", flat=True))
    assert f"cli:{getpass.getuser()}" in names
    assert "system" not in names


def test_the_erasure_result_is_said_in_words_not_model_names(client: Client) -> None:
    project = make_project()
    support_chat(project)
    client.force_login(make_user(project=project, role=Role.PRIVACY_REVIEWER))
    asked = {"project": project.pk, "identifier": CPF, "action": "erase"}
    client.post("/privacy/subjects/", {**asked, "reason": "art. 18 VI, pedido 7", "confirm": "yes"})
    request = SubjectRequest.objects.get(project=project)
    assert "traces.Message" in request.result["rows"]  # stored by name, for the audit
    page = client.get("/privacy/subjects/").content.decode()
    [cells] = re.findall(r"<tr><td>\d+</td>.*?</tr>", page, re.DOTALL)
    result = re.findall(r"<td>([^<]*)</td></tr>", cells)[-1]
    messages = request.result["rows"]["traces.Message"]
    assert f"messages: {messages}" in result
    assert "sessions anonymized: 1" in result
    assert not re.search(r"\w\.\w|_", result), result  # no "traces.Message", no "x_y"
    assert ": 0" not in result

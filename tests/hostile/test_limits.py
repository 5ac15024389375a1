"""Every text limit (sessions/limits.py ``TEXT_LIMITS``) walked through every door that takes
the field, at the limit and one past it.

At the limit the value is stored as sent and, for trace fields, the analysis that follows
succeeds; one past it is a 4xx naming the field (on OTLP a partial-success rejection of that
span, its good neighbour stored; on a page the form's error), and nothing is stored half-way.
A limit added to ``TEXT_LIMITS`` without a door here fails ``test_every_limit_has_a_door``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.messages import get_messages
from django.core.management import CommandError, call_command
from django.test import Client

from alerts.models import Alert, AlertEvent
from compaction import pipeline
from compaction.models import AnalysisStatus, CompactionSpan, Experiment, SessionAnalysis
from privacy.models import AuditEvent, Finding
from sessions.limits import TEXT_LIMITS
from sessions.models import AgentSession, ApiKey, CompactionEvent, Message, Probe, Project, Role
from team.models import Comment, SavedFilter, VerdictMark
from tests.alerts.test_alerts import THREE, analysed_session
from tests.factories import make_key, make_project, make_session, make_user, wire_message
from tests.importers.test_otlp import call, export, text

pytestmark = pytest.mark.django_db

CPF = "530.582.439-79"


def value(length: int) -> str:
    """``length`` characters, some of them two bytes in UTF-8: a limit counts characters."""
    return ("limé-" * (length // 5 + 1))[:length]


@dataclass
class Ctx:
    client: Client
    project: Project
    key: str
    sessions: list[int] = field(default_factory=list)  # to analyse after an accepted value

    def api(self, method: str, path: str, body: Any = None) -> Any:
        send = getattr(self.client, method)
        data = json.dumps(body) if body is not None else None
        kwargs: dict[str, Any] = {"headers": {"Authorization": f"Bearer {self.key}"}}
        if data is not None:
            kwargs |= {"data": data, "content_type": "application/json"}
        return send(path, **kwargs)

    def login(self, role: str = Role.ADMIN) -> None:
        self.client.force_login(make_user(project=self.project, role=role))


@dataclass
class Outcome:
    status: int
    refused: str | None  # what the answer says is wrong; None when accepted
    stored: bool


def _api(response: Any) -> str | None:
    return response.json().get("error") if 400 <= response.status_code < 500 else None


def _flash(response: Any) -> str | None:
    errors = [m.message for m in get_messages(response.wsgi_request) if m.level_tag == "error"]
    return "; ".join(errors) or None


# --- the doors, one function each: (ctx, value) -> Outcome -------------------------------


def events(ctx: Ctx, external_id: str = "run-1", **batch: Any) -> Outcome:
    batch.setdefault("messages", [wire_message(0), wire_message(1, "assistant")])
    response = ctx.api("post", f"/api/v1/sessions/{quote(external_id, safe='')}/events", batch)
    session = AgentSession.objects.filter(external_id=external_id).first()
    if session is not None:
        ctx.sessions.append(session.pk)
    return Outcome(response.status_code, _api(response), session is not None)


def events_external_id(ctx: Ctx, v: str) -> Outcome:
    return events(ctx, v)


def events_agent(ctx: Ctx, v: str) -> Outcome:
    out = events(ctx, session={"agent": v})
    out.stored = AgentSession.objects.filter(agent=v).exists()
    return out


def events_model(ctx: Ctx, v: str) -> Outcome:
    out = events(ctx, session={"model": v})
    out.stored = AgentSession.objects.filter(model=v).exists()
    return out


def events_message_model(ctx: Ctx, v: str) -> Outcome:
    messages = [wire_message(0), wire_message(1, "assistant", model=v)]
    out = events(ctx, messages=messages)
    out.stored = Message.objects.filter(model=v).exists()
    return out


def events_strategy(ctx: Ctx, v: str) -> Outcome:
    compaction = {"seq": 1, "strategy": v, "summary": "Goal: keep going.", "tokens_before": 900}
    out = events(ctx, compactions=[compaction])
    out.stored = CompactionEvent.objects.filter(strategy=v).exists()
    return out


def events_probe_text(ctx: Ctx, v: str) -> Outcome:
    out = events(ctx, probes=[{"seq": 0, "text": v}])
    out.stored = Probe.objects.filter(text=v).exists()
    return out


def events_probe_check(ctx: Ctx, v: str) -> Outcome:
    out = events(ctx, probes=[{"seq": 0, "text": "do not change the API", "check": v}])
    out.stored = Probe.objects.filter(check_hint=v).exists()
    return out


def _otlp(ctx: Ctx, **attributes: Any) -> Outcome:
    """A span carrying ``attributes`` beside a good neighbour in another conversation."""
    good = call("00000000000000a1", [text("user", "Migrate billing.")], "On it.", start=1, tokens=9)
    odd = call("00000000000000a2", [text("user", "Go on.")], "Done.", start=2, tokens=11)
    for item in odd["attributes"]:
        if item["key"] in attributes:
            item["value"] = {"stringValue": attributes.pop(item["key"])}
    odd["attributes"] += [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]
    for item in good["attributes"]:
        if item["key"] == "gen_ai.conversation.id":
            item["value"] = {"stringValue": "good-neighbour"}
    response = ctx.api("post", "/v1/traces", export(good, odd))
    assert response.status_code == 200, response.content
    neighbour = AgentSession.objects.get(external_id="good-neighbour")
    assert neighbour.message_count == 2  # stored whatever happened to the other span
    partial = response.json().get("partialSuccess", {})
    rejected = int(partial.get("rejectedSpans", 0))
    odd_stored = AgentSession.objects.exclude(pk=neighbour.pk).first()
    ctx.sessions += [neighbour.pk] + ([odd_stored.pk] if odd_stored else [])
    refused = partial.get("errorMessage") if rejected else None
    assert rejected in (0, 1), partial
    return Outcome(400 if rejected else 200, refused, odd_stored is not None)


def otlp_conversation_id(ctx: Ctx, v: str) -> Outcome:
    out = _otlp(ctx, **{"gen_ai.conversation.id": v})
    out.stored = AgentSession.objects.filter(external_id=v).exists()
    return out


def otlp_agent(ctx: Ctx, v: str) -> Outcome:
    out = _otlp(ctx, **{"gen_ai.agent.name": v})
    out.stored = AgentSession.objects.filter(agent=v).exists()
    return out


def otlp_model(ctx: Ctx, v: str) -> Outcome:
    out = _otlp(ctx, **{"gen_ai.request.model": v})
    out.stored = AgentSession.objects.filter(model=v).exists()
    return out


def claude_code_session_id(ctx: Ctx, v: str) -> Outcome:
    lines = [
        {
            "type": "user",
            "sessionId": v,
            "uuid": "u1",
            "timestamp": "2026-11-02T10:00:00Z",
            "message": {"role": "user", "content": "Migrate billing."},
        },
        {
            "type": "assistant",
            "sessionId": v,
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-11-02T10:00:05Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "content": [{"type": "text", "text": "On it."}],
                "usage": {"input_tokens": 10, "output_tokens": 3},
            },
        },
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines)
    response = ctx.client.post(
        "/api/v1/imports/claude-code?name=t.jsonl",
        data=body,
        content_type="application/x-ndjson",
        headers={"Authorization": f"Bearer {ctx.key}"},
    )
    session = AgentSession.objects.filter(external_id=v).first()
    if session is not None:
        ctx.sessions.append(session.pk)
    return Outcome(response.status_code, _api(response), session is not None)


def experiment_session(ctx: Ctx, v: str) -> Outcome:
    if len(v) <= TEXT_LIMITS["external_id"]:
        make_session(ctx.project, external_id=v)
    response = ctx.api("post", "/api/v1/experiments", {"policies": [{}], "sessions": [v]})
    return Outcome(response.status_code, _api(response), Experiment.objects.exists())


def experiment_name(ctx: Ctx, v: str) -> Outcome:
    make_session(ctx.project, external_id="exp-run")
    response = ctx.api("post", "/api/v1/experiments", {"name": v, "policies": [{}]})
    return Outcome(response.status_code, _api(response), Experiment.objects.filter(name=v).exists())


def project_name(ctx: Ctx, v: str) -> Outcome:
    try:
        call_command("createproject", v, stdout=io.StringIO())
    except CommandError as exc:
        return Outcome(400, f"name: {exc}" if not str(exc).startswith("name") else str(exc), False)
    return Outcome(200, None, Project.objects.filter(name=v).exists())


def key_name(ctx: Ctx, v: str) -> Outcome:
    ctx.login()
    response = ctx.client.post(f"/projects/{ctx.project.pk}/keys/", {"name": v})
    return Outcome(response.status_code, _flash(response), ApiKey.objects.filter(name=v).exists())


def delete_reason_api(ctx: Ctx, v: str) -> Outcome:
    make_session(ctx.project, external_id="doomed")
    response = ctx.api("delete", f"/api/v1/sessions/doomed?reason={quote(v)}")
    gone = not AgentSession.objects.filter(external_id="doomed").exists()
    stored = gone and AuditEvent.objects.filter(reason=v).exists()
    return Outcome(response.status_code, _api(response), stored)


def delete_reason_page(ctx: Ctx, v: str) -> Outcome:
    session = make_session(ctx.project, external_id="doomed")
    ctx.login()
    response = ctx.client.post(
        f"/sessions/{session.pk}/delete/", {"confirm": "doomed", "reason": v}
    )
    errors = response.context["form"].errors.get("reason") if response.status_code == 200 else None
    gone = not AgentSession.objects.filter(pk=session.pk).exists()
    stored = gone and AuditEvent.objects.filter(reason=v).exists()
    return Outcome(400 if errors else response.status_code, errors and "reason", stored)


def search_q(ctx: Ctx, v: str) -> Outcome:
    response = ctx.api("get", f"/api/v1/search?q={quote(v)}")
    return Outcome(response.status_code, _api(response), response.status_code == 200)


def _alert(ctx: Ctx) -> Alert:
    session = analysed_session(project=ctx.project, compactions=THREE)
    return Alert.objects.get(session=session)


def resolve_reason_api(ctx: Ctx, v: str) -> Outcome:
    alert = _alert(ctx)
    response = ctx.api("post", f"/api/v1/alerts/{alert.pk}/resolve", {"reason": v})
    return Outcome(
        response.status_code, _api(response), Alert.objects.filter(resolution=v).exists()
    )


def resolve_reason_page(ctx: Ctx, v: str) -> Outcome:
    alert = _alert(ctx)
    ctx.login()
    response = ctx.client.post(f"/alerts/{alert.pk}/resolve/", {"reason": v})
    refused = _flash(response)
    return Outcome(
        400 if refused else response.status_code,
        refused,
        Alert.objects.filter(resolution=v).exists(),
    )


def alert_comment(ctx: Ctx, v: str) -> Outcome:
    alert = _alert(ctx)
    ctx.login()
    response = ctx.client.post(f"/alerts/{alert.pk}/comment/", {"text": v})
    refused = _flash(response)
    stored = AlertEvent.objects.filter(comment=v).exists()
    return Outcome(400 if refused else response.status_code, refused, stored)


def comment_body(ctx: Ctx, v: str) -> Outcome:
    session = make_session(ctx.project)
    ctx.login()
    response = ctx.client.post(f"/sessions/{session.pk}/comments/", {"body": v})
    refused = _flash(response)
    stored = Comment.objects.filter(body=v).exists()
    return Outcome(400 if refused else response.status_code, refused, stored)


def filter_name(ctx: Ctx, v: str) -> Outcome:
    ctx.login()
    response = ctx.client.post("/filters/", {"name": v, "query": "agent=billing"})
    refused = _flash(response)
    stored = SavedFilter.objects.filter(name=v).exists()
    return Outcome(400 if refused else response.status_code, refused, stored)


def feedback_note(ctx: Ctx, v: str) -> Outcome:
    alert = _alert(ctx)
    ctx.login(Role.ENGINEER)
    response = ctx.client.post(f"/feedback/alerts/{alert.pk}/", {"mark": "wrong", "note": v})
    refused = _flash(response)
    stored = VerdictMark.objects.filter(note=v).exists()
    return Outcome(400 if refused else response.status_code, refused, stored)


def _personal_session(ctx: Ctx) -> AgentSession:
    session = make_session(ctx.project, messages=[wire_message(0, content=f"Meu CPF é {CPF}.")])
    pipeline.session_analyse(session_id=session.pk)
    return session


def reveal_reason(ctx: Ctx, v: str) -> Outcome:
    session = _personal_session(ctx)
    ctx.login(Role.PRIVACY_REVIEWER)
    target = f"message:{session.pk}:0:0"
    response = ctx.client.post("/reveal/", {"target": target, "index": 0, "reason": v})
    refused = response.context.get("error") if response.status_code >= 400 else None
    stored = AuditEvent.objects.filter(reason=v).exists()
    return Outcome(response.status_code, refused, stored)


def redact_reason(ctx: Ctx, v: str) -> Outcome:
    session = _personal_session(ctx)
    finding = Finding.objects.get(session=session, kind="cpf")
    ctx.login(Role.PRIVACY_REVIEWER)
    response = ctx.client.post(f"/privacy/findings/{finding.pk}/redact/", {"reason": v})
    refused = _flash(response)
    stored = AuditEvent.objects.filter(reason=v).exists()
    return Outcome(400 if refused else response.status_code, refused, stored)


def _subject(ctx: Ctx, identifier: str, reason: str) -> tuple[Any, Any]:
    ctx.login(Role.PRIVACY_REVIEWER)
    form = {"project": ctx.project.pk, "identifier": identifier, "reason": reason}
    response = ctx.client.post("/privacy/subjects/", {**form, "action": "export"})
    errors = response.context["form"].errors if response.context else {}
    return response, errors


def subject_identifier(ctx: Ctx, v: str) -> Outcome:
    # An identifier is never stored; at its limit the form reads it (and finds no CPF in it).
    response, errors = _subject(ctx, v, "")
    length = [e for e in errors.get("identifier", []) if "characters" in e]
    refused = f"identifier: {length[0]}" if length else None
    return Outcome(400 if length else response.status_code, refused, not length)


def subject_reason(ctx: Ctx, v: str) -> Outcome:
    _personal_session(ctx)
    response, errors = _subject(ctx, CPF, v)
    from privacy.models import SubjectRequest

    refused = "; ".join(errors.get("reason", [])) or None
    stored = SubjectRequest.objects.filter(reason=v).exists()
    return Outcome(400 if refused else response.status_code, refused and "reason", stored)


@dataclass(frozen=True)
class Door:
    field: str  # the TEXT_LIMITS key
    send: Callable[[Ctx, str], Outcome]
    names: str  # what a refusal must say: the field as the door calls it
    analysed: bool = False  # trace data: the analysis must then succeed


DOORS = [
    Door("external_id", events_external_id, "external_id", analysed=True),
    Door("external_id", otlp_conversation_id, "gen_ai.conversation.id", analysed=True),
    Door("external_id", claude_code_session_id, "external_id", analysed=True),
    Door("external_id", experiment_session, "sessions[0]"),
    Door("session.agent", events_agent, "session.agent", analysed=True),
    Door("session.agent", otlp_agent, "gen_ai.agent.name", analysed=True),
    Door("session.model", events_model, "session.model", analysed=True),
    Door("session.model", otlp_model, "gen_ai.request.model", analysed=True),
    Door("messages[0].model", events_message_model, "messages[1].model", analysed=True),
    Door("compactions[0].strategy", events_strategy, "compactions[0].strategy", analysed=True),
    Door("probes[0].text", events_probe_text, "probes[0].text", analysed=True),
    Door("probes[0].check", events_probe_check, "probes[0].check", analysed=True),
    Door("project.name", project_name, "name"),
    Door("key.name", key_name, "name"),
    Door("delete.reason", delete_reason_api, "reason"),
    Door("delete.reason", delete_reason_page, "reason"),
    Door("search.q", search_q, "q"),
    Door("experiment.name", experiment_name, "name"),
    Door("alert.resolve.reason", resolve_reason_api, "reason"),
    Door("alert.resolve.reason", resolve_reason_page, "reason"),
    Door("alert.comment", alert_comment, "comment"),
    Door("comment.body", comment_body, "body"),
    Door("filter.name", filter_name, "name"),
    Door("feedback.note", feedback_note, "note"),
    Door("reveal.reason", reveal_reason, "reason"),
    Door("redact.reason", redact_reason, "reason"),
    Door("subject.identifier", subject_identifier, "identifier"),
    Door("subject.reason", subject_reason, "reason"),
]
IDS = [f"{d.field}-via-{d.send.__name__}" for d in DOORS]


@pytest.fixture
def ctx(client: Client) -> Ctx:
    project = make_project(name="limits")
    return Ctx(client=client, project=project, key=make_key(project))


def test_every_limit_has_a_door() -> None:
    assert {d.field for d in DOORS} == set(TEXT_LIMITS)


@pytest.mark.parametrize("door", DOORS, ids=IDS)
def test_a_value_at_its_limit_is_stored_and_analysed(ctx: Ctx, door: Door) -> None:
    outcome = door.send(ctx, value(TEXT_LIMITS[door.field]))
    assert outcome.refused is None, outcome
    assert outcome.status < 400, outcome
    assert outcome.stored, outcome
    if door.analysed:
        assert ctx.sessions
        for session_id in ctx.sessions:
            pipeline.session_analyse(session_id=session_id)
            analysis = SessionAnalysis.objects.get(session_id=session_id)
            assert analysis.status == AnalysisStatus.DONE, analysis.error
        if door.send is events_strategy:
            assert CompactionSpan.objects.filter(stage=value(TEXT_LIMITS[door.field])).exists()


@pytest.mark.parametrize("door", DOORS, ids=IDS)
def test_one_past_its_limit_is_refused_naming_the_field(ctx: Ctx, door: Door) -> None:
    limit = TEXT_LIMITS[door.field]
    outcome = door.send(ctx, value(limit + 1))
    assert 400 <= outcome.status < 500, outcome
    assert outcome.refused is not None, outcome
    assert door.names in outcome.refused, outcome
    assert not outcome.stored, outcome
    if door.analysed:  # nothing half-way: not the session, not one of its messages
        assert not Message.objects.exclude(session__external_id="good-neighbour").exists()

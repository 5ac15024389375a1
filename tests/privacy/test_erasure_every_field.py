"""Erasure reaches everything a person can type: every free-text field (CharField, TextField,
JSONField) of every model of the five apps is filled with a subject's CPF, the CPF is erased,
and a dump of the whole database holds no copy of it. A field is either filled here or listed
in ``subjects.ERASURE_EXEMPT`` with the reason it cannot hold one, so a text field added
later fails the first test until it is one or the other."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.apps import apps
from django.db import models
from django.utils import timezone

from privacy import erasure_scope, subjects
from privacy.models import AuditEvent, SubjectRequest
from sessions.models import AgentSession, Project
from team.models import VerdictMark
from tests.dump import cells_holding
from tests.factories import make_project, make_session, make_user
from tests.privacy.doors import CPF, RAW_FORMS

pytestmark = pytest.mark.django_db

DIGITS = "".join(c for c in CPF if c.isdigit())
SAID = f"Camila, CPF {CPF}"

# Every field the test fills with the CPF (and the erasure must reach).
FILLED = frozenset(
    {
        "traces.Project.name",
        "traces.ApiKey.name",
        "traces.AgentSession.external_id",
        "traces.AgentSession.agent",
        "traces.AgentSession.model",
        "traces.AgentSession.title",
        "traces.AgentSession.metadata",
        "traces.AgentSession.import_state",
        "traces.AgentSession.search_text",
        "traces.Message.content",
        "traces.Message.iterations",
        "traces.Message.model",
        "traces.Message.search_text",
        "traces.CompactionEvent.strategy",
        "traces.CompactionEvent.summary",
        "traces.CompactionEvent.kept",
        "traces.CompactionEvent.error",
        "traces.CompactionEvent.source",
        "traces.CompactionEvent.search_text",
        "traces.Probe.text",
        "traces.Probe.check_hint",
        "traces.Probe.source",
        "traces.ImportJob.report",
        "traces.ImportJob.error",
        "traces.ImportChunk.path",
        "traces.ImportChunk.shown",
        "compaction.SessionAnalysis.curve",
        "compaction.SessionAnalysis.sparkline",
        "compaction.SessionAnalysis.orphans",
        "compaction.SessionAnalysis.calibration",
        "compaction.SessionAnalysis.pii_clean_detector",
        "compaction.SessionAnalysis.error",
        "compaction.Experiment.name",
        "compaction.Experiment.policies",
        "compaction.Experiment.aggregate",
        "compaction.Experiment.error",
        "compaction.ReplayRun.policy",
        "compaction.ReplayRun.summarizer",
        "compaction.ReplayRun.curve",
        "compaction.ReplayRun.totals",
        "compaction.ReplayRun.evals",
        "compaction.ReplayRun.error",
        "compaction.CompactionSpan.stage",
        "compaction.CompactionSpan.trigger",
        "compaction.CompactionSpan.kept",
        "compaction.CompactionSpan.summary",
        "compaction.CompactionSpan.summary_sections",
        "compaction.CompactionSpan.retention",
        "compaction.CompactionSpan.rework",
        "compaction.CompactionSpan.failure_reason",
        "compaction.CompactionSpan.details",
        "alerts.AlertSettings.disabled_rules",
        "alerts.AlertSettings.email_recipients",
        "alerts.Alert.title",
        "alerts.Alert.evidence",
        "alerts.Alert.resolution",
        "alerts.AlertEvent.from_state",
        "alerts.AlertEvent.to_state",
        "alerts.AlertEvent.comment",
        "alerts.Webhook.url",
        "alerts.Webhook.rules",
        "alerts.WebhookDelivery.event",
        "alerts.WebhookDelivery.body",
        "alerts.WebhookDelivery.log",
        "alerts.WebhookDelivery.last_error",
        "privacy.Finding.kind",
        "privacy.Finding.path",
        "privacy.Finding.masked",
        "privacy.SubjectToken.kind",
        "privacy.SubjectRequest.kind",
        "privacy.SubjectRequest.masked",
        "privacy.SubjectRequest.reason",
        "privacy.SubjectRequest.requested_by_name",
        "privacy.SubjectRequest.result",
        "privacy.AuditEvent.actor_name",
        "privacy.AuditEvent.project_name",
        "privacy.AuditEvent.target",
        "privacy.AuditEvent.reason",
        "privacy.AuditEvent.detail",
        "team.Comment.body",
        "team.CommentRevision.body",
        "team.SavedFilter.name",
        "team.SavedFilter.query",
        "team.VerdictMark.fact",
        "team.VerdictMark.fact_kind",
        "team.VerdictMark.note",
    }
)
# Made by hand below (the session the trace is in), or holding no text.
_NOT_GENERIC = frozenset({"traces.Project", "traces.AgentSession", "traces.Membership"})


def _text_fields() -> dict[str, models.Field[Any, Any]]:
    return {
        f"{model._meta.label}.{f.name}": f
        for label in subjects.ERASURE_APPS
        for model in apps.get_app_config(label).get_models()
        for f in model._meta.concrete_fields
        if isinstance(f, models.CharField | models.TextField | models.JSONField)
    }


def test_every_text_field_is_filled_by_the_test_or_exempt_with_a_reason() -> None:
    fields = set(_text_fields())
    unlisted = fields - FILLED - set(subjects.ERASURE_EXEMPT)
    assert unlisted == set(), "new text fields: fill them below, or exempt them with a reason"
    assert FILLED & set(subjects.ERASURE_EXEMPT) == set()
    assert (FILLED | set(subjects.ERASURE_EXEMPT)) <= fields  # no stale entry
    assert all(len(reason) > 20 for reason in subjects.ERASURE_EXEMPT.values())


def _said(f: models.Field[Any, Any]) -> Any:
    if isinstance(f, models.JSONField):
        return [{"type": "text", "text": SAID}, {"note": SAID, "list": [DIGITS]}]
    if isinstance(f, models.URLField):
        return f"https://example.com/hook?cpf={DIGITS}"
    length = f.max_length or 10_000
    return SAID if len(SAID) <= length else DIGITS


def _value(f: models.Field[Any, Any], made: dict[type[models.Model], Any]) -> Any:
    if f.is_relation:
        if f.null and f.related_model not in (AgentSession, Project):
            return None
        return made.get(f.related_model)  # type: ignore[arg-type]
    if f.choices:
        return f.choices[0][0]  # type: ignore[index]
    if f.has_default():
        return f.get_default()
    if isinstance(f, models.JSONField):
        return {}
    if isinstance(f, models.UUIDField):
        return uuid.uuid4()
    if isinstance(f, models.BinaryField):
        return b"{}"
    if isinstance(f, models.CharField | models.TextField):
        return uuid.uuid4().hex[: f.max_length or 32]
    if isinstance(f, models.DateTimeField):
        return timezone.now()
    if isinstance(f, models.FloatField | models.DecimalField):
        return 0
    if isinstance(f, models.IntegerField):
        return 1
    if isinstance(f, models.BooleanField):
        return False
    return None


def _filled_graph() -> tuple[Project, AgentSession, AgentSession]:
    """One row of every model of the five apps, every listed field holding the CPF: trace
    rows on a session whose messages say it; people's rows on a session whose trace never
    held it (a note typed about a clean session is erased too)."""
    project = make_project(name=f"acme {DIGITS}")
    user = make_user(project=project)
    held = make_session(project, messages=[{"seq": 0, "role": "user", "content": SAID}])
    clean = make_session(project, messages=2)
    fields = _text_fields()
    made: dict[type[models.Model], Any] = {Project: project, type(user): user}
    lineage = set(erasure_scope.LINEAGE_MODELS)
    for label in subjects.ERASURE_APPS:
        for model in apps.get_app_config(label).get_models():
            name = model._meta.label
            if name in _NOT_GENERIC or not any(k.startswith(f"{name}.") for k in FILLED):
                continue
            made[AgentSession] = held if name in lineage else clean
            values = {
                f.name: _said(f) if f"{name}.{f.name}" in FILLED else _value(f, made)
                for f in model._meta.concrete_fields
                if not f.primary_key
            }
            row = model._default_manager.filter(
                pk__in=model._default_manager.filter(
                    **{k: v for k, v in values.items() if model._meta.get_field(k).is_relation}
                ).values("pk")[:1]
            ).first()
            if row is None or name not in lineage:
                row = model(**values)
            else:  # the analysis made one already: fill it
                for key, value in values.items():
                    setattr(row, key, value)
            row.save()
            made[model] = row
    for session in (held,):
        for f in AgentSession._meta.concrete_fields:
            if f"traces.AgentSession.{f.name}" in FILLED:
                setattr(session, f.name, _said(f))
        session.save()
    assert set(fields) >= FILLED
    return project, held, clean


def test_erasure_leaves_no_copy_of_a_cpf_typed_in_any_field() -> None:
    project, _held, clean = _filled_graph()
    before = cells_holding(RAW_FORMS["cpf"])
    assert any("verdictmark.note" in hit for hit in before)  # the check can fail
    reviewer = make_user(project=project)
    request = subjects.subject_erase(
        project=project,
        subject=subjects.subject_parse(identifier=CPF),
        by=reviewer,
        reason=f"pedido da titular {CPF}",
    )
    left = cells_holding(RAW_FORMS["cpf"])
    assert left == [], "\n".join(left)
    note = VerdictMark.objects.get(session=clean)
    assert note.note == "Camila, CPF [cpf erased]"
    # The request and its audit row keep the keyed hash, never the value.
    assert request.reason == "pedido da titular [cpf erased]"
    stored = SubjectRequest.objects.get(pk=request.pk)
    audit = AuditEvent.objects.filter(detail__subject_request=request.pk).get()
    assert (
        audit.detail["subject_digest"]
        == stored.digest
        == subjects.subject_parse(identifier=CPF).digest
    )

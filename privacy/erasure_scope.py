"""Which rows of a project an erasure walks, and which text fields it leaves with a reason.

Every model of the apps a person's words can reach is walked through its foreign keys to
the project, so a model added later is covered without a change here; a text field no
erasure touches is listed in ``ERASURE_EXEMPT`` with why no identifier can be in it (the
erasure test fails on a text field that is neither filled by it nor listed).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db import models
from django.db.models import Q

from sessions.models import Project
from team.models import SavedFilter

_SKIPPED_FIELDS = frozenset(
    {"content_hash", "text_hash", "hashed_key", "digest", "value_hash", "prefix", "fact_hash"}
)


def text_fields(model: type[models.Model]) -> list[models.Field[Any, Any]]:
    return [
        f
        for f in model._meta.concrete_fields
        if isinstance(f, models.CharField | models.TextField | models.JSONField)
        and not f.choices
        and f.name not in _SKIPPED_FIELDS
        and f"{model._meta.label}.{f.name}" not in ERASURE_EXEMPT
    ]


# The apps whose rows a person's words can reach; every one of their models with text is
# walked by an erasure (``_project_rows``), or listed in ``ERASURE_EXEMPT`` with the reason.
ERASURE_APPS = ("traces", "compaction", "alerts", "privacy", "team")
# Trace content and what is derived from it: erased through the lineage of each session that
# holds the subject (``sessions_holding`` reads the raw rows), never by walking the project.
LINEAGE_MODELS = frozenset(
    {
        "traces.AgentSession",
        "traces.Message",
        "traces.CompactionEvent",
        "traces.Probe",
        "compaction.SessionAnalysis",
        "compaction.ReplayRun",
        "compaction.CompactionSpan",
        "privacy.Finding",
        "privacy.SubjectToken",
    }
)
# Fields an erasure leaves as they are, each with why no identifier can be in it.
ERASURE_EXEMPT: dict[str, str] = {
    "traces.ApiKey.prefix": "the first characters of a random key, shown to tell keys apart",
    "traces.ApiKey.hashed_key": "a hash of a random key, never a person's words",
    "traces.Message.content_hash": "kept on purpose: a resent batch is then a duplicate",
    "traces.CompactionEvent.content_hash": "kept on purpose: a resent batch is a duplicate",
    "traces.Probe.text_hash": "a hash of the probe's text, never the text",
    "privacy.Finding.value_hash": "the keyed hash of the value (HMAC), never the value",
    "privacy.Finding.form_hash": "the keyed hash of the value as written (HMAC), never it",
    "privacy.SubjectToken.digest": "the keyed hash of the identifier (HMAC), the index's key",
    "privacy.KnownName.digest": "the keyed hash of a found name's word (HMAC), never the word",
    "privacy.SubjectRequest.digest": "the keyed hash of the subject: the request's one trace",
    "alerts.Webhook.secret_encrypted": "ciphertext of a random signing secret",
    "compaction.OutboxTask.args": "row ids and task arguments of queued work, no project",
    "compaction.OutboxTask.last_error": "an exception's class and message from the broker",
    "team.VerdictMark.fact_hash": "a hash of the fact's text, never the text",
    "compaction.OutboxTask.kind": "the name of a task, written by code",
    "privacy.Finding.confidence": "the detector's word (high, medium, low), written by code",
    "compaction.SessionAnalysis.pii_flagged_message_pks": "message ids (integers), by code",
}
# Fields with choices hold one of them: the services store nothing else.
ERASURE_EXEMPT.update(
    dict.fromkeys(
        (
            "traces.Membership.role",
            "traces.Message.role",
            "traces.CompactionEvent.trigger",
            "compaction.SessionAnalysis.status",
            "compaction.Experiment.status",
            "compaction.ReplayRun.status",
            "compaction.CompactionSpan.origin",
            "alerts.Alert.rule",
            "alerts.Alert.severity",
            "alerts.Alert.state",
            "alerts.AlertEvent.kind",
            "alerts.Webhook.format",
            "alerts.WebhookDelivery.status",
            "privacy.Finding.where",
            "privacy.Finding.level",
            "privacy.Finding.status",
            "privacy.SubjectToken.where",
            "privacy.SubjectRequest.action",
            "privacy.AuditEvent.action",
            "team.VerdictMark.kind",
            "team.VerdictMark.mark",
            "team.VerdictMark.should_be",
            "traces.ImportJob.status",
            "privacy.Finding.summary_delta",
            "privacy.KnownName.part",
        ),
        "one of the field's choices: the services store nothing else",
    )
)


def project_paths(model: type[models.Model], depth: int = 3) -> list[str]:
    """The lookups from ``model`` to its Project through foreign keys (``alert__project``)."""
    if model is Project:
        return ["pk"]
    found: list[str] = []
    for f in model._meta.concrete_fields:
        target = f.related_model if f.is_relation else None
        if not isinstance(target, type) or target is model:
            continue
        if target is Project:
            found.append(f.name)
        elif depth > 1 and target._meta.app_label in ERASURE_APPS:
            found += [f"{f.name}__{p}" for p in project_paths(target, depth - 1) if p != "pk"]
    return found


def walked_models() -> list[type[models.Model]]:
    from django.apps import apps

    return [
        m
        for label in ERASURE_APPS
        for m in apps.get_app_config(label).get_models()
        if m._meta.label not in LINEAGE_MODELS and text_fields(m)
    ]


def project_rows(project: Project) -> Iterator[models.Model]:
    """Every row of the project a person's words can be in, outside any session's lineage or
    inside one whose trace never held the subject: notes on verdicts, comments and their
    revisions, alert titles, resolutions and comments, webhook bodies and logs, the audit log
    and earlier requests' reasons, experiments, keys' names, alert recipients, and the saved
    filters of everyone who reads the project. Found by each model's foreign keys to the
    project, so a model added later is walked without a change here."""
    for model in walked_models():
        if model is SavedFilter:
            yield from SavedFilter.objects.filter(
                Q(user__memberships__project=project) | Q(user__is_superuser=True)
            ).distinct()
            continue
        paths = project_paths(model)
        if not paths:
            continue
        scope = Q()
        for path in paths:
            scope |= Q(**{path: project.pk if path == "pk" else project})
        yield from model._default_manager.filter(scope).distinct().order_by("pk").iterator(500)

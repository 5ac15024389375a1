"""Reads of derived data, scoped by project."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import reverse

from compaction.models import CompactionSpan, Experiment, ReplayRun, SessionAnalysis, SpanOrigin
from sessions.errors import NotFound
from sessions.models import AgentSession, CompactionEvent, Project


def analysis_for(session: AgentSession) -> SessionAnalysis | None:
    return SessionAnalysis.objects.filter(session=session).first()


def observed_compactions(session: AgentSession) -> QuerySet[CompactionEvent]:
    return (
        CompactionEvent.objects.filter(session=session).select_related("span").order_by("seq", "pk")
    )


def observed_spans(session: AgentSession) -> QuerySet[CompactionSpan]:
    return CompactionSpan.objects.filter(session=session, origin=SpanOrigin.OBSERVED).order_by(
        "index"
    )


def replay_get(*, projects: QuerySet[Project], pk: int) -> ReplayRun:
    run = (
        ReplayRun.objects.filter(session__project__in=projects, pk=pk)
        .select_related("session__project")
        .first()
    )
    if run is None:
        raise NotFound(f"replay {pk} not found")
    return run


def replay_spans(run: ReplayRun) -> QuerySet[CompactionSpan]:
    return CompactionSpan.objects.filter(replay=run).order_by("index")


def experiment_get(*, projects: QuerySet[Project], pk: int) -> Experiment:
    experiment = Experiment.objects.filter(project__in=projects, pk=pk).first()
    if experiment is None:
        raise NotFound(f"experiment {pk} not found")
    return experiment


def experiments_for(*, projects: QuerySet[Project]) -> QuerySet[Experiment]:
    return Experiment.objects.filter(project__in=projects).select_related("project")[:100]


def span_marker(span: CompactionSpan) -> dict[str, Any]:
    """What a chart marker shows of a span, with the link a click opens."""
    return {
        "seq": span.seq,
        "stage": span.stage,
        "tokens_before": span.tokens_before,
        "tokens_after": span.tokens_after,
        "failed": span.failed,
        "url": reverse("compaction:span", args=[span.session_id, span.pk]),
    }

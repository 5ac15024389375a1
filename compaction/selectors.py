"""Reads of derived data, scoped by project."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse

from compaction.engine import replay as replay_engine
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


@dataclass(frozen=True)
class ReplayHealth:
    """What the replay page says before any number: did the policy hold, and can its summaries
    be compared with the observed ones. Both rules are the engine's."""

    status: str
    healthy: bool
    reasons: tuple[str, ...]
    overflow_calls: int
    observed_overflow_calls: int | None
    max_fill: float
    observed_max_fill: float | None
    comparable: bool
    comparison_note: str


def replay_health(
    run: ReplayRun, *, observed_spans: Sequence[CompactionSpan], analysis: SessionAnalysis | None
) -> ReplayHealth:
    window = int(run.policy.get("context_window") or run.session.context_window or 200_000)
    totals = replay_engine.Totals.from_dict(run.totals, context_window=window)
    verdict = totals.verdict
    observed = [int(p["context_tokens"]) for p in analysis.curve] if analysis else None
    comparison = replay_engine.summaries_comparable(
        run.summarizer, observed_summaries=sum(1 for s in observed_spans if s.summary)
    )
    return ReplayHealth(
        status=verdict.status,
        healthy=verdict.healthy,
        reasons=verdict.reasons,
        overflow_calls=totals.overflow_calls,
        observed_overflow_calls=(
            replay_engine.overflow_calls(observed, window) if observed is not None else None
        ),
        max_fill=totals.max_fill,
        observed_max_fill=max(observed, default=0) / window if observed is not None else None,
        comparable=comparison.comparable,
        comparison_note=comparison.note,
    )

"""Reads of derived data, scoped by project."""

from __future__ import annotations

from typing import Any, cast

from django.db.models import QuerySet
from django.urls import reverse

from compaction.engine.analysis import PolicyRow, ReplayEvals
from compaction.engine.evals import RetentionItemDict
from compaction.engine.replay import TotalsDict
from compaction.engine.tokens import CurvePointDict
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


# --- stored results, read back with the engine's types (a renamed key is a mypy error) -------


def analysis_curve(analysis: SessionAnalysis | None) -> list[CurvePointDict]:
    return cast(list[CurvePointDict], analysis.curve) if analysis else []


def span_retention(span: CompactionSpan) -> list[RetentionItemDict]:
    return cast(list[RetentionItemDict], span.retention)


def replay_curve(run: ReplayRun) -> list[CurvePointDict]:
    return cast(list[CurvePointDict], run.curve)


def replay_totals(run: ReplayRun) -> TotalsDict | None:
    """None until the run is done."""
    return cast(TotalsDict, run.totals) if run.totals else None


def replay_evals(run: ReplayRun) -> ReplayEvals | None:
    """None until the run is done."""
    return cast(ReplayEvals, run.evals) if run.evals else None


def experiment_rows(experiment: Experiment) -> list[PolicyRow]:
    """One row per policy once the experiment is done, else []."""
    return cast(list[PolicyRow], experiment.aggregate.get("policies", []))

"""Reads for the next-compaction forecast: the threshold it aims at (declared policy, where
this session or this agent compacted before, the harness default, the window), the forecast,
its past checks, and the median error of the project's past forecasts. The rules are in
compaction/engine/forecast.py."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from compaction.engine import forecast as forecast_engine
from compaction.models import CompactionSpan, SessionAnalysis, SpanOrigin
from compaction.selectors import analysis_curve, analysis_for, session_window
from sessions.models import AgentSession, CompactionEvent, Message


@dataclass(frozen=True)
class SessionForecast:
    """The next compaction at the recent rate (None when there is nothing to go on), the
    threshold it aims at, how right the same forecast was before past compactions, and the
    median error of the project's past forecasts (calls)."""

    forecast: forecast_engine.Forecast | None
    threshold: forecast_engine.Threshold
    checks: list[forecast_engine.ForecastCheck]
    project_median_error_calls: float | None = None
    project_checks: int = 0


# How many of the project's sessions with compactions the median error of past forecasts reads
# (the newest): each is a curve to load.
FORECAST_ERROR_SESSIONS = 20


def _compacted_sizes(sessions: QuerySet[AgentSession]) -> list[tuple[int, int, int]]:
    """(session, seq, size before) of the observed compactions a harness made on its own (not
    the manual ones), in seq order: the sizes an observed threshold is drawn from."""
    rows = (
        CompactionSpan.objects.filter(
            session__in=sessions, origin=SpanOrigin.OBSERVED, tokens_before__isnull=False
        )
        .exclude(trigger="manual")
        .order_by("session_id", "seq")
        .values_list("session_id", "seq", "tokens_before")
    )
    return [(s, q, t) for s, q, t in rows[:5000] if t is not None]


def _thresholds(
    session: AgentSession,
) -> tuple[forecast_engine.Threshold, dict[int, forecast_engine.Threshold]]:
    """The threshold now, and for each past compaction the one known just before it: the
    declared policy, else where this session compacted before, else where this agent compacted
    in the project's other sessions, else the harness default, else the window."""
    metadata = session.metadata if isinstance(session.metadata, dict) else None
    window = session_window(session)[0]
    own = [(q, t) for _, q, t in _compacted_sizes(AgentSession.objects.filter(pk=session.pk))]
    others: list[int] = []
    if session.agent:
        peers = AgentSession.objects.filter(project_id=session.project_id, agent=session.agent)
        others = [t for s, _, t in _compacted_sizes(peers.exclude(pk=session.pk))]

    def aim(earlier: list[int]) -> forecast_engine.Threshold:
        mine = forecast_engine.observed_threshold(earlier)
        peer = forecast_engine.observed_threshold(others)
        return forecast_engine.threshold_for(
            metadata=metadata,
            agent=session.agent or "",
            window=window,
            observed=mine if mine is not None else peer,
            observed_label=(
                "where this session compacted before"
                if mine is not None
                else "where this agent compacted in this project"
            ),
        )

    before = {seq: aim([t for q, t in own if q < seq]) for seq, _ in own}
    return aim([t for _, t in own]), before


def _session_forecast(
    session: AgentSession, analysis: SessionAnalysis | None
) -> tuple[
    forecast_engine.Forecast | None,
    forecast_engine.Threshold,
    list[forecast_engine.ForecastCheck],
]:
    curve = analysis_curve(analysis)
    threshold, before = _thresholds(session)
    events = CompactionEvent.objects.filter(session=session)
    compaction_seqs = list(events.values_list("seq", flat=True))
    # a compaction the user asked for (/compact) is no threshold reached: nothing to forecast
    manual = set(events.filter(trigger="manual").values_list("seq", flat=True))
    recent = {p["seq"] for p in curve[-(forecast_engine.RECENT_CALLS + 1) :]}
    times = dict(
        Message.objects.filter(session=session, seq__in=recent).values_list("seq", "timestamp")
    )
    points = [
        forecast_engine.ForecastPoint(p["seq"], p["context_tokens"], times.get(p["seq"]))
        for p in curve
    ]
    forecast = forecast_engine.forecast_next(
        points, threshold=threshold, compaction_seqs=compaction_seqs
    )
    checks = forecast_engine.forecast_checks(
        points, threshold=threshold, compaction_seqs=compaction_seqs, thresholds=before
    )
    return forecast, threshold, [c for c in checks if c.seq not in manual]


def project_forecast_checks(project_id: int) -> list[forecast_engine.ForecastCheck]:
    """The past forecasts of the project's newest sessions with compactions."""
    compacted = (
        AgentSession.objects.filter(project_id=project_id, compaction_events__isnull=False)
        .distinct()
        .order_by("-created_at", "-pk")[:FORECAST_ERROR_SESSIONS]
    )
    checks: list[forecast_engine.ForecastCheck] = []
    for other in compacted:
        checks += _session_forecast(other, analysis_for(other))[2]
    return checks


def session_forecast(session: AgentSession, analysis: SessionAnalysis | None) -> SessionForecast:
    """The forecast and the session's past checks, each past compaction's forecast aimed at
    what was known before it; beside them the median error over the project's past
    forecasts."""
    forecast, threshold, checks = _session_forecast(session, analysis)
    project = project_forecast_checks(session.project_id)
    return SessionForecast(
        forecast=forecast,
        threshold=threshold,
        checks=checks,
        project_median_error_calls=forecast_engine.median_error(project),
        project_checks=sum(c.predicted_calls is not None for c in project),
    )

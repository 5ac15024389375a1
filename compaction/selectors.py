"""Reads of derived data, scoped by project."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Any, cast

from django.conf import settings
from django.db.models import Count, Min, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from compaction.engine import pricing
from compaction.engine import replay as replay_engine
from compaction.engine.analysis import WindowSource, window_for
from compaction.engine.evals import RetentionItemDict
from compaction.engine.experiments import PolicyRow
from compaction.engine.messages import NOT_A_MODEL, is_prompt, message_from_wire, usage_from_wire
from compaction.engine.names import Stage, Unit
from compaction.engine.replay import TotalsDict
from compaction.engine.session_replay import ReplayEvals
from compaction.engine.summary_call import (
    SummaryCall,
    output_tokens_note,
    summary_call_from_record,
)
from compaction.engine.tokens import CurvePointDict
from compaction.models import (
    AnalysisStatus,
    CompactionSpan,
    Experiment,
    ReplayRun,
    RetiredSpan,
    SessionAnalysis,
    SpanOrigin,
)
from sessions.errors import NotFound
from sessions.models import (
    AgentSession,
    CompactionEvent,
    Message,
    MessageRole,
    Project,
)


@dataclass(frozen=True)
class AnalysisLag:
    """How far the analysis pass (and so search, whose documents it writes) is behind the
    ingest: the age of the oldest request not yet served, and how many sessions wait."""

    seconds: float
    sessions: int


def analysis_lag(
    *, projects: QuerySet[Project] | None = None, now: datetime | None = None
) -> AnalysisLag:
    """The waiting analyses (``queued_at``) and the running ones (``serving_since``, the
    request they serve): both read through their partial indexes."""
    now = now or timezone.now()
    rows = SessionAnalysis.objects.filter(
        Q(queued_at__isnull=False) | Q(status=AnalysisStatus.RUNNING)
    )
    if projects is not None:
        rows = rows.filter(session__project__in=projects.order_by().values("pk"))
    found = rows.aggregate(
        queued=Min("queued_at"),
        served=Min("serving_since", filter=Q(status=AnalysisStatus.RUNNING)),
        n=Count("pk"),
    )
    oldest = min((t for t in (found["queued"], found["served"]) if t is not None), default=None)
    seconds = max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0
    return AnalysisLag(seconds=round(seconds, 1), sessions=found["n"])


def analysis_for(session: AgentSession) -> SessionAnalysis | None:
    return SessionAnalysis.objects.filter(session=session).first()


def observed_compactions(session: AgentSession) -> QuerySet[CompactionEvent]:
    return (
        CompactionEvent.objects.filter(session=session).select_related("span").order_by("seq", "pk")
    )


@dataclass(frozen=True)
class CompactionCost:
    """The summary call of one observed compaction, and what to say about its figures."""

    call: SummaryCall | None
    note: str | None


def compaction_cost(event: CompactionEvent) -> CompactionCost:
    """What the importer recorded of the call that wrote this compaction's summary."""
    call = summary_call_from_record((event.kept or {}).get("compaction_call"))
    if call is None:
        return CompactionCost(None, None)
    note = output_tokens_note(output_tokens=call.output_tokens, summary_chars=len(event.summary))
    return CompactionCost(call, note)


def summary_calls(session: AgentSession) -> list[SummaryCall]:
    """The recorded calls that wrote the session's compaction summaries."""
    found = []
    for kept in CompactionEvent.objects.filter(session=session).values_list("kept", flat=True):
        call = summary_call_from_record((kept or {}).get("compaction_call"))
        if call is not None:
            found.append(call)
    return found


@dataclass(frozen=True)
class BilledTotal:
    """Everything a session was charged: its calls, plus the calls that wrote summaries."""

    tokens: int
    summary_calls: int  # summary calls in no call of the curve (Claude Code's acompact)


def session_billed(session: AgentSession, analysis: SessionAnalysis | None) -> BilledTotal:
    summaries = sum(c.billed_tokens for c in summary_calls(session) if not c.in_curve)
    calls = sum(int(p["billed_tokens"]) for p in (analysis.curve if analysis else []))
    return BilledTotal(calls + summaries, summaries)


@dataclass(frozen=True)
class Cost:
    """Money spent, or why it cannot be said."""

    usd: float | None
    model: str | None
    reason: str = ""
    calls_without_usage: int = 0  # not counted: their tokens are unknown


def _price(model: str | None, on: date | None = None) -> pricing.Price | None:
    return pricing.price_for(model, pricing.price_table(settings.MODEL_PRICES), on)


def _priced(counts: pricing.TokenCounts, model: str | None, on: date | None = None) -> Cost:
    if counts.total == 0:
        return Cost(None, model, "no call reported usage")
    price = _price(model, on)
    if price is None:
        reason = f"no price for {model!r} in MODEL_PRICES" if model else "the model is unknown"
        return Cost(None, model, reason)
    return Cost(pricing.cost_usd(counts, price), model)


def summary_call_cost(event: CompactionEvent) -> Cost:
    """The money the call that wrote this compaction's summary cost."""
    raw = (event.kept or {}).get("compaction_call")
    if not isinstance(raw, dict):
        return Cost(None, None, "no summary call in the trace")
    model = raw.get("model") if isinstance(raw.get("model"), str) else None
    on = day_of(raw.get("finished_at")) or day_of(raw.get("started_at"))
    return _priced(pricing.counts_from_wire(raw.get("usage")), model or event.session.model, on)


@dataclass(frozen=True)
class SessionCost:
    """What a session cost, each call at its own model, for its page, the list and the API."""

    breakdown: pricing.CostBreakdown
    calls_without_usage: int  # estimated calls: their tokens are unknown, so not priced
    failed_requests: int  # messages a harness wrote for a failed request: never calls
    with_subagents_usd: float
    reported_usd: float | None = None  # what the harness itself reported (Cline does)

    @property
    def usd(self) -> float | None:
        return self.breakdown.usd if self.breakdown.priced else None

    @property
    def reason(self) -> str:
        """Why there is no figure, when there is none."""
        if not self.breakdown.by_model:
            return "no call reported usage"
        models = ", ".join(repr(m.model) for m in self.breakdown.by_model)
        return f"no price for {models} in MODEL_PRICES"

    def to_api(self) -> dict[str, Any]:
        return {
            "usd": self.usd,
            "by_model": [m.to_dict() for m in self.breakdown.by_model],
            "compaction_calls_usd": self.breakdown.compaction_usd,
            "unpriced_calls": self.breakdown.unpriced_calls,
            "with_subagents_usd": self.with_subagents_usd if self.usd is not None else None,
            "reported_usd": self.reported_usd,
        }


def session_window(session: AgentSession) -> tuple[int, WindowSource]:
    """The window a session is measured against and its source (``sent``, ``reported`` when
    the trace's emitter reported it, or ``model``): the one figure the analysis, the pages and
    the API use."""
    window, source = window_for(session.context_window, session.model)
    if source == "sent" and (session.metadata or {}).get("context_window_source") == "reported":
        return window, "reported"
    return window, source


def _counts(row: Mapping[str, Any]) -> pricing.TokenCounts:
    return pricing.TokenCounts(
        row["i"] or 0, row["o"] or 0, row["r"] or 0, row["w"] or 0, row["h"] or 0
    )


def day_of(raw: Any) -> date | None:
    """The date of an ISO timestamp as traces write it, or None."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(UTC).date()
    except ValueError:
        return None


def _own_calls(sessions: Sequence[AgentSession]) -> dict[int, list[pricing.PricedCall]]:
    """Each session's calls, summed by model and day in the database (each day at the price
    in force then): a call's model is its own when the trace names it per message, else the
    session's. Failed requests are no calls."""
    model_of = {s.pk: s.model or None for s in sessions}
    started = {
        s.pk: s.started_at.astimezone(UTC).date() if s.started_at else None for s in sessions
    }
    calls: dict[int, list[pricing.PricedCall]] = {pk: [] for pk in model_of}
    responses = Message.objects.filter(
        session__in=list(model_of), role=MessageRole.ASSISTANT, input_tokens__isnull=False
    ).exclude(model__in=NOT_A_MODEL)
    sums = responses.values("session_id", "model", day=TruncDate("timestamp", tzinfo=UTC)).annotate(
        n=Count("pk"),
        i=Sum("input_tokens"),
        o=Sum("output_tokens"),
        r=Sum("cache_read_input_tokens"),
        w=Sum("cache_creation_input_tokens"),
        h=Sum("cache_creation_1h_input_tokens"),
    )
    for row in sums.order_by():
        session_id = row["session_id"]
        model = row["model"] or model_of[session_id]
        on = row["day"] or started[session_id]
        calls[session_id].append(pricing.PricedCall(model, _counts(row), calls=row["n"], on=on))
    # A server-side compaction is billed inside its call, as iterations, and so is another
    # model's inference inside it (the advisor's), at that model's price (rare: one read each).
    iterated = responses.filter(iterations__isnull=False).values_list(
        "session_id", "model", "iterations", "timestamp"
    )
    for session_id, model, iterations, moment in iterated:
        own = model or model_of[session_id]
        on = moment.astimezone(UTC).date() if moment else started[session_id]
        usage = usage_from_wire({"iterations": iterations})
        compaction = pricing.compacting_counts(usage)
        if compaction.total:
            calls[session_id].append(
                pricing.PricedCall(own, pricing.TokenCounts(), compaction, 0, on=on)
            )
        for side in pricing.side_calls(own, usage):
            calls[session_id].append(replace(side, on=on))
    # Summary calls of their own (Claude Code's compaction agent), in no call of the curve.
    events = CompactionEvent.objects.filter(session__in=list(model_of)).exclude(kept={})
    for session_id, kept in events.values_list("session_id", "kept"):
        raw = (kept or {}).get("compaction_call")
        call = summary_call_from_record(raw)
        if call is None or call.in_curve or not isinstance(raw, dict):
            continue
        model = raw.get("model") if isinstance(raw.get("model"), str) else None
        counts = pricing.counts_from_wire(raw.get("usage"))
        on = day_of(raw.get("finished_at")) or day_of(raw.get("started_at")) or started[session_id]
        calls[session_id].append(
            pricing.PricedCall(model or model_of[session_id], pricing.TokenCounts(), counts, on=on)
        )
    return calls


def _descendants(ids: Iterable[int]) -> dict[int, set[int]]:
    """Each session's subagents at any depth (one query a level)."""
    below: dict[int, set[int]] = {pk: set() for pk in ids}
    level = {pk: pk for pk in below}  # session -> the root it was reached from
    while level:
        children = AgentSession.objects.filter(parent_id__in=list(level)).values_list(
            "pk", "parent_id"
        )
        level = {child: level[parent] for child, parent in children}
        for child, root in level.items():
            below[root].add(child)
    return below


def _reported_usd(session: AgentSession) -> float | None:
    """What the harness itself said the session cost (an importer keeps it in the metadata as
    ``reported_usd``: Cline's ``cost``), beside the product's own price, never instead."""
    raw = (session.metadata or {}).get("reported_usd")
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        return None
    return float(raw)


def session_costs(sessions: Sequence[AgentSession]) -> dict[int, SessionCost]:
    """What each session cost, each call at its own model's price (``MODEL_PRICES``), with
    its subagents' calls beside; a handful of queries whatever the number of sessions."""
    table = pricing.price_table(settings.MODEL_PRICES)
    below = _descendants(s.pk for s in sessions)
    subagent_ids = set().union(*below.values()) - {s.pk for s in sessions}
    everyone = [*sessions, *AgentSession.objects.filter(pk__in=subagent_ids)]
    calls = _own_calls(everyone)
    breakdowns = {pk: pricing.costs(found, table) for pk, found in calls.items()}
    failed_request = Q(model__in=NOT_A_MODEL)
    counted = (
        Message.objects.filter(session__in=[s.pk for s in sessions], role=MessageRole.ASSISTANT)
        .filter(failed_request | Q(input_tokens__isnull=True))
        .values("session_id")
        .annotate(
            failed=Count("pk", filter=failed_request),
            unknown=Count("pk", filter=~failed_request),
        )
        .order_by()
    )
    unknown = {row["session_id"]: row["unknown"] for row in counted}
    failed = {row["session_id"]: row["failed"] for row in counted}
    out = {}
    for session in sessions:
        own = breakdowns[session.pk]
        with_subagents = own.usd + sum(breakdowns[pk].usd for pk in below[session.pk])
        out[session.pk] = SessionCost(
            breakdown=own,
            calls_without_usage=unknown.get(session.pk, 0),
            failed_requests=failed.get(session.pk, 0),
            with_subagents_usd=round(with_subagents, 6),
            reported_usd=_reported_usd(session),
        )
    return out


def session_cost(session: AgentSession) -> SessionCost:
    return session_costs([session])[session.pk]


def observed_spans(session: AgentSession) -> QuerySet[CompactionSpan]:
    return CompactionSpan.objects.filter(session=session, origin=SpanOrigin.OBSERVED).order_by(
        "index"
    )


def retired_span(*, session: AgentSession, span_id: int) -> RetiredSpan | None:
    return RetiredSpan.objects.filter(session=session, span_id=span_id).first()


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
        "url": span.get_absolute_url(),
    }


@dataclass(frozen=True)
class ReplayClear:
    """One tool-result clearing step of a replay: where, how many results, in which
    messages (inclusive seq ranges), and the tokens it freed."""

    seq: int
    url: str
    cleared: int
    messages: tuple[tuple[int, int], ...]
    tokens_before: int | None
    tokens_after: int | None

    @property
    def tokens_freed(self) -> int | None:
        if self.tokens_before is None or self.tokens_after is None:
            return None
        return self.tokens_before - self.tokens_after

    @property
    def messages_label(self) -> str:
        return ", ".join(f"#{a}" if a == b else f"#{a}\u2013#{b}" for a, b in self.messages)


def replay_clears(spans: Iterable[CompactionSpan]) -> list[ReplayClear]:
    """The clearing steps among a replay's spans, in order."""
    out = []
    for span in spans:
        if span.stage != Stage.CLEAR_TOOL_RESULTS:
            continue
        details = span.details or {}
        ranges = tuple(
            (int(r[0]), int(r[1]))
            for r in details.get("changed") or []
            if isinstance(r, list | tuple) and len(r) == 2
        )
        out.append(
            ReplayClear(
                seq=span.seq,
                url=span.get_absolute_url(),
                cleared=int(details.get("cleared") or 0),
                messages=ranges,
                tokens_before=span.tokens_before,
                tokens_after=span.tokens_after,
            )
        )
    return out


# --- stored results, read back with the engine's types (a renamed key is a mypy error) -------


def analysis_curve(analysis: SessionAnalysis | None) -> list[CurvePointDict]:
    return cast(list[CurvePointDict], analysis.curve) if analysis else []


def span_retention(span: CompactionSpan) -> list[RetentionItemDict]:
    return cast(list[RetentionItemDict], span.retention)


def span_facts(span: CompactionSpan) -> list[RetentionItemDict]:
    """The span's facts, each with its verdict and need: items stored before the five
    verdicts read as kept or lost, never needed again."""
    return [
        {
            **item,
            "verdict": item.get("verdict") or ("kept" if item["kept"] else "lost"),
            "needed_again": item.get("needed_again"),
        }
        for item in span_retention(span)
    ]


def replay_curve(run: ReplayRun) -> list[CurvePointDict]:
    return cast(list[CurvePointDict], run.curve)


def replay_totals(run: ReplayRun) -> TotalsDict | None:
    """None until the run is done."""
    return cast(TotalsDict, run.totals) if run.totals else None


def replay_evals(run: ReplayRun) -> ReplayEvals | None:
    """None until the run is done."""
    return cast(ReplayEvals, run.evals) if run.evals else None


# --- money of a replay ------------------------------------------------------------------------

MONEY_RULE = pricing.REPLAY_RULE
BILLED_RULE = pricing.BILLED_RULE
FULL_RULE = pricing.FULL_RULE


@dataclass(frozen=True)
class ReplayMoney:
    """What a replayed run and the observed one would cost by one rule (:data:`MONEY_RULE`),
    so the two compare; the session header's cost, with its cache discounts, is what was
    actually billed."""

    usd: float | None  # the replay, its summarizer's calls included
    observed_usd: float | None  # the observed run, the agent's summary calls included
    summarizer_usd: float
    unpriced_calls: int
    unpriced_models: tuple[str, ...]
    # The full price of each run's compactions (DESIGN.md "Money and sizes"): its summary
    # calls, and each compaction's new prefix written to the cache again (modelled the same
    # way for both runs, :func:`pricing.modelled_rewrites_usd`); rework is not observable in
    # a replay. None where the session's model has no price.
    rewrite_usd: float | None = None
    observed_rewrite_usd: float | None = None
    observed_summary_calls_usd: float = 0.0

    @property
    def saved_usd(self) -> float | None:
        if self.usd is None or self.observed_usd is None:
            return None
        return round(self.observed_usd - self.usd, 6)

    @property
    def compactions_usd(self) -> float | None:
        """The replay's compactions: its summarizer's calls and its cache re-writes."""
        return _plus(self.summarizer_usd, self.rewrite_usd)

    @property
    def observed_compactions_usd(self) -> float | None:
        return _plus(self.observed_summary_calls_usd, self.observed_rewrite_usd)

    @property
    def full_usd(self) -> float | None:
        """The replay rule's figure plus the cache re-writes: what the advice weighs."""
        return _plus(self.usd, self.rewrite_usd)

    @property
    def observed_full_usd(self) -> float | None:
        return _plus(self.observed_usd, self.observed_rewrite_usd)


def _plus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a + b, 6)


def _calls_by_seq(session: AgentSession) -> dict[int, tuple[str | None, int]]:
    """Each model call's model (its own, else the session's) and output tokens, by seq."""
    rows = (
        Message.objects.filter(session=session, role=MessageRole.ASSISTANT)
        .exclude(model__in=NOT_A_MODEL)
        .values_list("seq", "model", "output_tokens")
    )
    return {seq: (model or session.model or None, out or 0) for seq, model, out in rows}


def _curve_calls(
    points: Iterable[Mapping[str, Any]],
    calls: Mapping[int, tuple[str | None, int]],
    default_model: str | None,
) -> list[pricing.PricedCall]:
    out = []
    for p in points:
        model, output = calls.get(int(p["seq"]), (default_model, 0))
        out.append(pricing.replay_rule_call(model, int(p["context_tokens"]), output))
    return out


def replay_money(run: ReplayRun, analysis: SessionAnalysis | None) -> ReplayMoney | None:
    """Money of a finished replay beside the observed run (None until it is done)."""
    totals = replay_totals(run)
    if totals is None:
        return None
    table = pricing.price_table(settings.MODEL_PRICES)
    session = run.session
    calls = _calls_by_seq(session)
    default = session.model or None
    observed = _curve_calls(analysis_curve(analysis), calls, default)
    observed += [
        pricing.replay_rule_call(default, c.context_tokens, c.output_tokens)
        for c in summary_calls(session)
        if not c.in_curve
    ]
    summarizer_model = cast(Mapping[str, Any], run.totals).get("summarizer_model")
    spent = pricing.counts_from_wire(totals.get("summarizer_cost") or {})
    summarizer = (
        [pricing.PricedCall(summarizer_model, spent, compaction=spent)] if summarizer_model else []
    )
    replayed = pricing.costs([*_curve_calls(replay_curve(run), calls, default), *summarizer], table)
    before = pricing.costs(observed, table)
    unpriced = sorted({m.model for m in (*replayed.by_model, *before.by_model) if m.usd is None})
    summaries = [
        pricing.replay_rule_call(default, c.context_tokens, c.output_tokens)
        for c in summary_calls(session)
    ]
    price = pricing.price_for(default, table, session_day(session))
    one_hour = writes_one_hour(session)
    return ReplayMoney(
        usd=replayed.usd if replayed.priced and not replayed.unpriced_calls else None,
        observed_usd=before.usd if before.priced and not before.unpriced_calls else None,
        summarizer_usd=replayed.compaction_usd,
        unpriced_calls=replayed.unpriced_calls + before.unpriced_calls,
        unpriced_models=tuple(unpriced),
        rewrite_usd=modelled_rewrites(replay_spans(run), price, one_hour),
        observed_rewrite_usd=modelled_rewrites(observed_spans(session), price, one_hour),
        observed_summary_calls_usd=pricing.costs(summaries, table).usd,
    )


def session_day(session: AgentSession) -> date | None:
    return session.started_at.astimezone(UTC).date() if session.started_at else None


def writes_one_hour(session: AgentSession) -> bool:
    """Whether the session's cache writes went mostly to the 1-hour cache (Claude Code on a
    subscription): a modelled re-write is priced at the rate the session used."""
    found = Message.objects.filter(session=session).aggregate(
        w=Sum("cache_creation_input_tokens"), h=Sum("cache_creation_1h_input_tokens")
    )
    return (found["h"] or 0) * 2 > (found["w"] or 0) > 0


def modelled_rewrites(
    spans: Iterable[CompactionSpan], price: pricing.Price | None, one_hour: bool
) -> float | None:
    """Each compaction's new prefix (its context after) written to the cache again."""
    if price is None:
        return None
    prefixes = [s.prefix_tokens for s in spans if s.prefix_tokens is not None]
    return pricing.modelled_rewrites_usd(prefixes, price, one_hour=one_hour)


@dataclass(frozen=True)
class ExperimentBilled:
    """What the experiment's sessions were billed (each session's ``usd``, summed): the
    billed figure, never the replay rule's."""

    usd: float | None  # None: no session of it has a priced call
    sessions: int
    unpriced_sessions: int


def experiment_billed(experiment: Experiment) -> ExperimentBilled:
    """The sum of the experiment's sessions' billed ``usd``, as their pages show it."""
    ids = set(experiment.runs.values_list("session_id", flat=True))
    sessions = list(AgentSession.objects.filter(pk__in=ids))
    costs = session_costs(sessions)
    priced = [c.usd for c in costs.values() if c.usd is not None]
    return ExperimentBilled(
        usd=round(sum(priced), 6) if priced else None,
        sessions=len(sessions),
        unpriced_sessions=len(sessions) - len(priced),
    )


def experiment_rows(experiment: Experiment) -> list[PolicyRow]:
    """One row per policy once the experiment is done, else []."""
    return cast(list[PolicyRow], experiment.aggregate.get("policies", []))


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
    observed_retention: float | None = None  # the worst observed span, scored by the same eval


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
        observed_retention=min(
            (s.retention_score for s in observed_spans if s.retention_score is not None),
            default=None,
        ),
    )


def span_replay_prefill(span: CompactionSpan, *, tail: list[Message]) -> dict[str, int | str]:
    """A replay policy that would fire where this compaction did and keep what it kept.

    The hard limit is the context size the compaction fired at, the soft limit three quarters
    of it (as experiments do); keep-last counts the turns of the kept tail, or its model calls
    (steps) when the tail holds no prompt.
    """
    prefill: dict[str, int | str] = {}
    if span.tokens_before:
        prefill["hard_limit"] = span.tokens_before
        prefill["soft_limit"] = int(span.tokens_before * 0.75)
    wires = [{"seq": m.seq, "role": m.role, "content": m.content} for m in tail]
    prompts = sum(is_prompt(message_from_wire(w, where="tail")) for w in wires)
    steps = sum(m.role == MessageRole.ASSISTANT for m in tail)
    if prompts:
        prefill.update(unit=Unit.TURN.value, keep_last=prompts)
    elif steps:
        prefill.update(unit=Unit.STEP.value, keep_last=steps)
    return prefill


def session_replays_done(session: AgentSession) -> QuerySet[ReplayRun]:
    return session.replays.filter(status="done").order_by("-created_at")


def replay_pair_rows(first: ReplayRun, second: ReplayRun) -> list[dict[str, Any]]:
    """Totals and verdicts of two finished replays, row by row, with second minus first."""
    rows: list[tuple[str, Any, Any]] = []
    a: Mapping[str, Any] = replay_totals(first) or {}
    b: Mapping[str, Any] = replay_totals(second) or {}
    for key, label in (
        ("calls", "Model calls"),
        ("input_tokens", "Input tokens over the run"),
        ("billed_tokens", "Billed tokens"),
        ("compactions", "Compactions (summaries)"),
        ("clears", "Tool-result clears"),
        ("peak_context", "Peak context"),
        ("overflow_calls", "Calls over the window"),
    ):
        rows.append((label, a.get(key), b.get(key)))
    rows.append(
        (
            "Summarizer cost (input tokens)",
            (a.get("summarizer_cost") or {}).get("input_tokens"),
            (b.get("summarizer_cost") or {}).get("input_tokens"),
        )
    )
    ea: Mapping[str, Any] = replay_evals(first) or {}
    eb: Mapping[str, Any] = replay_evals(second) or {}
    rows.append(("Failed splices", ea.get("failed_splices"), eb.get("failed_splices")))
    rows.append(("Orphaned tool pairs", ea.get("orphan_pairs"), eb.get("orphan_pairs")))
    rows.append(("Lost facts", len(ea.get("lost_facts") or []), len(eb.get("lost_facts") or [])))
    out = []
    for label, x, y in rows:
        delta = y - x if isinstance(x, int) and isinstance(y, int) else None
        out.append({"label": label, "first": x, "second": y, "delta": delta})
    return out


def summary_pairs(
    observed: list[CompactionSpan], replayed: list[CompactionSpan]
) -> list[tuple[CompactionSpan | None, CompactionSpan]]:
    """Each replayed summary beside the observed compaction of the same stretch.

    The same stretch is the observed span whose replaced messages overlap the replayed span's
    the most; with no overlap, the observed span nearest in the trace.
    """

    def stretch(span: CompactionSpan) -> tuple[int, int]:
        start = span.replaced_from_seq if span.replaced_from_seq is not None else 0
        end = span.replaced_to_seq if span.replaced_to_seq is not None else span.seq - 1
        return start, end

    def closeness(o: CompactionSpan, span: CompactionSpan) -> tuple[int, int]:
        (a0, a1), (b0, b1) = stretch(o), stretch(span)
        return max(0, min(a1, b1) - max(a0, b0) + 1), -abs(o.seq - span.seq)

    candidates = [o for o in observed if o.stage != "clear_tool_results"] or observed
    return [
        (max(candidates, key=lambda o: closeness(o, span), default=None), span) for span in replayed
    ]

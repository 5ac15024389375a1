"""API for derived data: curves, observed compactions, replays and experiments."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ninja import Query, Router, Schema, Status
from pydantic import Field

from compaction import advice, forecasts, prices, selectors, services, sizes
from compaction.engine import pricing
from compaction.engine.evals import RetentionItemDict
from compaction.models import CompactionSpan, ReplayRun, ReplayStatus
from compaction.schemas import (
    AdviceOut,
    AdviceParams,
    AnalysisQueued,
    CompactionCallOut,
    CompactionOut,
    CompactionPriceOut,
    Curve,
    CurvePointOut,
    ExperimentIn,
    ExperimentOut,
    FactOut,
    ForecastCheckOut,
    ForecastOut,
    NeededAgainOut,
    Replaced,
    ReplayCostOut,
    ReplayIn,
    ReplayOut,
    ReplayQueued,
    VerdictOut,
)
from privacy import masking
from sessions import auth
from sessions import selectors as session_selectors
from sessions.auth import KeyRequest
from sessions.models import AgentSession, Project
from sessions.schemas import Error

router = Router(tags=["analysis"])


def _projects(request: KeyRequest) -> Any:
    return Project.objects.filter(pk=request.auth.pk)


@router.get(
    "/sessions/{external_id}/curve", response={200: Curve, 400: Error, 401: Error, 404: Error}
)
def session_curve(request: KeyRequest, external_id: str) -> Curve:
    session = auth.key_session(request, external_id)
    analysis = selectors.analysis_for(session)
    billed = selectors.session_billed(session, analysis)
    predicted = forecasts.session_forecast(session, analysis)
    return Curve(
        status=analysis.status if analysis else "pending",
        current=analysis.is_current if analysis else False,
        context_window=selectors.session_window(session)[0],
        points=[CurvePointOut(**p) for p in selectors.analysis_curve(analysis)],
        billed_tokens_total=billed.tokens,
        compaction_calls_billed_tokens=billed.summary_calls,
        forecast=ForecastOut(**asdict(predicted.forecast)) if predicted.forecast else None,
        forecast_accuracy=[ForecastCheckOut(**asdict(c)) for c in predicted.checks],
        forecast_median_error_calls=predicted.project_median_error_calls,
    )


def _compaction_out(event: Any, price: pricing.CompactionPrice | None = None) -> CompactionOut:
    span: CompactionSpan | None = getattr(event, "span", None)
    replaced = (
        Replaced(from_seq=event.replaced_from_seq, to_seq=event.replaced_to_seq)
        if event.replaced_from_seq is not None
        else None
    )
    cost = selectors.compaction_cost(event)
    before = sizes.compaction_tokens_before(event, span)
    after = sizes.compaction_tokens_after(event, span)
    return CompactionOut(
        seq=event.seq,
        trigger=event.trigger,
        strategy=event.strategy,
        tokens_before=before.tokens,
        tokens_before_source=before.source,
        tokens_before_note=before.note,
        tokens_after=after.tokens,
        tokens_after_source=after.source,
        tokens_after_note=after.note,
        summary=masking.text_mask(event.summary),
        replaced=replaced,
        error=masking.text_mask(event.error) or None,
        duration_ms=event.duration_ms,
        failed=span.failed if span else None,
        failure_reason=(masking.text_mask(span.failure_reason) or None) if span else None,
        retention_score=span.retention_score if span else None,
        lost=[
            masking.text_mask(item["text"])
            for item in selectors.span_retention(span)
            if not item["kept"]
        ]
        if span
        else [],
        facts=[_fact_out(item) for item in selectors.span_facts(span)] if span else [],
        verdict=VerdictOut(status=span.verdict.status, label=span.verdict.label) if span else None,
        compaction_call=CompactionCallOut(**cost.call.to_dict()) if cost.call else None,
        compaction_call_note=cost.note,
        price=CompactionPriceOut(**price.to_dict()) if price is not None else None,
    )


def _fact_out(item: RetentionItemDict) -> FactOut:
    """One of ``selectors.span_facts``: its verdict and need already read, old rows too."""
    again = item["needed_again"]
    return FactOut(
        kind="file" if item["kind"] == "path" else item["kind"],
        text=masking.text_mask(item["text"]),
        verdict=item["verdict"],
        needed_again=NeededAgainOut(seq=again["seq"], how=again["how"]) if again else None,
        evidence=masking.text_mask(item["evidence"]),
    )


COMPACTIONS_PAGE_MAX = 1000


class CompactionPageParams(Schema):
    """The answer stays a plain list (as before pagination); a session with more than
    ``limit`` compactions is read page by page with ``offset``, in seq order."""

    offset: int = Field(0, ge=0, le=2**31 - 1)
    limit: int = Field(COMPACTIONS_PAGE_MAX, ge=1, le=COMPACTIONS_PAGE_MAX)


@router.get(
    "/sessions/{external_id}/compactions",
    response={200: list[CompactionOut], 400: Error, 401: Error, 404: Error},
    description=f"Observed compactions in seq order, at most {COMPACTIONS_PAGE_MAX} per page "
    f"(?offset=0&limit={COMPACTIONS_PAGE_MAX} by default).",
)
def session_compactions(
    request: KeyRequest, external_id: str, page: Query[CompactionPageParams]
) -> list[CompactionOut]:
    session = auth.key_session(request, external_id)
    events = list(selectors.observed_compactions(session)[page.offset : page.offset + page.limit])
    # the calls until the next compaction: priced with the page's events and the one after
    following = list(selectors.observed_compactions(session)[page.offset + page.limit :][:1])
    priced = prices.compaction_prices(session, [*events, *following])
    return [_compaction_out(e, priced.get(e.pk)) for e in events]


@router.post(
    "/sessions/{external_id}/reanalyze",
    response={202: AnalysisQueued, 401: Error, 404: Error},
    description="Run the session's analysis again (curve, spans, verdicts, then the alert "
    "rules) in the background; the session's `analysis` shows it pending, then done.",
)
def session_reanalyze(request: KeyRequest, external_id: str) -> Status[AnalysisQueued]:
    session = session_selectors.session_by_external_id(
        project=request.auth, external_id=external_id
    )
    services.analysis_rerun(session_id=session.pk)
    return Status(202, AnalysisQueued(queued=True))


@router.post(
    "/sessions/{external_id}/replays",
    response={202: ReplayQueued, 400: Error, 401: Error, 404: Error, 429: Error},
)
def replay_start(
    request: KeyRequest, external_id: str, body: ReplayIn | None = None
) -> Status[ReplayQueued]:
    session = session_selectors.session_by_external_id(
        project=request.auth, external_id=external_id
    )
    policy = body.policy.to_policy_dict() if body else {}
    run = services.replay_run_start(session=session, policy=policy)
    return Status(202, ReplayQueued(id=run.pk, status=run.status))


def replay_out(run: ReplayRun) -> ReplayOut:
    out = ReplayOut(
        id=run.pk,
        session=run.session.external_id,
        status=run.status,
        progress=round(run.progress, 4),
        policy=run.policy,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        error=masking.text_mask(run.error) or None,
    )
    if run.status == ReplayStatus.DONE:
        out.curve = run.curve
        out.totals = run.totals
        money = selectors.replay_money(run, selectors.analysis_for(run.session))
        if money is not None:
            out.cost = ReplayCostOut(
                usd=money.usd,
                observed_usd=money.observed_usd,
                saved_usd=money.saved_usd,
                summarizer_usd=money.summarizer_usd,
                unpriced_calls=money.unpriced_calls,
                unpriced_models=[masking.text_mask(m) for m in money.unpriced_models],
                rule=selectors.MONEY_RULE,
                rewrite_usd=money.rewrite_usd,
                observed_rewrite_usd=money.observed_rewrite_usd,
                compactions_usd=money.compactions_usd,
                observed_compactions_usd=money.observed_compactions_usd,
                full_usd=money.full_usd,
                observed_full_usd=money.observed_full_usd,
                full_rule=selectors.FULL_RULE,
            )
        out.evals = masking.json_mask(run.evals)
        out.spans = [
            {
                "index": s.index,
                "seq": s.seq,
                "stage": s.stage,
                "trigger": s.trigger,
                "tokens_before": s.tokens_before,
                "tokens_after": s.tokens_after,
                "summary": masking.text_mask(s.summary),
                "replaced": (
                    {"from_seq": s.replaced_from_seq, "to_seq": s.replaced_to_seq}
                    if s.replaced_from_seq is not None
                    else None
                ),
                "retention_score": s.retention_score,
                "failed": s.failed,
                "failure_reason": masking.text_mask(s.failure_reason) or None,
            }
            for s in selectors.replay_spans(run)
        ]
    return out


@router.get("/replays/{replay_id}", response={200: ReplayOut, 400: Error, 401: Error, 404: Error})
def replay_get(request: KeyRequest, replay_id: int) -> ReplayOut:
    run = selectors.replay_get(projects=_projects(request), pk=replay_id)
    masking.names_scope_enter(project_id=run.session.project_id, session_id=run.session_id)
    return replay_out(run)


@router.post("/experiments", response={202: ExperimentOut, 400: Error, 401: Error, 429: Error})
def experiment_start(request: KeyRequest, body: ExperimentIn) -> Status[ExperimentOut]:
    sessions = AgentSession.objects.filter(project=request.auth).order_by("-updated_at")
    if body.sessions is not None:
        sessions = sessions.filter(external_id__in=body.sessions)
    experiment = services.experiment_start(
        project=request.auth,
        name=body.name,
        policies=[p.to_policy_dict() for p in body.policies],
        sessions=list(sessions[:50]),
        baselines=body.baselines,
    )
    return Status(202, experiment_out(experiment))


def experiment_out(experiment: Any) -> ExperimentOut:
    runs = list(experiment.runs.values_list("status", flat=True))
    return ExperimentOut(
        id=experiment.pk,
        name=experiment.name,
        status=experiment.status,
        runs=len(runs),
        runs_done=sum(status in (ReplayStatus.DONE, ReplayStatus.FAILED) for status in runs),
        aggregate=experiment.aggregate,
        billed_usd=selectors.experiment_billed(experiment).usd,
    )


@router.get(
    "/experiments/{experiment_id}",
    response={200: ExperimentOut, 400: Error, 401: Error, 404: Error},
)
def experiment_get(request: KeyRequest, experiment_id: int) -> ExperimentOut:
    return experiment_out(selectors.experiment_get(projects=_projects(request), pk=experiment_id))


def advice_out(found: advice.AdviceOut) -> AdviceOut:
    """The advice with every text that came from a trace or a client masked."""
    masked = masking.json_mask(
        {k: v for k, v in found.items() if k not in ("recommended_by_agent",)}
    )
    masked["recommended_by_agent"] = {
        masking.text_mask(agent): masking.json_mask(rec)
        for agent, rec in found["recommended_by_agent"].items()
    }
    return AdviceOut(**masked)


@router.get(
    "/experiments/{experiment_id}/advice",
    response={200: AdviceOut, 400: Error, 401: Error, 404: Error, 409: Error},
    description="Which policy of a finished experiment to run: the cost-retention front, "
    "the recommendation with the money saved (90 % bootstrap interval over sessions) and the "
    "facts lost by kind, overall and per agent. 409 while the experiment's replays run.",
)
def experiment_advice(request: KeyRequest, experiment_id: int) -> AdviceOut:
    experiment = selectors.experiment_get(projects=_projects(request), pk=experiment_id)
    return advice_out(advice.experiment_advice(experiment))


@router.get(
    "/advice",
    response={200: AdviceOut, 400: Error, 401: Error, 409: Error},
    description="The advice over the project's sessions begun in the last `days` (of "
    "`agent`), from the replays already finished (nothing is replayed by this request). 409, "
    "saying what to run, when no finished replay covers those sessions: start an experiment "
    "over them (`POST /api/v1/experiments` with `baselines: true`) and ask again.",
)
def project_advice(request: KeyRequest, params: Query[AdviceParams]) -> AdviceOut:
    found = advice.project_advice(project=request.auth, days=params.days, agent=params.agent)
    return advice_out(found)

"""Writes for derived data: the per-session analysis, replay runs and experiments.

Workers call these through thin tasks (compaction/tasks.py). Each one claims its row with a
conditional update first, so a redelivered or duplicated task does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F, Q
from django.utils import timezone

from compaction import alerts, charts, tasks
from compaction.engine import evals, replay, summarizers, tokens
from compaction.engine.messages import Message as EngineMessage
from compaction.engine.messages import TextBlock, message_from_wire
from compaction.engine.strategies import Policy, PolicyError
from compaction.models import (
    AnalysisStatus,
    CompactionSpan,
    Experiment,
    ReplayRun,
    ReplayStatus,
    SessionAnalysis,
    SpanOrigin,
)
from sessions.errors import BadRequest
from sessions.models import AgentSession, CompactionEvent, Message, Probe, Project

logger = logging.getLogger(__name__)

DEFAULT_WINDOW = 200_000
EXTERNAL_SUMMARIZERS = {"anthropic", "server_compaction"}


# --- loading a session into the engine -------------------------------------------------


def engine_messages(session: AgentSession) -> list[EngineMessage]:
    """The raw trace as engine messages, in seq order."""
    rows = Message.objects.filter(session=session).order_by("seq")
    out = []
    for row in rows.iterator(chunk_size=2000):
        wire: dict[str, Any] = {"seq": row.seq, "role": row.role, "content": row.content}
        usage = row.usage
        if usage is not None:
            wire["usage"] = usage
        out.append(message_from_wire(wire, where=f"messages[{row.seq}]"))
    return out


def engine_probes(session: AgentSession) -> list[evals.Probe]:
    return [evals.Probe(text=p.text, seq=p.seq) for p in Probe.objects.filter(session=session)]


def _window(session: AgentSession) -> int:
    return session.context_window or DEFAULT_WINDOW


def calibrated_counter(
    messages: Sequence[EngineMessage], events: Sequence[CompactionEvent]
) -> tokens.CalibratedCounter:
    """A counter fitted on the calls whose whole context is in the trace.

    After a compaction whose summary was reported beside the trace (not as a message), the
    model saw text we do not have; those calls are left out when enough calls precede it.
    """
    starts = [e.seq for e in events]
    cut = min((e.seq for e in events if e.summary_seq is None), default=None)
    sample = list(messages)
    if cut is not None:
        before = [m for m in messages if m.seq < cut]
        if sum(1 for m in before if m.role == "assistant" and m.usage is not None) >= 3:
            sample = before
    return tokens.calibrate(sample, context_starts=starts)


# --- analysis ----------------------------------------------------------------------------


def analysis_request(*, session_id: int) -> None:
    """Note that the session changed and queue its analysis once the transaction commits."""
    analysis, _ = SessionAnalysis.objects.get_or_create(session_id=session_id)
    SessionAnalysis.objects.filter(pk=analysis.pk).update(
        requested_generation=F("requested_generation") + 1
    )
    transaction.on_commit(partial(tasks.session_analyse.delay, session_id))


def _after_context(
    messages: Sequence[EngineMessage], event: CompactionEvent
) -> list[EngineMessage]:
    """What the model saw right after an observed compaction: the summary plus what was kept."""
    kept: list[EngineMessage] = []
    for m in messages:
        if m.seq >= event.seq:
            break
        replaced = event.replaced_from_seq is None or event.replaced_from_seq <= m.seq <= (
            event.replaced_to_seq or m.seq
        )
        if not replaced:
            kept.append(m)
    if event.summary:
        kept.append(EngineMessage(seq=event.seq, role="user", content=(TextBlock(event.summary),)))
    elif event.summary_seq is not None:
        kept.extend(m for m in messages if m.seq == event.summary_seq)
    return kept


def _nearest_points(
    curve: Sequence[tokens.CurvePoint], seq: int
) -> tuple[tokens.CurvePoint | None, tokens.CurvePoint | None]:
    before = after = None
    for point in curve:
        if point.seq < seq:
            before = point
        elif after is None:
            after = point
            break
    return before, after


def _observed_span(
    index: int,
    event: CompactionEvent,
    messages: Sequence[EngineMessage],
    curve: Sequence[tokens.CurvePoint],
    probes: Sequence[evals.Probe],
) -> CompactionSpan:
    point_before, point_after = _nearest_points(curve, event.seq)
    tokens_before = event.tokens_before
    tokens_after = event.tokens_after
    estimated = False
    if tokens_before is None and point_before is not None:
        tokens_before, estimated = point_before.context_tokens, point_before.estimated
    if tokens_after is None and point_after is not None:
        tokens_after, estimated = point_after.context_tokens, estimated or point_after.estimated

    before = [m for m in messages if m.seq < event.seq]
    report = evals.retention(
        before,
        _after_context(messages, event),
        probes=[p for p in probes if p.seq is None or p.seq < event.seq],
    )
    reasons = []
    if event.error:
        reasons.append(f"reported error: {event.error}")
    if event.strategy in ("", "summarize") and not event.summary and event.summary_seq is None:
        reasons.append("empty summary")
    splice = None
    if tokens_before is not None and tokens_after is not None:
        splice = evals.splice_effectiveness(tokens_before, tokens_after)
        if splice.warning:
            reasons.append(splice.warning)
    return CompactionSpan(
        session_id=event.session_id,
        origin=SpanOrigin.OBSERVED,
        event=event,
        index=index,
        seq=event.seq,
        stage=event.strategy or "compaction",
        trigger=event.trigger,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        tokens_estimated=estimated,
        replaced_from_seq=event.replaced_from_seq,
        replaced_to_seq=event.replaced_to_seq,
        kept=event.kept,
        summary=event.summary,
        retention=[item.to_dict() for item in report.items],
        retention_score=report.score if report.items else None,
        failed=bool(reasons),
        failure_reason="; ".join(reasons),
        details={
            "reported": {"tokens_before": event.tokens_before, "tokens_after": event.tokens_after},
            "splice": splice.to_dict() if splice else None,
            "duration_ms": event.duration_ms,
        },
    )


def session_analyse(*, session_id: int) -> SessionAnalysis | None:
    """(Re)compute a session's curve, pair check and observed spans. Idempotent.

    Returns None when the analysis is already current (a duplicate or superseded task).
    """
    analysis, _ = SessionAnalysis.objects.get_or_create(session_id=session_id)
    generation = analysis.requested_generation
    if analysis.status == AnalysisStatus.DONE and analysis.analysed_generation >= generation:
        return None
    SessionAnalysis.objects.filter(pk=analysis.pk).update(
        status=AnalysisStatus.RUNNING, started_at=timezone.now()
    )
    session = AgentSession.objects.get(pk=session_id)
    try:
        messages = engine_messages(session)
        events = list(CompactionEvent.objects.filter(session=session).order_by("seq", "pk"))
        probes = engine_probes(session)
        starts = [e.seq for e in events]
        counter = calibrated_counter(messages, events)
        curve = tokens.observed_curve(messages, counter, _window(session), context_starts=starts)
        orphans = evals.pair_validity(messages).orphans
        spans = [_observed_span(i, e, messages, curve, probes) for i, e in enumerate(events)]
        rework = evals.rework_signals(messages, starts)
    except DatabaseError:
        raise  # infrastructure: the task retries
    except Exception as exc:  # an engine error is deterministic: record it, do not retry
        logger.exception("analysis of session %s failed", session_id)
        SessionAnalysis.objects.filter(pk=analysis.pk).update(
            status=AnalysisStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        return None
    for span in spans:
        span.rework = [r.to_dict() for r in rework if r.compaction_seq == span.seq]

    with transaction.atomic():
        locked = SessionAnalysis.objects.select_for_update().get(pk=analysis.pk)
        if locked.analysed_generation > generation:
            return None  # a later pass already wrote newer results
        CompactionSpan.objects.filter(session=session, origin=SpanOrigin.OBSERVED).delete()
        CompactionSpan.objects.bulk_create(spans)
        peak = max(curve, key=lambda p: p.context_tokens, default=None)
        locked.status = AnalysisStatus.DONE
        locked.analysed_generation = generation
        locked.message_count = len(messages)
        locked.curve = [p.to_dict() for p in curve]
        locked.sparkline = charts.sparkline(locked.curve)
        locked.orphans = [o.to_dict() for o in orphans]
        locked.calibration = counter.report.to_dict() if counter.report else {}
        locked.peak_context_tokens = peak.context_tokens if peak else None
        locked.peak_fill = peak.fill if peak else None
        locked.call_count = len(curve)
        locked.estimated_calls = sum(p.estimated for p in curve)
        locked.failed_splices = sum(s.failed for s in spans)
        # Only rules (probes and constraints) count here: files and identifiers a summary
        # leaves out are shown on the span page, but would drown the list's signal.
        locked.lost_facts = sum(
            1
            for s in spans
            for item in s.retention
            if not item.get("kept") and item.get("kind") in ("probe", "constraint")
        )
        locked.error = ""
        locked.finished_at = timezone.now()
        locked.save()
    alerts.alerts_evaluate_session(session_id=session_id)
    return locked


# --- replays -------------------------------------------------------------------------------


def policy_validate(*, session: AgentSession, raw: dict[str, Any]) -> Policy:
    """A Policy from user input; the session's window is the default context window."""
    data = {"context_window": _window(session), **raw}
    try:
        return Policy.from_dict(data)
    except PolicyError as exc:
        raise BadRequest(str(exc)) from None


def external_summarizer_check(*, project: Project, summarizer: str) -> None:
    if summarizer not in EXTERNAL_SUMMARIZERS:
        return
    if not project.allow_external_models:
        raise BadRequest(
            f"policy.summarizer: {summarizer!r} sends trace content to an external model, "
            f"which project {project.name!r} does not allow"
        )
    if not settings.ANTHROPIC_API_KEY:
        raise BadRequest(
            f"policy.summarizer: {summarizer!r} needs ANTHROPIC_API_KEY, which is not set"
        )


def _new_run(
    *, session: AgentSession, policy: Policy, user: Any, experiment: Experiment | None = None
) -> ReplayRun:
    return ReplayRun(
        session=session,
        experiment=experiment,
        policy=policy.to_dict(),
        summarizer=policy.summarizer,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


@transaction.atomic(durable=True)
def replay_run_start(
    *, session: AgentSession, policy: dict[str, Any], user: Any = None
) -> ReplayRun:
    parsed = policy_validate(session=session, raw=policy)
    external_summarizer_check(project=session.project, summarizer=parsed.summarizer)
    run = _new_run(session=session, policy=parsed, user=user)
    run.save()
    transaction.on_commit(partial(tasks.replay_run_execute.delay, run.pk))
    return run


def _stale_after() -> timedelta:
    """A running replay that has not reported progress for this long is presumed dead."""
    return timedelta(seconds=settings.REPLAY_STALE_SECONDS)


def _claim(run_id: int) -> ReplayRun | None:
    """Take a queued run, or a running one whose worker stopped reporting."""
    now = timezone.now()
    claimable = Q(status=ReplayStatus.QUEUED) | Q(
        status=ReplayStatus.RUNNING, heartbeat_at__lt=now - _stale_after()
    )
    claimed = ReplayRun.objects.filter(claimable, pk=run_id).update(
        status=ReplayStatus.RUNNING,
        started_at=now,
        heartbeat_at=now,
        attempts=F("attempts") + 1,
        progress=0.0,
        calls_done=0,
    )
    if not claimed:
        return None  # another worker has it, or it already finished
    return ReplayRun.objects.select_related("session__project").get(pk=run_id)


def _summarizer(run: ReplayRun) -> Any:
    if run.summarizer not in EXTERNAL_SUMMARIZERS:
        return None  # the engine builds the offline one from the policy
    external_summarizer_check(project=run.session.project, summarizer=run.summarizer)
    return summarizers.summarizer_from_name(
        run.summarizer, api_key=settings.ANTHROPIC_API_KEY, model=settings.ANTHROPIC_MODEL
    )


def _span_rows(run: ReplayRun, result: replay.ReplayResult) -> list[CompactionSpan]:
    rows = []
    for index, span in enumerate(result.spans):
        data = span.to_dict()
        removed = data["removed"]
        rows.append(
            CompactionSpan(
                session_id=run.session_id,
                origin=SpanOrigin.REPLAYED,
                replay=run,
                index=index,
                seq=span.seq,
                stage=span.stage,
                trigger=span.trigger,
                tokens_before=span.result.tokens_before,
                tokens_after=span.result.tokens_after,
                tokens_estimated=True,
                replaced_from_seq=removed[0][0] if removed else None,
                replaced_to_seq=removed[-1][-1] if removed else None,
                kept={"head": data["kept_head"], "tail": data["kept_tail"]},
                summary=span.result.summary_text or "",
                summary_sections=data["summary"] or {},
                retention=data["retention"]["items"] if data["retention"] else [],
                retention_score=span.retention.score if span.retention else None,
                failed=_replayed_failure(span) != "",
                failure_reason=_replayed_failure(span),
                details={
                    "splice": data["splice"],
                    "pairs": data["pairs"],
                    "removed": removed,
                    "changed": data["changed"],
                    "cleared": data["cleared"],
                    "rounds": data["rounds"],
                    "cost": data["cost"],
                },
            )
        )
    return rows


def _replayed_failure(span: replay.Span) -> str:
    """Why a replayed step failed, or "". Clearing tool results is a small step by design, so
    the "barely changed" rule applies only to splices that replace messages."""
    reasons = []
    if span.stage != "clear_tool_results" and span.splice.warning:
        reasons.append(span.splice.warning)
    if not span.pairs.ok:
        reasons.append("splice left orphan tool pairs")
    return "; ".join(reasons)


def _observed_totals(curve: Sequence[tokens.CurvePoint], compactions: int) -> dict[str, Any]:
    """What the agent really did, in the replay's terms, for the difference."""
    return {
        "calls": len(curve),
        "input_tokens": sum(p.context_tokens for p in curve),
        "billed_tokens": sum(p.billed_tokens for p in curve),
        "compactions": compactions,
        "peak_context": max((p.context_tokens for p in curve), default=0),
    }


def _evals(result: replay.ReplayResult, observed: dict[str, Any]) -> dict[str, Any]:
    spans = result.spans
    scores = [s.retention.score for s in spans if s.retention is not None and s.retention.items]
    return {
        "retention_score": min(scores) if scores else None,
        "mean_retention_score": sum(scores) / len(scores) if scores else None,
        "lost_facts": sorted({f.text for s in spans if s.retention for f in s.retention.lost}),
        "failed_splices": sum(1 for s in spans if _replayed_failure(s)),
        "orphan_pairs": result.totals.orphan_pairs,
        "observed": observed,
        "difference": {
            "input_tokens": result.totals.input_tokens - observed["input_tokens"],
            "compactions": result.totals.compactions - observed["compactions"],
            "peak_context": result.totals.peak_context - observed["peak_context"],
        },
    }


def replay_run_execute(*, run_id: int) -> None:
    run = _claim(run_id)
    if run is None:
        return
    attempt = run.attempts
    session = run.session
    mine = ReplayRun.objects.filter(pk=run.pk, status=ReplayStatus.RUNNING, attempts=attempt)
    try:
        messages = engine_messages(session)
        events = list(CompactionEvent.objects.filter(session=session).order_by("seq"))
        starts = [e.seq for e in events]
        skip = [e.summary_seq for e in events if e.summary_seq is not None]
        policy = Policy.from_dict(run.policy)

        def progress(done: int, total: int) -> None:
            mine.update(
                calls_done=done,
                calls_total=total,
                progress=done / total if total else 1.0,
                heartbeat_at=timezone.now(),
            )

        counter = calibrated_counter(messages, events)
        observed = _observed_totals(
            tokens.observed_curve(messages, counter, _window(session), context_starts=starts),
            compactions=len(starts),
        )
        result = replay.replay(
            messages,
            policy,
            counter=counter,
            summarizer=_summarizer(run),
            progress=progress,
            skip_seqs=skip,
            probes=engine_probes(session),
            measured=tokens.attribute_usage(messages, counter, context_starts=starts),
        )
    except DatabaseError:
        raise  # infrastructure: the task retries
    except Exception as exc:  # an engine error is deterministic: record it, do not retry
        logger.exception("replay %s failed", run.pk)
        mine.update(
            status=ReplayStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        _experiment_maybe_finish(run.experiment_id)
        return

    with transaction.atomic():
        finished = mine.update(
            status=ReplayStatus.DONE,
            progress=1.0,
            curve=[p.to_dict() for p in result.curve],
            totals=result.totals.to_dict(),
            evals=_evals(result, observed),
            error="",
            finished_at=timezone.now(),
        )
        if not finished:
            return  # presumed dead and taken over by another worker: its result wins
        CompactionSpan.objects.filter(replay=run).delete()
        CompactionSpan.objects.bulk_create(_span_rows(run, result))
    _experiment_maybe_finish(run.experiment_id)


def replay_runs_requeue_stuck() -> int:
    """Put runs whose worker stopped reporting back in the queue. Returns how many."""
    cutoff = timezone.now() - _stale_after()
    stuck = list(
        ReplayRun.objects.filter(status=ReplayStatus.RUNNING, heartbeat_at__lt=cutoff).values_list(
            "pk", flat=True
        )
    )
    requeued = 0
    for run_id in stuck:
        with transaction.atomic():
            if ReplayRun.objects.filter(
                pk=run_id, status=ReplayStatus.RUNNING, heartbeat_at__lt=cutoff
            ).update(status=ReplayStatus.QUEUED):
                transaction.on_commit(partial(tasks.replay_run_execute.delay, run_id))
                requeued += 1
    return requeued


# --- experiments ---------------------------------------------------------------------------


@transaction.atomic(durable=True)
def experiment_start(
    *,
    project: Project,
    name: str,
    policies: list[dict[str, Any]],
    sessions: Sequence[AgentSession],
    user: Any = None,
) -> Experiment:
    if not policies:
        raise BadRequest("policies: give at least one policy")
    if not sessions:
        raise BadRequest("sessions: no session matches")
    for index, raw in enumerate(policies):
        try:
            parsed = Policy.from_dict(raw)
        except PolicyError as exc:
            raise BadRequest(f"policies[{index}]: {exc}") from None
        external_summarizer_check(project=project, summarizer=parsed.summarizer)
    experiment = Experiment.objects.create(
        project=project,
        name=name,
        policies=policies,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    runs = ReplayRun.objects.bulk_create(
        [
            _new_run(
                session=session,
                policy=policy_validate(session=session, raw=raw),
                user=user,
                experiment=experiment,
            )
            for raw in policies
            for session in sessions
            if session.project_id == project.pk
        ]
    )
    run_ids = [run.pk for run in runs]
    transaction.on_commit(partial(tasks.experiment_fan_out, run_ids))
    return experiment


def _experiment_maybe_finish(experiment_id: int | None) -> None:
    """The last run to finish computes the experiment's aggregate."""
    if experiment_id is None:
        return
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().get(pk=experiment_id)
        if not experiment.is_active:
            return
        runs = list(experiment.runs.order_by("pk"))
        if any(run.is_active for run in runs):
            if experiment.status == ReplayStatus.QUEUED:
                experiment.status = ReplayStatus.RUNNING
                experiment.save(update_fields=["status"])
            return
        experiment.aggregate = experiment_aggregate(runs)
        experiment.status = ReplayStatus.DONE
        experiment.finished_at = timezone.now()
        experiment.save(update_fields=["aggregate", "status", "finished_at"])


def experiment_aggregate(runs: Sequence[ReplayRun]) -> dict[str, Any]:
    """Per policy: input tokens saved, compactions per session, retention, failed splices."""
    by_policy: dict[str, list[ReplayRun]] = {}
    for run in runs:
        by_policy.setdefault(_policy_key(run.policy), []).append(run)
    rows = []
    for key, group in by_policy.items():
        done = [r for r in group if r.status == ReplayStatus.DONE]
        saved = [-r.evals["difference"]["input_tokens"] for r in done]
        retention = [
            r.evals["retention_score"] for r in done if r.evals.get("retention_score") is not None
        ]
        rows.append(
            {
                "policy": group[0].policy,
                "label": key,
                "sessions": len(group),
                "failed_runs": sum(r.status == ReplayStatus.FAILED for r in group),
                "input_tokens_saved": sum(saved),
                "compactions_per_session": (
                    sum(r.totals["compactions"] for r in done) / len(done) if done else None
                ),
                "retention_score": sum(retention) / len(retention) if retention else None,
                "failed_splices": sum(r.evals["failed_splices"] for r in done),
            }
        )
    return {"policies": rows}


def _policy_key(policy: dict[str, Any]) -> str:
    return (
        f"hard {policy.get('hard_limit'):,} · soft {policy.get('soft_limit'):,} · "
        f"keep {policy.get('keep_last')} {policy.get('unit', 'turn')}s · "
        f"{' + '.join(policy.get('stages') or ())} · {policy.get('summarizer')}"
    )

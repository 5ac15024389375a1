"""Writes for derived data: the per-session analysis, replay runs and experiments.

Workers call these through thin tasks (compaction/tasks.py). Each one claims its row with a
conditional update first, so a redelivered or duplicated task does nothing. The rules live in
the engine (compaction/engine/analysis.py): a service loads rows, converts them once, calls
the engine once and stores what it returns.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from compaction import (
    alerts,
    fair,
    findings,
    liveness,
    message_scan,
    outbox,
    recovery,
    selectors,
    subjects,
)
from compaction.engine import analysis, evals, experiments, pii, session_replay, summarizers, titles
from compaction.engine.messages import ObservedCompaction, usage_from_wire
from compaction.engine.names import EXTERNAL_SUMMARIZERS, SUMMARIZERS
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
from sessions.errors import BadRequest, TooManyRequests
from sessions.models import AgentSession, CompactionEvent, Probe, Project

logger = logging.getLogger(__name__)

DEFAULT_WINDOW = analysis.DEFAULT_WINDOW


# --- loading a session into the engine -------------------------------------------------


engine_messages = message_scan.engine_messages


def _probes(session: AgentSession) -> list[Probe]:
    return list(Probe.objects.filter(session=session).order_by("seq", "pk"))


def engine_probes(rows: Iterable[Probe]) -> list[evals.Probe]:
    """Probe rows as the engine reads them."""
    return [evals.Probe(text=p.text, seq=p.seq) for p in rows]


def observed_compaction(event: CompactionEvent) -> ObservedCompaction:
    """A reported compaction as the engine reads it."""
    return ObservedCompaction(
        seq=event.seq,
        trigger=event.trigger,
        strategy=event.strategy,
        tokens_before=event.tokens_before,
        tokens_after=event.tokens_after,
        summary=event.summary,
        replaced_from=event.replaced_from_seq,
        replaced_to=event.replaced_to_seq,
        duration_ms=event.duration_ms,
        error=event.error or None,
        summary_seq=event.summary_seq,
        kept=event.kept,
    )


def _earlier_retention(session: AgentSession) -> dict[str, analysis.EarlierRetention]:
    """The retention of the session's observed spans from the last pass, by inputs key."""
    earlier = {}
    spans = CompactionSpan.objects.filter(session=session, origin=SpanOrigin.OBSERVED)
    for details, retention in spans.values_list("details", "retention"):
        key = (details or {}).get("inputs_key")
        if not key:
            continue  # stored before spans carried their inputs key
        cost = details.get("judge_cost")
        earlier[key] = analysis.EarlierRetention(
            evals.RetentionReport(tuple(evals.RetentionItem.from_dict(i) for i in retention)),
            usage_from_wire(cost) if cost else None,
        )
    return earlier


def _events(session: AgentSession) -> list[CompactionEvent]:
    return list(CompactionEvent.objects.filter(session=session).order_by("seq", "pk"))


def _window(session: AgentSession) -> int:
    return selectors.session_window(session)[0]


# --- analysis ----------------------------------------------------------------------------


def analysis_request(*, session_id: int) -> None:
    """Note that the session changed and queue its analysis once the transaction commits."""
    analysis, _ = SessionAnalysis.objects.get_or_create(session_id=session_id)
    SessionAnalysis.objects.filter(pk=analysis.pk).update(
        requested_generation=F("requested_generation") + 1,
        queued_at=Coalesce("queued_at", Now()),
    )
    # A turn for whichever project's analysis is next (compaction/fair.py), one per request.
    outbox.outbox_add(kind=outbox.SESSION_ANALYSE, args=[session_id])


def _observed_span_row(
    session: AgentSession, event: CompactionEvent, span: analysis.ObservedSpan
) -> CompactionSpan:
    return CompactionSpan(
        session_id=session.pk,
        origin=SpanOrigin.OBSERVED,
        event=event,
        index=span.index,
        seq=span.seq,
        stage=span.stage,
        trigger=event.trigger,
        tokens_before=span.tokens_before,
        tokens_after=span.tokens_after,
        tokens_estimated=span.tokens_estimated,
        replaced_from_seq=event.replaced_from_seq,
        replaced_to_seq=event.replaced_to_seq,
        kept=event.kept,
        summary=event.summary,
        retention=[item.to_dict() for item in span.retention.items],
        retention_score=span.retention_score,
        rework=[r.to_dict() for r in span.rework],
        failed=span.failed,
        failure_reason=span.failure_reason,
        details=span.details(),
    )


# The key space of the advisory lock a pass holds while it stores a session's results
# (PostgreSQL), the second key being the session's: how a delete finds the pass it would
# otherwise wait on, to stop it.
_STORING = 0x5A57


def _storing_mark(session_id: int) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_STORING, session_id % 2**31])


def analysis_storing_stop(*, session_id: int) -> int:
    """End the database connection of a pass storing this session's results, so that deleting
    the session does not wait on it: its transaction rolls back, and its task, retried, finds
    the session gone. Returns how many were stopped. (SQLite has one writer at a time, and
    the lock it holds is the database's: nothing to stop.)"""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
            "AND classid = %s::oid AND objid = %s::oid AND objsubid = 2 AND granted "
            "AND pid <> pg_backend_pid()",
            [_STORING, session_id % 2**31],
        )
        return sum(1 for (stopped,) in cursor.fetchall() if stopped)


def _analysis_store(
    row_id: int,
    session: AgentSession,
    events: list[CompactionEvent],
    probes: list[Probe],
    result: analysis.Analysis,
    generation: int,
    scanned: message_scan.MessageScan,
    scan: message_scan.Scan,
    rescan: bool,
) -> tuple[SessionAnalysis, list[CompactionSpan]] | None:
    """Write one pass's results: the analysis row (its session set) and the observed spans
    written. None when a later pass already wrote newer ones, or the session was deleted
    meanwhile."""
    with transaction.atomic():
        _storing_mark(session.pk)
        locked = SessionAnalysis.objects.select_for_update().filter(pk=row_id).first()
        if locked is None:
            return None  # the session was deleted while it was being analysed
        if locked.analysed_generation > generation:
            return None  # a later pass already wrote newer results
        if locked.erased_generation > generation:
            return None  # it read the history before an erasure: the next pass reads it after
        CompactionSpan.objects.filter(session=session, origin=SpanOrigin.OBSERVED).delete()
        spans = CompactionSpan.objects.bulk_create(
            [_observed_span_row(session, e, s) for e, s in zip(events, result.spans, strict=True)]
        )
        subjects.subject_index_session(
            session=session,
            scan=scan,
            scanned=scanned,
            events=events,
            probes=probes,
            spans=spans,
            rescan=rescan,
        )
        peak = result.peak
        locked.status = AnalysisStatus.DONE
        locked.analysed_generation = generation
        locked.message_count = result.message_count
        locked.curve = result.curve_dicts()
        locked.sparkline = result.sparkline()
        locked.orphans = [o.to_dict() for o in result.orphans]
        locked.calibration = result.calibration.to_dict() if result.calibration else {}
        locked.peak_context_tokens = peak.context_tokens if peak else None
        locked.peak_fill = peak.fill if peak else None
        locked.call_count = len(result.curve)
        locked.estimated_calls = result.estimated_calls
        locked.failed_splices = result.failed_splices
        locked.lost_facts = result.lost_facts
        locked.error = ""
        locked.finished_at = timezone.now()
        locked.save()
    locked.session = session
    return locked, spans


# SQLSTATE classes of errors that the same work meets again: insufficient resources (out of
# memory, disk full) and program limits (too big, too complex). Not "too many connections".
_LASTING_STATES = ("53", "54")
_LASTING_MESSAGES = ("out of memory", "cannot allocate memory")


def lasting(exc: DatabaseError) -> bool:
    """A database error a retry would meet again (the work is too big for it), as opposed to
    one of the database's moments (a restart, a lost connection, a deadlock)."""
    state = getattr(exc.__cause__, "sqlstate", None) or ""
    if state.startswith(_LASTING_STATES) and state != "53300":
        return True
    text = str(exc).lower()
    return any(message in text for message in _LASTING_MESSAGES)


def _analysis_failed(row: SessionAnalysis, session_id: int, exc: DatabaseError) -> None:
    # The database's text may quote a value of the trace: the log and the page get its kind.
    why = " (too big for the database; a retry would fail alike)" if lasting(exc) else ""
    logger.warning("analysis of session %s not stored: %s%s", session_id, type(exc).__name__, why)
    SessionAnalysis.objects.filter(pk=row.pk).update(
        status=AnalysisStatus.FAILED,
        error=f"{type(exc).__name__}: the results could not be stored{why}",
        finished_at=timezone.now(),
    )


def session_analyse(*, session_id: int) -> SessionAnalysis | None:
    """(Re)compute a session's curve, pair check and observed spans. Idempotent.

    Returns None when the analysis is already current (a duplicate or superseded task).
    """
    if not AgentSession.objects.filter(pk=session_id).exists():
        return None  # deleted (by a person or the retention purge) after it was queued
    row, _ = SessionAnalysis.objects.get_or_create(session_id=session_id)
    generation = row.requested_generation
    if row.status == AnalysisStatus.DONE and row.analysed_generation >= generation:
        SessionAnalysis.objects.filter(pk=row.pk, queued_at__isnull=False).update(queued_at=None)
        return None
    SessionAnalysis.objects.filter(pk=row.pk).update(
        status=AnalysisStatus.RUNNING, queued_at=None, started_at=timezone.now(), heartbeat_at=Now()
    )
    return _analysis_run(row, session_id, generation)


def analysis_next() -> SessionAnalysis | None:
    """The worker's turn: analyse the waiting session of the project whose turn it is
    (compaction/fair.py). None when nothing waits, or the pass found it current."""
    row = fair.analysis_claim_next()
    if row is None:
        return None
    generation = row.requested_generation
    if row.analysed_generation >= generation:  # current already (analysed directly meanwhile)
        SessionAnalysis.objects.filter(pk=row.pk).update(status=AnalysisStatus.DONE)
        return None
    try:
        return _analysis_run(row, row.session_id, generation)
    except (OperationalError, InterfaceError):
        # The task retries, as a turn like any other: the row waits for it again.
        SessionAnalysis.objects.filter(pk=row.pk, status=AnalysisStatus.RUNNING).update(
            status=AnalysisStatus.PENDING, queued_at=Coalesce("queued_at", Now())
        )
        raise


def _analysis_run(row: SessionAnalysis, session_id: int, generation: int) -> SessionAnalysis | None:
    # Beaten for while it runs, so the analysis of a worker that dies is queued again within
    # seconds, and a long one in a live worker never is (compaction/liveness.py).
    running = SessionAnalysis.objects.filter(pk=row.pk, status=AnalysisStatus.RUNNING)
    with liveness.heartbeat(running):
        result = _session_analyse_running(row, session_id, generation)
    # A batch that landed while it ran asked again: its turn may have been spent while this
    # pass held the row, so one more is sent (a spare turn does nothing).
    if SessionAnalysis.objects.filter(pk=row.pk, queued_at__isnull=False).exists():
        outbox.outbox_add(kind=outbox.SESSION_ANALYSE, args=[session_id])
    return result


def _session_analyse_running(
    row: SessionAnalysis, session_id: int, generation: int
) -> SessionAnalysis | None:
    # Read after the generation, so that what it asked for is all visible; with its project,
    # which the judge reads.
    session = AgentSession.objects.select_related("project").filter(pk=session_id).first()
    if session is None:
        return None  # deleted since the analysis was asked for
    # One read of the messages for every step; the subject index and the findings keep their
    # own marks, so the texts past the lower one are scanned, each once (the memo).
    memo = pii.ScanMemo()
    # Every message again when they were scanned by another detector (findings.scan_stale).
    rescan = findings.scan_stale(row)
    scan_after = (
        0 if rescan else min(row.pii_scanned_message_pk, subjects.subject_index_mark(session_id))
    )
    try:
        events = _events(session)
        probes = _probes(session)
        messages, scanned = message_scan.messages_read(
            session, scan_after=scan_after, scan=memo.scan
        )
        title = titles.session_title(messages, session.metadata)
        result = analysis.analyse(
            messages,
            [observed_compaction(e) for e in events],
            probes=engine_probes(probes),
            context_window=_window(session),
            judge=retention_judge(project=session.project),
            earlier=_earlier_retention(session),
        )
    except DatabaseError as exc:
        if not lasting(exc):
            raise  # infrastructure: the task retries
        _analysis_failed(row, session_id, exc)
        return None
    except Exception as exc:  # an engine error is deterministic: record it, do not retry
        logger.exception("analysis of session %s failed", session_id)
        SessionAnalysis.objects.filter(pk=row.pk).update(
            status=AnalysisStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        return None

    if not connection.in_atomic_block:
        # The computation may have outlived this connection (PostgreSQL restarted meanwhile,
        # its beats failing): checked before reuse, so the result is stored, not computed again.
        connection.close_if_unusable_or_obsolete()
    try:
        stored = _analysis_store(
            row.pk, session, events, probes, result, generation, scanned, memo.scan, rescan
        )
    except DatabaseError as exc:
        # Data the database refuses (out of range, too long, too big to hold) fails the same
        # way every time: record it, or the analysis would stay "running" and be swept forever.
        if isinstance(exc, OperationalError | InterfaceError) and not lasting(exc):
            raise  # infrastructure: the task retries
        _analysis_failed(row, session_id, exc)
        return None
    if stored is None:
        return None
    locked, spans = stored
    if title != session.title:
        AgentSession.objects.filter(pk=session.pk).update(title=title)
    # The personal data scan: its own step, after the spans it links findings to exist.
    try:
        findings.session_findings_scan(
            session_id=session_id,
            scan=memo.scan,
            scanned=scanned,
            session=session,
            analysis=locked,
            events=events,
            spans=spans,
        )
    except DatabaseError:
        raise  # infrastructure: the task retries, and both steps are idempotent
    except Exception:  # a detector bug must not undo the analysis; the log says which session
        logger.exception("personal data scan of session %s failed", session_id)
    alerts.alerts_evaluate_session(
        session_id=session_id, messages=messages, analysis=locked, spans=spans
    )
    return locked


# --- replays -------------------------------------------------------------------------------


def policy_validate(*, session: AgentSession, raw: dict[str, Any]) -> Policy:
    """A Policy from user input; the session's window is the default context window."""
    data = {"context_window": _window(session), **raw}
    try:
        return _policy_parse(data)
    except PolicyError as exc:
        raise BadRequest(str(exc)) from None


def _policy_parse(data: dict[str, Any]) -> Policy:
    """A Policy whose summarizer is one the engine knows (the Policy checks everything else)."""
    policy = Policy.from_dict(data)
    if policy.summarizer not in SUMMARIZERS:
        raise PolicyError(f"policy.summarizer: unknown summarizer {policy.summarizer!r}")
    return policy


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
    replay_quota_check(project=session.project, adding=1)
    run = _new_run(session=session, policy=parsed, user=user)
    run.save()
    outbox.outbox_add(kind=outbox.REPLAY_RUN_EXECUTE, args=[run.pk])
    return run


def replay_quota_check(*, project: Project, adding: int) -> None:
    """429 when ``adding`` runs would take the project over its queued-or-running quota.

    Called inside the starting transaction with the project row locked, so two concurrent
    starts cannot both squeeze under the quota.
    """
    quota = settings.REPLAY_QUOTA_PER_PROJECT
    if quota <= 0:
        return
    Project.objects.select_for_update().filter(pk=project.pk).first()
    active = ReplayRun.objects.filter(
        session__project=project, status__in=(ReplayStatus.QUEUED, ReplayStatus.RUNNING)
    ).count()
    if active + adding > quota:
        raise TooManyRequests(
            f"replays: this project has {active} replay runs queued or running and asks for "
            f"{adding} more; the quota is {quota} (REPLAY_QUOTA_PER_PROJECT), retry when "
            "some finish",
            retry_after=30,
        )


def _claim(run_id: int) -> ReplayRun | None:
    """Take a queued run, or a running one whose worker stopped beating for it."""
    claimable = Q(status=ReplayStatus.QUEUED) | recovery.replay_abandoned()
    claimed = ReplayRun.objects.filter(claimable, pk=run_id).update(
        status=ReplayStatus.RUNNING,
        started_at=timezone.now(),
        heartbeat_at=Now(),
        attempts=F("attempts") + 1,
        progress=0.0,
        calls_done=0,
    )
    if not claimed:
        return None  # another worker has it, or it already finished
    return ReplayRun.objects.select_related("session__project").get(pk=run_id)


def retention_judge(*, project: Project) -> evals.Judge | None:
    """The LLM judge of retention for the project's observed and replayed spans, or None (the
    default: offline checks only). It sends trace content out, so it needs the project's
    switches for external models and for the judge, and ANTHROPIC_API_KEY."""
    if not (project.judge_retention and project.allow_external_models):
        return None
    if not settings.ANTHROPIC_API_KEY:
        return None
    from compaction.engine import anthropic

    return anthropic.AnthropicJudge(
        api_key=settings.ANTHROPIC_API_KEY,
        model=settings.ANTHROPIC_MODEL,
        base_url=settings.ANTHROPIC_BASE_URL or None,
    )


def _summarizer(run: ReplayRun) -> Any:
    if run.summarizer not in EXTERNAL_SUMMARIZERS:
        return None  # the engine builds the offline one from the policy
    external_summarizer_check(project=run.session.project, summarizer=run.summarizer)
    return summarizers.summarizer_from_name(
        run.summarizer, api_key=settings.ANTHROPIC_API_KEY, model=settings.ANTHROPIC_MODEL
    )


def _summarizer_model(run: ReplayRun) -> str | None:
    return settings.ANTHROPIC_MODEL if run.summarizer in EXTERNAL_SUMMARIZERS else None


def _replayed_span_row(run: ReplayRun, span: session_replay.ReplayedSpan) -> CompactionSpan:
    return CompactionSpan(
        session_id=run.session_id,
        origin=SpanOrigin.REPLAYED,
        replay=run,
        index=span.index,
        seq=span.seq,
        stage=span.stage,
        trigger=span.trigger,
        tokens_before=span.span.result.tokens_before,
        tokens_after=span.span.result.tokens_after,
        tokens_estimated=True,
        replaced_from_seq=span.replaced_from_seq,
        replaced_to_seq=span.replaced_to_seq,
        kept=span.kept(),
        summary=span.summary_text,
        summary_sections=span.summary_sections() or {},
        retention=span.retention_items(),
        retention_score=span.retention_score,
        failed=span.failed,
        failure_reason=span.failure_reason,
        details=span.details(),
    )


def replay_run_next() -> None:
    """The worker's turn: run the queued replay of the project whose turn it is
    (compaction/fair.py); nothing when none is queued."""
    run = fair.replay_claim_next()
    if run is not None:
        _replay_run_beating(run)


def replay_run_execute(*, run_id: int) -> None:
    """Run this replay now (a queued one, or a running one whose worker stopped beating)."""
    run = _claim(run_id)
    if run is not None:
        _replay_run_beating(run)


def _replay_run_beating(run: ReplayRun) -> None:
    # Its worker beats for this attempt while it runs, as for analyses.
    mine = ReplayRun.objects.filter(pk=run.pk, status=ReplayStatus.RUNNING, attempts=run.attempts)
    with liveness.heartbeat(mine):
        _replay_run_claimed(run, mine)


def _replay_run_claimed(run: ReplayRun, mine: QuerySet[ReplayRun]) -> None:
    session = run.session

    def progress(done: int, total: int) -> None:
        mine.update(
            calls_done=done,
            calls_total=total,
            progress=done / total if total else 1.0,
            heartbeat_at=Now(),
        )

    try:
        outcome = session_replay.replay_session(
            engine_messages(session),
            [observed_compaction(e) for e in _events(session)],
            Policy.from_dict(run.policy),
            probes=engine_probes(_probes(session)),
            context_window=_window(session),
            summarizer=_summarizer(run),
            progress=progress,
            judge=retention_judge(project=run.session.project),
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
            curve=[p.to_dict() for p in outcome.result.curve],
            # the model the summarizer called, for the replay's money (none when offline)
            totals={**outcome.result.totals.to_dict(), "summarizer_model": _summarizer_model(run)},
            evals=outcome.evals,
            error="",
            finished_at=timezone.now(),
        )
        if not finished:
            return  # presumed dead and taken over by another worker: its result wins
        CompactionSpan.objects.filter(replay=run).delete()
        CompactionSpan.objects.bulk_create([_replayed_span_row(run, s) for s in outcome.spans])
        subjects.subject_index_replay(run=run)
    _experiment_maybe_finish(run.experiment_id)


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
            parsed = _policy_parse(raw)
        except PolicyError as exc:
            raise BadRequest(f"policies[{index}]: {exc}") from None
        external_summarizer_check(project=project, summarizer=parsed.summarizer)
    own = [session for session in sessions if session.project_id == project.pk]
    replay_quota_check(project=project, adding=len(policies) * len(own))
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
            for session in own
        ]
    )
    outbox.outbox_add(kind=outbox.REPLAY_RUNS_EXECUTE, args=[run.pk for run in runs])
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


def experiment_aggregate(runs: Sequence[ReplayRun]) -> experiments.ExperimentAggregate:
    """Per policy: input tokens saved, compactions per session, retention, failed splices."""
    return experiments.experiment_aggregate(
        [
            experiments.RunOutcome(
                policy=run.policy,
                done=run.status == ReplayStatus.DONE,
                failed=run.status == ReplayStatus.FAILED,
                totals=run.totals,
                evals=run.evals,
            )
            for run in runs
        ]
    )

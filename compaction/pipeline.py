"""The worker's passes, end to end: read this module first to follow one batch.

A batch comes in through a door (sessions/api.py, OTLP, an import) and is stored by
``sessions.services.events_ingest``, which asks for an analysis (``services.analysis_request``):
the session's analysis row waits (``queued_at``) and an outbox row, committed with the batch,
sends a turn to the analysis queue by name (compaction/outbox.py). A worker's turn
(compaction/tasks.py) lands here, in ``analysis_next``, which takes the waiting session of the
project whose turn it is (compaction/fair.py) and runs one analysis pass:

1. read the session once: messages (with the personal data scan of what is new,
   privacy/message_scan.py), observed compactions and probes;
2. the engine (compaction/engine/analysis.py): token curve, tool pairs, observed spans and
   their retention, calibrated tokens;
3. store it in one transaction: the analysis row, the spans and the subject index
   (privacy/subjects.py), unless a later pass or an erasure got there first;
4. the personal data findings (privacy/findings.py);
5. the alert rules (alerts/services.py), which queue webhook deliveries and e-mail through
   the outbox (alerts/webhooks.py).

A replay run (``replay_run_next``) is the other pass: the engine replays the session under a
policy and the spans it would have produced are stored beside the observed ones; the last run
of an experiment computes its table.

Errors: an engine error is recorded on the row and not retried; a database error the same work
would meet again (``lasting``) likewise; any other database error is raised, and the task
retries it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from alerts import services as alert_services
from compaction import budget, child, fair, liveness, outbox, recovery, services
from compaction.engine import analysis, experiments, session_replay, summarizer_choice, titles
from compaction.engine.names import EXTERNAL_SUMMARIZERS
from compaction.engine.strategies import Policy
from compaction.models import (
    AnalysisStatus,
    CompactionSpan,
    Experiment,
    ReplayRun,
    ReplayStatus,
    RetiredSpan,
    SessionAnalysis,
    SpanOrigin,
)
from privacy import findings, message_scan, subjects
from privacy.detect import pii
from sessions.models import AgentSession, CompactionEvent, Probe

logger = logging.getLogger(__name__)


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


# Every column of a span a new pass rewrites (all but its id and session).
_SPAN_FIELDS = [
    f.name
    for f in CompactionSpan._meta.concrete_fields
    if not f.primary_key and f.name not in ("session", "origin", "replay")
]


def _observed_spans_store(
    session: AgentSession, rows: list[CompactionSpan]
) -> list[CompactionSpan]:
    """Store a pass's observed spans keeping the ids of the compactions already stored, so a
    link to one (``/sessions/<pk>/spans/<id>/``, a comment on it, an alert's evidence) lives
    through a new analysis. A span is the same compaction when it has the same event, else the
    same seq; the ids of those gone are remembered (``RetiredSpan``) and their links redirect
    to the seq they had."""
    old = list(CompactionSpan.objects.filter(session=session, origin=SpanOrigin.OBSERVED))
    by_event = {span.event_id: span for span in old}
    by_seq: dict[int, list[CompactionSpan]] = {}
    for span in old:
        by_seq.setdefault(span.seq, []).append(span)
    kept: list[CompactionSpan] = []
    new: list[CompactionSpan] = []
    taken: set[int] = set()
    for row in rows:
        same = by_event.get(row.event_id)
        if same is None or same.pk in taken:
            same = next((s for s in by_seq.get(row.seq, []) if s.pk not in taken), None)
        if same is None:
            new.append(row)
            continue
        taken.add(same.pk)
        row.pk = same.pk
        kept.append(row)
    gone = [span for span in old if span.pk not in taken]
    RetiredSpan.objects.bulk_create(
        [RetiredSpan(span_id=s.pk, session_id=session.pk, seq=s.seq) for s in gone],
        ignore_conflicts=True,
    )
    CompactionSpan.objects.filter(pk__in=[s.pk for s in gone]).delete()
    # (session, index) and the event are unique: clear both on the rows that keep their id
    # before the final values go in, so two rows trading places never collide midway.
    CompactionSpan.objects.filter(pk__in=[s.pk for s in kept]).update(
        index=F("index") + _INDEX_PARKING, event=None
    )
    CompactionSpan.objects.bulk_update(kept, _SPAN_FIELDS, batch_size=500)
    created = CompactionSpan.objects.bulk_create(new)
    return sorted([*kept, *created], key=lambda span: span.index)


# Above any index a session has (one compaction per call at most): a parking value.
_INDEX_PARKING = 1_000_000_000


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
        services.analysis_storing_mark(session.pk)
        locked = SessionAnalysis.objects.select_for_update().filter(pk=row_id).first()
        if locked is None:
            return None  # the session was deleted while it was being analysed
        if locked.analysed_generation > generation:
            return None  # a later pass already wrote newer results
        if locked.erased_generation > generation:
            return None  # it read the history before an erasure: the next pass reads it after
        spans = _observed_spans_store(
            session,
            [_observed_span_row(session, e, s) for e, s in zip(events, result.spans, strict=True)],
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
        locked.lost_files_only = result.lost_files_only
        locked.error = ""
        locked.finished_at = timezone.now()
        locked.save()
        if locked.queued_at is not None:
            # A batch landed while this pass ran: the row is waiting again. The turn its
            # request sent may have been spent meanwhile by a worker that found the row still
            # running; decided here, under the row's lock and with the results, so that no
            # claim in between can make this pass miss it.
            outbox.outbox_add(kind=outbox.SESSION_ANALYSE, args=[session.pk])
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
        status=AnalysisStatus.RUNNING,
        queued_at=None,
        serving_since=Coalesce("queued_at", Now()),
        started_at=timezone.now(),
        heartbeat_at=Now(),
        attempts=F("attempts") + 1,
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
            status=AnalysisStatus.PENDING,
            queued_at=Coalesce("queued_at", "serving_since", Now()),
        )
        raise


def _analysis_run(row: SessionAnalysis, session_id: int, generation: int) -> SessionAnalysis | None:
    # Beaten for while it runs, so the analysis of a worker that dies is queued again within
    # seconds, and a long one in a live worker never is (compaction/liveness.py).
    running = SessionAnalysis.objects.filter(pk=row.pk, status=AnalysisStatus.RUNNING)
    size = budget.session_text_bytes(session_id)
    seconds = budget.budget_seconds(size)
    try:
        if child.wanted():
            result = _analysis_run_in_child(row, session_id, generation, size, seconds, running)
        else:
            result = _analysis_run_here(row, session_id, generation, size, seconds, running)
    finally:
        # The pass ended with its worker alive, however it ended: only a worker's death
        # leaves its attempt counted (recovery.analysis_attempts_spent).
        with contextlib.suppress(DatabaseError):  # gone: what raised meanwhile says so
            SessionAnalysis.objects.filter(pk=row.pk).update(attempts=0)
    if result is not None:
        result.attempts = 0
    # A pass that stored its results sent the next turn with them when a batch had landed
    # meanwhile (_analysis_store). One that stored nothing (it failed, or found the session
    # deleted or its results superseded) sends one if the row is waiting: the turn of the
    # batch may have been spent while this pass held the row (a spare turn does nothing).
    if (
        result is None
        and SessionAnalysis.objects.filter(pk=row.pk, queued_at__isnull=False).exists()
    ) or fair.analysis_capped_waiting(row.pk):
        # Or its project waits with turns spent while it was at its cap of running analyses
        # (compaction/fair.py): this pass's slot is its project's again.
        outbox.outbox_add(kind=outbox.SESSION_ANALYSE, args=[session_id])
    return result


_TIME_SETTINGS = "ANALYSIS_BUDGET_SECONDS + ANALYSIS_BUDGET_SECONDS_PER_MB per MiB"
_MEMORY_SETTINGS = "ANALYSIS_MEMORY_LIMIT_MB + ANALYSIS_MEMORY_LIMIT_MB_PER_MB per MiB"


def _analysis_stopped(
    row: SessionAnalysis, session_id: int, why: str, size: int, settings_named: str = ""
) -> None:
    """The pass was ended by a limit: the session says which. Deterministic (the same pass
    would meet it again), so it is not retried; the slot is free for the next turn."""
    logger.warning("analysis of session %s stopped: %s", session_id, why)
    SessionAnalysis.objects.filter(pk=row.pk).update(
        status=AnalysisStatus.FAILED,
        error=(
            f"analysis stopped: {why} for {size / budget.MIB:.1f} MiB of messages as stored"
            + (f" ({settings_named})" if settings_named else "")
        ),
        finished_at=timezone.now(),
    )


def _analysis_run_here(
    row: SessionAnalysis,
    session_id: int,
    generation: int,
    size: int,
    seconds: float,
    running: QuerySet[SessionAnalysis],
) -> SessionAnalysis | None:
    """The pass in this process (ANALYSIS_IN_CHILD=0, or inside a transaction): the budget's
    timer, and Celery's time limit behind it; no memory limit."""
    try:
        with liveness.heartbeat(running), budget.budget(seconds):
            return _session_analyse_running(row, session_id, generation)
    except budget.OverBudget as exc:
        _analysis_stopped(row, session_id, str(exc), size, _TIME_SETTINGS)
    except MemoryError:
        _analysis_stopped(row, session_id, "out of memory", size)
    return None


def _analysis_run_in_child(
    row: SessionAnalysis,
    session_id: int,
    generation: int,
    size: int,
    seconds: float,
    running: QuerySet[SessionAnalysis],
) -> SessionAnalysis | None:
    """The pass in a child process with hard limits (compaction/child.py), this worker
    beating for it meanwhile."""
    limits = child.Limits(seconds=seconds, memory_mb=child.memory_limit_mb(size))

    def work() -> dict[str, Any]:
        return {"stored": _session_analyse_running(row, session_id, generation) is not None}

    with liveness.heartbeat(running):
        outcome = child.run(work, limits)
    if outcome.kind == "done":
        if not outcome.value.get("stored"):
            return None
        return SessionAnalysis.objects.select_related("session").filter(pk=row.pk).first()
    if outcome.kind == "memory":
        why = f"over its memory limit of {limits.memory_mb} MB"
        _analysis_stopped(row, session_id, why, size, _MEMORY_SETTINGS)
    elif outcome.kind == "time":
        why = f"killed at its time budget of {seconds:g} s"
        _analysis_stopped(row, session_id, why, size, _TIME_SETTINGS)
    elif outcome.kind == "raised":
        raise _raised_again(outcome.value)
    else:
        _analysis_stopped(row, session_id, f"its process ended ({outcome.how})", size)
    return None


def _raised_again(raised: dict[str, Any]) -> Exception:
    """The child's exception, as the worker raises it: a database moment as one (the task
    retries it), anything else as an error naming what the child met."""
    text = f"{raised.get('type')}: {raised.get('message')} (in the analysis process)"
    if raised.get("database") == "transient":
        return OperationalError(text)
    if raised.get("database") == "database":
        return DatabaseError(text)
    return RuntimeError(text)


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
        events = services.session_events(session)
        probes = services.session_probes(session)
        messages, scanned = message_scan.messages_read(
            session, scan_after=scan_after, scan=memo.scan
        )
        title = titles.session_title(messages, session.metadata)
        result = analysis.analyse(
            messages,
            [services.observed_compaction(e) for e in events],
            probes=services.engine_probes(probes),
            context_window=services.session_window(session),
            judge=services.retention_judge(project=session.project),
            earlier=services.earlier_retention(session),
            harness=session.agent or None,
        )
    except DatabaseError as exc:
        if not lasting(exc):
            raise  # infrastructure: the task retries
        _analysis_failed(row, session_id, exc)
        return None
    except MemoryError:
        raise  # a limit, not a fault of the engine: the caller names it
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
    except (DatabaseError, MemoryError):
        raise  # infrastructure or a limit: the task retries, or the caller names the limit
    except Exception:  # a detector bug must not undo the analysis; the log says which session
        logger.exception("personal data scan of session %s failed", session_id)
    alert_services.alerts_evaluate_session(
        session_id=session_id, messages=messages, analysis=locked, spans=spans
    )
    return locked


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


def _summarizer(run: ReplayRun) -> Any:
    if run.summarizer not in EXTERNAL_SUMMARIZERS:
        return None  # the engine builds the offline one from the policy
    services.external_summarizer_check(project=run.session.project, summarizer=run.summarizer)
    return summarizer_choice.summarizer_from_name(
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
            services.engine_messages(session),
            [services.observed_compaction(e) for e in services.session_events(session)],
            Policy.from_dict(run.policy),
            probes=services.engine_probes(services.session_probes(session)),
            context_window=services.session_window(session),
            summarizer=_summarizer(run),
            progress=progress,
            judge=services.retention_judge(project=run.session.project),
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

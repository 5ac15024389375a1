"""Work brought back: analyses and replays left running by a dead worker, and tasks lost
before they started. Beat runs these sweeps; each requeue goes through the outbox, and a
duplicate task finds its row taken or current and does nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from compaction import liveness, outbox
from compaction.models import AnalysisStatus, ReplayRun, ReplayStatus, SessionAnalysis


def replay_abandoned() -> Q:
    """A running replay whose worker stopped beating for it (compaction/liveness.py)."""
    return Q(status=ReplayStatus.RUNNING) & liveness.silent()


def analysis_abandoned(now: datetime) -> Q:
    """A running analysis whose worker stopped beating for it; or, started by a version that
    did not beat (heartbeat_at empty), one running for ANALYSIS_STALE_SECONDS."""
    stale = now - timedelta(seconds=settings.ANALYSIS_STALE_SECONDS)
    never_beaten = Q(heartbeat_at__isnull=True, started_at__lt=stale)
    return Q(status=AnalysisStatus.RUNNING) & (liveness.silent() | never_beaten)


def abandoned_work_requeue() -> int:
    """Queue again the analyses and replays left running by a dead worker. Returns how many.

    Run by beat every few seconds (ABANDONED_WORK_REQUEUE_EVERY_SECONDS). Running work is
    abandoned once its worker has not beaten for it for WORKER_DEAD_SECONDS while the database
    was reachable (compaction/liveness.py); a live worker keeps its work however long it
    takes, and through a database outage. A duplicate task finds its row taken or current and
    does nothing.
    """
    liveness.sweep_record()  # first: after a gap, the silence below counts from now
    now = timezone.now()
    return _replays_abandoned_requeue(now) + _analyses_abandoned_requeue(now)


def _replays_abandoned_requeue(now: datetime) -> int:
    abandoned = ReplayRun.objects.filter(replay_abandoned())
    requeued = 0
    for run_id in list(abandoned.values_list("pk", flat=True)):
        with transaction.atomic():
            if _lock_if_still(abandoned.filter(pk=run_id)):
                ReplayRun.objects.filter(pk=run_id).update(
                    status=ReplayStatus.QUEUED, heartbeat_at=now
                )
                outbox.outbox_add(kind=outbox.REPLAY_RUN_EXECUTE, args=[run_id])
                requeued += 1
    return requeued


def _analyses_abandoned_requeue(now: datetime) -> int:
    abandoned = SessionAnalysis.objects.filter(analysis_abandoned(now))
    requeued = 0
    for row_id, session_id in list(abandoned.values_list("pk", "session_id")):
        with transaction.atomic():
            if _lock_if_still(abandoned.filter(pk=row_id)):
                # started_at moves forward so the sweep for lost tasks waits a full period.
                SessionAnalysis.objects.filter(pk=row_id).update(
                    status=AnalysisStatus.PENDING, started_at=now
                )
                outbox.outbox_add(kind=outbox.SESSION_ANALYSE, args=[session_id])
                requeued += 1
    return requeued


def _lock_if_still(row: QuerySet[Any]) -> bool:
    """Lock the row if it is still abandoned. One locked already is skipped, never waited
    for: its worker is storing the results (and cannot beat for it meanwhile), so it lives."""
    return row.select_for_update(skip_locked=True).values_list("pk", flat=True).first() is not None


def replay_runs_requeue_stuck() -> int:
    """Send again the tasks of runs queued long ago and not started (lost with a broker's
    data). Returns how many.

    ``heartbeat_at`` of a queued run is when its task was last sent. A duplicate task finds
    the run claimed and does nothing. Running runs are ``abandoned_work_requeue``'s.
    """
    now = timezone.now()
    resend_cutoff = now - timedelta(seconds=settings.REPLAY_RESEND_QUEUED_SECONDS)
    forgotten = Q(status=ReplayStatus.QUEUED) & (
        Q(heartbeat_at__lt=resend_cutoff)
        | Q(heartbeat_at__isnull=True, created_at__lt=resend_cutoff)
    )
    requeued = 0
    for run_id in list(ReplayRun.objects.filter(forgotten).values_list("pk", flat=True)):
        with transaction.atomic():
            if ReplayRun.objects.filter(forgotten, pk=run_id).update(heartbeat_at=now):
                outbox.outbox_add(kind=outbox.REPLAY_RUN_EXECUTE, args=[run_id])
                requeued += 1
    return requeued


def analyses_requeue_stuck() -> int:
    """Queue again the analyses asked for but never started (their task lost). Returns how
    many. Running analyses are ``abandoned_work_requeue``'s.
    """
    cutoff = timezone.now() - timedelta(seconds=settings.ANALYSIS_STALE_SECONDS)
    never_started = (
        Q(status__in=(AnalysisStatus.PENDING, AnalysisStatus.DONE))
        & Q(analysed_generation__lt=F("requested_generation"))
        & Q(session__updated_at__lt=cutoff)
        & (Q(started_at__isnull=True) | Q(started_at__lt=cutoff))
    )
    requeued = 0
    for row_id, session_id in list(
        SessionAnalysis.objects.filter(never_started).values_list("pk", "session_id")
    ):
        with transaction.atomic():
            # started_at moves forward so the next sweep waits a full period again.
            if SessionAnalysis.objects.filter(never_started, pk=row_id).update(
                status=AnalysisStatus.PENDING, started_at=timezone.now()
            ):
                outbox.outbox_add(kind=outbox.SESSION_ANALYSE, args=[session_id])
                requeued += 1
    return requeued

"""Work brought back: analyses and replays left running by a dead worker, and tasks lost
before they started. Beat runs these sweeps; each requeue goes through the outbox, and a
duplicate task finds its row taken or current and does nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from compaction import liveness, outbox
from compaction.models import (
    AnalysisStatus,
    ReplayRun,
    ReplayStatus,
    SessionAnalysis,
    WorkShare,
)


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


def analysis_attempts_spent(attempts: int) -> str:
    """Why an analysis whose worker died under it ``attempts`` times in a row is not queued
    again: each death was a pass killed by a hard limit (Celery's time limit, the OOM killer)
    or a lost host, and the next pass would likely meet it again."""
    return (
        f"analysis stopped: its worker died under it {attempts} times in a row (killed by a "
        f"hard limit: ANALYSIS_TIME_LIMIT_SECONDS of {settings.ANALYSIS_TIME_LIMIT_SECONDS} s, "
        f"or the memory); not queued again after ANALYSIS_MAX_ATTEMPTS "
        f"({settings.ANALYSIS_MAX_ATTEMPTS}): a new batch or a re-analysis tries once more"
    )


def _analyses_abandoned_requeue(now: datetime) -> int:
    abandoned = SessionAnalysis.objects.filter(analysis_abandoned(now))
    requeued = 0
    for row_id, session_id, attempts in list(abandoned.values_list("pk", "session_id", "attempts")):
        with transaction.atomic():
            if not _lock_if_still(abandoned.filter(pk=row_id)):
                continue
            if attempts >= max(1, settings.ANALYSIS_MAX_ATTEMPTS):
                # Not without end: the same pass killed its worker each time.
                SessionAnalysis.objects.filter(pk=row_id).update(
                    status=AnalysisStatus.FAILED,
                    error=analysis_attempts_spent(attempts),
                    queued_at=None,
                    finished_at=now,
                )  # attempts stay counted: a new batch's pass is the one more try
                continue
            # started_at moves forward so the sweep for lost tasks waits a full period.
            SessionAnalysis.objects.filter(pk=row_id).update(
                status=AnalysisStatus.PENDING,
                started_at=now,
                # It waits in its place: as long as the request it was serving.
                queued_at=Coalesce("queued_at", "serving_since", Value(now)),
            )
            outbox.outbox_add(kind=outbox.SESSION_ANALYSE, args=[session_id])
            requeued += 1
    return requeued


def _lock_if_still(row: QuerySet[Any]) -> bool:
    """Lock the row if it is still abandoned. One locked already is skipped, never waited
    for: its worker is storing the results (and cannot beat for it meanwhile), so it lives."""
    return row.select_for_update(skip_locked=True).values_list("pk", flat=True).first() is not None


def replay_runs_requeue_stuck() -> int:
    """Send again the turns of runs queued and waiting while no replay has started for
    REPLAY_RESEND_QUEUED_SECONDS: their tasks were lost with a broker's data. Returns how many.

    Turns are not tied to runs (compaction/fair.py), so while replays keep starting the
    queue's turns are not lost, only busy. ``heartbeat_at`` of a queued run is when a turn was
    last sent for it. A spare turn finds nothing queued and does nothing.
    """
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.REPLAY_RESEND_QUEUED_SECONDS)
    if WorkShare.objects.filter(replay_served_at__gte=cutoff).exists():
        return 0
    forgotten = Q(status=ReplayStatus.QUEUED) & (
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff)
    )
    requeued = 0
    for run_id in list(ReplayRun.objects.filter(forgotten).values_list("pk", flat=True)):
        with transaction.atomic():
            if ReplayRun.objects.filter(forgotten, pk=run_id).update(heartbeat_at=now):
                outbox.outbox_add(kind=outbox.REPLAY_RUN_EXECUTE, args=[run_id])
                requeued += 1
    return requeued


def analyses_requeue_stuck() -> int:
    """Send again the turns of analyses waiting while none has started for
    ANALYSIS_STALE_SECONDS: their tasks were lost. Returns how many. Running analyses are
    ``abandoned_work_requeue``'s.
    """
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.ANALYSIS_STALE_SECONDS)
    if WorkShare.objects.filter(analysis_served_at__gte=cutoff).exists():
        return 0
    # started_at: when a turn was last sent for it, so the next sweep waits a full period.
    forgotten = (
        Q(queued_at__lt=cutoff)
        & ~Q(status=AnalysisStatus.RUNNING)
        & Q(session__updated_at__lt=cutoff)
        & (Q(started_at__isnull=True) | Q(started_at__lt=cutoff))
    )
    requeued = 0
    for row_id, session_id in list(
        SessionAnalysis.objects.filter(forgotten).values_list("pk", "session_id")
    ):
        with transaction.atomic():
            if SessionAnalysis.objects.filter(forgotten, pk=row_id).update(
                status=AnalysisStatus.PENDING, started_at=now
            ):
                outbox.outbox_add(kind=outbox.SESSION_ANALYSE, args=[session_id])
                requeued += 1
    return requeued

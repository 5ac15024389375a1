"""Fair turns: which waiting analysis or replay a free worker takes up next.

A task on the analysis or replays queue is a turn, not an order: whatever session or run it
was sent for, the worker that runs it takes the waiting work of the project whose turn it is
(``turn_order``), so a project that sends 600 sessions at once delays another's one session by
one analysis, not 600. Every request sends one task, so there are never fewer turns than
waiting rows; a turn that finds nothing waiting does nothing.

Claims are conditional updates (the row still waiting, not running), so two workers never
take up one row; the loser picks again.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.db.models import Count, F, Min, QuerySet
from django.db.models.functions import Now
from django.utils import timezone

from compaction.models import (
    AnalysisStatus,
    ReplayRun,
    ReplayStatus,
    SessionAnalysis,
    WorkShare,
)

NEVER = datetime.min.replace(tzinfo=UTC)
# A claim lost to another worker means picking again; a few losses in a row mean the others
# are taking everything there is.
PICKS = 5


def turn_order(
    waiting_since: Mapping[int, datetime],
    running: Mapping[int, int],
    served_at: Mapping[int, datetime | None],
) -> list[int]:
    """The projects with waiting work, whose turn first: fewest running, then served longest
    ago (never served first), then waiting longest, then the lower id."""
    return sorted(
        waiting_since,
        key=lambda project: (
            running.get(project, 0),
            served_at.get(project) or NEVER,
            waiting_since[project],
            project,
        ),
    )


def _per_project(
    rows: QuerySet[SessionAnalysis] | QuerySet[ReplayRun], **aggregate: object
) -> dict[int, Any]:
    return dict(
        rows.order_by()
        .values("session__project_id")
        .annotate(**aggregate)
        .values_list("session__project_id", *aggregate)
    )


def analysis_waiting() -> QuerySet[SessionAnalysis]:
    return SessionAnalysis.objects.filter(queued_at__isnull=False).exclude(
        status=AnalysisStatus.RUNNING
    )


def analysis_claim_next() -> SessionAnalysis | None:
    """Take up the waiting analysis whose turn it is (marked running), or None."""
    for _ in range(PICKS):
        waiting = analysis_waiting()
        since = _per_project(waiting, oldest=Min("queued_at"))
        if not since:
            return None
        running = _per_project(
            SessionAnalysis.objects.filter(status=AnalysisStatus.RUNNING), n=Count("pk")
        )
        served = dict(
            WorkShare.objects.filter(project_id__in=since).values_list(
                "project_id", "analysis_served_at"
            )
        )
        for project_id in turn_order(since, running, served):
            row = (
                waiting.filter(session__project_id=project_id)
                .order_by("queued_at", "pk")
                .values_list("pk", flat=True)
                .first()
            )
            if row is None:
                continue  # taken meanwhile
            now = timezone.now()
            claimed = (
                analysis_waiting()
                .filter(pk=row)
                .update(
                    status=AnalysisStatus.RUNNING,
                    queued_at=None,
                    started_at=now,
                    heartbeat_at=Now(),
                )
            )
            if claimed:
                _served(project_id, analysis_served_at=now)
                return SessionAnalysis.objects.get(pk=row)
            break  # another worker took it: look at what is waiting again
    return None


def replay_claim_next() -> ReplayRun | None:
    """Take up the queued replay run whose turn it is (marked running), or None."""
    for _ in range(PICKS):
        queued = ReplayRun.objects.filter(status=ReplayStatus.QUEUED)
        since = _per_project(queued, oldest=Min("created_at"))
        if not since:
            return None
        running = _per_project(ReplayRun.objects.filter(status=ReplayStatus.RUNNING), n=Count("pk"))
        served = dict(
            WorkShare.objects.filter(project_id__in=since).values_list(
                "project_id", "replay_served_at"
            )
        )
        for project_id in turn_order(since, running, served):
            run = (
                queued.filter(session__project_id=project_id)
                .order_by("created_at", "pk")
                .values_list("pk", flat=True)
                .first()
            )
            if run is None:
                continue
            now = timezone.now()
            claimed = ReplayRun.objects.filter(pk=run, status=ReplayStatus.QUEUED).update(
                status=ReplayStatus.RUNNING,
                started_at=now,
                heartbeat_at=Now(),
                attempts=F("attempts") + 1,
                progress=0.0,
                calls_done=0,
            )
            if claimed:
                _served(project_id, replay_served_at=now)
                return ReplayRun.objects.select_related("session__project").get(pk=run)
            break
    return None


def _served(project_id: int, **when: datetime) -> None:
    WorkShare.objects.update_or_create(project_id=project_id, defaults=when)

"""Fair turns: which waiting analysis or replay a free worker takes up next.

A task on the analysis or replays queue is a turn, not an order: whatever session or run it
was sent for, the worker that runs it takes the waiting work of the project whose turn it is
(``turn_order``), so a project that sends 600 sessions at once delays another's one session by
one analysis, not 600. A turn is sent when a session begins waiting (``analysis_request``: the
request that sets ``queued_at``; the batches after it, while it waits, are read by the same
pass), and by a pass that ends with its row waiting again (a batch landed meanwhile, and its
turn may have been spent by a worker that found the row still running), so there are never
fewer turns than waiting rows; a turn that finds nothing waiting does nothing.

Claims are conditional updates (the row still waiting, not running), so two workers never
take up one row; the loser picks again.

One slot always stays free for the other projects: with C analysis slots (ANALYSIS_SLOTS, by
default the worker's concurrency) and C >= 2, a project with C - 1 analyses running is passed
over, so another project's session that arrives finds a slot at once rather than after one of
the first's passes. A turn that found only such a project waiting does nothing; the end of each
of that project's passes sends a turn while it still waits (``analysis_capped_waiting``), so
its work goes on in its C - 1 slots.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db.models import Count, F, Min, QuerySet, Value
from django.db.models.functions import Coalesce, Now
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


# The worker's own concurrency, recorded when it starts (config/celery.py) and inherited by
# its pool's children: the slots, unless ANALYSIS_SLOTS names the deployment's.
_worker_slots = 0


def worker_slots_set(slots: int) -> None:
    global _worker_slots
    _worker_slots = max(0, int(slots))


def analysis_project_cap() -> int | None:
    """The most analyses one project may run at once: all the slots but one (None: one slot,
    or the slots unknown, and no cap)."""
    slots = int(settings.ANALYSIS_SLOTS or 0) or _worker_slots
    return slots - 1 if slots >= 2 else None


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


@dataclass(frozen=True)
class _Work:
    """One kind of work the turns serve: what waits (oldest first by ``since``), what runs,
    which WorkShare field records a project's turn, and the conditional update that claims a
    waiting row (its pk and the time), true when this worker got it."""

    waiting: Callable[[], QuerySet[Any]]
    since: str
    running: Callable[[], QuerySet[Any]]
    served: str
    claim: Callable[[int, datetime], bool]
    cap: Callable[[], int | None] = lambda: None  # the most a project may run at once


def _claim_next(work: _Work) -> int | None:
    """The pk of the waiting row whose project's turn it is, claimed; None when none waits."""
    for _ in range(PICKS):
        waiting = work.waiting()
        since = _per_project(waiting, oldest=Min(work.since))
        if not since:
            return None
        running = _per_project(work.running(), n=Count("pk"))
        cap = work.cap()
        if cap is not None:  # a project at its cap waits for one of its own to end
            since = {p: t for p, t in since.items() if running.get(p, 0) < cap}
            if not since:
                return None
        served = dict(
            WorkShare.objects.filter(project_id__in=since).values_list("project_id", work.served)
        )
        for project_id in turn_order(since, running, served):
            pk = (
                waiting.filter(session__project_id=project_id)
                .order_by(work.since, "pk")
                .values_list("pk", flat=True)
                .first()
            )
            if pk is None:
                continue  # taken meanwhile
            now = timezone.now()
            if work.claim(pk, now):
                WorkShare.objects.update_or_create(
                    project_id=project_id, defaults={work.served: now}
                )
                return int(pk)
            break  # another worker took it: look at what is waiting again
    return None


def _analysis_claim(pk: int, now: datetime) -> bool:
    return bool(
        analysis_waiting()
        .filter(pk=pk)
        .update(
            status=AnalysisStatus.RUNNING,
            queued_at=None,
            serving_since=Coalesce("queued_at", Value(now)),
            started_at=now,
            heartbeat_at=Now(),
            attempts=F("attempts") + 1,
        )
    )


def _replay_claim(pk: int, now: datetime) -> bool:
    return bool(
        ReplayRun.objects.filter(pk=pk, status=ReplayStatus.QUEUED).update(
            status=ReplayStatus.RUNNING,
            started_at=now,
            heartbeat_at=Now(),
            attempts=F("attempts") + 1,
            progress=0.0,
            calls_done=0,
        )
    )


ANALYSES = _Work(
    waiting=analysis_waiting,
    since="queued_at",
    running=lambda: SessionAnalysis.objects.filter(status=AnalysisStatus.RUNNING),
    served="analysis_served_at",
    claim=_analysis_claim,
    cap=analysis_project_cap,
)
REPLAYS = _Work(
    waiting=lambda: ReplayRun.objects.filter(status=ReplayStatus.QUEUED),
    since="created_at",
    running=lambda: ReplayRun.objects.filter(status=ReplayStatus.RUNNING),
    served="replay_served_at",
    claim=_replay_claim,
)


def analysis_claim_next() -> SessionAnalysis | None:
    """Take up the waiting analysis whose turn it is (marked running), or None."""
    pk = _claim_next(ANALYSES)
    return None if pk is None else SessionAnalysis.objects.get(pk=pk)


def replay_claim_next() -> ReplayRun | None:
    """Take up the queued replay run whose turn it is (marked running), or None."""
    pk = _claim_next(REPLAYS)
    return None if pk is None else ReplayRun.objects.select_related("session__project").get(pk=pk)


def analysis_capped_waiting(row_pk: int) -> bool:
    """Whether, the slots capped, the project of this analysis row has analyses waiting: a
    pass of it that ends then sends a turn, since turns it was passed over for were spent."""
    if analysis_project_cap() is None:
        return False
    project = SessionAnalysis.objects.filter(pk=row_pk).values("session__project_id")
    return analysis_waiting().filter(session__project_id__in=project).exists()

"""The transactional outbox: work for the workers is written as a row, then sent.

``outbox_add`` writes an ``OutboxTask`` row inside the caller's transaction (so it exists
exactly when the data it is about exists) and sends it right after the commit. A broker that
is down leaves the row unsent and the request still succeeds; the beat task ``outbox_drain``
sends it when the broker is back. Sending twice is harmless: every task claims its row first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Q
from django.utils import timezone

from compaction.models import OutboxTask

logger = logging.getLogger(__name__)

SESSION_ANALYSE = "session_analyse"
REPLAY_RUN_EXECUTE = "replay_run_execute"
REPLAY_RUNS_EXECUTE = "replay_runs_execute"  # an experiment's runs, one task each
WEBHOOK_DELIVER = "webhook_deliver"
ALERT_EMAIL_SEND = "alert_email_send"
IMPORT_JOB_RUN = "import_job_run"  # sessions.tasks.import_job_run: a background import
ALERTS_REEVALUATE = "alerts_reevaluate_project"  # a project's rules over stored analyses
# A row its own request has not tried yet is left to that request for this long, so the drain
# does not race the send right after the commit (a request killed before sending is drained).
UNTRIED_GRACE = timedelta(seconds=10)


def _task(name: str, app_name: str = "compaction") -> Any:
    """A task by its name, ``compaction.tasks.<name>`` (the alerts' tasks, in alerts/tasks.py,
    kept that name): work is sent by name, never by importing the tasks (which import the
    services that write these rows). A web process never loads them, so there it is a
    signature of the name; where the task is loaded (a worker, a test that watches it) the
    task itself. The message sent, and its queue (CELERY_TASK_ROUTES, by name), are the same."""
    from config.celery import app

    full_name = f"{app_name}.tasks.{name}"
    return app.tasks[full_name] if full_name in app.tasks else app.signature(full_name)


def experiment_fan_out(run_ids: list[int]) -> None:
    """One replay turn per run of an experiment, sent together."""
    from celery import group

    from config.celery import app

    name = f"compaction.tasks.{REPLAY_RUN_EXECUTE}"
    group(app.signature(name, args=(run_id,), immutable=True) for run_id in run_ids).apply_async()


def _senders() -> dict[str, Callable[[list[Any]], object]]:
    return {
        SESSION_ANALYSE: lambda args: _task(SESSION_ANALYSE).delay(*args),
        REPLAY_RUN_EXECUTE: lambda args: _task(REPLAY_RUN_EXECUTE).delay(*args),
        REPLAY_RUNS_EXECUTE: lambda args: experiment_fan_out(list(args)),
        WEBHOOK_DELIVER: lambda args: _task(WEBHOOK_DELIVER).delay(*args),
        ALERT_EMAIL_SEND: lambda args: _task(ALERT_EMAIL_SEND).delay(*args),
        IMPORT_JOB_RUN: lambda args: _task(IMPORT_JOB_RUN, app_name="sessions").delay(*args),
        ALERTS_REEVALUATE: lambda args: _task(ALERTS_REEVALUATE).delay(*args),
    }


def outbox_add(*, kind: str, args: list[Any]) -> OutboxTask:
    """Record a task in the current transaction and send it once that commits."""
    if kind not in _senders():
        raise ValueError(f"unknown outbox task kind {kind!r}")
    row = OutboxTask.objects.create(kind=kind, args=args)
    transaction.on_commit(partial(_send_after_commit, row))
    return row


def _send_after_commit(row: OutboxTask) -> None:
    """The request's own send: the row is known, so no lock and no read (one UPDATE).

    A drain running at the same moment may send it too; a duplicate task does nothing.
    """
    try:
        _send_locked(row)
    except DatabaseError as exc:
        logger.warning("outbox task %s sent, not marked (the database failed): %s", row.pk, exc)


def outbox_send(*, task_id: int) -> bool:
    """Send one unsent row; True when it is sent (by this call or another). Never raises.

    Runs after the request's commit, so a failure here must not turn a stored batch into an
    error answer: the row stays unsent and the next drain tries again.
    """
    try:
        with transaction.atomic():
            row = (
                OutboxTask.objects.select_for_update(skip_locked=True)
                .filter(pk=task_id, sent_at__isnull=True)
                .first()
            )
            if row is None:
                return True  # sent already, or another sender holds it right now
            return _send_locked(row)
    except DatabaseError as exc:
        logger.warning("outbox task %s not sent, the database failed: %s", task_id, exc)
        return False


def _send_locked(row: OutboxTask) -> bool:
    """Send ``row`` and mark it sent; on a broker failure count the attempt and return False."""
    try:
        _senders()[row.kind](row.args)
    except Exception as exc:  # the broker's errors vary by transport; all mean "not now"
        logger.warning(
            "outbox task %s (%s) not sent, will retry: %s", row.pk, row.kind, type(exc).__name__
        )
        OutboxTask.objects.filter(pk=row.pk).update(
            attempts=row.attempts + 1, last_error=f"{type(exc).__name__}: {exc}"[:300]
        )
        return False
    OutboxTask.objects.filter(pk=row.pk, sent_at__isnull=True).update(
        sent_at=timezone.now(), attempts=row.attempts + 1
    )
    return True


KEEP_SENT = timedelta(days=1)


def outbox_drain(*, limit: int = 500) -> int:
    """Send the oldest unsent rows, stopping at the first broker failure. Returns how many sent.

    Rows sent more than a day ago are deleted on the way: they only help an investigation.
    """
    OutboxTask.objects.filter(sent_at__lt=timezone.now() - KEEP_SENT).delete()
    sent = 0
    untried = Q(attempts=0, created_at__gte=timezone.now() - UNTRIED_GRACE)
    pending = list(
        OutboxTask.objects.filter(sent_at__isnull=True)
        .exclude(untried)
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    for task_id in pending:
        if not outbox_send(task_id=task_id):
            break  # the broker is still down: the rest would fail alike
        sent += 1
    return sent


def outbox_pending_count() -> int:
    return OutboxTask.objects.filter(sent_at__isnull=True).count()

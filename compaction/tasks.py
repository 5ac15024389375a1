"""Celery tasks: thin wrappers that pass ids to services. Services claim their rows first.

The alerts' tasks (webhook deliveries, the alert e-mail, unmuting) are in alerts/tasks.py.
"""

from __future__ import annotations

from django.conf import settings

from compaction import outbox, pipeline, recovery
from config.celery import TRANSIENT_DB_ERRORS as TRANSIENT
from config.celery import app


@app.task(
    acks_late=True,
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    max_retries=5,
    # the hard stop behind each pass's budget (compaction/budget.py)
    time_limit=settings.ANALYSIS_TIME_LIMIT_SECONDS,
)
def session_analyse(session_id: int) -> None:
    """A turn of analysis, sent by each request: it analyses the waiting session whose
    project's turn it is (compaction/fair.py), which may be another than ``session_id``."""
    pipeline.analysis_next()


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5)
def replay_run_execute(run_id: int) -> None:
    """A turn of replay, one per queued run: runs the queued run whose project's turn it is."""
    pipeline.replay_run_next()


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def abandoned_work_requeue() -> int:
    return recovery.abandoned_work_requeue()


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def replay_runs_requeue_stuck() -> int:
    return recovery.replay_runs_requeue_stuck()


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def analyses_requeue_stuck() -> int:
    return recovery.analyses_requeue_stuck()


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def outbox_drain() -> int:
    return outbox.outbox_drain()

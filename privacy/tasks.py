"""Celery tasks of the privacy app: thin wrappers around its services.

The names are the ones these tasks had in compaction/tasks.py, so beat schedules and queued
messages from before the move still find them (CELERY_BEAT_SCHEDULE, CELERY_TASK_ROUTES).
"""

from __future__ import annotations

from config.celery import TRANSIENT_DB_ERRORS as TRANSIENT
from config.celery import app
from privacy import rescan


@app.task(
    name="compaction.tasks.stale_findings_rescan",
    acks_late=True,
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    max_retries=3,
)
def stale_findings_rescan() -> int:
    return rescan.stale_sessions_rescan()

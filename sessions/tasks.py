"""Celery tasks of the sessions app: thin wrappers around services."""

from __future__ import annotations

from config.celery import TRANSIENT_DB_ERRORS, app
from sessions import import_jobs, services


@app.task(acks_late=True, autoretry_for=TRANSIENT_DB_ERRORS, max_retries=3)
def sessions_purge_expired() -> int:
    """The retention purge, run by beat (``purge-expired-sessions``)."""
    return services.sessions_purge_expired()


@app.task(acks_late=True, autoretry_for=TRANSIENT_DB_ERRORS, retry_backoff=True, max_retries=5)
def import_job_run(job_id: int) -> None:
    """A background import (``POST /api/v1/imports``), on the imports queue."""
    import_jobs.import_job_run(job_id=job_id)


@app.task(autoretry_for=TRANSIENT_DB_ERRORS, retry_backoff=True, max_retries=3)
def import_jobs_requeue_abandoned() -> int:
    """Background imports left running by a dead worker, queued again (beat)."""
    return import_jobs.import_jobs_requeue_abandoned()

"""Celery tasks: thin wrappers that pass ids to services. Services claim their rows first."""

from __future__ import annotations

from typing import Any

from celery import Task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from compaction import alerts, outbox, pipeline, recovery, webhooks
from config.celery import app

TRANSIENT = (OperationalError, InterfaceError)


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5)
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


@app.task(bind=True, acks_late=True, max_retries=settings.WEBHOOK_MAX_ATTEMPTS - 1)
def webhook_deliver(self: Task[Any, None], delivery_id: int) -> None:
    """One POST per run; a failed one is retried after 1x, 2x, 4x... the backoff base."""
    final = self.request.retries >= settings.WEBHOOK_MAX_ATTEMPTS - 1
    if not webhooks.webhook_delivery_attempt(delivery_id=delivery_id, final=final):
        raise self.retry(countdown=webhooks.webhook_backoff(attempt=self.request.retries + 1))


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5)
def alert_email_send(alert_id: int) -> None:
    webhooks.alert_email_send(alert_id=alert_id)


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def alerts_unmute_expired() -> int:
    return alerts.alerts_unmute_expired()

"""Celery tasks of the alerts: thin wrappers that pass ids to services.

Their names are the ones they had in compaction/tasks.py ("compaction.tasks.<name>"): the outbox
sends them by those names (compaction/outbox.py), CELERY_TASK_ROUTES and the beat schedule
name them, and tasks queued before the move must still find their worker.
"""

from __future__ import annotations

from typing import Any

from celery import Task
from django.conf import settings

from alerts import services, webhooks
from config.celery import TRANSIENT_DB_ERRORS as TRANSIENT
from config.celery import app


@app.task(
    name="compaction.tasks.webhook_deliver",
    bind=True,
    acks_late=True,
    max_retries=settings.WEBHOOK_MAX_ATTEMPTS - 1,
)
def webhook_deliver(self: Task[Any, None], delivery_id: int) -> None:
    """One POST per run; a failed one is retried after 1x, 2x, 4x... the backoff base."""
    final = self.request.retries >= settings.WEBHOOK_MAX_ATTEMPTS - 1
    if not webhooks.webhook_delivery_attempt(delivery_id=delivery_id, final=final):
        raise self.retry(countdown=webhooks.webhook_backoff(attempt=self.request.retries + 1))


@app.task(
    name="compaction.tasks.alert_email_send",
    acks_late=True,
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    max_retries=5,
)
def alert_email_send(alert_id: int) -> None:
    webhooks.alert_email_send(alert_id=alert_id)


@app.task(
    name="compaction.tasks.alerts_unmute_expired",
    acks_late=True,
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    max_retries=3,
)
def alerts_unmute_expired() -> int:
    return services.alerts_unmute_expired()


@app.task(
    name="compaction.tasks.alerts_reevaluate_project",
    acks_late=True,
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    max_retries=3,
)
def alerts_reevaluate_project(project_id: int, rules: list[str] | None = None) -> int:
    return services.alerts_reevaluate_project(project_id=project_id, rules=rules)

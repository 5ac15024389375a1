"""Celery tasks: thin wrappers that pass ids to services. Services claim their rows first."""

from __future__ import annotations

from celery import group
from django.db import InterfaceError, OperationalError

from compaction import services
from config.celery import app

TRANSIENT = (OperationalError, InterfaceError)


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5)
def session_analyse(session_id: int) -> None:
    services.session_analyse(session_id=session_id)


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=5)
def replay_run_execute(run_id: int) -> None:
    services.replay_run_execute(run_id=run_id)


@app.task(acks_late=True, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def replay_runs_requeue_stuck() -> int:
    return services.replay_runs_requeue_stuck()


def experiment_fan_out(run_ids: list[int]) -> None:
    """One task per replay run; the last run to finish aggregates the experiment."""
    group(replay_run_execute.si(run_id) for run_id in run_ids).apply_async()

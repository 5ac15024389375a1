"""Celery tasks of the sessions app: thin wrappers around services."""

from __future__ import annotations

from django.db import InterfaceError, OperationalError

from config.celery import app
from sessions import services


@app.task(acks_late=True, autoretry_for=(OperationalError, InterfaceError), max_retries=3)
def sessions_purge_expired() -> int:
    """The retention purge, run by beat (``purge-expired-sessions``)."""
    return services.sessions_purge_expired()

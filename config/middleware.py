"""A dependency is down: say so instead of an HTML 500.

The database: a retryable 503.

Every API door (the django-ninja API, the OTLP receiver, imports) and every page reaches the
database through the view, so one ``process_exception`` covers them all. Clients and OTLP
exporters retry a 503 with ``Retry-After``; they drop a 500.

The cache: the request goes on, counting its limits in this process alone
(``sessions.counters``), and the response names what ran degraded in
``X-Sawtooth-Degraded`` (``rate-limit``, ``login-throttle``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from privacy import masking
from sessions import counters, selectors

logger = logging.getLogger(__name__)

DATABASE_DOWN = "database: unavailable, retry later"


def database_unavailable_response(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: JSON under /api/ and for OTLP, plain text for pages."""
    retry_after = str(settings.DATABASE_RETRY_AFTER_SECONDS)
    response: HttpResponse
    if request.path.startswith(("/api/", "/v1/")) or "json" in request.headers.get("Accept", ""):
        response = JsonResponse({"error": DATABASE_DOWN}, status=503)
    else:
        response = HttpResponse(
            "The database is unavailable; retry in a few seconds.",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
    response["Retry-After"] = retry_after
    return response


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        # The exception's text names the host, never trace content.
        logger.warning("database unavailable on %s %s: %s", request.method, request.path, exception)
        return database_unavailable_response(request)


class DegradedMiddleware:
    """``X-Sawtooth-Degraded: <feature>[, <feature>]`` on a response served without a
    dependency (sessions.counters.degraded_mark), so a client or a probe can see it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        degraded = counters.degraded_of(request)
        if degraded:
            response[counters.DEGRADED_HEADER] = ", ".join(degraded)
        return response


class NameScopeMiddleware:
    """Each request masks the names its reader's projects found (``privacy.masking``'s name
    scope): a found person's surname alone anywhere in them. A door that reads one session
    narrows the scope to it; the scope ends with the request, so nothing of it outlives it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = masking.names_scope_begin(project_ids=selectors.projects_for_user(request.user))
        try:
            return self.get_response(request)
        finally:
            masking.names_scope_end(token)

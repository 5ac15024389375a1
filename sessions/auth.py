"""The one door for bearer project keys: find the project, check the key, apply the rate limit.

Every endpoint that takes ``Authorization: Bearer <project key>`` comes through here: the
django-ninja API (``ProjectKey()`` for reads, ``ProjectKey(ingest=True)`` for uploads) and
the plain-Django OTLP receiver (``ingest_authorize``). So a new endpoint cannot forget the
key check or the per-project ingest allowance, and every door answers a bad key or a spent
allowance alike.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.http import HttpRequest
from ninja.security import HttpBearer

from privacy import masking
from sessions import counters, selectors, services
from sessions.errors import TooManyRequests, Unauthorized
from sessions.models import KEY_PREFIX, AgentSession, Project

UNAUTHORIZED = "Authorization: missing, unknown or revoked project key"
# X-Sawtooth-Degraded: the allowance was counted by this web process alone (cache down).
DEGRADED_RATE_LIMIT = "rate-limit"


class KeyRequest(HttpRequest):
    """A request that passed ProjectKey: ``auth`` is the key's project."""

    auth: Project


def bearer_token(request: HttpRequest) -> str:
    """The token of an ``Authorization: Bearer <token>`` header, or "" for anything else."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def key_name(request: HttpRequest) -> str:
    """How the audit log names the key of a request: ``key <prefix>`` (never the secret)."""
    token = bearer_token(request)
    prefix = token[len(KEY_PREFIX) :].split("_", 1)[0] if token.startswith(KEY_PREFIX) else ""
    return f"key {prefix}" if prefix else "key"


def key_authenticate(request: HttpRequest) -> Project:
    """The project of the request's active key; Unauthorized (401) otherwise."""
    token = bearer_token(request)
    project = services.api_key_authenticate(raw_key=token) if token else None
    if project is None:
        raise Unauthorized(UNAUTHORIZED)
    masking.names_scope_enter(project_id=project.pk)  # what the key reads masks its names
    return project


def key_session(request: KeyRequest, external_id: str) -> AgentSession:
    """The key's session ``external_id`` (NotFound otherwise); what the endpoint then shows
    masks the first names found in it too (``masking.names_mask``)."""
    session = selectors.session_by_external_id(project=request.auth, external_id=external_id)
    masking.names_scope_enter(project_id=session.project_id, session_id=session.pk)
    return session


def ingest_rate_check(
    *, project: Project, request: HttpRequest | None = None, units: int = 1, what: str = ""
) -> None:
    """Count ``units`` (one upload) against the project's per-minute allowance; 429 once it is
    spent.

    The count lives in Django's cache, so with ``CACHE_URL=redis://...`` every web process
    shares it; the embedded default (local memory) counts per process. When the shared cache
    is down the upload is not refused for it: this process counts alone (sessions.counters),
    and marks ``request`` so the response says so (``X-Sawtooth-Degraded: rate-limit``).
    An import counts by its size as well (``import_units``): ``what`` then says why.
    """
    limit = settings.INGEST_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return
    now = time.time()
    window = int(now // 60)
    count = counters.count_incr(
        f"ingest-rate:{project.pk}:{window}", timeout=120, what="the ingest rate limit", by=units
    )
    if not count.shared:
        counters.degraded_mark(request, DEGRADED_RATE_LIMIT)
    if count.value > limit:
        retry_after = max(1, int((window + 1) * 60 - now))
        raise TooManyRequests(
            f"rate limit: {limit} batches per minute for this project{what}; "
            f"retry in {retry_after}s",
            retry_after=retry_after,
        )


def import_units(size_bytes: int) -> int:
    """What an import of ``size_bytes`` (after every gzip layer) counts against the allowance,
    beyond the one its request counted at the door: one batch per started
    IMPORT_RATE_BYTES_PER_BATCH (1 MiB), so 100 MiB cost what 100 batches of events do:
    1 byte to 1 MiB adds nothing, 1 MiB and a byte adds one.
    """
    per = max(1, settings.IMPORT_RATE_BYTES_PER_BATCH)
    return max(0, -(-size_bytes // per) - 1)


def ingest_authorize(request: HttpRequest) -> Project:
    """The door for uploads: a valid key (else 401), then the allowance (else 429)."""
    project = key_authenticate(request)
    ingest_rate_check(project=project, request=request)
    return project


class ProjectKey(HttpBearer):
    """``Authorization: Bearer <key>``; sets request.auth to the key's Project.

    ``ProjectKey(ingest=True)`` is the door for uploads: the request also counts against the
    project's ingest allowance. One class, so OpenAPI shows one security scheme.
    """

    def __init__(self, *, ingest: bool = False) -> None:
        super().__init__()
        self.ingest = ingest

    def __call__(self, request: HttpRequest) -> Project:
        return ingest_authorize(request) if self.ingest else key_authenticate(request)

    def authenticate(self, request: HttpRequest, token: str) -> Project:
        return key_authenticate(request)

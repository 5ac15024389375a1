"""Counters in Django's cache that keep counting when the cache goes away.

The ingest allowance (``sessions.auth``) and login throttling (``sessions.login_throttle``)
count in the shared cache (Redis, with ``CACHE_URL=redis://...``). A cache outage must not
turn an upload or a login into a 500, so every count goes through here: when the shared cache
fails, the count is kept in this process's memory instead (what the embedded default always
does), a warning is logged at most once per ``CACHE_OUTAGE_LOG_SECONDS`` per process, and the
caller learns that the count was local, so the response can say so (``X-Sawtooth-Degraded``,
see ``degraded_mark``). Limits still hold, per process rather than across the fleet.

While the shared cache is down it is tried again once every ``CACHE_RETRY_SECONDS``, not on
every request, so a Redis that hangs costs one socket timeout per interval, not one per call.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from django.http import HttpRequest
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

# What a cache backend raises when its server is down, refuses writes or times out.
CACHE_ERRORS: tuple[type[Exception], ...] = (RedisError, OSError)
DEGRADED_HEADER = "X-Sawtooth-Degraded"
_DEGRADED_ATTR = "sawtooth_degraded"

_fallback = LocMemCache("sawtooth-counters-fallback", {"TIMEOUT": None, "MAX_ENTRIES": 100_000})
_lock = threading.Lock()
# Per cache location, so a test (or a settings change) on another cache starts afresh.
_down_until: dict[str, float] = {}
_last_warned: dict[str, float] = {}


@dataclass(frozen=True)
class Count:
    value: int
    shared: bool  # False: the shared cache was unavailable; counted by this process alone


def _location() -> str:
    return str(settings.CACHES["default"].get("LOCATION", ""))


def _shared_usable(location: str) -> bool:
    with _lock:
        return time.monotonic() >= _down_until.get(location, 0.0)


def _shared_failed(location: str, exc: Exception, what: str) -> None:
    now = time.monotonic()
    with _lock:
        _down_until[location] = now + settings.CACHE_RETRY_SECONDS
        last = _last_warned.get(location)
        warn = last is None or now - last >= settings.CACHE_OUTAGE_LOG_SECONDS
        if warn:
            _last_warned[location] = now
    if warn:
        # The exception names the host and the error, never a key's content.
        logger.warning(
            "cache unavailable (%s: %s); %s counted in this process only until it is back",
            type(exc).__name__,
            exc,
            what,
        )


def _incr(store: BaseCache, key: str, timeout: int, by: int = 1) -> int:
    store.add(key, 0, timeout=timeout)
    try:
        return int(store.incr(key, by))
    except ValueError:  # expired between add and incr
        store.set(key, by, timeout=timeout)
        return by


def count_incr(key: str, *, timeout: int, what: str, by: int = 1) -> Count:
    """Add ``by`` (one) to the counter ``key`` (created for ``timeout`` seconds) and return it.

    ``what`` names the limit in the outage warning ("ingest rate limit").
    """
    location = _location()
    if _shared_usable(location):
        try:
            return Count(_incr(cache, key, timeout, by), shared=True)
        except CACHE_ERRORS as exc:
            _shared_failed(location, exc, what)
    return Count(_incr(_fallback, key, timeout, by), shared=False)


def count_read(key: str, *, what: str) -> Count:
    """The counter ``key`` (0 when unset)."""
    location = _location()
    if _shared_usable(location):
        try:
            return Count(int(cache.get(key) or 0), shared=True)
        except CACHE_ERRORS as exc:
            _shared_failed(location, exc, what)
    return Count(int(_fallback.get(key) or 0), shared=False)


def count_clear(key: str, *, what: str) -> None:
    """Forget the counter ``key``, in the shared cache and in this process's fallback."""
    _fallback.delete(key)
    location = _location()
    if _shared_usable(location):
        try:
            cache.delete(key)
        except CACHE_ERRORS as exc:
            _shared_failed(location, exc, what)


def counters_reset() -> None:
    """Forget every outage and every local count (tests, and a settings change)."""
    with _lock:
        _down_until.clear()
        _last_warned.clear()
    _fallback.clear()


def degraded_mark(request: HttpRequest | None, feature: str) -> None:
    """Note on the request that ``feature`` ran degraded; the response then names it in
    ``X-Sawtooth-Degraded`` (config.middleware.DegradedMiddleware)."""
    if request is None:
        return
    marked: set[str] = getattr(request, _DEGRADED_ATTR, set())
    marked.add(feature)
    setattr(request, _DEGRADED_ATTR, marked)


def degraded_of(request: HttpRequest) -> list[str]:
    """What ran degraded for this request, sorted (empty when nothing did)."""
    return sorted(getattr(request, _DEGRADED_ATTR, ()))

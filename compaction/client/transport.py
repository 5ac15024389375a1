"""HTTP for the agent-side client: stdlib only, gzip bodies, retries that honour Retry-After."""

from __future__ import annotations

import gzip
import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import IO, Any

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
USER_AGENT = "sawtooth-client/1"


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    retry_after: float | None = None

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class GiveUp(Exception):
    """The server refused the request for good (4xx other than 408/429), or retries ran out."""

    def __init__(self, message: str, reply: Reply | None = None) -> None:
        super().__init__(message)
        self.reply = reply


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date).

    >>> retry_after_seconds("3")
    3.0
    >>> retry_after_seconds(None) is None
    True
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, moment - (time.time() if now is None else now))


def send(
    url: str,
    body: bytes | IO[bytes],
    *,
    key: str,
    content_type: str,
    gzipped: bool,
    length: int | None = None,
    timeout: float = 30.0,
) -> Reply:
    """One POST; network errors raise OSError, HTTP errors come back as a Reply."""
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": content_type,
        "User-Agent": USER_AGENT,
    }
    if gzipped:
        headers["Content-Encoding"] = "gzip"
    if length is not None:
        headers["Content-Length"] = str(length)
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return Reply(response.status, response.read())
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, exc.read(), retry_after_seconds(exc.headers.get("Retry-After")))


def get(url: str, *, key: str, timeout: float = 60.0) -> Reply:
    """One GET; network errors raise OSError, HTTP errors come back as a Reply."""
    headers = {"Authorization": f"Bearer {key}", "User-Agent": USER_AGENT}
    request = urllib.request.Request(url, headers=headers, method="GET")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return Reply(response.status, response.read())
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, exc.read(), retry_after_seconds(exc.headers.get("Retry-After")))


def job_wait(base_url: str, job_id: str, *, key: str, backoff: Backoff, wait: int = 30) -> Any:
    """The report of a background import (``POST /api/v1/imports`` answered 202 ``{job_id}``):
    ``GET /api/v1/imports/{job_id}?wait=30`` until it is finished. A failed job (every file
    refused) raises GiveUp with its error."""
    url = f"{base_url.rstrip('/')}/api/v1/imports/{job_id}?wait={wait}"
    while True:
        reply = post_with_retries(lambda: get(url, key=key, timeout=wait + 30), backoff=backoff)
        body = reply.json()
        if reply.status == 200:
            if body.get("status") == "failed":
                raise GiveUp(f"import failed: {body.get('error', '')}", reply)
            return body.get("report") or {}


@dataclass
class Backoff:
    """Exponential backoff with full jitter, capped; a Retry-After from the server wins."""

    base: float = 0.5
    cap: float = 60.0
    attempts: int = 8

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.cap * 5)
        return random.uniform(0, min(self.cap, self.base * 2**attempt))


def post_with_retries(
    attempt_once: Callable[[], Reply],
    *,
    backoff: Backoff,
    sleep: Callable[[float], None] = time.sleep,
    should_stop: Callable[[], bool] = lambda: False,
) -> Reply:
    """Call ``attempt_once`` until it succeeds, the server refuses for good, or retries end."""
    last: Reply | None = None
    for attempt in range(backoff.attempts):
        try:
            reply = attempt_once()
        except OSError as exc:  # connection refused, reset, timeout
            last = None
            error: str = str(exc)
            wait = backoff.delay(attempt, None)
        else:
            if reply.ok:
                return reply
            if reply.status not in RETRY_STATUSES:
                raise GiveUp(f"HTTP {reply.status}: {reply.body[:500]!r}", reply)
            last, error = reply, f"HTTP {reply.status}"
            wait = backoff.delay(attempt, reply.retry_after)
        if should_stop() or attempt == backoff.attempts - 1:
            break
        sleep(wait)
    raise GiveUp(f"gave up after {backoff.attempts} attempts ({error})", last)


def gzip_json(payload: Any) -> bytes:
    return gzip.compress(json.dumps(payload, ensure_ascii=False).encode("utf-8"), mtime=0)

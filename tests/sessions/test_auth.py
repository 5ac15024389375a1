"""One door for bearer keys: the events, import and OTLP endpoints share one key check and one
per-project ingest allowance, counted in Django's cache (shared across processes on Redis)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine
from django.core.cache import cache
from django.test import Client, override_settings

from sessions import auth, services
from sessions.errors import TooManyRequests
from sessions.models import ApiKey, Message
from tests.factories import make_key, make_project, wire_message
from tests.importers.corpus import SPOTTER

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("SAWTOOTH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
UNAUTHORIZED = "Authorization: missing, unknown or revoked project key"
# Inside a minute, far from its end: a pinned clock keeps every request in one window.
NOON = datetime(2026, 3, 2, 12, 0, 15, tzinfo=UTC)
EXPORT = {"resourceSpans": []}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def events(client: Client, key: str, seq: int = 0):
    return client.post(
        "/api/v1/sessions/run-1/events",
        data=json.dumps({"messages": [wire_message(seq)]}),
        content_type="application/json",
        headers=bearer(key),
    )


def claude_code(client: Client, key: str):
    return client.post(
        "/api/v1/imports/claude-code?name=short.jsonl",
        data=(SPOTTER / "short.jsonl").read_bytes(),
        content_type="application/x-ndjson",
        headers=bearer(key),
    )


def otlp(client: Client, key: str):
    return client.post(
        "/v1/traces", data=json.dumps(EXPORT), content_type="application/json", headers=bearer(key)
    )


@pytest.fixture(autouse=True)
def _fresh_counts() -> Iterator[None]:
    cache.clear()
    with time_machine.travel(NOON, tick=False):
        yield
    cache.clear()


@override_settings(INGEST_RATE_LIMIT_PER_MINUTE=2)
def test_the_otlp_door_answers_429_with_retry_after_once_the_allowance_is_spent(
    client: Client,
) -> None:
    key = make_key(make_project(name="otel"))
    assert otlp(client, key).status_code == 200
    assert otlp(client, key).status_code == 200
    refused = otlp(client, key)
    assert (refused.status_code, refused["Retry-After"]) == (429, "45")
    assert refused.json() == {
        "code": 8,
        "message": "rate limit: 2 batches per minute for this project; retry in 45s",
    }


@override_settings(INGEST_RATE_LIMIT_PER_MINUTE=1)
def test_the_import_door_answers_429_with_retry_after_once_the_allowance_is_spent(
    client: Client,
) -> None:
    key = make_key(make_project(name="uploads"))
    first = claude_code(client, key)
    assert first.status_code == 200, first.content
    stored = Message.objects.count()
    refused = claude_code(client, key)
    assert (refused.status_code, refused["Retry-After"]) == (429, "45")
    assert refused.json() == {
        "error": "rate limit: 1 batches per minute for this project; retry in 45s"
    }
    assert Message.objects.count() == stored


@override_settings(INGEST_RATE_LIMIT_PER_MINUTE=3)
def test_the_three_doors_draw_on_one_allowance_per_project(client: Client) -> None:
    key = make_key(make_project(name="busy"))
    assert events(client, key).status_code == 202
    assert claude_code(client, key).status_code == 200
    assert otlp(client, key).status_code == 200
    assert [events(client, key, 1).status_code, claude_code(client, key).status_code] == [429, 429]
    assert otlp(client, key).status_code == 429
    # reads are not uploads: they do not count and are not refused
    assert client.get("/api/v1/sessions", headers=bearer(key)).status_code == 200
    # another project has its own allowance
    assert otlp(client, make_key(make_project(name="quiet"))).status_code == 200


def test_a_revoked_key_is_401_on_all_three_doors(client: Client) -> None:
    project = make_project(name="revoked")
    key = make_key(project)
    assert events(client, key).status_code == 202
    services.api_key_revoke(api_key=ApiKey.objects.get(project=project))

    answers = [events(client, key), claude_code(client, key), otlp(client, key)]

    assert [a.status_code for a in answers] == [401, 401, 401]
    assert [a["WWW-Authenticate"] for a in answers] == ["Bearer", "Bearer", "Bearer"]
    assert answers[0].json() == {"error": UNAUTHORIZED}
    assert answers[1].json() == {"error": UNAUTHORIZED}
    assert answers[2].json() == {"code": 16, "message": UNAUTHORIZED}


@pytest.mark.parametrize("header", ["", "Bearer", "Basic abc", "Bearer st_nope_x", "bearer  "])
def test_anything_but_an_active_bearer_key_is_refused_before_the_allowance(
    client: Client, header: str
) -> None:
    response = client.post(
        "/v1/traces", data="{}", content_type="application/json", headers={"Authorization": header}
    )
    assert (response.status_code, response.json()["message"]) == (401, UNAUTHORIZED)


def test_the_bearer_token_is_read_whatever_the_schemes_case(rf) -> None:
    request = rf.post("/", headers={"Authorization": "bEaReR  st_abc_def "})
    assert auth.bearer_token(request) == "st_abc_def"
    assert auth.bearer_token(rf.post("/", headers={"Authorization": "Token st_abc_def"})) == ""


_SPEND_ELSEWHERE = """
import django, time_machine
django.setup()
from sessions import auth
from sessions.models import Project
with time_machine.travel({moment!r}, tick=False):
    for _ in range(2):
        auth.ingest_rate_check(project=Project(pk={pk}))
"""


def test_on_redis_the_allowance_is_shared_across_processes() -> None:
    project = make_project(name="fleet")
    count_key = f"ingest-rate:{project.pk}:{int(NOON.timestamp() // 60)}"
    # another web process, configured by settings.py from CACHE_URL=redis://...
    env = {**os.environ, "CACHE_URL": REDIS_URL, "DJANGO_SETTINGS_MODULE": "config.settings"}
    code = _SPEND_ELSEWHERE.format(moment=NOON.isoformat(), pk=project.pk)
    on_redis = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    with override_settings(CACHES={"default": on_redis}, INGEST_RATE_LIMIT_PER_MINUTE=2):
        cache.delete(count_key)
        try:
            subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True)
            with pytest.raises(TooManyRequests) as refused:
                auth.ingest_rate_check(project=project)
        finally:
            cache.delete(count_key)
    assert refused.value.retry_after == 45

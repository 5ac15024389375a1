"""Fault: the cache (Redis, CACHE_URL=redis://...) goes down and comes back.

The test's own redis-server on a free port is the cache; it is stopped mid-test. Uploads on
every door are still stored, login still works, pages still render, and each response that
ran without the shared cache says so (``X-Sawtooth-Degraded``); limits are counted by the
process meanwhile, and by Redis again once it is back.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import redis
import time_machine
from django.core.cache import cache
from django.db import connection
from django.test import Client, override_settings

from sessions import counters
from sessions.models import AgentSession, Message
from tests.factories import make_key, make_project, make_session, make_user, wire_message
from tests.importers.corpus import SPOTTER
from tests.importers.test_otlp import call, export, text
from tests.infra import RedisServer, WebServer, app_env

pytestmark = pytest.mark.django_db

# Inside a minute, far from its end: a pinned clock keeps every request in one window.
NOON = datetime(2026, 3, 2, 12, 0, 15, tzinfo=UTC)
PASSWORD = "correct-horse-battery"


@pytest.fixture
def redis_cache(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own as Django's cache; retried on every call once down,
    so the test needs no wait to see it back."""
    if not RedisServer.available():
        pytest.skip("redis-server is not installed")
    server = RedisServer(tmp_path)
    server.start()
    on_redis = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": server.url,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
    counters.counters_reset()
    try:
        with (
            override_settings(CACHES={"default": on_redis}, CACHE_RETRY_SECONDS=0),
            time_machine.travel(NOON, tick=False),
        ):
            yield server
    finally:
        server.stop()
        counters.counters_reset()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def events(client: Client, key: str, external_id: str, seq: int):
    return client.post(
        f"/api/v1/sessions/{external_id}/events",
        data=json.dumps({"messages": [wire_message(seq)]}),
        content_type="application/json",
        headers=bearer(key),
    )


def otlp(client: Client, key: str):
    body = export(
        call("00000000000000a1", [text("user", "Migrate billing.")], "On.", start=1, tokens=9)
    )
    return client.post(
        "/v1/traces", data=json.dumps(body), content_type="application/json", headers=bearer(key)
    )


def claude_code(client: Client, key: str):
    return client.post(
        "/api/v1/imports/claude-code?name=short.jsonl",
        data=(SPOTTER / "short.jsonl").read_bytes(),
        content_type="application/x-ndjson",
        headers=bearer(key),
    )


def rate_key(project_pk: int) -> str:
    return f"ingest-rate:{project_pk}:{int(NOON.timestamp() // 60)}"


@override_settings(INGEST_RATE_LIMIT_PER_MINUTE=1000)
def test_with_the_cache_down_every_door_stores_login_works_and_pages_render(
    redis_cache: RedisServer, client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    project = make_project(name="outage")
    key = make_key(project)
    user = make_user(project=project)
    shown = make_session(project, external_id="before-the-outage")
    first = events(client, key, "run-1", 0)
    assert first.status_code == 202
    assert counters.DEGRADED_HEADER not in first
    assert cache.get(rate_key(project.pk)) == 1

    redis_cache.stop()
    with caplog.at_level(logging.WARNING, logger="sessions.counters"):
        stored = events(client, key, "run-1", 1)
        spans = otlp(client, key)
        imported = claude_code(client, key)
        login = Client(REMOTE_ADDR="192.0.2.20").post(
            "/login/", {"username": user.username, "password": PASSWORD}
        )
    assert (stored.status_code, stored.json()) == (202, {"received": 1, "duplicates": 0})
    assert stored[counters.DEGRADED_HEADER] == "rate-limit"
    assert (spans.status_code, spans[counters.DEGRADED_HEADER]) == (200, "rate-limit")
    assert (imported.status_code, imported[counters.DEGRADED_HEADER]) == (200, "rate-limit")
    assert sorted(
        Message.objects.filter(session__external_id="run-1").values_list("seq", flat=True)
    ) == [0, 1]
    assert Message.objects.filter(session__external_id="conv-1").count() == 2
    assert AgentSession.objects.filter(project=project).count() == 4  # + the import's session
    assert login.status_code == 302, login.content
    assert login[counters.DEGRADED_HEADER] == "login-throttle"
    # logged, once per interval, not once per request
    outage = [r for r in caplog.records if "cache unavailable" in r.getMessage()]
    assert len(outage) == 1, [r.getMessage() for r in caplog.records]
    assert "ingest rate limit" in outage[0].getMessage()

    reader = Client()
    reader.force_login(user)
    for page in ("/", f"/sessions/{shown.pk}/", "/search/?q=billing"):
        assert reader.get(page).status_code == 200, page
    listed = client.get("/api/v1/sessions", headers=bearer(key))
    assert listed.status_code == 200
    assert listed["Content-Type"].startswith("application/json")


@override_settings(INGEST_RATE_LIMIT_PER_MINUTE=3)
def test_while_the_cache_is_down_limits_count_in_the_process_and_on_redis_once_it_is_back(
    redis_cache: RedisServer, client: Client
) -> None:
    project = make_project(name="limited")
    key = make_key(project)
    redis_cache.stop()
    answers = [events(client, key, "run-2", seq).status_code for seq in range(4)]
    assert answers == [202, 202, 202, 429]  # degraded, not switched off
    refused = events(client, key, "run-2", 4)
    assert (refused[counters.DEGRADED_HEADER], refused.json()["error"]) == (
        "rate-limit",
        "rate limit: 3 batches per minute for this project; retry in 45s",
    )

    redis_cache.start()
    back = events(client, key, "run-3", 0)
    assert back.status_code == 202
    assert counters.DEGRADED_HEADER not in back
    assert cache.get(rate_key(project.pk)) == 1  # counted on Redis again, from scratch
    assert [events(client, key, "run-3", seq).status_code for seq in (1, 2, 3)] == [202, 202, 429]
    assert cache.get(rate_key(project.pk)) == 4


@override_settings(LOGIN_MAX_FAILURES_PER_ACCOUNT=3)
def test_while_the_cache_is_down_login_is_still_throttled_in_the_process(
    redis_cache: RedisServer,
) -> None:
    user = make_user(project=make_project(name="guarded"))
    redis_cache.stop()
    attacker = Client(REMOTE_ADDR="203.0.113.30")
    for _ in range(3):
        wrong = attacker.post("/login/", {"username": user.username, "password": "guess"})
        assert (wrong.status_code, wrong[counters.DEGRADED_HEADER]) == (200, "login-throttle")
    right = {"username": user.username, "password": PASSWORD}
    locked = attacker.post("/login/", right)
    assert locked.status_code == 200  # the form again: locked out, as with Redis up
    assert "_auth_user_id" not in attacker.session


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_web_process_whose_redis_cache_stops_still_stores_and_logs_in(tmp_path: Path) -> None:
    """The same outage through gunicorn configured by CACHE_URL, as deployed: the answers are
    the ones above, never an HTML 500, and the limit counts on Redis again once it is back."""
    if connection.vendor != "postgresql":
        pytest.skip("the web process needs DATABASE_URL pointing at PostgreSQL")
    if not RedisServer.available():
        pytest.skip("redis-server is not installed")
    db = connection.settings_dict
    (tmp_path / "cache").mkdir()
    (tmp_path / "broker").mkdir()
    cache_server, broker = RedisServer(tmp_path / "cache"), RedisServer(tmp_path / "broker")
    env = app_env(
        database_url=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        broker_url=broker.url,
        prefix=f"c-{uuid.uuid4().hex[:8]}",
        CACHE_URL=cache_server.url,
        CACHE_RETRY_SECONDS="0",
        INGEST_RATE_LIMIT_PER_MINUTE="1000",
    )
    web = WebServer(env, log=tmp_path / "web.log", workers=1)
    project = make_project(name="deployed")
    key = make_key(project)
    user = make_user(project=project)
    started: list[RedisServer | WebServer] = []
    try:
        for proc in (cache_server, broker, web):
            proc.start()
            started.append(proc)
        with httpx.Client(base_url=web.url, timeout=30) as http:

            def upload(seq: int) -> httpx.Response:
                body = {"messages": [wire_message(seq)]}
                return http.post("/api/v1/sessions/run-1/events", json=body, headers=bearer(key))

            assert counters.DEGRADED_HEADER not in upload(0).headers
            cache_server.stop()
            stored = upload(1)
            assert (stored.status_code, stored.json()) == (202, {"received": 1, "duplicates": 0})
            assert stored.headers[counters.DEGRADED_HEADER] == "rate-limit"
            spans = http.post(
                "/v1/traces",
                json=export(
                    call("00000000000000a1", [text("user", "Go.")], "On.", start=1, tokens=9)
                ),
                headers=bearer(key),
            )
            assert (spans.status_code, spans.headers[counters.DEGRADED_HEADER]) == (
                200,
                "rate-limit",
            )
            form = http.get("/login/")
            assert form.status_code == 200
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
            assert token is not None
            login = http.post(
                "/login/",
                data={
                    "username": user.username,
                    "password": PASSWORD,
                    "csrfmiddlewaretoken": token.group(1),
                },
                headers={"Referer": f"{web.url}/login/"},
            )
            assert login.status_code == 302, login.text[:500]
            assert login.headers[counters.DEGRADED_HEADER] == "login-throttle"
            assert http.get("/").status_code == 200
            listed = http.get("/api/v1/sessions", headers=bearer(key))
            assert listed.headers["Content-Type"].startswith("application/json")

            cache_server.start()
            back = upload(2)
            assert (back.status_code, counters.DEGRADED_HEADER in back.headers) == (202, False)
        shared = redis.Redis.from_url(cache_server.url)
        counted = shared.keys(f"*ingest-rate:{project.pk}:*")
        assert counted, "the allowance is not counted on Redis again"
        assert sum(int(shared.get(k) or 0) for k in counted) >= 1
        assert Message.objects.filter(session__external_id="run-1").count() == 3
        assert Message.objects.filter(session__external_id="conv-1").count() == 2
        assert "cache unavailable" in web.proc.tail(20_000)
    finally:
        for proc in reversed(started):
            proc.stop()

"""Faults injected into a real stack: gunicorn, Celery workers, and the test's OWN Redis and
PostgreSQL, stopped and started again in the middle of ingest.

Each test proves the same promise from another side: every batch answered 202 is stored
once, every analysis and replay it asked for runs (once), and a client that retries what it
was told to retry (503 with Retry-After) loses nothing.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from django.db import connection

from compaction.models import AnalysisStatus, OutboxTask, ReplayRun, ReplayStatus, SessionAnalysis
from sessions.models import AgentSession, Message
from tests.factories import coding_session_messages, conversation, make_key, make_project
from tests.infra import (
    ROOT,
    PostgresServer,
    Process,
    RedisServer,
    WebServer,
    all_queues,
    app_env,
    celery_worker,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

FAST = {
    "OUTBOX_DRAIN_EVERY_SECONDS": "1",
    "REPLAY_REQUEUE_EVERY_SECONDS": "2",
    "ANALYSIS_REQUEUE_EVERY_SECONDS": "2",
    "INGEST_RATE_LIMIT_PER_MINUTE": "0",
    "CELERY_BROKER_CONNECTION_TIMEOUT_SECONDS": "1",
}


def _test_database_url() -> str:
    if connection.vendor != "postgresql":
        pytest.skip("fault tests need DATABASE_URL pointing at PostgreSQL")
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if not RedisServer.available():
        pytest.skip("redis-server is not installed")
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def procs() -> Iterator[list[Process | WebServer]]:
    started: list[Process | WebServer] = []
    yield started
    for proc in reversed(started):
        proc.stop()


def _logs(procs: list[Process | WebServer]) -> str:
    return "\n".join(
        f"--- {p.proc.log if isinstance(p, WebServer) else p.log}\n"
        + (p.proc.tail() if isinstance(p, WebServer) else p.tail())
        for p in procs
    )


def _batch(seq0: int, n: int) -> dict[str, object]:
    return {"messages": conversation(n, start=seq0)}


def test_an_analysis_queued_behind_50_replays_runs_promptly(redis_server, procs, tmp_path):
    prefix = f"q-{uuid.uuid4().hex[:8]}"
    env = app_env(
        database_url=_test_database_url(), broker_url=redis_server.url, prefix=prefix, **FAST
    )
    project = make_project()
    key = make_key(project)
    bulky = coding_session_messages(turns=120, tool_chars=6000)
    web = WebServer(env, log=tmp_path / "web.log")
    replays = celery_worker(env, log=tmp_path / "replays.log", queues=[f"{prefix}.replays"])
    analysis = celery_worker(env, log=tmp_path / "analysis.log", queues=[f"{prefix}.analysis"])
    for proc in (web, replays, analysis):
        procs.append(proc)
        proc.start()
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=web.url, headers=headers, timeout=30) as http:
        assert (
            http.post("/api/v1/sessions/bulky/events", json={"messages": bulky}).status_code == 202
        )
        for _ in range(50):
            reply = http.post("/api/v1/sessions/bulky/replays", json={})
            assert reply.status_code == 202, reply.text
        started = time.monotonic()
        fresh = http.post("/api/v1/sessions/fresh/events", json=_batch(0, 6))
        assert fresh.status_code == 202, fresh.text

        def analysed() -> bool:
            return SessionAnalysis.objects.filter(
                session__external_id="fresh", status=AnalysisStatus.DONE
            ).exists()

        try:
            wait_until(analysed, timeout=30, what="the fresh session's analysis")
        except TimeoutError:
            pytest.fail(_logs(procs))
        took = time.monotonic() - started
    waiting = ReplayRun.objects.filter(status=ReplayStatus.QUEUED).count()
    assert took < 30
    # The replays were still there to be waited behind: most of them had not even started.
    assert waiting >= 40, f"only {waiting} replays still queued; the test proves nothing"


def test_a_broker_outage_during_ingest_loses_nothing_and_runs_everything_once(
    redis_server, procs, tmp_path
):
    prefix = f"b-{uuid.uuid4().hex[:8]}"
    env = app_env(
        database_url=_test_database_url(), broker_url=redis_server.url, prefix=prefix, **FAST
    )
    project = make_project()
    key = make_key(project)
    web = WebServer(env, log=tmp_path / "web.log")
    worker = celery_worker(
        env,
        log=tmp_path / "worker.log",
        queues=all_queues(prefix),
        concurrency=2,
        beat=True,
        restart=True,  # supervised, as in docker-compose: it may exit when Redis goes away
    )
    for proc in (web, worker):
        procs.append(proc)
        proc.start()
    sessions = [f"s{n}" for n in range(4)]
    sent: dict[str, int] = dict.fromkeys(sessions, 0)
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=web.url, headers=headers, timeout=30) as http:

        def upload_round() -> None:
            for name in sessions:
                reply = http.post(f"/api/v1/sessions/{name}/events", json=_batch(sent[name], 4))
                assert reply.status_code == 202, reply.text
                assert reply.json() == {"received": 4, "duplicates": 0}
                sent[name] += 4

        upload_round()
        redis_server.stop()  # the broker goes away in the middle of ingest
        for _ in range(3):
            upload_round()
        during = http.post("/api/v1/sessions/s0/replays", json={})
        assert during.status_code == 202, during.text
        # Stored and answered 202, their tasks waiting in the outbox: 12 analyses, 1 replay.
        assert OutboxTask.objects.filter(sent_at__isnull=True).count() == 13
        redis_server.start()  # same port, same append-only file
        upload_round()

    def all_done() -> bool:
        analyses = SessionAnalysis.objects.filter(session__project=project)
        current = [a for a in analyses if a.status == AnalysisStatus.DONE and a.is_current]
        replay = ReplayRun.objects.get(pk=during.json()["id"])
        return len(current) == len(sessions) and replay.status == ReplayStatus.DONE

    try:
        wait_until(all_done, timeout=60, what="every analysis and the replay")
    except TimeoutError:
        pytest.fail(_logs(procs))
    for name in sessions:
        session = AgentSession.objects.get(project=project, external_id=name)
        stored = Message.objects.filter(session=session)
        assert session.message_count == stored.count() == sent[name] == 20
        assert sorted(stored.values_list("seq", flat=True)) == list(range(20))
        assert session.analysis.message_count == 20
    assert ReplayRun.objects.get(pk=during.json()["id"]).attempts == 1


def _manage(env: dict[str, str], *argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return done.stdout


def test_a_postgresql_outage_during_ingest_answers_503_and_loses_nothing(
    redis_server, procs, tmp_path
):
    if not PostgresServer.available():
        pytest.skip("PostgreSQL server binaries are not installed")
    _test_database_url()  # the rest of the suite's vendor; this test brings its own server
    pg = PostgresServer()
    pg.init()
    try:
        prefix = f"p-{uuid.uuid4().hex[:8]}"
        env = app_env(
            database_url=pg.url,
            broker_url=redis_server.url,
            prefix=prefix,
            DATABASE_RETRY_AFTER_SECONDS="1",
            **FAST,
        )
        _manage(env, "migrate", "--no-input")
        _manage(env, "createproject", "faults")
        key = _manage(env, "createapikey", "faults").strip().splitlines()[-1]
        web = WebServer(env, log=tmp_path / "web.log", workers=2)
        worker = celery_worker(
            env, log=tmp_path / "worker.log", queues=all_queues(prefix), concurrency=2, beat=True
        )
        for proc in (web, worker):
            procs.append(proc)
            proc.start()
        unavailable = 0
        sessions = ["a", "b", "c"]
        sent = dict.fromkeys(sessions, 0)
        with httpx.Client(
            base_url=web.url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as http:

            def deliver(name: str) -> None:
                """Send one batch until it is accepted, as a client honouring 503 would."""
                nonlocal unavailable
                body = _batch(sent[name], 5)
                for _ in range(200):
                    reply = http.post(f"/api/v1/sessions/{name}/events", json=body)
                    if reply.status_code == 202:
                        sent[name] += 5
                        return
                    assert reply.status_code == 503, reply.text
                    assert reply.json() == {"error": "database: unavailable, retry later"}
                    assert reply.headers["Retry-After"] == "1"
                    unavailable += 1
                    time.sleep(0.2)
                pytest.fail("never accepted")

            for name in sessions:
                deliver(name)
            pg.stop("immediate")  # a crash, not a polite shutdown
            for name in sessions:
                reply = http.post(f"/api/v1/sessions/{name}/events", json=_batch(sent[name], 5))
                assert reply.status_code == 503, reply.text
                assert reply.json() == {"error": "database: unavailable, retry later"}
                assert reply.headers["Retry-After"] == "1"
                unavailable += 1
            pg.start()
            # Each gunicorn worker's first request after the restart succeeds: its persistent
            # connection is checked before reuse (CONN_HEALTH_CHECKS).
            for _ in range(2):
                for name in sessions:
                    body = _batch(sent[name], 5)
                    reply = http.post(f"/api/v1/sessions/{name}/events", json=body)
                    assert reply.status_code == 202, reply.text
                    sent[name] += 5
            restarted = threading.Timer(1.0, pg.start)
            pg.stop("immediate")  # a second crash: clients retry until it is back
            restarted.start()
            try:
                for name in sessions:
                    deliver(name)
            finally:
                restarted.join()

        def analysed() -> bool:
            with psycopg.connect(pg.url.replace("postgres://", "postgresql://")) as db:
                rows = db.execute(
                    "SELECT s.external_id, s.message_count, a.status,"
                    " a.analysed_generation >= a.requested_generation, a.message_count,"
                    " (SELECT count(*) FROM traces_message m WHERE m.session_id = s.id)"
                    " FROM traces_agentsession s JOIN compaction_sessionanalysis a"
                    " ON a.session_id = s.id"
                ).fetchall()
            return sorted(rows) == [
                (name, sent[name], "done", True, sent[name], sent[name]) for name in sessions
            ]

        try:
            wait_until(analysed, timeout=60, what="every session stored once and analysed")
        except TimeoutError:
            pytest.fail(_logs(procs))
        assert sent == dict.fromkeys(sessions, 20)
        assert unavailable >= len(sessions)
    finally:
        for proc in procs:
            proc.stop()
        procs.clear()
        pg.remove()

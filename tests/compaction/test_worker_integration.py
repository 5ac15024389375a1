"""A real `celery worker` process on the real Redis broker and PostgreSQL.

Tasks are sent by name through a Redis-bound client app, the way the web process sends them;
the worker runs the project's own Celery app and writes to the test database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest
from celery import Celery
from django.db import connection

from compaction.models import (
    AnalysisStatus,
    CompactionSpan,
    ReplayRun,
    ReplayStatus,
    SessionAnalysis,
)
from tests.factories import coding_session_messages, make_project, make_session
from tests.infra import all_queues

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("SAWTOOTH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _redis_available() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_timeout=1).ping())
    except redis.RedisError:
        return False


@pytest.fixture
def broker() -> Iterator[tuple[Celery, str]]:
    if connection.vendor != "postgresql":
        pytest.skip("worker integration tests need DATABASE_URL pointing at PostgreSQL")
    if not _redis_available():
        pytest.skip(f"Redis not reachable at {REDIS_URL}")
    queue = f"test-{uuid.uuid4().hex[:8]}"
    client = Celery("sawtooth-test-client", broker=REDIS_URL)
    yield client, queue
    client.close()


class Worker:
    def __init__(
        self, queue: str, log: Path, *, queues: list[str] | None = None, concurrency: int = 2
    ) -> None:
        db = connection.settings_dict
        self.env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "CELERY_BROKER_URL": REDIS_URL,
            "CELERY_TASK_DEFAULT_QUEUE": queue,
            # Its own queue per kind of work too: tasks the worker sends (a requeued replay,
            # an analysis) stay within this test.
            "CELERY_ANALYSIS_QUEUE": f"{queue}.analysis",
            "CELERY_REPLAYS_QUEUE": f"{queue}.replays",
            "CELERY_WEBHOOKS_QUEUE": f"{queue}.webhooks",
            "CELERY_IMPORTS_QUEUE": f"{queue}.imports",
            "CELERY_VISIBILITY_TIMEOUT_SECONDS": "2",
            "WORKER_HEARTBEAT_SECONDS": "1",
            "WORKER_DEAD_SECONDS": "2",
            "SAWTOOTH_PRODUCTION": "0",  # a local test worker, on this install's own key
        }
        self.queue = queue
        self.queues = queues or all_queues(queue)
        self.concurrency = concurrency
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.output: IO[bytes] | None = None

    def start(self) -> None:
        self.output = self.log.open("ab")
        # A fresh process group, so that SIGKILL takes the pool children with the parent.
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-Q",
                ",".join(self.queues),
                "--concurrency",
                str(self.concurrency),
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"{self.queue}-{time.monotonic_ns()}@localhost",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        self._close_output()

    def _close_output(self) -> None:
        if self.output is not None:
            self.output.close()
            self.output = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self._close_output()


@pytest.fixture
def worker(broker: tuple[Celery, str], tmp_path: Path) -> Iterator[Worker]:
    _, queue = broker
    worker = Worker(queue, tmp_path / "worker.log")
    worker.start()
    yield worker
    worker.stop()


def wait_for(predicate: Callable[[], bool], *, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}; worker log:\n{log.read_text()[-4000:]}")


def send(broker: tuple[Celery, str], task: str, *args: int) -> None:
    client, queue = broker
    # An explicit connection: Celery lets CELERY_BROKER_URL in the environment (memory:// in
    # this test process) win over the app's own broker setting.
    with client.connection_for_write(REDIS_URL) as conn:
        client.send_task(f"compaction.tasks.{task}", args=args, queue=queue, connection=conn)


def test_worker_analyses_a_session_end_to_end(broker, worker: Worker) -> None:
    session = make_session(
        messages=coding_session_messages(turns=8),
        compactions=[{"seq": 24, "strategy": "summarize", "summary": "Goal: migrate billing."}],
    )
    send(broker, "session_analyse", session.pk)

    def done() -> bool:
        return SessionAnalysis.objects.filter(session=session, status=AnalysisStatus.DONE).exists()

    wait_for(done, timeout=60, what="the analysis", log=worker.log)
    analysis = SessionAnalysis.objects.get(session=session)
    assert analysis.call_count == 16
    assert analysis.is_current
    assert CompactionSpan.objects.filter(session=session).count() == 1


def test_a_replay_delivered_twice_produces_one_result(broker, worker: Worker) -> None:
    session = make_session(messages=coding_session_messages(turns=30, tool_chars=8000))
    run = ReplayRun.objects.create(
        session=session, policy={"soft_limit": 6000, "hard_limit": 9000, "keep_last": 2}
    )
    send(broker, "replay_run_execute", run.pk)
    send(broker, "replay_run_execute", run.pk)

    def finished() -> bool:
        run.refresh_from_db()
        return run.status == ReplayStatus.DONE

    wait_for(finished, timeout=60, what="the replay", log=worker.log)
    time.sleep(1)  # let the second delivery run too
    run.refresh_from_db()
    assert run.attempts == 1
    spans = CompactionSpan.objects.filter(replay=run)
    assert spans.count() == run.totals["compactions"] + run.totals["clears"] > 0
    assert spans.values("index").distinct().count() == spans.count()


def test_a_replay_killed_mid_run_completes_exactly_once_after_restart(
    broker, worker: Worker
) -> None:
    project = make_project()
    session = make_session(project, messages=coding_session_messages(turns=1500, tool_chars=5000))
    run = ReplayRun.objects.create(session=session, policy={})
    send(broker, "replay_run_execute", run.pk)

    def running() -> bool:
        return ReplayRun.objects.filter(pk=run.pk, status=ReplayStatus.RUNNING).exists()

    wait_for(running, timeout=60, what="the replay to start", log=worker.log)
    worker.kill()
    run.refresh_from_db()
    assert run.status == ReplayStatus.RUNNING, "the replay finished before the kill"
    assert not CompactionSpan.objects.filter(replay=run).exists()

    worker.start()
    time.sleep(2.5)  # let the run go silent (WORKER_DEAD_SECONDS=2 in the worker)
    last_sweep = 0.0

    def done() -> bool:
        # The sweep, sent each second as beat does: the first run ever only records itself
        # (the database counts as reachable from then), so one sweep alone may requeue nothing.
        nonlocal last_sweep
        if time.monotonic() - last_sweep >= 1:
            send(broker, "abandoned_work_requeue")
            last_sweep = time.monotonic()
        run.refresh_from_db()
        return run.status == ReplayStatus.DONE

    wait_for(done, timeout=120, what="the requeued replay", log=worker.log)
    time.sleep(3)  # a redelivery of the killed task, if any, must find nothing to do
    run.refresh_from_db()
    assert run.status == ReplayStatus.DONE
    assert run.attempts == 2
    spans = CompactionSpan.objects.filter(replay=run)
    assert spans.count() == run.totals["compactions"] + run.totals["clears"]
    assert spans.values("index").distinct().count() == spans.count()

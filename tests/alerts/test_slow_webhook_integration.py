"""A webhook receiver that hangs, against real workers laid out as the demo and docker-compose
lay them out: webhooks on a worker of their own, analyses on another."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from celery import Celery

from alerts import tasks as alert_tasks
from alerts import webhooks
from alerts.models import Alert, DeliveryStatus
from compaction import tasks
from compaction.models import AnalysisStatus, SessionAnalysis
from tests.alerts.test_alerts import THREE, analysed_session
from tests.alerts.test_webhooks import SECRET
from tests.compaction.test_worker_integration import (  # noqa: F401 (fixture)
    REDIS_URL,
    Worker,
    broker,
    wait_for,
)
from tests.factories import coding_session_messages, make_project, make_session

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


class Hanging(BaseHTTPRequestHandler):
    """Holds every POST open until ``release`` is set."""

    reached = threading.Event()
    release = threading.Event()

    def do_POST(self) -> None:
        type(self).reached.set()
        type(self).release.wait(timeout=120)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hanging() -> Iterator[tuple[str, type[Hanging]]]:
    handler = type("H", (Hanging,), {"reached": threading.Event(), "release": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/hook", handler
    handler.release.set()
    server.shutdown()
    server.server_close()


def _send(broker: tuple[Celery, str], task: str, queue: str, *args: int) -> None:  # noqa: F811
    client, _ = broker
    with client.connection_for_write(REDIS_URL) as conn:
        client.send_task(f"compaction.tasks.{task}", args=args, queue=queue, connection=conn)


def test_a_hanging_receiver_holds_the_announcing_worker_never_the_analyses(
    broker: tuple[Celery, str],  # noqa: F811
    hanging: tuple[str, type[Hanging]],
    tmp_path: Path,
    settings: Any,
) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # the receiver this test runs
    _, queue = broker
    work = Worker(
        queue,
        tmp_path / "work.log",
        queues=[queue, f"{queue}.analysis", f"{queue}.replays"],
        concurrency=1,
    )
    announce = Worker(queue, tmp_path / "announce.log", queues=[f"{queue}.webhooks"], concurrency=1)
    for worker in (work, announce):
        worker.env["WEBHOOK_TIMEOUT_SECONDS"] = "120"
        worker.env["WEBHOOK_ALLOWED_NETWORKS"] = "127.0.0.0/8"  # the receiver this test runs
        worker.start()
    url, receiver = hanging
    try:
        project = make_project()
        webhooks.webhook_create(project=project, url=url, secret=SECRET)
        with (
            mock.patch.object(tasks.session_analyse, "delay"),
            mock.patch.object(alert_tasks.webhook_deliver, "delay"),
        ):
            alerted = analysed_session(project=project, compactions=THREE)
            waiting = make_session(project, messages=coding_session_messages(turns=4))
        delivery = Alert.objects.get(session=alerted).deliveries.get()
        _send(broker, "webhook_deliver", f"{queue}.webhooks", delivery.pk)
        assert receiver.reached.wait(timeout=60), announce.log.read_text()[-4000:]
        _send(broker, "session_analyse", f"{queue}.analysis", waiting.pk)

        def analysed() -> bool:
            row = SessionAnalysis.objects.get(session=waiting)
            return row.status == AnalysisStatus.DONE and row.is_current

        wait_for(analysed, timeout=60, what="the analysis", log=work.log)
        # ...while the receiver still holds the delivery open
        assert not receiver.release.is_set()
        delivery.refresh_from_db()
        assert delivery.status == DeliveryStatus.PENDING
        assert delivery.attempts == 0
    finally:
        receiver.release.set()
        work.stop()
        announce.stop()

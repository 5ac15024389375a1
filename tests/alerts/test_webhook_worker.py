"""A webhook delivery retried by a real `celery worker` on Redis, with real backoff."""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from unittest import mock

import pytest
from celery import Celery

from alerts import tasks as alert_tasks
from alerts import webhooks
from alerts.models import Alert, DeliveryStatus
from compaction import tasks
from tests.alerts.test_alerts import THREE, analysed_session
from tests.alerts.test_webhooks import LOCAL_RECEIVERS, SECRET, Receiver
from tests.compaction.test_worker_integration import (  # noqa: F401 (fixture)
    Worker,
    broker,
    send,
    wait_for,
)
from tests.factories import make_project

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def slow_backoff_worker(broker: tuple[Celery, str], tmp_path: Path) -> Iterator[Worker]:  # noqa: F811
    _, queue = broker
    worker = Worker(queue, tmp_path / "worker.log")
    worker.env["WEBHOOK_BACKOFF_SECONDS"] = "1"
    worker.env["WEBHOOK_ALLOWED_NETWORKS"] = "127.0.0.0/8"  # the receiver this test starts
    worker.start()
    yield worker
    worker.stop()


@LOCAL_RECEIVERS
def test_the_worker_retries_with_growing_delays_until_delivered(
    broker: tuple[Celery, str],  # noqa: F811
    slow_backoff_worker: Worker,
) -> None:
    handler = type("R", (Receiver,), {"statuses": [500, 500, 200], "received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        project = make_project()
        webhooks.webhook_create(
            project=project, url=f"http://127.0.0.1:{server.server_port}/", secret=SECRET
        )
        with (
            mock.patch.object(tasks.session_analyse, "delay"),
            mock.patch.object(alert_tasks.webhook_deliver, "delay"),
        ):
            session = analysed_session(project=project, compactions=THREE)
        delivery = Alert.objects.get(session=session).deliveries.get()
        send(broker, "webhook_deliver", delivery.pk)

        def delivered() -> bool:
            delivery.refresh_from_db()
            return delivery.status != DeliveryStatus.PENDING

        wait_for(delivered, timeout=60, what="the delivery", log=slow_backoff_worker.log)
    finally:
        server.shutdown()
        server.server_close()
    assert delivery.status == DeliveryStatus.DELIVERED
    assert delivery.attempts == 3
    assert [a["status_code"] for a in delivery.log] == [500, 500, 200]
    times = [datetime.fromisoformat(a["at"]) for a in delivery.log]
    gaps = [(b - a).total_seconds() for a, b in pairwise(times)]
    assert gaps[0] >= 1  # first retry after the base delay
    assert gaps[1] >= 2  # then twice that
    for headers, body in handler.received:
        expected = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert headers["X-Sawtooth-Signature"] == f"sha256={expected}"

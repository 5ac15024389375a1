"""A storm and a loop alert while the session is still being written: the storm and the loop
examples are sent batch by batch through the real ingest door (gunicorn) and analysed by a
real Celery worker on a Redis broker of the test's own. The alert is absent while the trace
does not show it yet, and appears after the analysis pass of the batch that shows it.

How long that takes is measured by benchmarks/live_alerts.py, not asserted here: the wait
below is generous, so a slow machine is never a failure.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.db import connection

from alerts.models import Alert
from compaction.models import SessionAnalysis
from sessions import example_data
from tests.factories import make_key, make_project
from tests.infra import (
    Process,
    RedisServer,
    WebServer,
    all_queues,
    app_env,
    celery_worker,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

GENEROUS = 120  # seconds: a bound for a stuck stack, not the promise (10 s, benchmarked)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[WebServer]:
    if connection.vendor != "postgresql":
        pytest.skip("needs DATABASE_URL pointing at PostgreSQL")
    if not RedisServer.available():
        pytest.skip("redis-server is not installed")
    redis = RedisServer(tmp_path)
    redis.start()
    db = connection.settings_dict
    prefix = f"live-{uuid.uuid4().hex[:8]}"
    env = app_env(
        database_url=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        broker_url=redis.url,
        prefix=prefix,
        INGEST_RATE_LIMIT_PER_MINUTE="0",
    )
    web = WebServer(env, log=tmp_path / "web.log")
    worker = celery_worker(env, log=tmp_path / "worker.log", queues=all_queues(prefix))
    started: list[Process | WebServer] = []
    try:
        for proc in (web, worker):
            proc.start()
            started.append(proc)
        yield web
    finally:
        for proc in reversed(started):
            proc.stop()
        redis.stop()


def _analysed(project_id: int, external_id: str, generation: int) -> bool:
    row = SessionAnalysis.objects.filter(
        session__project_id=project_id, session__external_id=external_id
    ).first()
    return row is not None and row.analysed_generation >= generation and row.status == "done"


@pytest.mark.parametrize(
    ("external_id", "rule", "showing_batch"),
    [
        # the sixth compaction within the hour is in the fourth batch
        ("example-compaction-storm", "compaction_storm", 3),
        # the first compaction that leaves the context above its trigger: the only batch
        ("example-compaction-loop", "compaction_loop", 0),
    ],
)
def test_the_alert_appears_after_the_pass_of_the_batch_that_shows_it(
    stack: WebServer, external_id: str, rule: str, showing_batch: int
) -> None:
    project = make_project()
    headers = {"Authorization": f"Bearer {make_key(project)}"}
    batches = example_data.example_session(external_id).batches
    alerts = Alert.objects.filter(session__project=project, rule=rule)
    with httpx.Client(base_url=stack.url, headers=headers, timeout=30) as http:
        for n, batch in enumerate(batches[: showing_batch + 1], start=1):
            if n == showing_batch + 1:
                assert not alerts.exists(), f"{rule} before the batch that shows it"
            reply = http.post(f"/api/v1/sessions/{external_id}/events", json=batch)
            assert reply.status_code == 202, reply.text
            # each batch asks for the next generation; wait for its pass
            wait_until(
                lambda n=n: _analysed(project.pk, external_id, n),
                timeout=GENEROUS,
                what=f"the analysis of batch {n}",
            )
    wait_until(alerts.exists, timeout=GENEROUS, what=f"the {rule} alert")
    alert = alerts.get()
    assert alert.state == "open"
    assert alert.evidence["calls"]
    assert any(item.startswith("cost so far:") for item in alert.evidence["items"])

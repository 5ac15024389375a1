"""``POST /api/v1/imports`` answers 202 with a job; these tests run the job's service in the
test process (the worker runs the same service: tests/importers/test_import_jobs.py) and
read its report through ``GET /api/v1/imports/{job_id}``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from sessions import import_jobs
from sessions.models import ImportJob, ImportStatus


def imported(client: Client, url: str, data: Any, headers: dict[str, str]) -> Any:
    """Upload, run the job, and return the finished job's answer (its response)."""
    response = client.post(url, data, headers=headers)
    if response.status_code != 202:
        return response
    job = ImportJob.objects.get(public_id=response.json()["job_id"])
    import_jobs.import_job_run(job_id=job.pk)
    return client.get(f"{url}/{job.public_id}", headers=headers)


def report_of(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content[:500]
    body = response.json()
    assert body["status"] == "done", body
    report: dict[str, Any] = body["report"]
    return report


class JobRunner:
    """Runs queued import jobs in a thread of the test process, as a worker would (the
    service the task calls): for tests whose client talks to ``live_server``."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                queued = ImportJob.objects.filter(status=ImportStatus.QUEUED)
                for pk in list(queued.values_list("pk", flat=True)):
                    import_jobs.import_job_run(job_id=pk)
                self._stop.wait(0.05)
        finally:
            connection.close()

    def __enter__(self) -> JobRunner:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)


@pytest.fixture
def job_runner() -> Iterator[JobRunner]:
    with JobRunner() as runner:
        yield runner

"""``POST /api/v1/imports`` answers 202 with a job; these tests run the job's service in the
test process (the worker runs the same service: tests/importers/test_import_jobs.py) and
read its report through ``GET /api/v1/imports/{job_id}``."""

from __future__ import annotations

from typing import Any

from django.test import Client

from sessions import import_jobs
from sessions.models import ImportJob


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

"""Background imports through a real `celery worker` on the real Redis broker and PostgreSQL:
``POST /api/v1/imports`` answers 202 ``{job_id}`` and the worker imports the upload;
``GET /api/v1/imports/{job_id}`` reads it, for its own project only, ``?wait`` at most 30 s."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from celery import Celery
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings

from sessions import import_jobs
from sessions.models import AgentSession, ImportChunk, ImportJob, ImportStatus
from tests.compaction.test_worker_integration import (  # noqa: F401 (fixtures)
    REDIS_URL,
    Worker,
    broker,
    wait_for,
    worker,
)
from tests.engine.test_gemini import SINGLE
from tests.factories import make_key, make_project
from tests.importers.test_import_traces import ROLLOUT

URL = "/api/v1/imports"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _gemini_chat(size: int) -> bytes:
    """A valid Gemini CLI chat of more than ``size`` bytes (past the 4 MiB first look)."""
    chat = json.loads(SINGLE.read_text())
    chat["messages"][0]["content"] = [{"text": "create 2 hello world files " + "x" * size}]
    return json.dumps(chat, indent=2).encode()


def _run_on_worker(broker: tuple[Celery, str], job_id: str) -> None:  # noqa: F811
    """What the outbox sends after the commit, sent to the test worker's imports queue."""
    client, queue = broker
    pk = ImportJob.objects.get(public_id=job_id).pk
    with client.connection_for_write(REDIS_URL) as conn:
        client.send_task(
            "sessions.tasks.import_job_run", args=(pk,), queue=f"{queue}.imports", connection=conn
        )


def _upload(client: Client, key: str, files: dict[str, Any]) -> str:
    response = client.post(URL, files, headers=auth(key))
    assert response.status_code == 202, response.content[:300]
    assert set(response.json()) == {"job_id"}
    return str(response.json()["job_id"])


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_5_mb_chat_is_imported_by_the_worker_and_waited_for(
    client: Client,
    broker: tuple[Celery, str],  # noqa: F811
    worker: Worker,  # noqa: F811
) -> None:
    project = make_project()
    key = make_key(project)
    data = _gemini_chat(5 * 1024 * 1024)
    assert len(data) > 5 * 1024 * 1024
    job_id = _upload(client, key, {"file": SimpleUploadedFile(SINGLE.name, data)})
    job = ImportJob.objects.get(public_id=job_id)
    # kept whole in 1 MiB chunks until the worker has imported it; nothing imported yet
    assert job.status == ImportStatus.QUEUED
    assert job.size_bytes == len(data)
    assert ImportChunk.objects.filter(job=job).count() == 6
    assert not AgentSession.objects.exists()
    queued = client.get(f"{URL}/{job_id}", headers=auth(key))
    assert queued.status_code == 202
    assert queued.json()["status"] == "queued"
    assert queued.json()["report"] is None

    _run_on_worker(broker, job_id)

    def finished() -> bool:
        return ImportJob.objects.get(pk=job.pk).finished

    wait_for(finished, timeout=120, what="the import job", log=worker.log)
    answer = client.get(f"{URL}/{job_id}?wait=30", headers=auth(key))
    assert answer.status_code == 200, answer.content[:300]
    body = answer.json()
    assert body["status"] == "done", body
    assert body["progress"] == {
        "fraction": 1.0,
        "files_done": 1,
        "files_total": 1,
        "bytes": len(data),
    }
    assert body["report"]["files"][0]["format"] == "gemini-cli"
    assert body["report"]["messages"] > 0
    stored = AgentSession.objects.get(project=project)
    assert stored.external_id == json.loads(SINGLE.read_bytes())["sessionId"]
    assert not ImportChunk.objects.exists()  # dropped once imported


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_wait_holds_the_answer_until_the_worker_is_done(
    client: Client,
    broker: tuple[Celery, str],  # noqa: F811
    worker: Worker,  # noqa: F811
) -> None:
    key = make_key(make_project())
    job_id = _upload(client, key, {"file": SimpleUploadedFile(ROLLOUT.name, ROLLOUT.read_bytes())})
    _run_on_worker(broker, job_id)
    # one request, answered when the worker is done (at most 30 s later)
    answer = client.get(f"{URL}/{job_id}?wait=30", headers=auth(key))
    assert answer.status_code == 200, worker.log.read_text()[-3000:]
    assert answer.json()["status"] == "done"
    assert answer.json()["report"]["files"][0]["format"] == "codex"


@pytest.mark.django_db
def test_another_projects_job_is_not_found_and_wait_past_30_is_refused(client: Client) -> None:
    mine, theirs = make_key(make_project(name="mine")), make_key(make_project(name="theirs"))
    job_id = _upload(client, mine, {"file": SimpleUploadedFile(ROLLOUT.name, ROLLOUT.read_bytes())})
    assert client.get(f"{URL}/{job_id}", headers=auth(mine)).status_code == 202
    other = client.get(f"{URL}/{job_id}", headers=auth(theirs))
    assert other.status_code == 404
    assert other.json() == {"error": f"import job '{job_id}': not found in this project"}
    assert client.get(f"{URL}/not-a-uuid", headers=auth(mine)).status_code == 404
    too_long = client.get(f"{URL}/{job_id}?wait=31", headers=auth(mine))
    assert too_long.status_code == 422
    assert too_long.json() == {"error": "wait: 31 seconds; it must be from 0 to 30"}
    # an unfinished job with a short wait: 202 with its status once the time is up
    waited = client.get(f"{URL}/{job_id}?wait=0.1", headers=auth(mine))
    assert waited.status_code == 202
    assert waited.json()["status"] == "queued"


@pytest.mark.django_db
def test_progress_is_recorded_file_by_file(client: Client, monkeypatch: Any) -> None:
    key = make_key(make_project())
    files = [
        SimpleUploadedFile(ROLLOUT.name, ROLLOUT.read_bytes()),
        SimpleUploadedFile(SINGLE.name, SINGLE.read_bytes()),
    ]
    job_id = _upload(client, key, {"file": files})
    job = ImportJob.objects.get(public_id=job_id)
    seen: list[tuple[str, int, int]] = []
    real = import_jobs.detect.traces_import

    def watching(**kwargs: Any) -> Any:
        told = kwargs["progress"]

        def progress(done: int, total: int) -> None:
            told(done, total)
            row = ImportJob.objects.get(pk=job.pk)
            seen.append((row.status, row.files_done, row.files_total))
            answer = client.get(f"{URL}/{job_id}", headers=auth(key)).json()
            assert answer["progress"]["files_done"] == done

        return real(**{**kwargs, "progress": progress})

    monkeypatch.setattr(import_jobs.detect, "traces_import", watching)
    import_jobs.import_job_run(job_id=job.pk)
    assert seen == [("running", 1, 2), ("running", 2, 2)]
    assert ImportJob.objects.get(pk=job.pk).status == ImportStatus.DONE


@pytest.mark.django_db
@override_settings(INGEST_RATE_LIMIT_PER_MINUTE=3, IMPORT_RATE_BYTES_PER_BATCH=1024 * 1024)
def test_a_large_import_counts_by_its_size_against_the_allowance(client: Client) -> None:
    # the counts live in the cache, keyed by project: on SQLite an earlier test's project had
    # the same id, and its uploads this minute would count here
    cache.clear()
    key = make_key(make_project())
    data = _gemini_chat(4 * 1024 * 1024)  # 5 started MiB: 5 batches, the allowance is 3
    response = client.post(URL, {"file": SimpleUploadedFile(SINGLE.name, data)}, headers=auth(key))
    assert response.status_code == 429
    error = response.json()["error"]
    assert "this import of 4.0 MiB counts as 5 batches, one per started MiB" in error
    assert "nothing of it was stored" in error
    assert not ImportJob.objects.exists()
    assert not AgentSession.objects.exists()


@pytest.mark.django_db
def test_a_job_left_running_by_a_dead_worker_runs_again_then_fails_with_the_reason() -> None:
    """The sweep finds jobs whose worker stopped beating: queued again from their chunks while
    runs are left, failed with the reason after IMPORT_JOB_MAX_ATTEMPTS; a live one is left."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from compaction.models import OutboxTask

    project = make_project()
    silent = timezone.now() - timedelta(seconds=settings.WORKER_DEAD_SECONDS + 5)

    def job(attempts: int, beat: Any) -> ImportJob:
        made = ImportJob.objects.create(
            public_id=uuid.uuid4(),
            project=project,
            status=ImportStatus.RUNNING,
            attempts=attempts,
            heartbeat_at=beat,
            files_total=1,
        )
        ImportChunk.objects.create(job=made, path="a.jsonl", shown="a.jsonl", seq=0, data=b"{}")
        return made

    retried = job(1, silent)
    spent = job(settings.IMPORT_JOB_MAX_ATTEMPTS, silent)
    alive = job(1, timezone.now())
    assert import_jobs.import_jobs_requeue_abandoned() == 2
    retried.refresh_from_db()
    spent.refresh_from_db()
    alive.refresh_from_db()
    assert retried.status == ImportStatus.QUEUED
    assert OutboxTask.objects.filter(kind="import_job_run", args=[retried.pk]).exists()
    assert ImportChunk.objects.filter(job=retried).exists()  # run again from them
    assert spent.status == ImportStatus.FAILED
    assert spent.error == (
        f"the worker importing it stopped {settings.IMPORT_JOB_MAX_ATTEMPTS} times; "
        "nothing more was tried"
    )
    assert not ImportChunk.objects.filter(job=spent).exists()
    assert alive.status == ImportStatus.RUNNING
    assert import_jobs.import_jobs_requeue_abandoned() == 0  # nothing left to do

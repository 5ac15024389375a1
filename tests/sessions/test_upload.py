"""Web upload of a Claude Code transcript from the empty sessions list."""

from __future__ import annotations

import gzip
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from sessions import import_jobs
from sessions.models import AgentSession, ImportJob, ImportStatus, Message, Role
from tests.factories import make_project, make_user
from tests.importers.corpus import SPOTTER

pytestmark = pytest.mark.django_db

SHORT = SPOTTER / "short.jsonl"
GOOD = SHORT.read_bytes() if SHORT.exists() else b""


def _upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def test_empty_list_offers_the_import_command_and_an_upload(client: Client) -> None:
    project = make_project(name="acme")
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    body = client.get("/", HTTP_HOST="localhost:8123").content.decode()
    assert "manage.py import_claude_code ~/.claude/projects/&lt;project&gt;/ --project acme" in body
    assert 'action="/imports/claude-code/"' in body
    assert 'type="file"' in body
    assert "curl -X POST http://localhost:8123/api/v1/sessions/my-run/events" in body
    assert ":8000" not in body


def test_viewers_see_the_command_but_no_upload(client: Client) -> None:
    client.force_login(make_user(project=make_project(), role=Role.VIEWER))
    body = client.get("/").content.decode()
    assert "import_claude_code" in body
    assert 'type="file"' not in body


@pytest.mark.parametrize("gzipped", [False, True])
def test_upload_imports_in_the_background_and_its_page_shows_progress_then_the_report(
    client: Client, gzipped: bool, django_capture_on_commit_callbacks
) -> None:
    project = make_project()
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    data = SHORT.read_bytes()
    name = "short.jsonl.gz" if gzipped else "short.jsonl"
    upload = _upload(name, gzip.compress(data) if gzipped else data)
    with django_capture_on_commit_callbacks() as sent:
        response = client.post("/imports/claude-code/", {"project": project.pk, "file": upload})
    # the request only checked and kept the upload: a job, sent to a worker
    assert response.status_code == 303
    job = ImportJob.objects.get(project=project)
    assert response["Location"] == f"/imports/{job.public_id}/"
    assert len(sent) == 1
    assert not AgentSession.objects.exists()
    # its page polls while it waits
    page = client.get(response["Location"]).content.decode()
    assert f'hx-get="/imports/{job.public_id}/status/"' in page
    assert 'hx-trigger="every 1s"' in page
    assert "<progress" in page
    import_jobs.import_job_run(job_id=job.pk)  # what the worker does
    # the poll answers the report in place, and stops polling
    body = client.get(f"/imports/{job.public_id}/status/").content.decode()
    assert "hx-get" not in body
    session = AgentSession.objects.get(project=project)
    stored = Message.objects.filter(session=session).count()
    assert stored > 0
    assert f'href="/sessions/{session.pk}/"' in body
    assert f'<td class="num">{stored}</td>' in body
    assert name in body
    assert name in client.get(response["Location"]).content.decode()


def test_an_import_job_of_another_project_is_not_found(client: Client) -> None:
    theirs = make_project()
    job = ImportJob.objects.create(project=theirs, public_id=uuid.uuid4())
    client.force_login(make_user(project=make_project(), role=Role.ADMIN))
    assert client.get(f"/imports/{job.public_id}/").status_code == 404
    assert client.get(f"/imports/{job.public_id}/status/").status_code == 404
    assert client.get(f"/imports/{uuid.uuid4()}/").status_code == 404


def test_a_failed_job_shows_its_error(client: Client) -> None:
    project = make_project()
    job = ImportJob.objects.create(
        project=project,
        public_id=uuid.uuid4(),
        status=ImportStatus.FAILED,
        error="the worker importing it stopped 3 times; nothing more was tried",
    )
    client.force_login(make_user(project=project, role=Role.VIEWER))
    body = client.get(f"/imports/{job.public_id}/").content.decode()
    assert "the worker importing it stopped 3 times" in body
    assert "/status/" not in body  # finished: no polling


def test_an_upload_counts_against_the_allowance_by_its_size(client: Client, settings) -> None:
    settings.INGEST_RATE_LIMIT_PER_MINUTE = 2
    settings.IMPORT_RATE_BYTES_PER_BATCH = 64  # the transcript is several "batches"
    project = make_project()
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    response = client.post(
        "/imports/claude-code/", {"project": project.pk, "file": _upload("a.jsonl", GOOD)}
    )
    assert response.status_code == 429
    assert "one per started MiB; nothing of it was stored" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_upload_needs_the_engineer_role(client: Client) -> None:
    project = make_project()
    client.force_login(make_user(project=project, role=Role.VIEWER))
    response = client.post(
        "/imports/claude-code/",
        {"project": project.pk, "file": _upload("a.jsonl", SHORT.read_bytes())},
    )
    assert response.status_code == 403
    assert not AgentSession.objects.exists()


def test_upload_into_another_users_project_is_refused(client: Client) -> None:
    theirs = make_project()
    client.force_login(make_user(project=make_project(), role=Role.ADMIN))
    response = client.post(
        "/imports/claude-code/",
        {"project": theirs.pk, "file": _upload("a.jsonl", SHORT.read_bytes())},
    )
    assert response.status_code == 400
    assert "project: choose one of your projects" in response.content.decode()
    assert not AgentSession.objects.exists()


@pytest.mark.parametrize(
    ("files", "status", "error"),
    [
        ({}, 400, "file: choose one or more trace files"),
        (
            {"file": _upload("notes.txt", b"hello")},
            422,
            "notes.txt: not a format Sawtooth reads (looked like text starting &#x27;hello&#x27;)",
        ),
    ],
)
def test_bad_uploads_get_a_clear_error_and_store_nothing(
    client: Client, files, status: int, error: str
) -> None:  # type: ignore[no-untyped-def]
    project = make_project()
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    response = client.post("/imports/claude-code/", {"project": project.pk, **files})
    assert response.status_code == status
    assert error in response.content.decode()
    assert not AgentSession.objects.exists()


def test_a_file_that_is_not_a_transcript_is_refused_with_the_importers_reason(
    client: Client,
) -> None:
    project = make_project()
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    response = client.post(
        "/imports/claude-code/",
        {"project": project.pk, "file": _upload("x.jsonl", b"\x00\x01binary")},
    )
    assert response.status_code == 422
    assert "looked like binary data" in response.content.decode()
    assert not AgentSession.objects.exists()


def test_upload_page_needs_login_and_post(client: Client) -> None:
    assert client.post("/imports/claude-code/").status_code == 302
    client.force_login(make_user(project=make_project()))
    assert client.get("/imports/claude-code/").status_code == 405


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        (b"\x1f\x8b\x08\x00garbage, not deflate", 400, "not valid gzip"),
        (gzip.compress(GOOD)[:-12], 400, "truncated gzip stream"),
        (gzip.compress(b"\n" * (len(GOOD) + 4096)), 413, "-byte limit after decompression"),
    ],
    ids=["corrupt", "truncated", "bomb"],
)
def test_a_bad_jsonl_gz_is_answered_on_the_page_and_nothing_is_stored(
    client: Client, settings, data: bytes, status: int, message: str
) -> None:
    settings.IMPORT_MAX_BYTES = len(GOOD) + 1024  # the good file fits, the bomb does not
    project = make_project()
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    response = client.post(
        "/imports/claude-code/",
        {
            "project": project.pk,
            # a good transcript first: refused with the bad one, never stored half-way
            "file": [_upload("good.jsonl", GOOD), _upload("bad.jsonl.gz", data)],
        },
    )
    assert response.status_code == status
    body = response.content.decode()
    assert "file bad.jsonl.gz: " in body
    assert message in body
    assert not AgentSession.objects.exists()

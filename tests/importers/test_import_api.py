"""POST /api/v1/imports/claude-code: upload a transcript, get the import report back."""

from __future__ import annotations

import gzip

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from sessions.models import AgentSession, CompactionEvent
from tests.factories import make_key, make_project
from tests.importers.corpus import AUTO, SPOTTER, read_lines

pytestmark = pytest.mark.django_db

URL = "/api/v1/imports/claude-code"
SHORT = SPOTTER / "short.jsonl"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def key() -> str:
    return make_key(make_project(name="uploads"))


def test_upload_a_transcript_body_and_get_the_report(client: Client, key: str) -> None:
    body = SHORT.read_bytes()
    response = client.post(
        URL + "?name=short.jsonl", data=body, content_type="application/x-ndjson", headers=auth(key)
    )
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["messages"] > 0
    assert report["duplicates"] == 0
    assert report["files"][0]["path"] == "short.jsonl"
    assert AgentSession.objects.get().message_count == report["messages"]

    again = client.post(URL, data=body, content_type="application/x-ndjson", headers=auth(key))
    assert (again.json()["messages"], again.json()["duplicates"]) == (0, report["messages"])


def test_upload_gzip_body(client: Client, key: str) -> None:
    response = client.post(
        URL,
        data=gzip.compress(SHORT.read_bytes()),
        content_type="application/x-ndjson",
        headers={**auth(key), "Content-Encoding": "gzip"},
    )
    assert response.status_code == 200
    assert response.json()["messages"] > 0


def test_multipart_upload_with_the_compaction_call(client: Client, key: str) -> None:
    subagents = SPOTTER / AUTO.name.removesuffix(".jsonl.gz") / "subagents"
    files = [SimpleUploadedFile(AUTO.name, AUTO.read_bytes())] + [
        SimpleUploadedFile(p.name, p.read_bytes()) for p in sorted(subagents.iterdir())
    ]
    response = client.post(URL, data={"file": files}, headers=auth(key))
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["compactions"] == 1
    assert "compaction_call" in CompactionEvent.objects.get().kept
    kinds = sorted(s["kind"] for s in report["sessions"])
    assert kinds == ["session", "subagent"]


def test_upload_reports_skipped_lines(client: Client, key: str) -> None:
    lines = read_lines(SHORT)
    body = b"".join([*lines[:2], b"garbage\n", *lines[2:]])
    response = client.post(URL, data=body, content_type="application/x-ndjson", headers=auth(key))
    assert response.status_code == 200
    (file,) = response.json()["files"]
    assert file["skipped"] == [{"line": 3, "reason": "line 3: not JSON (Expecting value)"}]


def test_upload_errors(client: Client, key: str) -> None:
    missing = client.post(URL, data=b"x", content_type="application/x-ndjson")
    assert (missing.status_code, missing.json()) == (
        401,
        {"error": "Authorization: missing, unknown or revoked project key"},
    )
    empty = client.post(URL, data=b"", content_type="application/x-ndjson", headers=auth(key))
    assert (empty.status_code, empty.json()) == (
        400,
        {"error": "body: empty; expected a Claude Code transcript (JSON lines)"},
    )
    binary = client.post(
        URL, data=b"\x00\x01\x02binary", content_type="application/octet-stream", headers=auth(key)
    )
    assert (binary.status_code, binary.json()) == (
        400,
        {"error": "upload.jsonl: binary file (contains NUL bytes), not JSON lines"},
    )
    no_file = client.post(URL, data={"other": "x"}, headers=auth(key))
    assert (no_file.status_code, no_file.json()) == (
        400,
        {"error": "file: required, a Claude Code transcript (.jsonl or .jsonl.gz)"},
    )
    brotli = client.post(
        URL,
        data=b"x",
        content_type="application/x-ndjson",
        headers={**auth(key), "Content-Encoding": "br"},
    )
    assert (brotli.status_code, brotli.json()) == (
        400,
        {"error": "Content-Encoding: 'br' is not supported (use gzip)"},
    )
    assert not AgentSession.objects.exists()


def test_uploads_land_in_the_keys_project_only(client: Client) -> None:
    a, b = make_project(), make_project()
    key_a, key_b = make_key(a), make_key(b)
    body = SHORT.read_bytes()
    first = client.post(URL, data=body, content_type="application/x-ndjson", headers=auth(key_a))
    (external_id,) = [s["external_id"] for s in first.json()["sessions"]]
    assert client.get(f"/api/v1/sessions/{external_id}", headers=auth(key_b)).status_code == 404
    assert client.get("/api/v1/sessions", headers=auth(key_b)).json()["count"] == 0
    second = client.post(URL, data=body, content_type="application/x-ndjson", headers=auth(key_b))
    assert (second.json()["messages"], second.json()["duplicates"]) == (
        first.json()["messages"],
        0,
    )
    assert AgentSession.objects.get(project=b).external_id == external_id

"""An imported id holding '/' or '..' is refused the same way at every door (the events API, the
import API, the import command, the Recorder), with a 4xx naming it, and nothing is stored:
stored, the API could neither read nor delete it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from sessions.models import AgentSession
from tests.factories import make_key, make_project
from tests.importers.corpus import SPOTTER, refused_file

pytestmark = pytest.mark.django_db

ROLLOUT_ID = "019c8a4c-ed82-79a1-aa28-7738fc5ab61a"
ROLLOUT = (
    Path(__file__).resolve().parents[1]
    / f"fixtures/codex/localpush/rollout-2026-02-23T12-40-23-{ROLLOUT_ID}.jsonl"
)
HOSTILE = "../../etc/passwd"
SAID = "holds '/' or '..'; an id is one path segment"


def _rollout(session_id: str) -> bytes:
    return ROLLOUT.read_bytes().replace(
        b"019c8a4c-ed82-79a1-aa28-7738fc5ab61a", session_id.encode()
    )


def test_events_api_refuses_a_dot_dot_id(client: Client) -> None:
    key = make_key(make_project())
    response = client.post(
        "/api/v1/sessions/x..y/events",
        {"messages": [{"seq": 0, "role": "user", "content": "hi"}]},
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 400
    assert response.json() == {"error": f"external_id: 'x..y' {SAID}"}
    assert not AgentSession.objects.exists()


def test_import_api_refuses_a_rollout_whose_id_holds_a_slash(client: Client) -> None:
    key = make_key(make_project())
    upload = SimpleUploadedFile("rollout.jsonl", _rollout(HOSTILE))
    response = client.post(
        "/api/v1/imports", {"file": upload}, headers={"Authorization": f"Bearer {key}"}
    )
    # an upload holding a file that cannot be read is refused whole (422), naming it
    assert response.status_code == 422
    assert response["Content-Type"].startswith("application/json")
    assert f"session id: {HOSTILE!r} {SAID}" in response.json()["error"]
    assert not AgentSession.objects.exists()


def test_import_command_refuses_it_the_same_way(tmp_path: Path) -> None:
    (tmp_path / "rollout.jsonl").write_bytes(_rollout(HOSTILE))
    file = refused_file(tmp_path, make_project().name)
    assert f"{HOSTILE!r} {SAID}" in file["error"]  # named as the events API names it
    assert not AgentSession.objects.exists()


def test_a_claude_code_transcript_with_such_an_id_is_refused_too(tmp_path: Path) -> None:
    data = (SPOTTER / "short.jsonl").read_bytes()
    (tmp_path / "t.jsonl").write_bytes(
        data.replace(b"55604662-cf2a-4331-851a-ec234028f8ca", HOSTILE.encode())
    )
    file = refused_file(tmp_path, make_project().name)
    assert f"{HOSTILE!r} {SAID}" in file["error"]  # named as the events API names it
    assert not AgentSession.objects.exists()

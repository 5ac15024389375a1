"""Whatever goes wrong with an upload to the import API, the answer is a JSON 4xx naming it,
never Django's HTML error page nor a 500."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from sessions.models import AgentSession
from tests.factories import make_key, make_project
from tests.importers.corpus import SPOTTER

pytestmark = pytest.mark.django_db

URL = "/api/v1/imports"


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _json_4xx(response: object) -> dict[str, str]:
    status = response.status_code  # type: ignore[attr-defined]
    assert 400 <= status < 500, (status, response.content[:300])  # type: ignore[attr-defined]
    assert response["Content-Type"].startswith("application/json"), response.content[:300]  # type: ignore[index,attr-defined]
    return response.json()  # type: ignore[attr-defined,no-any-return]


def test_a_300_character_field_name_is_a_json_400(client: Client) -> None:
    key = make_key(make_project())
    upload = SimpleUploadedFile("t.jsonl", (SPOTTER / "short.jsonl").read_bytes())
    body = _json_4xx(client.post(URL, {"x" * 300: upload}, headers=_auth(key)))
    assert "300 characters" in body["error"]
    assert not AgentSession.objects.exists()


def test_a_broken_multipart_body_is_a_json_400(client: Client) -> None:
    key = make_key(make_project())
    response = client.post(
        URL,
        data=b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n',
        content_type="multipart/form-data; boundary=xyz",
        headers=_auth(key),
    )
    _json_4xx(response)


def test_too_many_files_is_a_json_4xx(client: Client, settings: object) -> None:
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2  # type: ignore[attr-defined]
    key = make_key(make_project())
    files = [SimpleUploadedFile(f"{n}.jsonl", b"{}\n") for n in range(3)]
    body = _json_4xx(client.post(URL, {"file": files}, headers=_auth(key)))
    assert "files" in body["error"]


def test_a_missing_boundary_is_a_json_400(client: Client) -> None:
    key = make_key(make_project())
    _json_4xx(client.post(URL, data=b"abc", content_type="multipart/form-data", headers=_auth(key)))

"""The API's JSON writer (orjson) answers what the standard library wrote, value for value."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.core.serializers.json import DjangoJSONEncoder
from django.test import Client

from config.api import FastJSONRenderer
from tests.factories import make_key, make_project, make_session, wire_message

render = FastJSONRenderer().render


def test_dates_and_decimals_keep_the_form_djangos_encoder_gives_them() -> None:
    when = datetime(2026, 12, 2, 3, 4, 5, 678901, tzinfo=UTC)
    data = {"at": when, "price": Decimal("0.10"), "n": [1, 2.5, None, True]}
    written = json.loads(render(None, data, response_status=200))
    assert written == json.loads(json.dumps(data, cls=DjangoJSONEncoder))
    assert written["at"] == "2026-12-02T03:04:05.678Z"


def test_what_orjson_refuses_is_written_by_the_standard_library() -> None:
    data = {"big": 2**70, 1: "int key"}
    assert json.loads(render(None, data, response_status=200)) == {"big": 2**70, "1": "int key"}


@pytest.mark.django_db
def test_a_message_page_with_non_ascii_text_reads_back_as_sent() -> None:
    project = make_project()
    text = 'ação — 日本語 — emoji 🙂 — aspas "e" barra \\ e <script>'
    session = make_session(project, messages=[wire_message(0, "user", text)])
    response = Client().get(
        f"/api/v1/sessions/{session.external_id}/messages",
        HTTP_AUTHORIZATION=f"Bearer {make_key(project)}",
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.json()["messages"][0]["content"] == [{"type": "text", "text": text}]

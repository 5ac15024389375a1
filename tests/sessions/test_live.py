"""The "live" mark: sessions that received data in the last minute, in the session list."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client

from sessions import selectors
from tests.factories import make_project, make_session, make_user

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
BADGE = 'title="Received data in the last minute">live</span>'


def test_a_session_is_live_for_a_minute_after_data_arrived() -> None:
    with time_machine.travel(T0, tick=False):
        session = make_session(make_project())
    assert selectors.session_is_live(session, now=T0 + timedelta(seconds=60))
    assert not selectors.session_is_live(session, now=T0 + timedelta(seconds=61))


def test_the_session_list_marks_live_sessions_only(client: Client) -> None:
    project = make_project()
    with time_machine.travel(T0, tick=False):
        make_session(project, external_id="quiet-run")
    with time_machine.travel(T0 + timedelta(minutes=5), tick=False):
        live = make_session(project, external_id="busy-run")
    client.force_login(make_user(project=project))
    with time_machine.travel(T0 + timedelta(minutes=5, seconds=30), tick=False):
        body = client.get("/").content.decode()
    assert body.count(BADGE) == 1
    row = body[body.index("busy-run") :]
    assert row.index(BADGE) < row.index("</tr>")
    # a new batch for the quiet session makes it live too, and the busy one fades
    with time_machine.travel(T0 + timedelta(minutes=7), tick=False):
        make_session(project, external_id="quiet-run", messages=[])
        body = client.get("/").content.decode()
    assert body.count(BADGE) == 1
    row = body[body.index("quiet-run") :]
    assert row.index(BADGE) < row.index("</tr>")
    assert live.external_id in row[row.index("</tr>") :]

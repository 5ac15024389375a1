"""The "live" mark: sessions that received data in the last minute, in the session list."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client

from sessions import selectors
from tests.factories import conversation, make_project, make_session, make_user

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


POLL = {"HX-Request": "true", "HX-Target": "session-rows"}


def test_the_list_rows_poll_answers_304_until_something_shown_changes(
    client: Client, django_assert_num_queries
) -> None:
    project = make_project()
    make_session(project, external_id="first-run")
    client.force_login(make_user(project=project))
    page = client.get("/").content.decode()
    assert 'id="session-rows" hx-get="?" hx-trigger="every 5s"' in page

    rows = client.get("/", headers=POLL)
    assert rows.status_code == 200
    body = rows.content.decode()
    assert body.lstrip().startswith('<tbody id="session-rows"')
    assert "first-run" in body
    assert "<html" not in body
    etag = rows["ETag"]
    assert rows["Cache-Control"] == "private, no-cache"
    assert "HX-Target" in rows["Vary"]

    # session + user, the user's projects' memberships, the two versions: nothing rendered
    with django_assert_num_queries(4):
        again = client.get("/", headers={**POLL, "If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""

    make_session(project, external_id="second-run")
    grown = client.get("/", headers={**POLL, "If-None-Match": etag})
    assert grown.status_code == 200
    assert grown["ETag"] != etag
    assert "second-run" in grown.content.decode()


def test_the_poll_version_changes_when_a_session_goes_quiet() -> None:
    project = make_project()
    with time_machine.travel(T0, tick=False):
        make_session(project)
    projects = type(project).objects.filter(pk=project.pk)
    live = selectors.session_list_version(projects=projects, now=T0 + timedelta(seconds=30))
    quiet = selectors.session_list_version(projects=projects, now=T0 + timedelta(seconds=90))
    assert live != quiet


def test_the_poll_is_scoped_to_the_users_projects(client: Client) -> None:
    mine, theirs = make_project(name="mine"), make_project(name="theirs")
    make_session(theirs, external_id="hidden-run")
    client.force_login(make_user(project=mine))
    assert "hidden-run" not in client.get("/", headers=POLL).content.decode()


def test_a_session_page_poll_answers_its_top_only_and_304_while_nothing_changed(
    client: Client,
) -> None:
    project = make_project()
    other = make_project()
    with time_machine.travel(T0, tick=False):
        session = make_session(project, external_id="growing-run", messages=4)
    client.force_login(make_user(project=project))
    poll = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "session-live"}
    url = f"/sessions/{session.pk}/?shown=4"
    with time_machine.travel(T0 + timedelta(minutes=5), tick=False):
        page = client.get(f"/sessions/{session.pk}/").content.decode()
        first = client.get(url, **poll)
        again = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"], **poll)
    assert first.status_code == 200
    body = first.content.decode()
    assert body.lstrip().startswith('<div id="session-live"')
    assert 'id="timeline"' not in body
    # The page was drawn with the same ETag its first poll answers: that poll is not swapped.
    assert f'data-etag="{first["ETag"].replace(chr(34), "&quot;")}"' in page
    assert again.status_code == 304
    assert first["Cache-Control"] == "private, no-cache"

    with time_machine.travel(T0 + timedelta(minutes=6), tick=False):
        make_session(project, external_id="growing-run", messages=conversation(3, start=4))
        grown = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"], **poll)
    assert grown.status_code == 200
    assert grown["ETag"] != first["ETag"]
    text = grown.content.decode()
    assert "7 messages now, 4 when this page was drawn" in text
    assert 'class="badge ok live-mark"' in text
    # Another project's session is not there to poll.
    client.force_login(make_user(project=other))
    assert client.get(url, **poll).status_code == 404


def test_show_the_newest_opens_the_last_page_of_the_timeline(client: Client) -> None:
    project = make_project()
    session = make_session(project, messages=230)
    client.force_login(make_user(project=project))
    body = client.get(f"/sessions/{session.pk}/?page=last").content.decode()
    assert 'id="seq-229"' in body
    assert 'id="seq-0"' not in body

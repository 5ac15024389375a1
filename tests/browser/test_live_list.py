"""The session list updates on its own while sessions grow: no reload, 304 while unchanged."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Response

from sessions.models import Project
from tests.factories import make_session

pytestmark = pytest.mark.browser


def test_session_list_shows_a_new_session_without_a_reload(
    logged_in: Page, live_server, project: Project
) -> None:
    make_session(project, external_id="first-run", messages=4)
    polls: list[tuple[str | None, str]] = []  # (If-None-Match sent, ETag answered)

    def seen(response: Response) -> None:
        if response.request.headers.get("hx-target") == "session-rows":
            sent = response.request.all_headers().get("if-none-match")
            polls.append((sent, response.headers["etag"]))

    logged_in.on("response", seen)
    logged_in.goto(f"{live_server.url}/")
    logged_in.evaluate("window.__stayed = true")
    rows = logged_in.locator("table.sessions tbody tr")
    assert rows.count() == 1
    logged_in.wait_for_timeout(11_000)  # two polls with nothing new
    make_session(project, external_id="second-run", messages=4)
    rows.filter(has_text="second-run").wait_for(timeout=15_000)
    assert rows.count() == 2
    assert logged_in.evaluate("window.__stayed") is True  # the same page, not reloaded
    assert (
        logged_in.locator("tr", has_text="second-run").locator(".badge", has_text="live").count()
        == 1
    )
    # The browser revalidates each poll with the last ETag (the server's 304 reaches the page
    # as the cached rows); the poll after the new session gets a new ETag.
    assert polls[0][0] is None
    assert polls[1] == (polls[0][1], polls[0][1])
    assert polls[-1][0] == polls[0][1] != polls[-1][1]

"""The session list updates on its own while sessions grow: no reload, 304 while unchanged."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Response, expect

from compaction import pipeline
from sessions.models import Project
from tests.factories import conversation, make_session

pytestmark = pytest.mark.browser


def wait_for_polls(page: Page, polls: list, count: int, *, limit_seconds: int = 120) -> None:
    """Until ``count`` polls were answered: by events seen, not by a guess of how long they
    take on this machine (the limit only stops a page that never polls)."""
    for _ in range(limit_seconds * 4):
        if len(polls) >= count:
            return
        page.wait_for_timeout(250)
    raise AssertionError(f"{len(polls)} of {count} polls answered in {limit_seconds} s")


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
    wait_for_polls(logged_in, polls, 2)  # two polls with nothing new
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


def test_a_session_page_follows_its_session_without_a_reload(
    logged_in: Page, live_server, project: Project
) -> None:
    """The top of the page (header, curve, compactions) is drawn again when the session grows,
    and only then: a poll with nothing new leaves the chart as it was. The timeline says how
    many messages arrived instead of moving under the reader."""
    session = make_session(project, external_id="growing-run", messages=6)
    pipeline.session_analyse(session_id=session.pk)
    polls: list[str] = []
    logged_in.on(
        "response",
        lambda r: (
            polls.append(r.headers.get("etag", ""))
            if r.request.headers.get("hx-target") == "session-live"
            else None
        ),
    )
    logged_in.goto(f"{live_server.url}/sessions/{session.pk}/")
    logged_in.locator("[data-chart] .main-svg").first.wait_for()
    logged_in.evaluate(
        "window.__stayed = true; window.__chart = document.querySelector('[data-chart]')"
    )
    wait_for_polls(logged_in, polls, 2)
    assert logged_in.evaluate("window.__chart === document.querySelector('[data-chart]')")

    make_session(project, external_id="growing-run", messages=conversation(6, start=6))
    pipeline.session_analyse(session_id=session.pk)
    notice = logged_in.locator("#session-live .notice", has_text="12 messages now")
    notice.wait_for(timeout=60_000)
    assert logged_in.evaluate("window.__stayed") is True
    assert logged_in.evaluate("window.__chart !== document.querySelector('[data-chart]')")
    logged_in.locator("[data-chart] .main-svg").first.wait_for()  # drawn again, not blank
    expect(logged_in.locator(".facts div", has_text="Messages")).to_contain_text("12")
    expect(logged_in.locator(".live-mark")).to_have_text("live")
    notice.get_by_role("link", name="Show the newest").click()
    expect(logged_in.locator("#seq-11")).to_be_attached()

"""Team features and layout in Chromium: dark mode, share links, the list's Updated column."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from compaction import pipeline
from sessions.models import Project
from tests.factories import coding_session_messages, make_session

pytestmark = pytest.mark.browser


def background(page: Page) -> str:
    return page.evaluate("() => getComputedStyle(document.documentElement).backgroundColor")


def test_dark_mode_follows_the_system_until_the_toggle_picks_and_remembers(
    logged_in: Page, live_server
) -> None:
    page = logged_in
    page.emulate_media(color_scheme="dark")
    page.goto(f"{live_server.url}/")
    dark = background(page)
    toggle = page.get_by_role("button", name="Light mode")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    toggle.click()
    assert background(page) != dark
    assert page.evaluate("() => localStorage.getItem('sawtooth-theme')") == "light"
    page.reload()  # the choice outlives the page and beats the system setting
    expect(page.get_by_role("button", name="Dark mode")).to_have_attribute("aria-pressed", "false")
    assert background(page) != dark
    page.get_by_role("button", name="Dark mode").click()
    assert background(page) == dark


def test_copy_link_puts_the_messages_permalink_on_the_clipboard(
    logged_in: Page, live_server, project: Project
) -> None:
    session = make_session(project, messages=coding_session_messages(turns=4))
    pipeline.session_analyse(session_id=session.pk)
    page = logged_in
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{live_server.url}/sessions/{session.pk}/")
    page.get_by_role("button", name="Copy link to message 3").click()
    link = f"{live_server.url}/sessions/{session.pk}/?seq=3#seq-3"
    expect(page.locator(".copy-status")).to_have_text(f"Link copied: {link}")
    assert page.evaluate("() => navigator.clipboard.readText()") == link
    page.goto(link)
    expect(page.locator("#seq-3")).to_be_in_viewport()


@pytest.mark.parametrize("width", [1440, 800, 390])
def test_the_updated_column_is_in_view_without_scrolling(
    logged_in: Page, live_server, project: Project, width: int
) -> None:
    make_session(
        project,
        external_id="a-rather-long-session-identifier-from-a-harness-0123456789",
        session={"agent": "billing-migrator-with-a-long-name", "model": "claude-sonnet-4-5"},
    )
    page = logged_in
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/")
    updated = page.locator("table.sessions td.updated").first
    box = updated.bounding_box()
    frame = page.locator(".table-wrap").bounding_box()
    assert box is not None
    assert frame is not None
    assert box["x"] + box["width"] <= frame["x"] + frame["width"] + 1, (width, box, frame)
    assert (
        page.evaluate("() => document.querySelector('.table-wrap').scrollWidth")
        <= frame["width"] + 1
    )

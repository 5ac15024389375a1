"""The session pages in a real browser."""

from __future__ import annotations

import pytest
from playwright.sync_api import Dialog, Page, expect

from sessions.models import Project
from tests.factories import make_session, wire_message
from tests.privacy.support import support_session

pytestmark = pytest.mark.browser

PAYLOAD = '<script>window.__xss = 1; alert("xss")</script><img src=x onerror="window.__xss = 2">'


def test_hostile_trace_content_is_shown_as_text_and_never_runs(
    logged_in: Page, live_server, project: Project
) -> None:
    dialogs: list[Dialog] = []
    logged_in.on("dialog", lambda dialog: (dialogs.append(dialog), dialog.dismiss()))
    session = make_session(
        project,
        external_id="hostile-run",
        session={"agent": PAYLOAD},
        messages=[
            wire_message(0, content=PAYLOAD),
            wire_message(
                1,
                "assistant",
                [{"type": "tool_use", "id": "toolu_1", "name": PAYLOAD, "input": {"q": PAYLOAD}}],
            ),
            wire_message(
                2,
                content=[
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": PAYLOAD,
                        "is_error": True,
                    }
                ],
            ),
        ],
    )
    for path in ("/", f"/sessions/{session.pk}/"):
        logged_in.goto(f"{live_server.url}{path}")
        logged_in.wait_for_load_state("networkidle")
        assert logged_in.evaluate("window.__xss") is None
        assert (
            logged_in.locator("script:not([src])").evaluate_all(
                "els => els.filter(e => e.textContent.includes('__xss')).length"
            )
            == 0
        )
        assert logged_in.locator("img[src=x]").count() == 0
    assert dialogs == []
    logged_in.get_by_text("tool error").first.click()
    assert PAYLOAD in logged_in.locator("details.tool-result pre").first.inner_text()


def test_session_list_links_to_the_session_page(
    logged_in: Page, live_server, project: Project
) -> None:
    make_session(project, external_id="run-42", messages=6)
    logged_in.goto(f"{live_server.url}/")
    # Sessions are named by their first prompt ("message 0"), with the id beside it.
    row = logged_in.locator("table.sessions tbody tr", has_text="run-42")
    row.get_by_role("link", name="message 0").click()
    assert logged_in.get_by_role("heading", level=1).inner_text() == "message 0"
    assert logged_in.locator("p.session-id").inner_text() == "run-42"
    assert logged_in.locator("ol.timeline > li.msg").count() == 6


def test_the_session_page_leads_with_its_timeline_and_tabs_the_rest(
    logged_in: Page, live_server, project: Project
) -> None:
    """Header, curve and compactions, then the timeline: personal data, alerts, comments and
    replays are tabs with their counts, so a long findings table no longer pushes the timeline
    down. The address keeps the chosen tab, and a link into a tab opens it."""
    session = support_session(project)
    url = f"{live_server.url}/sessions/{session.pk}/"
    logged_in.set_viewport_size({"width": 1440, "height": 900})
    logged_in.goto(url)
    tabs = logged_in.get_by_role("tab")
    names = [" ".join(name.split()) for name in tabs.all_inner_texts()]
    assert names[0].startswith("Timeline")
    assert names[1].startswith("Personal data")
    assert any(name.startswith("Comments 0") for name in names)
    timeline = logged_in.locator("#timeline")
    findings = logged_in.locator("#findings")
    expect(timeline).to_be_visible()
    expect(findings).to_be_hidden()
    # The timeline's heading is within the first 1,200 px of a 1440 px wide page.
    assert (
        logged_in.locator("#messages-h").evaluate("h => h.getBoundingClientRect().top + scrollY")
        < 1200
    )

    logged_in.get_by_role("tab", name="Personal data").click()
    expect(findings).to_be_visible()
    expect(timeline).to_be_hidden()
    assert logged_in.url.endswith("#findings")
    # Arrow keys move between tabs; the selected one is the only tab stop.
    logged_in.keyboard.press("ArrowLeft")
    expect(timeline).to_be_visible()
    assert logged_in.evaluate("document.activeElement.id") == "tab-timeline"

    # A link into a tab (a comment's permalink, a finding's section) opens that tab.
    logged_in.goto(url + "#comments")
    expect(logged_in.locator("#comments")).to_be_visible()
    expect(timeline).to_be_hidden()


def test_a_jump_to_a_message_moves_focus_to_it(
    logged_in: Page, live_server, project: Project
) -> None:
    session = make_session(project, external_id="long-run", messages=30)
    logged_in.goto(f"{live_server.url}/sessions/{session.pk}/")
    logged_in.get_by_label("Jump to seq").fill("17")
    logged_in.get_by_role("button", name="Go").click()
    logged_in.wait_for_url("**#seq-17")
    expect(logged_in.locator("#seq-17")).to_be_focused()

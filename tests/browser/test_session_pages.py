"""The session pages in a real browser."""

from __future__ import annotations

import pytest
from playwright.sync_api import Dialog, Page

from sessions.models import Project
from tests.factories import make_session, wire_message

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

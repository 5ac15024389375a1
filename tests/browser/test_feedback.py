"""Verdict feedback in Chromium: one click marks a fact's verdict right or wrong on the
compaction page (htmx swaps only its box), a second click takes it back, a note sticks, and
without JavaScript the same buttons post a plain form and come back to the fact."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from sessions.models import Project
from team import selectors
from team.models import VerdictMark
from tests.browser.conftest import PASSWORD
from tests.factories import make_billing_session

pytestmark = pytest.mark.browser

CONSTRAINT = "Do not change the public API of the billing module."


def _box(page: Page):
    return page.locator(f"#fact-{selectors.fact_key(CONSTRAINT)[:16]}")


def test_right_then_wrong_then_taken_back_with_a_note_on_the_compaction_page(
    logged_in: Page, live_server, project: Project
) -> None:
    session = make_billing_session(project)
    page = logged_in
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(f"{live_server.url}/sessions/{session.pk}/compactions/30/")
    box = _box(page)
    right = box.get_by_role("button", name="Right")
    wrong = box.get_by_role("button", name="Wrong")
    expect(right).to_have_attribute("aria-pressed", "false")
    height = page.evaluate("() => document.documentElement.scrollHeight")

    right.click()
    expect(box.get_by_role("button", name="Right")).to_have_attribute("aria-pressed", "true")
    assert VerdictMark.objects.get().mark == "right"
    assert page.url.endswith("/compactions/30/")  # swapped in place, no reload

    box.get_by_role("button", name="Wrong").click()
    expect(box.get_by_role("button", name="Wrong")).to_have_attribute("aria-pressed", "true")
    expect(box.get_by_role("button", name="Right")).to_have_attribute("aria-pressed", "false")
    assert VerdictMark.objects.get().mark == "wrong"

    box.get_by_text("What it should be, and why", exact=True).click()
    box.get_by_label("It should be").select_option("paraphrased")
    box.get_by_label("Note on your mark").fill("the summary keeps it as 'public API stays'")
    with page.expect_response(lambda r: "/feedback/" in r.url and r.status == 200):
        box.get_by_role("button", name="Save").click()
    expect(box.get_by_label("Note on your mark")).to_have_value(
        "the summary keeps it as 'public API stays'"
    )
    expect(box.get_by_label("It should be")).to_have_value("paraphrased")
    saved = VerdictMark.objects.get()
    assert (saved.note, saved.should_be) == (
        "the summary keeps it as 'public API stays'",
        "paraphrased",
    )

    box.get_by_role("button", name="Wrong").click()  # my own mark again: taken back
    expect(box.get_by_role("button", name="Wrong")).to_have_attribute("aria-pressed", "false")
    assert not VerdictMark.objects.exists()
    # the controls stay compact at a phone's width: the page grows little, nothing overflows
    grown = page.evaluate("() => document.documentElement.scrollHeight") - height
    assert grown < 60
    assert page.evaluate(
        "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    assert wrong.is_visible()


def test_without_javascript_a_mark_is_a_plain_form_that_comes_back_to_the_fact(
    browser: Browser, live_server, project: Project
) -> None:
    from django.contrib.auth import get_user_model

    from sessions.models import Membership, Role

    session = make_billing_session(project)
    user = get_user_model().objects.create_user(username="nojs", password=PASSWORD)
    Membership.objects.create(user=user, project=project, role=Role.ENGINEER)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill("nojs")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.goto(f"{live_server.url}/sessions/{session.pk}/compactions/30/")
        _box(page).get_by_role("button", name="Wrong").click()
        page.wait_for_url(f"**/sessions/{session.pk}/compactions/30/#fact-*")
        expect(page.get_by_text("Mark saved.")).to_be_visible()
        expect(_box(page).get_by_role("button", name="Wrong")).to_have_attribute(
            "aria-pressed", "true"
        )
        assert VerdictMark.objects.get().mark == "wrong"
    finally:
        context.close()

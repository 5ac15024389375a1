"""Times in the viewer's zone, in Chromium with its zone emulated (Playwright timezone_id)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Page, expect

from alerts.models import Alert, AlertState
from sessions.models import Membership, Project, Role
from tests.browser.conftest import PASSWORD
from tests.browser.test_alerts import repeated_session

pytestmark = pytest.mark.browser

ZONE = "America/Sao_Paulo"  # UTC-3 all year (no summer time since 2019): "GMT-3" in en-US


def signed_in(browser: Browser, live_server, project: Project, **context: object) -> Page:
    user = get_user_model().objects.create_user(username="oncall", password=PASSWORD)
    Membership.objects.create(user=user, project=project, role=Role.ENGINEER)
    page = browser.new_context(viewport={"width": 1280, "height": 900}, **context).new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("oncall")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    return page


@pytest.fixture
def in_sao_paulo(browser: Browser, live_server, project: Project) -> Iterator[Page]:
    page = signed_in(browser, live_server, project, timezone_id=ZONE, locale="en-US")
    yield page
    page.context.close()


def test_times_show_in_the_viewers_zone_and_mute_reads_it(
    in_sao_paulo: Page, live_server, project: Project
) -> None:
    alert = Alert.objects.get(session=repeated_session(project, "billing-run-8"))
    page = in_sao_paulo
    page.goto(f"{live_server.url}/alerts/{alert.pk}/")
    event = alert.events.get()
    local = event.created_at.astimezone(ZoneInfo(ZONE))
    expect(page.locator("table.history time").first).to_have_text(
        f"{local:%Y-%m-%d %H:%M:%S} GMT-3"
    )
    expect(page.locator("[data-tz-label]")).to_have_text("(your time, GMT-3)")

    page.get_by_label("Mute until").fill("2099-01-01T09:00")
    page.get_by_role("button", name="Mute").click()
    expect(page.locator(".flash")).to_contain_text("Alert muted.")
    alert.refresh_from_db()
    assert alert.state == AlertState.MUTED
    assert alert.muted_until == datetime(2099, 1, 1, 12, 0, tzinfo=UTC)
    expect(page.locator(".page-head time")).to_have_text("2099-01-01 09:00 GMT-3")


def test_without_javascript_times_and_the_mute_label_say_utc(
    browser: Browser, live_server, project: Project
) -> None:
    alert = Alert.objects.get(session=repeated_session(project, "billing-run-9"))
    page = signed_in(browser, live_server, project, timezone_id=ZONE, java_script_enabled=False)
    page.goto(f"{live_server.url}/alerts/{alert.pk}/")
    opened = alert.events.get().created_at.astimezone(UTC)
    expect(page.locator("table.history time").first).to_have_text(f"{opened:%Y-%m-%d %H:%M:%S} UTC")
    expect(page.locator("[data-tz-label]")).to_have_text("(UTC)")
    page.context.close()

# ruff: noqa: F811 (admin_page and site are test_every_page's fixtures, taken by name)
"""A phone (390 x 844, an iPhone 12-15) in Chromium, on every page of test_every_page's PAGES:
the top bar is one row (at most 60 px tall) with the menu behind a button, list filters are
folded behind a button, the session curve starts within the first 700 px, tables fold into
cards (none scrolls sideways), and no page is wider than the screen.

Set SAWTOOTH_PHONE_FIGURES=1 to print the measured figures.
"""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_every_page import (  # noqa: F401 (its fixtures, used by name)
    ANONYMOUS,
    PAGES,
    Site,
    admin_page,
    open_page,
    site,
)

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
TOP_BAR_MAX = 60
CURVE_TOP_MAX = 700
FIGURES = os.environ.get("SAWTOOTH_PHONE_FIGURES")

MEASURE = """() => {
    const bar = document.querySelector('.topbar');
    const width = document.documentElement.clientWidth;
    const sideways = [...document.querySelectorAll('.table-wrap, table.data')]
      .filter(el => el.scrollWidth > el.clientWidth + 1
                    || el.getBoundingClientRect().right > width + 1)
      .map(el => (el.querySelector('caption, th') || el).textContent.trim().slice(0, 40));
    const menu = document.querySelector('#topbar-menu');
    return {
      bar: bar ? Math.round(bar.getBoundingClientRect().height) : 0,
      document: document.documentElement.scrollWidth,
      window: width,
      sideways,
      menuShown: !!menu && menu.getBoundingClientRect().height > 0,
      height: document.documentElement.scrollHeight,
    };
}"""


def _figures(line: str) -> None:
    if FIGURES:
        print(line)


def test_every_page_on_a_phone(admin_page: Page, live_server, site: Site) -> None:
    page = admin_page
    page.set_viewport_size(PHONE)
    faults: dict[str, object] = {}
    for name, path in PAGES.items():
        if name in ANONYMOUS:
            continue
        open_page(page, f"{live_server.url}{path(site)}")
        m = page.evaluate(MEASURE)
        _figures(
            f"{name}: top bar {m['bar']} px, width {m['document']}/{m['window']} px, "
            f"page {m['height']} px"
        )
        problems = []
        if m["bar"] > TOP_BAR_MAX:
            problems.append(f"top bar {m['bar']} px")
        if m["menuShown"]:
            problems.append("the menu is open before its button is pressed")
        if m["document"] > m["window"]:
            problems.append(f"{m['document']} px wide in a {m['window']} px window")
        if m["sideways"]:
            problems.append(f"tables scrolling sideways: {m['sideways']}")
        if problems:
            faults[name] = problems
    assert faults == {}


def test_the_menu_opens_from_its_button_on_a_phone_and_is_a_row_on_a_desktop(
    admin_page: Page, live_server
) -> None:
    page = admin_page
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav).to_be_hidden()
    button = page.get_by_role("button", name="Menu")
    expect(button).to_have_attribute("aria-expanded", "false")
    button.click()
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(nav.get_by_role("link", name="Alerts")).to_be_visible()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    nav.get_by_role("link", name="Alerts").click()
    page.wait_for_url(f"{live_server.url}/alerts/")
    page.set_viewport_size({"width": 1440, "height": 900})
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    bar = page.locator(".topbar").bounding_box()
    assert bar is not None
    assert bar["height"] <= TOP_BAR_MAX


@pytest.mark.parametrize(
    ("name", "label"),
    [("sessions", "Filter sessions"), ("alerts", "Filter alerts"), ("findings", "Filter findings")],
)
def test_list_filters_are_folded_behind_a_button_on_a_phone(
    admin_page: Page,
    live_server,
    site: Site,
    name: str,
    label: str,
) -> None:
    page = admin_page
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}{PAGES[name](site)}")
    form = page.get_by_role("search", name=label)
    expect(form).to_be_hidden()
    button = page.get_by_role("button", name="Filters")
    expect(button).to_have_attribute("aria-expanded", "false")
    button.click()
    expect(form).to_be_visible()
    expect(button).to_have_attribute("aria-expanded", "true")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.reload()
    expect(page.get_by_role("search", name=label)).to_be_visible()
    expect(page.get_by_role("button", name="Filters")).to_be_hidden()


def test_the_session_curve_starts_within_the_first_screen_on_a_phone(
    admin_page: Page,
    live_server,
    site: Site,
) -> None:
    page = admin_page
    page.set_viewport_size(PHONE)
    open_page(page, f"{live_server.url}{PAGES['session'](site)}")
    box = page.locator("[data-chart]").first.bounding_box()
    assert box is not None
    _figures(f"session curve top at 390 px: {round(box['y'])} px")
    assert box["y"] <= CURVE_TOP_MAX, f"the curve starts at {box['y']} px"

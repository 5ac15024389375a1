"""The price of a compaction in Chromium: the compaction page's block and the session page's
header and table give the figures of the API, link the rework calls, lay out at a desktop and a
phone width, and axe-core finds no serious fault (light and dark).

With SAWTOOTH_SCREENSHOTS=docs/screenshots it writes compaction-price-1440.png.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from compaction import prices
from sessions.models import Project
from tests.browser.test_every_page import AXE, AXE_RUN, AXE_VIEWS, open_page, overflow, shot
from tests.factories import make_priced_session

pytestmark = pytest.mark.browser


def _usd(value: float) -> str:
    return f"${value:,.2f}"


@pytest.mark.inject_scripts
def test_the_compaction_page_shows_its_price_beside_what_it_saved(
    logged_in: Page, live_server, project: Project
) -> None:
    session = make_priced_session(project)
    [price] = prices.compaction_prices(session).values()
    assert price is not None
    page = logged_in
    url = f"{live_server.url}/sessions/{session.pk}/compactions/24/"
    page.set_viewport_size({"width": 1440, "height": 900})
    open_page(page, url)
    block = page.locator("section.price-box")
    expect(block.get_by_role("heading")).to_have_text("Price of this compaction (billed)")
    expect(block.locator(".price-total dd")).to_have_text(_usd(price.total_usd))
    expect(block).to_contain_text(f"Summary call{_usd(price.summary_call_usd or 0)}")
    expect(block).to_contain_text(f"Cache re-write{_usd(price.cache_rewrite_usd)}")
    expect(block.get_by_role("link", name="Show message #29 in the raw history")).to_be_visible()
    assert price.saved_usd is not None
    expect(block.locator(".price-against")).to_contain_text(
        f"{price.tokens_saved:,} tokens over the 4 calls"
    )
    expect(block.locator(".price-against")).to_contain_text(_usd(price.saved_usd))
    block.scroll_into_view_if_needed()
    shot(page, "compaction-price-1440.png")

    open_page(page, f"{live_server.url}/sessions/{session.pk}/")
    expect(page.locator(".compactions-price dd")).to_contain_text(_usd(price.total_usd))
    expect(page.locator("td.span-price")).to_have_text(_usd(price.total_usd))

    faults = {}
    for path in (url, f"{live_server.url}/sessions/{session.pk}/"):
        for scheme, width in AXE_VIEWS:
            page.emulate_media(color_scheme=scheme)
            page.set_viewport_size({"width": width, "height": 900})
            open_page(page, path)
            measured = overflow(page)
            assert measured["document"] <= measured["window"], (path, width, measured)
            page.add_script_tag(path=str(AXE))
            found = page.evaluate(AXE_RUN)
            if found:
                faults[f"{path} {scheme} {width}"] = found
    assert not faults, f"axe-core: {faults}"

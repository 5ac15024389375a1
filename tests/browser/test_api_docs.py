"""The top bar's "API" link: Swagger UI at /api/v1/docs reads the OpenAPI document and draws
every operation, with nothing logged to the console as an error (a schema it cannot parse, a
script the Content-Security-Policy blocks, a missing file)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_api_docs_open_with_no_console_error(logged_in: Page, live_server) -> None:
    page = logged_in
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)

    page.goto(f"{live_server.url}/")
    # The top bar asks for its alert count on load; leaving before the answer aborts that
    # request, which is the test's doing, not the page's: wait for the count to be drawn.
    expect(page.locator("#nav-alert-count")).to_have_count(1)
    page.get_by_role("link", name="API", exact=True).click()
    page.wait_for_url(f"{live_server.url}/api/v1/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Sawtooth API")
    export = page.locator(".opblock-summary-path", has_text="/api/v1/feedback/export")
    expect(export).to_have_count(1)
    export.click()
    expect(page.locator(".opblock-body .response-col_status", has_text="200")).to_have_count(1)
    # Swagger UI shows "Errors / Resolver error / Parser error" in a box when the schema fails
    expect(page.locator(".swagger-ui .errors-wrapper")).to_have_count(0)
    assert page.locator(".opblock").count() > 20
    assert errors == []
    assert failed == []

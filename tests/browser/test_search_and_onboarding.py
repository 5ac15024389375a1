"""Search, titles, subagents and the first visit, in a real browser at desktop and phone widths.

With SAWTOOTH_SCREENSHOTS=1 the tests also write the pages they visit to docs/screenshots/.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from compaction import pipeline
from sessions import import_jobs
from sessions.importers.writer import session_parent_set
from sessions.models import AgentSession, ImportJob, Project
from tests.factories import make_session, wire_message
from tests.importers.corpus import SPOTTER

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
WIDTHS = (1440, 390)


def _fits(page: Page) -> None:
    """The document is no wider than the viewport (nothing pushes the page sideways)."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"page is {width}px wide"


def _shoot(page: Page, name: str) -> None:
    if os.environ.get("SAWTOOTH_SCREENSHOTS"):
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _at_each_width(page: Page, url: str, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url)
        page.wait_for_load_state("networkidle")
        _fits(page)
        _shoot(page, name if width > 800 else f"{name}-narrow")


def _billing_family(project: Project) -> AgentSession:
    parent = make_session(
        project,
        external_id="0f6c1d2e-billing-migration",
        session={"agent": "claude-code", "metadata": {"git_branch": "feature/billing-v2"}},
        messages=[
            wire_message(0, content="<command-name>/clear</command-name>"),
            wire_message(1, content="Migrate billing to API v2. Do not change the public API."),
            wire_message(
                2,
                "assistant",
                [
                    {"type": "text", "text": "Reading the module first."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "read_file",
                        "input": {"path": "billing/api.py"},
                    },
                ],
            ),
            wire_message(
                3,
                content=[
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": "def charge_customer(amount):\n    raise QuotaExceededError()",
                    }
                ],
            ),
            *[wire_message(seq, "assistant" if seq % 2 else "user") for seq in range(4, 160)],
            wire_message(160, content="Why does charge_customer raise QuotaExceededError?"),
        ],
    )
    for name, prompt in (
        ("explore", "Find every caller of charge_customer"),
        ("tests", "Write tests for the v2 client"),
    ):
        external_id = f"{parent.external_id}:agent-{name}"
        make_session(project, external_id=external_id, messages=[wire_message(0, content=prompt)])
        session_parent_set(
            project=project, external_id=external_id, parent_external_id=parent.external_id
        )
    make_session(
        project,
        external_id="support-pt-0042",
        session={"agent": "support-bot"},
        messages=[
            wire_message(0, content="Cliente pede reembolso; não altere o plano sem aprovação.")
        ],
    )
    # As the worker does after an upload: search reads what the analysis pass masked.
    for session in AgentSession.objects.filter(project=project):
        pipeline.session_analyse(session_id=session.pk)
    return parent


def test_searching_content_lands_on_the_exact_message(
    logged_in: Page, live_server, project: Project
) -> None:
    parent = _billing_family(project)
    page = logged_in
    page.goto(f"{live_server.url}/")
    page.get_by_label("Search", exact=True).fill("charge_customer")
    page.get_by_role("button", name="Apply").click()
    # the parent and the subagent that mentions it; a search looks inside subagents too
    expect(page.locator("table.sessions tbody tr")).to_have_count(2)
    page.get_by_role("link", name="See each matching message →").click()
    expect(page.locator("ol.hits mark").first).to_have_text("charge_customer")
    _fits(page)
    page.get_by_role("link", name="#160 user").click()
    page.wait_for_url(f"**/sessions/{parent.pk}/?seq=160#seq-160")
    target = page.locator("#seq-160")
    expect(target).to_be_in_viewport()
    assert "charge_customer raise" in target.inner_text()
    assert page.evaluate("document.querySelector(':target').id") == "seq-160"
    _at_each_width(page, f"{live_server.url}/search/?q=charge_customer", "search")


def test_subagents_hang_under_their_parent_and_hide_from_the_list(
    logged_in: Page, live_server, project: Project
) -> None:
    parent = _billing_family(project)
    page = logged_in
    page.goto(f"{live_server.url}/")
    rows = page.locator("table.sessions tbody tr")
    expect(rows).to_have_count(2)
    expect(
        page.get_by_role("link", name="Migrate billing to API v2. Do not change the public API.")
    )
    page.get_by_label("Show subagents").check()
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(4)
    _at_each_width(page, f"{live_server.url}/?subagents=on", "sessions-subagents")

    page.goto(f"{live_server.url}/sessions/{parent.pk}/")
    expect(page.locator("h1")).to_have_text(
        "Migrate billing to API v2. Do not change the public API."
    )
    expect(page.get_by_text(parent.external_id, exact=True)).to_be_visible()
    page.get_by_role("tab", name="Subagents 2").click()
    tree = page.locator("ul.subagent-tree li")
    expect(tree).to_have_count(2)
    tree.get_by_role("link", name="Find every caller of charge_customer").click()
    page.get_by_role("link", name="Parent session").click()
    page.wait_for_url(f"**/sessions/{parent.pk}/")
    _at_each_width(page, f"{live_server.url}/sessions/{parent.pk}/", "session-subagents")


def test_first_visit_uploads_a_transcript_and_shows_the_report(
    logged_in: Page, live_server, project: Project
) -> None:
    page = logged_in
    _at_each_width(page, f"{live_server.url}/", "sessions-empty")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/")
    port = live_server.url.rsplit(":", 1)[1]
    expect(page.locator(".empty pre").last).to_contain_text(
        f":{port}/api/v1/sessions/my-run/events"
    )
    expect(page.locator(".empty pre").first).to_contain_text("import_claude_code")
    page.locator("#upload-file").set_input_files(str(SPOTTER / "short.jsonl"))
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("heading", name=f"Import into {project.name}")).to_be_visible()
    # imported in the background: the page follows the job while a worker imports it
    expect(page.locator("#import-progress")).to_be_visible()
    import_jobs.import_job_run(job_id=ImportJob.objects.get(project=project).pk)  # the worker
    expect(page.locator("#import-progress")).to_have_count(0)
    session = AgentSession.objects.get(project=project)
    stored = session.messages.count()
    expect(page.locator("table.data td.num").first).to_have_text(str(stored))
    _fits(page)
    _shoot(page, "import-report")
    page.set_viewport_size({"width": 390, "height": 900})
    _fits(page)
    _shoot(page, "import-report-narrow")
    page.locator("table.data a").first.click()
    page.wait_for_url(f"**/sessions/{session.pk}/")

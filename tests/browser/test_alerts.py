"""The triage page in headless Chromium: filter, bulk acknowledge, open the evidence."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from alerts.models import Alert, AlertState
from alerts.webhooks import webhook_create
from compaction import pipeline
from sessions.models import AgentSession, Membership, Project, Role
from tests.factories import coding_session_messages, make_session

pytestmark = pytest.mark.browser

# Set SAWTOOTH_SCREENSHOTS=docs/screenshots to refresh the README's pictures.
SHOTS = os.environ.get("SAWTOOTH_SCREENSHOTS")


def compaction(seq: int, **extra: object) -> dict[str, object]:
    event: dict[str, object] = {
        "seq": seq,
        "trigger": "auto",
        "strategy": "summarize",
        "tokens_before": None,  # the analysis takes the last call's context
        "tokens_after": 1_000,
        "summary": "Goal: migrate billing. Do not change the public API of the billing module.",
        "replaced": {"from_seq": 0, "to_seq": seq - 1},
    }
    event.update(extra)
    return event


def troubled_session(project: Project, external_id: str) -> AgentSession:
    """A run that compacts three times, twice in quick succession, once failing and once
    losing the rule stated at turn 3, and ends over its 70k window."""
    messages = coding_session_messages(turns=40)
    messages[-1]["usage"] = {"input_tokens": 71_000, "output_tokens": 10}
    session = make_session(
        project,
        external_id=external_id,
        session={"context_window": 70_000, "agent": "billing-migrator"},
        messages=messages,
        compactions=[
            compaction(40, summary="Goal: migrate billing to API v2."),
            compaction(48, tokens_before=23_371, tokens_after=23_000),
            compaction(100, error="summarizer timed out"),
        ],
        probes=[{"seq": 8, "text": "do not change the public API"}],
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


def repeated_session(project: Project, external_id: str) -> AgentSession:
    session = make_session(
        project,
        external_id=external_id,
        messages=coding_session_messages(turns=40),
        compactions=[compaction(4), compaction(52), compaction(100)],
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / name), full_page=True)


def test_walk_the_triage_queue(logged_in: Page, live_server, project: Project) -> None:
    troubled = troubled_session(project, "billing-run-7")
    repeated_session(project, "billing-run-8")
    page = logged_in

    page.goto(f"{live_server.url}/alerts/")
    page.wait_for_selector('[data-chart="alerts-per-day"][data-points]')
    open_count = Alert.objects.filter(project=project, state=AlertState.OPEN).count()
    expect(page.locator("#nav-alert-count")).to_have_text(str(open_count))
    expect(page.locator("table.alerts tbody tr")).to_have_count(open_count)
    shot(page, "alerts.png")

    # Filter: only failed splices.
    page.get_by_label("Rule", exact=True).select_option("failed_splice")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**rule=failed_splice**")
    rows = page.locator("table.alerts tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("billing-run-7")

    # Bulk acknowledge: select all on the page, then acknowledge.
    page.get_by_label("Rule", exact=True).select_option("")
    page.get_by_role("button", name="Apply").click()
    page.get_by_label("Select all alerts on this page").check()
    page.get_by_role("button", name="Acknowledge selected").click()
    expect(page.locator(".flash")).to_contain_text(f"Acknowledged {open_count} alerts.")
    assert not Alert.objects.filter(project=project, state=AlertState.OPEN).exists()
    expect(page.locator("#nav-alert-count")).to_have_text("0")

    # Open the evidence of the lost constraint: the session page at that span's call.
    page.goto(f"{live_server.url}/alerts/?state=acknowledged&rule=lost_constraint")
    page.locator("a.evidence-call").first.click()
    page.wait_for_url(f"**/sessions/{troubled.pk}/?seq=40#seq-40")
    expect(page.locator("#seq-40")).to_be_visible()
    page.go_back()
    page.locator("a.evidence-span").first.click()
    span = troubled.compaction_spans.get(seq=40)
    page.wait_for_url(f"**{span.get_absolute_url()}")

    # The alert's own page: mute it until tomorrow, then resolve it with a reason.
    alert = Alert.objects.get(session=troubled, rule="lost_constraint")
    page.goto(f"{live_server.url}/alerts/{alert.pk}/")
    expect(page.locator(".evidence-items")).to_contain_text("do not change the public API")
    page.get_by_label("Mute until").fill("2099-01-01T09:00")
    page.get_by_role("button", name="Mute").click()
    expect(page.locator(".flash")).to_contain_text("Alert muted.")
    page.get_by_label("Resolve with a reason").fill("summary template now keeps constraints")
    page.get_by_role("button", name="Resolve").click()
    expect(page.locator(".notice")).to_contain_text("summary template now keeps constraints")
    expect(page.locator("table.history tbody tr")).to_have_count(4)
    shot(page, "alert-detail.png")
    alert.refresh_from_db()
    assert alert.state == AlertState.RESOLVED


def test_project_settings_page(page: Page, live_server, project: Project) -> None:
    admin = get_user_model().objects.create_user(username="lead", password="correct-horse-battery")
    Membership.objects.create(user=admin, project=project, role=Role.ADMIN)
    webhook_create(
        project=project,
        url="https://hooks.example.com/sawtooth",
        secret="correct-horse-battery-staple",
        rules=["failed_splice", "overflow"],
    )
    troubled_session(project, "billing-run-7")
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("lead")
    page.get_by_label("Password").fill("correct-horse-battery")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/alerts/")
    page.get_by_role("link", name="settings").click()
    page.wait_for_url(f"**/projects/{project.pk}/settings/")
    page.get_by_label("Repeated compaction: N compactions per session").fill("5")
    page.get_by_role("button", name="Save thresholds").click()
    expect(page.locator(".flash")).to_contain_text("Alert thresholds saved")
    expect(page.locator(".deliveries tbody tr")).to_have_count(2)  # failed splice, overflow
    shot(page, "project-settings.png")

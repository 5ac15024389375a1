"""The privacy review queue in headless Chromium: filter, confirm, false positive, redact."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from compaction import pipeline
from privacy.models import Finding, FindingStatus
from sessions.models import CompactionEvent, Membership, Project, Role
from tests.browser.conftest import PASSWORD
from tests.privacy.test_findings import CPF, EMAIL, NEW_CPF, support_chat

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def log_in(page: Page, live_server, project: Project, role: str) -> None:
    user = get_user_model().objects.create_user(username=f"u-{role}", password=PASSWORD)
    Membership.objects.create(user=user, project=project, role=role)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def test_a_reviewer_walks_the_queue(page: Page, live_server, project: Project) -> None:
    chat = support_chat(project)
    pipeline.session_analyse(session_id=chat.pk)
    log_in(page, live_server, project, Role.PRIVACY_REVIEWER)

    page.get_by_role("link", name="Privacy").click()
    expect(page.get_by_role("heading", name="Personal data review")).to_be_visible()
    rows = page.locator("#findings tbody tr")
    expect(rows).to_have_count(Finding.objects.filter(session=chat).count())
    body = page.content()
    for raw in (CPF, EMAIL, NEW_CPF):
        assert raw not in body
    if os.environ.get("SAWTOOTH_SCREENSHOTS"):
        page.screenshot(path=str(SCREENSHOTS / "privacy-queue.png"), full_page=True)

    page.get_by_label("Where").select_option("summary")
    page.get_by_label("Kind").select_option("cpf")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(2)
    introduced = rows.filter(has_text="introduced")
    expect(introduced).to_contain_text("***.***.***-25")

    introduced.get_by_role("button", name="Confirm").click()
    expect(page.get_by_text("Marked confirmed.")).to_be_visible()
    assert "kind=cpf" in page.url  # back to the same filtered queue
    assert "where=summary" in page.url
    expect(rows.filter(has_text="introduced")).to_contain_text("Confirmed")

    rows.filter(has_text="carried").get_by_role("button", name="False positive").click()
    expect(rows.filter(has_text="carried")).to_contain_text("False positive")

    rows.filter(has_text="introduced").get_by_role("link", name="Redact…").click()
    expect(page.get_by_role("heading", name="Redact this cpf?")).to_be_visible()
    page.get_by_label("Reason (10 characters or more)").fill("a new copy in a summary")
    page.get_by_role("button", name="Redact").click()
    expect(page.get_by_text("Redacted: the cpf is now ***.***.***-25.")).to_be_visible()
    expect(rows.filter(has_text="introduced")).to_contain_text("Redacted")
    expect(rows.filter(has_text="introduced").get_by_role("button")).to_have_count(0)

    summary = CompactionEvent.objects.get(session=chat).summary
    assert NEW_CPF not in summary
    assert "[cpf ***.***.***-25]" in summary
    statuses = set(
        Finding.objects.filter(session=chat, where="summary", kind="cpf").values_list(
            "status", flat=True
        )
    )
    assert statuses == {FindingStatus.REDACTED, FindingStatus.FALSE_POSITIVE}

    page.goto(f"{live_server.url}/sessions/{chat.pk}/")
    page.get_by_role("tab", name="Personal data").click()
    expect(page.get_by_role("heading", name="Personal data")).to_be_visible()


def test_a_viewer_is_refused_the_queue(page: Page, live_server, project: Project) -> None:
    log_in(page, live_server, project, Role.VIEWER)
    response = page.goto(f"{live_server.url}/privacy/findings/")
    assert response is not None
    assert response.status == 403

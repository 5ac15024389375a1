"""A privacy reviewer reveals one masked value with a reason, in a real browser; an admin's
members page. With SAWTOOTH_SCREENSHOTS=1 both are written to docs/screenshots/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from privacy.models import AuditEvent
from sessions.models import Membership, Project, Role
from tests.browser.conftest import PASSWORD
from tests.privacy.support import CPF, EMAIL, support_session

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def _sign_in(page: Page, live_server, project: Project, username: str, role: str) -> None:
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    Membership.objects.create(user=user, project=project, role=role)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def test_a_reviewer_reveals_one_value_with_a_reason_and_it_is_audited(
    page: Page, live_server, project: Project
) -> None:
    session = support_session(project)
    _sign_in(page, live_server, project, "rita", Role.PRIVACY_REVIEWER)
    page.goto(f"{live_server.url}/sessions/{session.pk}/?seq=2#seq-2")
    message = page.locator("#seq-2")
    expect(message).to_contain_text("[cpf ***.***.***-79]")
    assert CPF not in page.content()
    assert EMAIL not in page.content()

    # One control per value: its chip opens the reason field (one tab stop until then).
    chip = message.locator("details.reveal-one").first
    expect(chip).to_contain_text("cpf #1")
    chip.locator("summary").click()
    form = chip.locator("form.reveal")
    # Without a reason the browser refuses to send it, and nothing is logged.
    form.get_by_role("button", name="Reveal").click()
    assert not AuditEvent.objects.exists()
    form.get_by_label("Reason for revealing cpf #1").fill(
        "Titular pediu confirmação, protocolo 118"
    )
    form.get_by_role("button", name="Reveal").click()
    revealed = message.locator(".revealed")
    expect(revealed).to_contain_text(CPF)
    expect(revealed).to_contain_text("revealed and logged")
    # Only that one occurrence: the e-mail beside it stays masked.
    assert EMAIL not in page.content()
    event = AuditEvent.objects.get()
    assert (event.actor_name, event.action, event.target, event.reason) == (
        "rita",
        "reveal",
        f"message:{session.pk}:2:0#0",
        "Titular pediu confirmação, protocolo 118",
    )
    message.scroll_into_view_if_needed()
    if os.environ.get("SAWTOOTH_SCREENSHOTS"):
        message.screenshot(path=str(SCREENSHOTS / "reveal.png"))

    page.goto(f"{live_server.url}/projects/{project.pk}/audit/")
    expect(page.locator("table.audit")).to_contain_text("protocolo 118")
    assert CPF not in page.content()


def test_an_admin_adds_a_member_on_the_members_page(
    page: Page, live_server, project: Project
) -> None:
    get_user_model().objects.create_user(username="bruno", password=PASSWORD)
    _sign_in(page, live_server, project, "ana", Role.ADMIN)
    page.goto(f"{live_server.url}/projects/{project.pk}/members/")
    page.get_by_label("Username").fill("bruno")
    page.get_by_label("Role", exact=True).select_option("engineer")
    page.get_by_role("button", name="Add member").click()
    expect(page.locator(".flash")).to_contain_text("bruno is now a member.")
    expect(page.get_by_label("Role of bruno")).to_have_value("engineer")
    assert Membership.objects.get(user__username="bruno").role == Role.ENGINEER
    if os.environ.get("SAWTOOTH_SCREENSHOTS"):
        page.screenshot(path=str(SCREENSHOTS / "members.png"), full_page=True)

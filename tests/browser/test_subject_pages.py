"""A privacy reviewer finds a data subject in the example support chat and erases it."""

from __future__ import annotations

import os
from pathlib import Path

from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from compaction import pipeline
from sessions import example_data
from sessions.models import AgentSession, Membership, Message, Project, Role
from sessions.schemas import EventBatch
from sessions.services import events_ingest

CPF = "530.582.439-79"


def test_a_reviewer_finds_and_erases_a_subject(
    logged_in: Page, live_server, project: Project, tmp_path: Path
) -> None:
    Membership.objects.filter(user=get_user_model().objects.get(username="reviewer")).update(
        role=Role.PRIVACY_REVIEWER
    )
    example = example_data.example_session("example-support-triage")
    for batch in example.batches:
        events_ingest(
            project=project,
            external_id=example.external_id,
            batch=EventBatch.model_validate(batch),
        )
    session = AgentSession.objects.get(project=project)
    pipeline.session_analyse(session_id=session.pk)

    page = logged_in
    page.goto(f"{live_server.url}/privacy/subjects/")
    page.get_by_label("Identifier").fill("53058243979")
    page.get_by_role("button", name="Find").click()
    report = page.locator("#subject-report")
    report.get_by_text("CPF *********79").wait_for()
    assert "example-support-triage" in report.inner_text()
    assert CPF not in page.content()
    assert "camila.fig" not in report.inner_text()  # no identifier cut in half, unmasked
    shots = Path(os.environ.get("SAWTOOTH_SCREENSHOT_DIR", str(tmp_path)))
    page.screenshot(path=str(shots / "subject-request.png"), full_page=True)

    page.get_by_label("Reason").fill("Titular pediu exclusão (art. 18, VI)")
    page.get_by_role("button", name="Erase…").click()
    confirm = page.get_by_role("alertdialog")
    expect(confirm).to_contain_text("Erase CPF *********79 from")
    expect(confirm).to_contain_text("in 1 session (raw messages")
    assert CPF in str(Message.objects.get(session=session, seq=2).content)  # nothing yet
    confirm.get_by_role("button", name="Yes, erase").click()
    page.get_by_text("anonymize of *********79 in 1 session(s)").wait_for()
    assert CPF not in str(Message.objects.get(session=session, seq=2).content)

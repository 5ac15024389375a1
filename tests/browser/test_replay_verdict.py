"""In Chromium: a replay of a one-prompt session says whether the policy held, in words."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from compaction import pipeline
from compaction.models import ReplayRun
from sessions.models import Project
from tests.compaction.test_replay_verdicts import one_prompt_messages
from tests.factories import make_session

pytestmark = pytest.mark.browser


def start_replay(page: Page, url: str, *, fallback: bool) -> ReplayRun:
    page.goto(url)
    page.get_by_label("Soft limit").fill("6000")
    page.get_by_label("Hard limit").fill("9000")
    page.get_by_label("Keep last").fill("2")
    page.get_by_label("Fall back to step boundaries").set_checked(fallback)
    page.get_by_label("Stages").select_option("clear_tool_results,summarize")
    page.get_by_role("button", name="Start replay").click()
    run = ReplayRun.objects.latest("pk")
    page.wait_for_url(f"**/replays/{run.pk}/")
    pipeline.replay_run_execute(run_id=run.pk)  # what the worker does
    return run


def test_the_replay_page_says_a_turns_only_policy_overflowed_and_the_default_held(
    logged_in: Page, live_server, project: Project
) -> None:
    session = make_session(
        project, messages=one_prompt_messages(calls=40), session={"context_window": 12_000}
    )
    pipeline.session_analyse(session_id=session.pk)
    form_url = f"{live_server.url}/sessions/{session.pk}/replay/"

    start_replay(logged_in, form_url, fallback=False)
    verdict = logged_in.locator("#replay-verdict")
    expect(verdict).to_contain_text("Overflowed.")
    expect(verdict).to_contain_text("over the 12,000-token window")
    expect(verdict).to_have_class("notice verdict bad")
    expect(logged_in.locator("#comparability")).to_contain_text("no observed summary")

    start_replay(logged_in, form_url, fallback=True)
    expect(logged_in.locator("#replay-verdict")).to_contain_text("Healthy.")
    differences = logged_in.locator("section[aria-labelledby=diff-h]")
    row = differences.get_by_role("row", name="Calls over the window")
    expect(row).to_contain_text("0")

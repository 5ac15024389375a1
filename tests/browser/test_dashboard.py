"""The dashboard in headless Chromium: curve, markers, span page, replay progress, escaping."""

from __future__ import annotations

import pytest
from playwright.sync_api import Dialog, Page, expect

from compaction import pipeline, services
from compaction.models import CompactionSpan, ReplayRun
from sessions.models import AgentSession, Project
from tests.factories import (
    CONSTRAINT,
    coding_session_messages,
    make_long_compacted_session,
    make_session,
)

pytestmark = pytest.mark.browser

PAYLOAD = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def analysed_session(project: Project) -> AgentSession:
    return make_long_compacted_session(
        project,
        summary="Goal: migrate billing to API v2.",
        external_id="billing-run",
        probes=[{"seq": 8, "text": "do not change the public API"}],
    )


def chart_traces(page: Page) -> dict[str, int]:
    return page.evaluate(
        """() => {
            const gd = document.querySelector('[data-chart="token-curve"]');
            return Object.fromEntries(gd.data.map(t => [t.name, t.x.length]));
        }"""
    )


def marker_position(page: Page) -> tuple[float, float]:
    return tuple(
        page.evaluate(
            """() => {
                const gd = document.querySelector('[data-chart="token-curve"]');
                const trace = gd.data.find(t => t.name === 'Observed compaction');
                const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
                const box = gd.getBoundingClientRect();
                return [box.left + xa._offset + xa.l2p(trace.x[0]),
                        box.top + ya._offset + ya.l2p(trace.y[0])];
            }"""
        )
    )


def test_session_page_draws_one_point_per_call_and_a_marker_per_compaction(
    logged_in: Page, live_server, project: Project
) -> None:
    session = analysed_session(project)
    logged_in.goto(f"{live_server.url}/sessions/{session.pk}/")
    logged_in.wait_for_selector('[data-chart="token-curve"][data-points]')
    traces = chart_traces(logged_in)
    assert traces["Context (reported)"] == 60
    assert traces["Observed compaction"] == 1


def test_clicking_a_compaction_marker_opens_its_span(
    logged_in: Page, live_server, project: Project
) -> None:
    session = analysed_session(project)
    span = CompactionSpan.objects.get(session=session)
    logged_in.goto(f"{live_server.url}/sessions/{session.pk}/")
    logged_in.wait_for_selector('[data-chart="token-curve"][data-points]')
    x, y = marker_position(logged_in)
    logged_in.mouse.move(x, y)
    logged_in.mouse.click(x, y)
    logged_in.wait_for_url(f"{live_server.url}/sessions/{session.pk}/compactions/{span.seq}/")
    expect(logged_in.get_by_role("heading", level=1)).to_contain_text("Compaction at #100")


def test_span_page_shows_the_lost_constraint_as_lost(
    logged_in: Page, live_server, project: Project
) -> None:
    session = analysed_session(project)
    span = CompactionSpan.objects.get(session=session)
    logged_in.goto(f"{live_server.url}{span.get_absolute_url()}")
    lost_box = logged_in.locator(".lost-box")
    # CONSTRAINT is the uploaded probe's auto-extracted copy: it is checked once, as the probe
    probe = "do not change the public API"
    expect(lost_box).to_contain_text(probe)
    expect(lost_box).not_to_contain_text(CONSTRAINT)
    lost = lost_box.locator("li.lost").filter(has_text=probe)
    expect(lost.locator(".badge")).to_have_text("lost")
    expect(lost.locator(".evidence")).to_have_text("no line has most of: change, public, api")
    # The summarized middle is loaded on demand and then shows the replaced messages.
    logged_in.get_by_role("button", name="Show 12 more replaced messages").click()
    expect(logged_in.locator("#raw-50")).to_be_visible()


def test_replay_page_updates_until_the_run_is_done(
    logged_in: Page, live_server, project: Project
) -> None:
    session = analysed_session(project)
    logged_in.goto(f"{live_server.url}/sessions/{session.pk}/replay/")
    logged_in.get_by_label("Soft limit").fill("6000")
    logged_in.get_by_label("Hard limit").fill("9000")
    logged_in.get_by_label("Keep last").fill("2")
    logged_in.get_by_role("button", name="Start replay").click()
    run = ReplayRun.objects.get()
    logged_in.wait_for_url(f"{live_server.url}/replays/{run.pk}/")
    expect(logged_in.locator("#replay-body")).to_contain_text("Waiting for a worker")

    ReplayRun.objects.filter(pk=run.pk).update(
        status="running", progress=0.5, calls_done=30, calls_total=60
    )
    expect(logged_in.locator("#replay-body")).to_contain_text("30 of 60 model calls replayed")

    ReplayRun.objects.filter(pk=run.pk).update(status="queued")
    pipeline.replay_run_execute(run_id=run.pk)  # what the worker does
    expect(logged_in.get_by_role("heading", name="Observed vs replayed context")).to_be_visible()
    logged_in.wait_for_selector('[data-chart="replay-curve"][data-points]')
    assert logged_in.locator("#replay-body[hx-trigger]").count() == 0


def test_hostile_content_never_runs_on_any_dashboard_page(
    logged_in: Page, live_server, project: Project
) -> None:
    dialogs: list[Dialog] = []
    logged_in.on("dialog", lambda dialog: (dialogs.append(dialog), dialog.dismiss()))
    messages = coding_session_messages(turns=30, tool_chars=3000)
    messages[0]["content"] = PAYLOAD
    messages[2]["content"][0]["content"] = PAYLOAD
    session = make_session(
        project,
        external_id=PAYLOAD.replace("/", ""),  # an id is one path segment: no "/"
        session={"agent": PAYLOAD, "model": PAYLOAD},
        messages=messages,
        compactions=[
            {
                "seq": 100,
                "strategy": "<b>x</b>",
                "summary": f"Goal: {PAYLOAD}",
                "error": PAYLOAD,
                "replaced": {"from_seq": 0, "to_seq": 95},
            }
        ],
        probes=[{"seq": 0, "text": PAYLOAD}],
    )
    pipeline.session_analyse(session_id=session.pk)
    span = CompactionSpan.objects.get(session=session)
    run = services.replay_run_start(
        session=session, policy={"soft_limit": 6000, "hard_limit": 9000}
    )
    pipeline.replay_run_execute(run_id=run.pk)
    for path in (
        "/",
        f"/sessions/{session.pk}/",
        span.get_absolute_url(),
        f"/replays/{run.pk}/",
    ):
        logged_in.goto(f"{live_server.url}{path}")
        logged_in.wait_for_load_state("networkidle")
        assert logged_in.evaluate("window.__xss") is None, path
        assert logged_in.locator("img[src=x]").count() == 0, path
    assert dialogs == []

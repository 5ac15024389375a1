"""The span page as a side-by-side reader, and navigation that lands, in headless Chromium.

Set SAWTOOTH_SCREENSHOTS=1 to also write the pages at 1440 and 390 px to docs/screenshots/.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from compaction import pipeline, services
from compaction.models import CompactionSpan, ReplayRun
from sessions.models import AgentSession, Project
from tests.factories import CONSTRAINT, coding_session_messages, conversation, make_session

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
WIDE = {"width": 1440, "height": 900}
NARROW = {"width": 390, "height": 844}
HIDDEN_SEQ = 60  # the constraint's prompt, in the part of the middle loaded on demand
LANDED = "rgb(255, 248, 225)"  # the highlight of a message landed on


def shoot(page: Page, name: str) -> None:
    if os.environ.get("SAWTOOTH_SCREENSHOTS"):
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)


def long_span_session(project: Project) -> AgentSession:
    """60 turns compacted at #232; the constraint is stated at #60, deep in the middle."""
    messages = coding_session_messages(turns=60, tool_chars=3000)
    messages[8]["content"] = "Continue with step 2."
    messages[HIDDEN_SEQ]["content"] = f"{CONSTRAINT} Keep going."
    messages[1]["content"][0]["text"] = "Reading **module 0** with `read_file`."
    session = make_session(
        project,
        external_id="long-billing-run",
        messages=messages,
        compactions=[
            {
                "seq": 232,
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": 54_161,  # the context of the last call before it (#231)
                "tokens_after": 3_000,
                "summary": "## Goal\nMigrate **billing** to API v2.\n\n## Done\n- modules `0-50`",
                "replaced": {"from_seq": 4, "to_seq": 227},
            }
        ],
        probes=[{"seq": HIDDEN_SEQ, "text": "do not change the public API"}],
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


def span_url(live_server, session: AgentSession) -> str:
    span = CompactionSpan.objects.get(session=session, origin="observed")
    return f"{live_server.url}{span.get_absolute_url()}"


def in_viewport(page: Page, selector: str) -> bool:
    return page.evaluate(
        """sel => { const r = document.querySelector(sel).getBoundingClientRect();
                    return r.top >= 0 && r.top < window.innerHeight && r.height > 0; }""",
        selector,
    )


def document_width(page: Page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_the_summary_stays_in_view_beside_a_long_raw_column(
    logged_in: Page, live_server, project: Project
) -> None:
    session = long_span_session(project)
    logged_in.set_viewport_size(WIDE)
    logged_in.goto(span_url(live_server, session))
    expect(logged_in.get_by_role("tab", name="Summary")).to_be_hidden()
    raw, summary = (logged_in.locator(sel).bounding_box() for sel in ("#raw-col", "#summary-col"))
    assert raw is not None
    assert summary is not None
    assert raw["x"] < summary["x"], "raw history on the left, the summary on the right"
    assert raw["height"] > 3 * summary["height"]
    shoot(logged_in, "span")
    # to the end of the raw column (comments and other sections may follow the reader)
    logged_in.evaluate(
        "const raw = document.getElementById('raw-col').getBoundingClientRect();"
        "window.scrollTo(0, window.scrollY + raw.bottom - window.innerHeight - 10)"
    )
    top = logged_in.evaluate("document.getElementById('summary-col').getBoundingClientRect().top")
    assert 0 <= top < 40, f"the summary scrolled away (top {top})"
    assert logged_in.locator("#summary-h").is_visible()


def test_a_lost_fact_loads_the_hidden_middle_and_highlights_its_message(
    logged_in: Page, live_server, project: Project
) -> None:
    session = long_span_session(project)
    logged_in.set_viewport_size(WIDE)
    logged_in.goto(span_url(live_server, session))
    assert logged_in.locator(f"#raw-{HIDDEN_SEQ}").count() == 0
    url = logged_in.url
    logged_in.locator(".lost-box a.raw-link", has_text=f"#{HIDDEN_SEQ}").first.click()
    message = logged_in.locator(f"#raw-{HIDDEN_SEQ}")
    expect(message).to_have_class("msg compact role-user is-target")
    expect(message).to_contain_text(CONSTRAINT)
    assert logged_in.url == f"{url}#raw-{HIDDEN_SEQ}", "stayed on the span page"
    assert in_viewport(logged_in, f"#raw-{HIDDEN_SEQ}")
    assert message.evaluate("el => getComputedStyle(el).backgroundColor") == LANDED
    assert logged_in.locator("#middle-more").count() == 0


def test_a_permalink_to_a_hidden_raw_message_lands_on_it(
    logged_in: Page, live_server, project: Project
) -> None:
    session = long_span_session(project)
    logged_in.goto(f"{span_url(live_server, session)}#raw-{HIDDEN_SEQ}")
    expect(logged_in.locator(f"#raw-{HIDDEN_SEQ}.is-target")).to_be_visible()
    assert in_viewport(logged_in, f"#raw-{HIDDEN_SEQ}")


def test_on_a_phone_the_summary_comes_first_and_a_fact_switches_to_its_message(
    logged_in: Page, live_server, project: Project
) -> None:
    session = long_span_session(project)
    logged_in.set_viewport_size(NARROW)
    logged_in.goto(span_url(live_server, session))
    summary_tab = logged_in.get_by_role("tab", name="Summary")
    raw_tab = logged_in.get_by_role("tab", name="Raw history")
    expect(summary_tab).to_have_attribute("aria-selected", "true")
    expect(logged_in.locator("#summary-col")).to_be_visible()
    expect(logged_in.locator("#raw-col")).to_be_hidden()
    summary_top = logged_in.locator("#summary-h").bounding_box()
    assert summary_top is not None
    assert summary_top["y"] < 2 * NARROW["height"], summary_top
    assert document_width(logged_in) <= NARROW["width"]
    shoot(logged_in, "span-narrow")

    # the lost fact leads the page, above the tabs; its message is in the raw column
    logged_in.locator(".lost-box a.raw-link", has_text=f"#{HIDDEN_SEQ}").first.click()
    expect(raw_tab).to_have_attribute("aria-selected", "true")
    expect(logged_in.locator("#summary-col")).to_be_hidden()
    expect(logged_in.locator(f"#raw-{HIDDEN_SEQ}.is-target")).to_be_visible()
    assert in_viewport(logged_in, f"#raw-{HIDDEN_SEQ}")
    # The tabs stay at hand, and the keyboard moves between them.
    raw_tab.focus()
    logged_in.keyboard.press("ArrowLeft")
    expect(summary_tab).to_be_focused()
    expect(logged_in.locator("#summary-col")).to_be_visible()
    assert document_width(logged_in) <= NARROW["width"]


def test_markdown_and_tool_names_render_on_the_span_page(
    logged_in: Page, live_server, project: Project
) -> None:
    session = long_span_session(project)
    logged_in.goto(span_url(live_server, session))
    expect(logged_in.locator("#raw-1 .block.text strong")).to_have_text("module 0")
    expect(
        logged_in.locator("#summary-col .summary-text strong, #summary-col dd strong").first
    ).to_have_text("billing")
    expect(logged_in.locator("#raw-2 details.tool-result summary code.tool-name")).to_have_text(
        "read_file"
    )


def test_jump_to_seq_lands_on_the_message_and_highlights_it(
    logged_in: Page, live_server, project: Project
) -> None:
    session = make_session(project, external_id="long-chat", messages=250)
    for size, name in ((WIDE, "session-jump"), (NARROW, "session-jump-narrow")):
        logged_in.set_viewport_size(size)
        logged_in.goto(f"{live_server.url}/sessions/{session.pk}/")
        logged_in.get_by_label("Jump to seq").fill("180")
        logged_in.get_by_role("button", name="Go").click()
        logged_in.wait_for_url("**#seq-180")
        target = logged_in.locator("#seq-180")
        expect(target).to_be_visible()
        assert logged_in.evaluate("document.querySelector(':target').id") == "seq-180"
        assert in_viewport(logged_in, "#seq-180")
        assert target.evaluate("el => getComputedStyle(el).backgroundColor") == LANDED
        shoot(logged_in, name)


def test_a_permalink_highlights_its_message(logged_in: Page, live_server, project: Project) -> None:
    session = make_session(project, external_id="chat", messages=40)
    logged_in.goto(f"{live_server.url}/sessions/{session.pk}/?seq=30#seq-30")
    target = logged_in.locator("#seq-30")
    assert in_viewport(logged_in, "#seq-30")
    assert target.evaluate("el => getComputedStyle(el).backgroundColor") == LANDED
    assert (
        logged_in.locator("#seq-29").evaluate("el => getComputedStyle(el).backgroundColor")
        != LANDED
    )


def test_replay_this_opens_the_form_with_the_spans_policy(
    logged_in: Page, live_server, project: Project
) -> None:
    session = long_span_session(project)
    logged_in.goto(span_url(live_server, session))
    logged_in.get_by_role("link", name="Replay this").click()
    expect(logged_in.get_by_label("Hard limit")).to_have_value("54161")
    expect(logged_in.get_by_label("Soft limit")).to_have_value("40620")
    expect(logged_in.get_by_label("Keep last")).to_have_value("1")
    logged_in.get_by_role("button", name="Start replay").click()
    run = ReplayRun.objects.get()
    assert (run.policy["hard_limit"], run.policy["soft_limit"]) == (54161, 40620)


def test_two_replays_compare_side_by_side(logged_in: Page, live_server, project: Project) -> None:
    session = long_span_session(project)
    runs = []
    for policy in (
        {"hard_limit": 20000, "soft_limit": 15000, "stages": ["summarize"]},
        {"hard_limit": 20000, "soft_limit": 12000, "keep_last": 2},
    ):
        run = services.replay_run_start(session=session, policy=policy)
        pipeline.replay_run_execute(run_id=run.pk)
        runs.append(ReplayRun.objects.get(pk=run.pk))
    first, second = runs
    assert first.policy_label != second.policy_label

    for size, suffix in ((WIDE, ""), (NARROW, "-narrow")):
        logged_in.set_viewport_size(size)
        logged_in.goto(f"{live_server.url}/replays/{first.pk}/")
        expect(logged_in.locator(".policy-label").first).to_have_text(first.policy_label)
        pair = logged_in.locator(".summary-pair").first
        expect(pair.locator(".observed-summary strong")).to_have_text("billing")
        expect(pair.locator(".replayed-summary")).not_to_be_empty()
        shoot(logged_in, f"replay{suffix}")
        logged_in.locator("#pairs-h").evaluate("el => el.scrollIntoView()")
        shoot(logged_in, f"replay-summaries{suffix}")
        assert document_width(logged_in) <= size["width"]
        logged_in.get_by_label("Compare with").select_option(str(second.pk))
        logged_in.get_by_role("button", name="Compare").click()
        logged_in.wait_for_url(
            f"**/sessions/{session.pk}/replays/compare/?a={first.pk}&b={second.pk}"
        )
        logged_in.wait_for_selector('[data-chart="pair-curve"][data-points]')
        names = logged_in.evaluate(
            "document.querySelector('[data-chart=\"pair-curve\"]').data.map(t => t.name)"
        )
        assert {f"Replay {first.pk}", f"Replay {second.pk}"} <= set(names)
        table = logged_in.locator("table.pair-table")
        expect(table).to_contain_text(first.policy_label)
        expect(table).to_contain_text(second.policy_label)
        expect(table.locator("tr", has_text="Compactions (summaries)")).to_contain_text(
            f"{first.totals['compactions']:,}"
        )
        assert document_width(logged_in) <= size["width"]
        shoot(logged_in, f"replay-compare{suffix}")


def test_jumping_to_a_seq_the_trace_skipped_lands_on_the_next_message(
    logged_in: Page, live_server, project: Project
) -> None:
    messages = [m for m in conversation(40) if m["seq"] not in (30, 31)]
    session = make_session(project, external_id="gappy", messages=messages)
    logged_in.goto(f"{live_server.url}/sessions/{session.pk}/?seq=30")
    logged_in.wait_for_url("**#seq-32")
    assert in_viewport(logged_in, "#seq-32")
    assert logged_in.evaluate("document.querySelector(':target').id") == "seq-32"


def test_a_kept_fact_links_to_its_mark_in_the_summary_and_back_at_both_widths(
    logged_in: Page, live_server, project: Project
) -> None:
    session = long_span_session(project)
    for size in (WIDE, NARROW):
        logged_in.set_viewport_size(size)
        logged_in.goto(span_url(live_server, session))
        fact = logged_in.locator("#summary-col .facts-list li.kept").first
        fact.locator("a.said-link").click()
        mark = logged_in.locator("mark.fact.is-target")
        expect(mark).to_be_visible()
        expect(mark).to_be_focused()
        expect(logged_in.locator("#summary-col")).to_be_visible()
        assert in_viewport(logged_in, "mark.fact.is-target")
        # the verdict is written beside the mark, not told by its colour alone
        tag = logged_in.locator("mark.fact.is-target ~ a.verdict-tag").first
        expect(tag).to_contain_text("kept")
        tag.click()
        expect(logged_in.locator(".facts-list li.is-target")).to_contain_text("kept")
    # a link to a mark lands on it even when the raw column was the one showing
    said = logged_in.locator("mark.fact[id]").first.get_attribute("id")
    logged_in.get_by_role("tab", name="Raw history").click()
    logged_in.goto(f"{span_url(live_server, session)}#{said}")
    expect(logged_in.locator(f"#{said}.is-target")).to_be_visible()

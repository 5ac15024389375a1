"""Replays opened from a session: limits that compact it, clears listed and drawn, money
beside tokens."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from compaction import pipeline, services
from compaction.forms import PolicyForm
from compaction.models import CompactionSpan, SpanOrigin
from sessions.models import Role
from tests.factories import coding_session_messages, make_project, make_session, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return make_project(name="replays")


@pytest.fixture
def session(project):
    """A run that never came near its 200k window: a share of the window never compacts it."""
    session = make_session(
        project,
        external_id="quiet-run",
        session={"context_window": 200_000, "model": "claude-sonnet-4-5"},
        messages=coding_session_messages(turns=30),
    )
    pipeline.session_analyse(session_id=session.pk)
    session.refresh_from_db()
    return session


@pytest.fixture
def engineer(client: Client, project) -> Client:
    client.force_login(make_user(project=project, role=Role.ENGINEER))
    return client


def _figure(html: str, name: str) -> dict:
    return json.loads(html.split(f'id="{name}" type="application/json">')[1].split("</script>")[0])


def test_the_form_defaults_below_the_sessions_peak_and_says_why(engineer, session) -> None:
    peak = session.analysis.peak_context_tokens
    assert peak is not None
    assert peak < 200_000 * 0.45  # the old defaults would never have fired
    response = engineer.get(f"/sessions/{session.pk}/replay/")
    form = response.context["form"]
    soft, hard = form["soft_limit"].initial, form["hard_limit"].initial
    assert soft < hard < peak
    assert abs(soft - 0.6 * peak) <= 500
    assert abs(hard - 0.8 * peak) <= 500
    assert (
        f"This session peaked at {peak:,} tokens; these limits ({soft:,} soft, {hard:,} hard) "
        "compact it."
    ) in response.content.decode()


def test_limits_prefilled_from_a_span_page_are_kept_and_not_explained(engineer, session) -> None:
    response = engineer.get(f"/sessions/{session.pk}/replay/?soft_limit=500&hard_limit=900")
    assert response.context["form"]["hard_limit"].initial == 900
    assert "data-peak-note" not in response.content.decode()


def test_a_session_without_analysis_keeps_the_window_defaults(project) -> None:
    fresh = make_session(project, session={"context_window": 100_000})
    form = PolicyForm(session=fresh)
    assert (form.fields["soft_limit"].initial, form.fields["hard_limit"].initial) == (
        45_000,
        60_000,
    )
    assert form.peak_note == ""


def test_the_default_limits_compact_the_session_and_clears_are_listed_and_drawn(
    engineer, session
) -> None:
    form = PolicyForm(session=session)
    policy = {
        "soft_limit": form.fields["soft_limit"].initial,
        "hard_limit": form.fields["hard_limit"].initial,
        "keep_last": 2,
    }
    run = services.replay_run_start(session=session, policy=policy)
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "done"
    clears = list(
        CompactionSpan.objects.filter(
            replay=run, origin=SpanOrigin.REPLAYED, stage="clear_tool_results"
        ).order_by("index")
    )
    assert clears, "the defaults below the peak make the replay clear tool results"
    assert run.totals["clears"] == len(clears)

    html = engineer.get(f"/replays/{run.pk}/").content.decode()
    first = clears[0]
    freed = first.tokens_before - first.tokens_after
    assert freed > 0
    assert f'<a href="{first.get_absolute_url()}">#{first.seq}</a>' in html
    assert f"{freed:,} <span" in html
    changed = first.details["changed"]
    a, b = changed[0]
    assert (f"#{a}\u2013#{b}" if a != b else f"#{a}") in html
    figure = _figure(html, "replay-curve")
    drawn = next(t for t in figure["data"] if t["name"] == "Replayed clear")
    assert drawn["x"] == [c.seq for c in clears]


def test_money_stands_beside_billed_tokens_on_replay_and_compare(engineer, session) -> None:
    runs = []
    for hard in (60_000, 40_000):
        run = services.replay_run_start(
            session=session, policy={"soft_limit": hard // 2, "hard_limit": hard, "keep_last": 2}
        )
        pipeline.replay_run_execute(run_id=run.pk)
        runs.append(run)
    detail = engineer.get(f"/replays/{runs[0].pk}/")
    money = detail.context["money"]
    assert money.usd is not None
    billed = next(r for r in detail.context["comparison"] if r["label"] == "Billed tokens")
    assert (billed["observed_usd"], billed["replayed_usd"]) == (money.observed_usd, money.usd)
    assert f'<span class="muted small money">${money.usd:,.2f}</span>' in detail.content.decode()
    compare = engineer.get(f"/sessions/{session.pk}/replays/compare/?a={runs[0].pk}&b={runs[1].pk}")
    row = next(r for r in compare.context["rows"] if r["label"] == "Billed tokens")
    pair = compare.context["money"]
    assert (row["first_usd"], row["second_usd"]) == (pair[0].usd, pair[1].usd)
    assert compare.content.decode().count('class="muted small money"') == 2

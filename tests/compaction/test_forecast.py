"""The next-compaction forecast in GET /curve and in its page partial."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.template.loader import render_to_string
from django.test import Client

from compaction import forecasts, pipeline, selectors
from sessions.importers.claude_code import claude_code_import
from sessions.models import AgentSession, CompactionEvent
from tests.factories import make_key, make_project, make_session
from tests.importers.corpus import AUTO

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def calls(contexts: list[int], *, seq0: int = 0, t0: datetime = T0) -> list[dict[str, Any]]:
    """A prompt and a response per context size, the responses 30 s apart."""
    out: list[dict[str, Any]] = []
    for i, tokens in enumerate(contexts):
        at = (t0 + timedelta(seconds=30 * i)).isoformat()
        out.append({"seq": seq0 + 2 * i, "role": "user", "content": f"step {i}", "timestamp": at})
        out.append(
            {
                "seq": seq0 + 2 * i + 1,
                "role": "assistant",
                "content": [{"type": "text", "text": f"done {i}"}],
                "timestamp": at,
                "usage": {"input_tokens": tokens, "output_tokens": 10},
            }
        )
    return out


FIRST = [110_000 + 3_000 * i for i in range(10)] + [137_000 + 6_000 * i for i in range(1, 7)]
SECOND = [40_000 + 5_000 * i for i in range(5)]


@pytest.fixture
def project():
    return make_project(name="acme")


@pytest.fixture
def auth(project) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_key(project)}"}


def _session(project, *, metadata: dict[str, Any] | None = None, agent: str = "claude-code"):
    session = make_session(
        project,
        external_id="live-1",
        messages=calls(FIRST) + calls(SECOND, seq0=32, t0=T0 + timedelta(hours=1)),
        session={"agent": agent, "context_window": 200_000, "metadata": metadata or {}},
        compactions=[
            {
                "seq": 32,
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": 173_000,
                "tokens_after": 40_000,
                "summary": "Goal: ship it.",
            }
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


def test_curve_forecasts_where_the_session_compacted_before_and_reports_past_accuracy(
    client: Client, auth, project
):
    _session(project)
    curve = client.get("/api/v1/sessions/live-1/curve", headers=auth).json()
    # 60,000 now, 5,000 a call, 30 s apart; this session compacted at 173,000 before
    assert curve["forecast"] == {
        "calls_to_compaction": 23,
        "minutes_to_compaction": 11.5,
        "threshold_tokens": 173_000,
        "basis": "observed",
    }
    # before the first compaction nothing had been observed: Claude Code's default,
    # 200,000 - 33,000; ten calls before it, at 125,000 and 3,000 a call, it said 14; 10 followed
    assert curve["forecast_accuracy"] == [{"seq": 32, "predicted_calls": 14, "actual_calls": 10}]
    assert curve["forecast_median_error_calls"] == 4.0


def test_the_agents_compactions_in_the_project_set_the_threshold_of_a_new_session(
    client: Client, auth, project
):
    # a harness with no known default that compacted at 45-52k: not the 200,000 window
    for n, before in enumerate((45_000, 52_000, 47_000)):
        make_session(
            project,
            external_id=f"old-{n}",
            session={"agent": "my-agent"},
            messages=calls([before - 4_000, before - 2_000, before]),
            compactions=[{"seq": 6, "trigger": "auto", "summary": "s", "tokens_before": before}],
        )
    for session in AgentSession.objects.filter(project=project):
        pipeline.session_analyse(session_id=session.pk)
    new = make_session(
        project,
        external_id="new",
        session={"agent": "my-agent"},
        messages=calls([20_000, 22_000, 24_000, 26_000]),
    )
    pipeline.session_analyse(session_id=new.pk)
    forecast = client.get("/api/v1/sessions/new/curve", headers=auth).json()["forecast"]
    assert (forecast["basis"], forecast["threshold_tokens"]) == ("observed", 47_000)
    assert forecast["calls_to_compaction"] == 11  # (47,000 - 26,000) / 2,000 a call


def test_curve_forecast_aims_at_the_declared_policy_else_the_window(client: Client, auth, project):
    _session(project, metadata={"compaction_policy": {"hard_limit": 100_000}}, agent="bot")
    forecast = client.get("/api/v1/sessions/live-1/curve", headers=auth).json()["forecast"]
    assert (forecast["basis"], forecast["threshold_tokens"]) == ("declared_policy", 100_000)
    assert forecast["calls_to_compaction"] == 8


def test_curve_forecast_is_null_with_too_little_to_go_on(client: Client, auth, project):
    make_session(project, external_id="short", messages=calls([1_000, 2_000]))
    curve = client.get("/api/v1/sessions/short/curve", headers=auth).json()
    assert curve["forecast"] is None
    assert curve["forecast_accuracy"] == []


def test_forecast_partial_says_calls_minutes_threshold_and_past_accuracy(project):
    session = _session(project)
    html = render_to_string(
        "compaction/_forecast.html",
        {"forecast": forecasts.session_forecast(session, selectors.analysis_for(session))},
    )
    text = " ".join(html.split())
    assert (
        "At the recent rate, about 23 calls (≈12 min) to the 173,000-token compaction "
        "threshold (where this session compacted before)." in text
    )
    assert "14 predicted, 10 actual (compaction at seq 32)" in text
    assert "Past forecasts in this project were off by a median of 4 calls (1 forecast)." in text


def test_forecast_partial_without_a_forecast_says_why(project):
    session = make_session(project, messages=calls([1_000, 2_000]))
    html = render_to_string(
        "compaction/_forecast.html", {"forecast": forecasts.session_forecast(session, None)}
    )
    assert "No forecast of the next compaction" in html


def test_a_real_claude_code_compaction_is_checked_against_its_forecast(
    client: Client, auth, project
):
    claude_code_import(project=project, paths=[AUTO])
    session = AgentSession.objects.get(project=project, parent__isnull=True)
    pipeline.session_analyse(session_id=session.pk)
    event = CompactionEvent.objects.get(session=session)
    curve = client.get(f"/api/v1/sessions/{session.external_id}/curve", headers=auth).json()
    # Claude Code's own threshold, and the real auto-compaction fired just past it
    assert (event.trigger, curve["context_window"]) == ("auto", 200_000)
    assert 167_000 <= event.tokens_before < 167_000 * 1.01
    [check] = curve["forecast_accuracy"]
    assert check["seq"] == event.seq
    assert check["actual_calls"] == 10
    assert isinstance(check["predicted_calls"], int)
    assert curve["forecast"] is None or curve["forecast"]["basis"] == "observed"


def test_a_compaction_the_user_asked_for_is_not_scored_as_a_forecast(client: Client, auth):
    # /compact is no threshold reached: 18 of the 41 compactions of the real sessions added
    # for the verdicts were manual, and scoring them doubled the median error
    project = make_project(name="manual")
    session = make_session(
        project,
        external_id="manual-1",
        messages=calls(FIRST) + calls(SECOND, seq0=32, t0=T0 + timedelta(hours=1)),
        session={"agent": "claude-code", "context_window": 200_000},
        compactions=[
            {
                "seq": 32,
                "trigger": "manual",
                "strategy": "summarize",
                "tokens_before": 173_000,
                "tokens_after": 40_000,
                "summary": "Goal: ship it.",
            }
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    key = {"Authorization": f"Bearer {make_key(project)}"}
    curve = client.get("/api/v1/sessions/manual-1/curve", headers=key).json()
    assert curve["forecast_accuracy"] == []
    assert curve["forecast_median_error_calls"] is None

"""Sizes checked against the curve: a harness's stale size before a compaction is replaced by
the session's own, with a note the API and the pages show; usage of 0 in and 0 out is no usage,
so the call is estimated, never drawn as an empty context or read as a compaction "→ 0"."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from compaction import pipeline, selectors
from compaction.engine import analysis, tokens
from compaction.models import CompactionSpan
from sessions.models import AgentSession
from tests.factories import make_key, make_project, make_session, make_user

MODEL = "claude-sonnet-4-5-20250929"


def _usage(context: int) -> dict[str, int]:
    return {
        "input_tokens": 10,
        "output_tokens": 300,
        "cache_read_input_tokens": context - 10,
        "cache_creation_input_tokens": 0,
    }


def _turns(contexts: list[int | None], start: int = 0) -> list[dict[str, Any]]:
    """A user message and a reply per context (None: usage reported as 0/0)."""
    out: list[dict[str, Any]] = []
    for n, context in enumerate(contexts):
        seq = start + 2 * n
        out.append({"seq": seq, "role": "user", "content": f"step {seq} " + "word " * 400})
        usage = {"input_tokens": 0, "output_tokens": 0} if context is None else _usage(context)
        out.append({"seq": seq + 1, "role": "assistant", "content": "done", "usage": usage})
    return out


def stale_session() -> AgentSession:
    # Calls 20k, 40k | #4 reported 45,000 (12 % above 40k: kept) | 15k, 68,102 | #8 reported
    # 45,000 again (stale) | 16k, 50k | #12 reported 112,079 (more than 20 % above 50k).
    messages = _turns([20_000, 40_000, 15_000, 68_102, 16_000, 50_000, 12_000])
    compactions = [
        {"seq": 4, "trigger": "auto", "summary": "Goal: a.", "tokens_before": 45_000},
        {"seq": 8, "trigger": "auto", "summary": "Goal: b.", "tokens_before": 45_000},
        {"seq": 12, "trigger": "auto", "summary": "Goal: c.", "tokens_before": 112_079},
    ]
    session = make_session(
        make_project(),
        external_id="stale",
        session={"model": MODEL},
        messages=messages,
        compactions=compactions,
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


def test_checked_before_keeps_an_agreeing_figure_and_replaces_a_stale_one() -> None:
    last = tokens.CurvePoint(9, 68_102, 68_500, 0.34, False)
    assert analysis.checked_before(80_000, None, last) == (80_000, False, "harness", "")
    repeated = analysis.checked_before(70_000, 70_000, last)
    assert (repeated.tokens, repeated.source) == (68_102, "computed")
    assert "the same figure as the compaction before it" in repeated.note
    above = analysis.checked_before(81_800, 50_000, last)  # 20.1 % above
    assert (above.tokens, above.source) == (68_102, "computed")
    assert "more than 20 %" in above.note
    # an estimated call is no evidence against the harness
    guess = tokens.CurvePoint(9, 30_000, 30_500, 0.15, True)
    assert analysis.checked_before(112_079, 112_079, guess).tokens == 112_079
    assert analysis.checked_before(None, None, last) == (68_102, False, "computed", "")


@pytest.mark.django_db
def test_a_stale_size_before_is_replaced_by_the_curves_with_its_note_everywhere(
    client: Client,
) -> None:
    session = stale_session()
    spans = list(selectors.observed_spans(session))
    assert [s.tokens_before for s in spans] == [45_000, 68_102, 50_000]
    assert [bool(s.tokens_before_note) for s in spans] == [False, True, True]
    # no drop overstated by more than 20 % against the session's own curve
    curve = {
        p["seq"]: p["context_tokens"]
        for p in selectors.analysis_curve(selectors.analysis_for(session))
    }
    for span in spans:
        last_call = max(seq for seq in curve if seq < span.seq)
        assert span.tokens_before <= curve[last_call] * 1.2

    key = make_key(session.project)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    listed = client.get("/api/v1/sessions/stale/compactions", **auth).json()
    assert [(c["tokens_before"], c["tokens_before_source"]) for c in listed] == [
        (45_000, "sent"),
        (68_102, "computed"),
        (50_000, "computed"),
    ]
    assert listed[0]["tokens_before_note"] is None
    assert (
        "45,000 tokens before, the same figure as the compaction before it"
        in (listed[1]["tokens_before_note"])
    )
    assert "112,079 tokens before, more than 20 % above" in listed[2]["tokens_before_note"]

    client.force_login(make_user(project=session.project))
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert page.count(">computed</span>") == 2
    span_page = client.get(spans[1].url()).content.decode()
    assert "<dd>68,102" in span_page
    assert "the same figure as the compaction before it" in span_page


@pytest.mark.django_db
def test_usage_reported_as_zero_is_no_usage(client: Client) -> None:
    # A proxy passing no counts: every call reports 0/0 but one.
    messages = _turns([None, None, None, 30_000, None, None])
    session = make_session(
        make_project(),
        external_id="proxy",
        session={"model": MODEL},
        messages=messages,
        compactions=[
            {"seq": 8, "trigger": "auto", "summary": "Goal: go on.", "tokens_before": 40_000}
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    points = selectors.analysis_curve(selectors.analysis_for(session))
    assert [p["estimated"] for p in points] == [True, True, True, False, True, True]
    assert all(p["context_tokens"] > 0 for p in points)
    [span] = CompactionSpan.objects.filter(session=session)
    assert span.tokens_after is not None
    assert span.tokens_after > 0
    assert span.tokens_estimated

    key = make_key(session.project)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    cost = client.get("/api/v1/sessions/proxy", **auth).json()["cost"]
    assert [(m["model"], m["calls"]) for m in cost["by_model"]] == [(MODEL, 1)]
    curve = client.get("/api/v1/sessions/proxy/curve", **auth).json()
    assert [p["estimated"] for p in curve["points"]] == [True, True, True, False, True, True]


def test_checked_after_keeps_an_agreeing_figure_and_replaces_one_far_below() -> None:
    first = tokens.CurvePoint(12, 58_460, 58_900, 0.29, False)
    assert analysis.checked_after(55_000, first) == (55_000, False, "harness", "")
    assert analysis.checked_after(48_717, first).source == "harness"  # 58,460 is 20.0 % above
    below = analysis.checked_after(12_994, first)  # Claude Code 2.1.232's postTokens
    assert (below.tokens, below.source) == (58_460, "computed")
    assert "12,994 tokens after, more than 20 % below" in below.note
    guess = tokens.CurvePoint(12, 58_460, 58_900, 0.29, True)
    assert analysis.checked_after(12_994, guess).tokens == 12_994
    assert analysis.checked_after(None, first) == (58_460, False, "computed", "")
    assert analysis.checked_after(None, None) == (None, False, None, "")


@pytest.mark.django_db
def test_a_size_after_without_the_system_prompt_is_replaced_by_the_next_calls(
    client: Client,
) -> None:
    # As in a real Claude Code 2.1.232 session: 115,665 -> postTokens 12,994, while the first
    # call after saw 58,460 (the system prompt and tools are in every call, not in postTokens).
    messages = _turns([90_000, 115_352, 58_460, 70_000, 80_000, 40_000, 45_000])
    compactions = [
        {"seq": 4, "trigger": "manual", "summary": "Goal: a.", "tokens_before": 115_665,
         "tokens_after": 12_994},
        {"seq": 10, "trigger": "auto", "summary": "Goal: b.", "tokens_before": 80_500,
         "tokens_after": 38_000},
    ]  # fmt: skip
    session = make_session(
        make_project(),
        external_id="post-tokens",
        session={"model": MODEL},
        messages=messages,
        compactions=compactions,
    )
    pipeline.session_analyse(session_id=session.pk)
    spans = list(selectors.observed_spans(session))
    assert [s.tokens_after for s in spans] == [58_460, 38_000]
    assert [bool(s.tokens_after_note) for s in spans] == [True, False]

    auth = {"HTTP_AUTHORIZATION": f"Bearer {make_key(session.project)}"}
    listed = client.get("/api/v1/sessions/post-tokens/compactions", **auth).json()
    assert [(c["tokens_after"], c["tokens_after_source"]) for c in listed] == [
        (58_460, "computed"),
        (38_000, "sent"),
    ]
    assert "12,994 tokens after, more than 20 % below" in listed[0]["tokens_after_note"]
    assert listed[1]["tokens_after_note"] is None

    client.force_login(make_user(project=session.project))
    span_page = client.get(spans[0].url()).content.decode()
    assert "<dd>58,460" in span_page
    assert "12,994 tokens after" in span_page

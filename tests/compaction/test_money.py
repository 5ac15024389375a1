"""Money per call, only model calls are calls, and one truth for the API and the page.

A session that falls back from Opus to Sonnet mid-way, with a failed request (Claude Code
writes an API error as an assistant message of model "<synthetic>" with zero usage) and a
compaction whose size before was not sent: each call priced at its own model, the failed
request neither drawn nor billed, the window and the size before the compaction the same
figures the page shows, with where they come from.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.test import Client

from compaction import outbox, pipeline, selectors
from compaction import services as compaction_services
from compaction.models import CompactionSpan, ReplayRun
from sessions.models import AgentSession
from tests.factories import make_key, make_project, make_session, make_user

pytestmark = pytest.mark.django_db

OPUS = "claude-opus-4-20250514"
SONNET = "claude-sonnet-4-20250514"


def _usage(context: int, output: int) -> dict[str, int]:
    return {
        "input_tokens": 100,
        "output_tokens": output,
        "cache_read_input_tokens": context - 100,
        "cache_creation_input_tokens": 0,
    }


def fallback_session() -> AgentSession:
    messages: list[dict[str, Any]] = []
    seq = 0
    for turn, (model, context) in enumerate(
        [(OPUS, 20_000), (OPUS, 40_000), ("<synthetic>", 0), (SONNET, 60_000), (SONNET, 30_000)]
    ):
        messages.append({"seq": seq, "role": "user", "content": f"step {turn}"})
        reply: dict[str, Any] = {"seq": seq + 1, "role": "assistant", "model": model}
        if model == "<synthetic>":
            reply["content"] = "API Error: 502 Bad Gateway"
            reply["usage"] = {"input_tokens": 0, "output_tokens": 0}
        else:
            reply["content"] = f"done {turn}"
            reply["usage"] = _usage(context, 500)
        messages.append(reply)
        seq += 2
    session = make_session(
        make_project(),
        external_id="fallback",
        session={"model": OPUS},
        messages=messages,
        compactions=[{"seq": 8, "trigger": "auto", "summary": "Goal: steps.", "tokens_after": 900}],
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


def _usd(context: int, output: int, price: dict[str, float]) -> float:
    return (
        100 * price["input"] + (context - 100) * price["cache_read"] + output * price["output"]
    ) / 1e6


def test_each_call_is_priced_at_its_own_model_and_a_failed_request_is_no_call(
    client: Client,
) -> None:
    session = fallback_session()
    opus = {"input": 15.0, "output": 75.0, "cache_read": 1.5}
    sonnet = {"input": 3.0, "output": 15.0, "cache_read": 0.3}
    by_hand = {
        OPUS: _usd(20_000, 500, opus) + _usd(40_000, 500, opus),
        SONNET: _usd(60_000, 500, sonnet) + _usd(30_000, 500, sonnet),
    }
    key = make_key(session.project)
    answer = client.get("/api/v1/sessions/fallback", HTTP_AUTHORIZATION=f"Bearer {key}").json()
    cost = answer["cost"]
    assert cost["usd"] == pytest.approx(sum(by_hand.values()))
    assert {m["model"]: (m["calls"], m["usd"]) for m in cost["by_model"]} == {
        OPUS: (2, pytest.approx(by_hand[OPUS])),
        SONNET: (2, pytest.approx(by_hand[SONNET])),
    }
    assert (cost["unpriced_calls"], cost["compaction_calls_usd"]) == (0, 0.0)
    # Priced at the session's first model it would be 1.8x as much: the bug this replaces.
    at_opus = _usd(60_000, 500, opus) + _usd(30_000, 500, opus) + by_hand[OPUS]
    assert at_opus / cost["usd"] == pytest.approx(1.809, abs=0.001)

    curve = client.get("/api/v1/sessions/fallback/curve", HTTP_AUTHORIZATION=f"Bearer {key}").json()
    assert [p["seq"] for p in curve["points"]] == [1, 3, 7, 9]  # not 5, the failed request
    assert sum(p["billed_tokens"] for p in curve["points"]) == 150_000 + 4 * 500

    client.force_login(make_user(project=session.project))
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'<dd class="cost">${sum(by_hand.values()):.2f}' in page
    assert f"2 calls of {OPUS} ${by_hand[OPUS]:.2f} · 2 calls of {SONNET}" in page
    assert "1 failed request" in page
    assert ">failed request</span>" in page  # on the message itself
    listed = client.get("/").content.decode()
    assert f"${sum(by_hand.values()):.2f}</span>" in listed


def test_an_unknown_model_is_unpriced_never_guessed(client: Client) -> None:
    session = make_session(
        make_project(),
        external_id="mystery",
        messages=[
            {"seq": 0, "role": "user", "content": "hi"},
            {
                "seq": 1,
                "role": "assistant",
                "content": "a",
                "model": "gpt-9",
                "usage": _usage(1000, 10),
            },
            {"seq": 2, "role": "user", "content": "and"},
            {
                "seq": 3,
                "role": "assistant",
                "content": "b",
                "model": SONNET,
                "usage": _usage(1000, 10),
            },
        ],
    )
    key = make_key(session.project)
    cost = client.get("/api/v1/sessions/mystery", HTTP_AUTHORIZATION=f"Bearer {key}").json()["cost"]
    assert cost["unpriced_calls"] == 1
    assert {m["model"]: m["usd"] for m in cost["by_model"]}["gpt-9"] is None
    assert cost["usd"] == pytest.approx(
        _usd(1000, 10, {"input": 3, "output": 15, "cache_read": 0.3})
    )


def test_the_api_gives_the_window_and_size_before_the_page_uses_with_their_source(
    client: Client,
) -> None:
    session = fallback_session()
    key = make_key(session.project)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    answer = client.get("/api/v1/sessions/fallback", **auth).json()
    assert (answer["context_window"], answer["context_window_source"]) == (200_000, "model")
    [compaction] = client.get("/api/v1/sessions/fallback/compactions", **auth).json()
    assert compaction["tokens_before"] == 60_000  # the last call before it, as the page shows
    assert compaction["tokens_before_source"] == "computed"
    client.force_login(make_user(project=session.project))
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "60.0k" in page or "60,000" in page
    # the verdict the compactions table shows, from the same code
    span = CompactionSpan.objects.get(session=session, event__seq=8)
    assert compaction["verdict"] == {"status": span.verdict.status, "label": span.verdict.label}
    assert f">{span.verdict.label}<" in page

    sent = make_session(
        session.project,
        external_id="sent",
        session={"context_window": 32_000},
        messages=[{"seq": 0, "role": "user", "content": "x"}],
        compactions=[{"seq": 1, "tokens_before": 31_000, "summary": "s"}],
    )
    pipeline.session_analyse(session_id=sent.pk)
    answer = client.get("/api/v1/sessions/sent", **auth).json()
    assert (answer["context_window"], answer["context_window_source"]) == (32_000, "sent")
    [compaction] = client.get("/api/v1/sessions/sent/compactions", **auth).json()
    assert (compaction["tokens_before"], compaction["tokens_before_source"]) == (31_000, "sent")


# --- money in replays, comparisons and experiments ---------------------------------------------


def _list_price(context: int, output: int, price: dict[str, float]) -> float:
    return (context * price["input"] + output * price["output"]) / 1e6


def test_a_replay_is_priced_call_by_call_at_each_calls_model_and_so_is_the_observed_run(
    client: Client,
) -> None:
    session = fallback_session()
    run = compaction_services.replay_run_start(
        session=session, policy={"soft_limit": 25_000, "hard_limit": 50_000, "keep_last": 1}
    )
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "done", run.error
    opus = {"input": 15.0, "output": 75.0}
    sonnet = {"input": 3.0, "output": 15.0}
    model_at = {1: opus, 3: opus, 7: sonnet, 9: sonnet}  # seq 5 is the failed request
    replayed = sum(_list_price(p["context_tokens"], 500, model_at[p["seq"]]) for p in run.curve)
    observed = sum(
        _list_price(context, 500, model_at[seq])
        for seq, context in ((1, 20_000), (3, 40_000), (7, 60_000), (9, 30_000))
    )

    money = selectors.replay_money(run, selectors.analysis_for(session))
    assert money is not None
    assert money.usd == pytest.approx(replayed)  # the offline summarizer costs nothing
    assert money.observed_usd == pytest.approx(observed)
    assert money.saved_usd == pytest.approx(observed - replayed)
    assert money.saved_usd > 0  # the replay compacted earlier than the agent did
    assert (money.unpriced_calls, money.summarizer_usd) == (0, 0.0)

    client.force_login(make_user(project=session.project))
    page = client.get(f"/replays/{run.pk}/").content.decode()
    assert f"${observed:,.2f}</td>" in page
    assert f"${replayed:,.2f}</td>" in page
    assert f"\u2212${observed - replayed:,.2f}</td>" in page


def test_a_replay_with_a_call_of_an_unpriced_model_has_no_figure(client: Client) -> None:
    session = fallback_session()
    session.messages.filter(seq=7).update(model="gpt-9")
    run = compaction_services.replay_run_start(session=session, policy={"soft_limit": 25_000})
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()

    money = selectors.replay_money(run, selectors.analysis_for(session))
    assert money is not None
    assert (money.usd, money.observed_usd, money.saved_usd) == (None, None, None)
    assert money.unpriced_models == ("gpt-9",)
    assert money.unpriced_calls == 2  # one in the replay, one in the observed run


def test_the_experiment_table_gives_the_money_each_policy_saved(client: Client) -> None:
    session = fallback_session()
    with mock.patch.object(outbox, "experiment_fan_out"):
        experiment = compaction_services.experiment_start(
            project=session.project,
            name="money",
            policies=[
                {"soft_limit": 25_000, "hard_limit": 50_000},
                {"soft_limit": 150_000, "hard_limit": 180_000},
            ],
            sessions=[session],
        )
    runs = list(experiment.runs.order_by("pk"))
    for run in runs:
        pipeline.replay_run_execute(run_id=run.pk)
    analysis = selectors.analysis_for(session)
    tight, loose = [selectors.replay_money(ReplayRun.objects.get(pk=r.pk), analysis) for r in runs]
    assert tight is not None
    assert loose is not None
    assert tight.saved_usd is not None
    assert tight.saved_usd > 0
    assert loose.saved_usd is not None
    assert loose.saved_usd < 0  # it never compacts where the agent did: its calls grow
    client.force_login(make_user(project=session.project))
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    assert "Money saved</abbr>" in page
    # the saving the advice weighs: each run's cache re-writes added to the replay rule
    for money in (tight, loose):
        assert money.full_usd is not None
        assert money.observed_full_usd is not None
        assert money.rewrite_usd is not None
        assert money.observed_rewrite_usd is not None
        assert money.full_usd == pytest.approx(money.usd + money.rewrite_usd)
    tight_saved = tight.observed_full_usd - tight.full_usd
    loose_saved = loose.observed_full_usd - loose.full_usd
    for saved in (tight_saved, loose_saved):
        shown = f"+${saved:,.2f}" if saved > 0 else f"\u2212${-saved:,.2f}"
        assert f'<td class="num">{shown}</td>' in page
    assert f'<td class="num compactions-price">${tight.compactions_usd:,.2f}</td>' in page


def test_the_compare_page_sets_two_replays_costs_side_by_side(client: Client) -> None:
    session = fallback_session()
    runs = []
    for soft, hard in ((25_000, 50_000), (150_000, 180_000)):
        run = compaction_services.replay_run_start(
            session=session, policy={"soft_limit": soft, "hard_limit": hard}
        )
        pipeline.replay_run_execute(run_id=run.pk)
        runs.append(ReplayRun.objects.get(pk=run.pk))
    analysis = selectors.analysis_for(session)
    first, second = (selectors.replay_money(run, analysis) for run in runs)
    assert first is not None
    assert second is not None
    assert first.usd is not None
    assert second.usd is not None
    client.force_login(make_user(project=session.project))
    page = client.get(
        f"/sessions/{session.pk}/replays/compare/?a={runs[0].pk}&b={runs[1].pk}"
    ).content.decode()
    assert f'<td class="num">${first.usd:,.2f}</td><td class="num">${second.usd:,.2f}</td>' in page
    assert f"+${second.usd - first.usd:,.2f}</td>" in page


def test_the_replay_api_gives_the_same_money_as_the_page(client: Client) -> None:
    session = fallback_session()
    run = compaction_services.replay_run_start(
        session=session, policy={"soft_limit": 25_000, "hard_limit": 50_000}
    )
    pipeline.replay_run_execute(run_id=run.pk)
    money = selectors.replay_money(
        ReplayRun.objects.get(pk=run.pk), selectors.analysis_for(session)
    )
    assert money is not None
    key = make_key(session.project)
    cost = client.get(f"/api/v1/replays/{run.pk}", HTTP_AUTHORIZATION=f"Bearer {key}").json()[
        "cost"
    ]
    assert cost["usd"] == pytest.approx(money.usd)
    assert cost["observed_usd"] == pytest.approx(money.observed_usd)
    assert cost["saved_usd"] == pytest.approx(money.saved_usd)
    assert (cost["unpriced_calls"], cost["unpriced_models"]) == (0, [])
    assert "cache discounts left out" in cost["rule"]

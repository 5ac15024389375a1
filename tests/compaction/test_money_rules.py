"""One money module, one rule per figure: 1-hour cache writes carried from the trace to the
price, each call at the price in force on its date, and the two figures named for what they
are."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client, override_settings

from compaction import selectors
from compaction.engine import pricing
from sessions.importers.claude_code import claude_code_import
from sessions.models import AgentSession, Message
from tests.factories import make_key, make_project, make_session
from tests.importers.corpus import SPOTTER

pytestmark = pytest.mark.django_db

SONNET = "claude-sonnet-4-5-20250929"
PRICE = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}


def _call(seq: int, usage: dict[str, Any], timestamp: str | None = None) -> list[dict[str, Any]]:
    reply: dict[str, Any] = {"seq": seq + 1, "role": "assistant", "content": "ok", "usage": usage}
    if timestamp:
        reply["timestamp"] = timestamp
    return [{"seq": seq, "role": "user", "content": "go"}, reply]


def _cost(session: AgentSession, client: Client) -> dict[str, Any]:
    key = make_key(session.project)
    answer = client.get(
        f"/api/v1/sessions/{session.external_id}", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert answer.status_code == 200, answer.content
    return dict(answer.json()["cost"])


def test_one_hour_cache_writes_are_priced_at_the_one_hour_rate(client: Client) -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 1_000,
        "cache_read_input_tokens": 50_000,
        "cache_creation_input_tokens": 20_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 20_000},
    }
    # the split alone, as some clients send it, gives the total
    split_only = {
        "input_tokens": 10,
        "output_tokens": 1_000,
        "cache_read_input_tokens": 50_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 4_000, "ephemeral_1h_input_tokens": 6_000},
    }
    session = make_session(
        make_project(),
        external_id="one-hour",
        session={"model": SONNET},
        messages=[*_call(0, usage), *_call(2, split_only)],
    )
    rows = list(Message.objects.filter(session=session, role="assistant").order_by("seq"))
    assert [(m.cache_creation_input_tokens, m.cache_creation_1h_input_tokens) for m in rows] == [
        (20_000, 20_000),
        (10_000, 6_000),
    ]
    by_hand = (
        20 * 3.0
        + 2_000 * 15.0
        + 100_000 * 0.3  # input, output, reads
        + (20_000 + 6_000) * 6.0  # 1-hour writes: twice the input price
        + 4_000 * 3.75  # 5-minute writes
    ) / 1e6
    assert _cost(session, client)["usd"] == pytest.approx(by_hand, abs=1e-6)
    # at the 5-minute rate (the bug this replaces) it read 25 % low
    at_five_minutes = by_hand - 26_000 * (6.0 - 3.75) / 1e6
    assert at_five_minutes / by_hand == pytest.approx(0.747, abs=0.001)


def test_a_one_hour_split_above_the_total_is_a_400_naming_it(client: Client) -> None:
    project = make_project()
    key = make_key(project)
    bad = {
        "input_tokens": 1,
        "output_tokens": 1,
        "cache_creation_input_tokens": 10,
        "cache_creation": {"ephemeral_1h_input_tokens": 11},
    }
    response = client.post(
        "/api/v1/sessions/bad/events",
        data=json.dumps({"messages": _call(0, bad)}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code in (400, 422), response.content
    assert "ephemeral_1h_input_tokens" in response.content.decode()
    assert not AgentSession.objects.filter(external_id="bad").exists()


def test_each_call_is_priced_at_the_price_in_force_on_its_date(client: Client) -> None:
    cheaper = {"input": 1.0, "output": 5.0, "cache_read": 0.1, "cache_write": 1.25}
    table = {
        "claude-sonnet-4-5": [
            {"from": "2025-01-01", **PRICE},
            {"from": "2026-03-01", **cheaper},
        ]
    }
    usage = {"input_tokens": 1_000_000, "output_tokens": 0}
    session = make_session(
        make_project(),
        external_id="dated",
        session={"model": SONNET},
        messages=[
            *_call(0, usage, "2026-02-28T23:59:00Z"),
            *_call(2, usage, "2026-03-01T00:01:00Z"),
        ],
    )
    with override_settings(MODEL_PRICES=table):
        cost = _cost(session, client)
    assert cost["usd"] == pytest.approx(3.0 + 1.0)
    assert cost["by_model"] == [{"model": SONNET, "calls": 2, "usd": pytest.approx(4.0)}]


def test_a_claude_code_transcript_keeps_its_one_hour_writes() -> None:
    path = SPOTTER / "short.jsonl"
    by_id: dict[str, int] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        message = record.get("message") or {}
        usage = message.get("usage") if isinstance(message, dict) else None
        if record.get("type") == "assistant" and isinstance(usage, dict):
            split = usage.get("cache_creation") or {}
            by_id[message["id"]] = int(split.get("ephemeral_1h_input_tokens") or 0)
    assert sum(by_id.values()) > 0
    project = make_project()
    claude_code_import(project=project, paths=[path])
    stored = Message.objects.filter(session__project=project, role="assistant")
    assert sum(m.cache_creation_1h_input_tokens or 0 for m in stored) == sum(by_id.values())


def test_the_two_figures_come_from_one_module_and_say_what_they_are() -> None:
    assert selectors.MONEY_RULE == pricing.REPLAY_RULE
    assert "1-hour" in pricing.BILLED_RULE
    assert "no cache" in pricing.REPLAY_LABEL


def test_cost_by_model_is_masked_like_the_sessions_model(client: Client) -> None:
    model = "ft:claude-tuned-for-jane.doe@acmecorp.io"
    session = make_session(
        make_project(),
        external_id="masked",
        session={"model": model},
        messages=_call(0, {"input_tokens": 100, "output_tokens": 10}),
    )
    key = make_key(session.project)
    answer = client.get("/api/v1/sessions/masked", HTTP_AUTHORIZATION=f"Bearer {key}").json()
    assert "jane.doe@acmecorp.io" not in json.dumps(answer)
    assert [m["model"] for m in answer["cost"]["by_model"]] == [answer["model"]]

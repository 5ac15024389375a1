"""The pure Cline task reader: calls from api_req_started, truncations from the deleted range."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compaction.engine import cline
from compaction.engine.tokens import context_size

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "cline" / "1760000000000"


def load(name: str) -> Any:
    return json.loads((TASK / name).read_bytes())


def started(n: int, idx: int | None = None, **extra: Any) -> dict[str, Any]:
    info = {"tokensIn": n, "tokensOut": 1, "cacheReads": 0, "cacheWrites": 0, "cost": 0.5}
    out: dict[str, Any] = {
        "ts": 1,
        "type": "say",
        "say": "api_req_started",
        "text": json.dumps(info),
    }
    if idx is not None:
        out["conversationHistoryIndex"] = idx
    return {**out, **extra}


def test_calls_cost_and_context_by_reading_the_files() -> None:
    ui, history = load("ui_messages.json"), load("api_conversation_history.json")
    t = cline.parse_task(ui=ui, history=history)
    requests = [json.loads(m["text"]) for m in ui if m.get("say") == "api_req_started"]
    assert t.calls == len(requests) == 5
    calls = [m for m in t.messages if m.usage is not None]
    assert len(calls) == 5
    assert all(m.role == "assistant" for m in calls)
    assert [context_size(m.usage) for m in calls if m.usage] == [
        r["tokensIn"] + r["cacheReads"] + r["cacheWrites"] for r in requests
    ]
    assert t.reported_usd == pytest.approx(sum(r["cost"] for r in requests))
    assert t.models == ["claude-sonnet-4-5-20250929"]
    assert len(t.messages) == len(history)
    assert t.unmatched_calls == 0
    assert t.started_at == "2025-10-09T08:53:20Z"


def test_each_change_of_the_deleted_range_is_a_truncation() -> None:
    t = cline.parse_task(ui=load("ui_messages.json"), history=load("api_conversation_history.json"))
    first, second = t.truncations
    assert (first.range_before, first.range_after, first.dropped) == (None, (2, 3), (2, 3))
    assert (second.range_before, second.range_after, second.dropped) == ((2, 3), (2, 5), (4, 5))
    # sized by the call before and the call sent with the shorter history
    assert (first.tokens_before, first.tokens_after) == (165005, 122005)
    assert (second.tokens_before, second.tokens_after) == (122005, 91006)
    assert t.messages[first.seq].usage is not None
    assert first.seq == 7


def test_a_call_with_no_response_is_still_a_call() -> None:
    ui = [started(10, 0), started(20, 0)]  # the first was cancelled: no assistant message
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    t = cline.parse_task(ui=ui, history=history)
    assert t.calls == 2
    assert t.unmatched_calls == 1
    assert sum(1 for m in t.messages if m.usage is not None) == 2


def test_without_indexes_calls_pair_with_responses_in_order() -> None:
    history = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d"},
    ]
    t = cline.parse_task(ui=[started(1), started(2)], history=history)
    assert [m.usage.input_tokens for m in t.messages if m.usage] == [1, 2]
    assert [m.seq for m in t.messages if m.usage] == [1, 3]


def test_only_the_ui_file() -> None:
    ui = [{"ts": 5, "type": "say", "say": "task", "text": "do it"}, started(7)]
    t = cline.parse_task(ui=ui, history=None)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert t.calls == 1


@pytest.mark.parametrize(
    ("ui", "history", "error"),
    [
        (b"{}", b"[]", "ui_messages.json: not a JSON list"),
        (b"[1]", b"[]", "ui_messages.json[0]: not an object"),
        (b"[", b"[]", "ui_messages.json: not JSON"),
        (b"[]", b'[{"role": 7}]', "api_conversation_history.json[0]: not a {role, content}"),
        (b'["\xc3"]', b"[]", "ui_messages.json: not UTF-8"),
        (b"[" * 100_000, b"[]", "nested too deeply"),
        (
            json.dumps([started(0) | {"text": '{"tokensIn": "many"}'}]).encode(),
            b"[]",
            "ui_messages.json[0].text.tokensIn: not a whole number",
        ),
        (
            json.dumps([started(0) | {"text": '{"tokensIn": 1e300}'}]).encode(),
            b"[]",
            "ui_messages.json[0].text.tokensIn: 1e+300 is out of range",
        ),
        (
            json.dumps([started(0) | {"text": '{"tokensIn": 99999999999999999999}'}]).encode(),
            b"[]",
            "ui_messages.json[0].text.tokensIn: 99999999999999999999 is out of range",
        ),
        (
            json.dumps([started(0) | {"text": '{"tokensIn": 1, "cost": -3}'}]).encode(),
            b"[]",
            "ui_messages.json[0].text.cost: -3 is out of range",
        ),
    ],
)
def test_hostile_input_is_refused_naming_the_place(ui: bytes, history: bytes, error: str) -> None:
    with pytest.raises(cline.ClineError) as info:
        cline.parse_task_bytes(ui, history)
    assert error in str(info.value)


def test_odd_values_are_not_calls_or_ranges() -> None:
    ui = [
        {"ts": "never", "type": "say", "say": "api_req_started", "text": "not json"},
        {"ts": 1, "type": "say", "say": "text", "conversationHistoryDeletedRange": [True, "x"]},
    ]
    t = cline.parse_task(ui=ui, history=[])
    assert (t.calls, t.truncations) == (0, [])
    assert t.ignored["api_req_started without tokens (failed or cancelled)"] == 1


def test_a_request_that_failed_before_any_token_is_no_call() -> None:
    failed = started(0) | {
        "text": json.dumps(
            {
                "tokensIn": 0,
                "tokensOut": 0,
                "cacheReads": 0,
                "cacheWrites": 0,
                "cost": 0,
                "cancelReason": "streaming_failed",
            }
        )
    }
    t = cline.parse_task(ui=[started(5), failed, started(6)], history=None)
    assert [m.usage.input_tokens for m in t.messages if m.usage] == [5, 6]
    assert t.ignored["api_req_started without tokens (failed or cancelled)"] == 1


def test_a_history_role_it_does_not_know_is_counted_and_the_rest_is_read() -> None:
    ui, history = load("ui_messages.json"), load("api_conversation_history.json")
    odd = {"role": "developer", "content": [{"type": "text", "text": "a new kind of note"}]}
    with_odd = [*history, odd]
    t = cline.parse_task(ui=ui, history=with_odd)
    assert t.unknown == {"history role 'developer'": 1}
    assert t.calls == 5
    assert len(t.messages) == len(history)  # the note is not read as the user's words
    assert all("a new kind of note" not in m.text for m in t.messages)

"""The Recorder never loses good data: a hostile value is rewritten where that keeps its
meaning, an item that cannot be sent (or that the server refuses) is dropped alone and
reported, and every other message of its batch arrives. Fuzzed against the real server.

Examples are bounded (SAWTOOTH_FUZZ_EXAMPLES, default 30), as in test_fuzz.py.
"""

from __future__ import annotations

import logging
import math
import os
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import PurePosixPath
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.client import Recorder, Rejected
from compaction.client.sanitize import Unsendable, sanitize
from sessions.models import AgentSession, CompactionEvent, Message
from sessions.schemas import TOKENS_MAX
from tests.factories import make_key, make_project

FUZZ_EXAMPLES = int(os.environ.get("SAWTOOTH_FUZZ_EXAMPLES", "30"))


# --- the rewrites, without a server -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        (math.nan, "NaN"),
        (-math.inf, "-Infinity"),
        (datetime(2026, 3, 2, 12, 0, tzinfo=UTC), "2026-03-02T12:00:00+00:00"),
        (date(2026, 3, 2), "2026-03-02"),
        ("a\ud800b", "a\ufffdb"),
        ("a\x00b", "a\ufffdb"),
        (b"caf\xc3\xa9", "café"),
        (b"\xff\x00", "base64:/wA="),
        (Decimal("1.5"), 1.5),
        (Decimal("NaN"), "NaN"),
        ({3, 1, 2}, [1, 2, 3]),
        ({1: "x"}, {"1": "x"}),
        (PurePosixPath("/tmp/x"), "/tmp/x"),
        (10**5000, "0x" + format(10**5000, "x")),
    ],
    ids=[
        "nan",
        "-inf",
        "datetime",
        "date",
        "lone-surrogate",
        "nul",
        "utf8-bytes",
        "binary-bytes",
        "decimal",
        "decimal-nan",
        "set",
        "int-key",
        "path",
        "5000-digit-int",
    ],
)
def test_what_json_cannot_hold_is_rewritten_and_named(value: Any, sent: Any) -> None:
    clean, changes = sanitize({"input": {"v": value}})
    assert clean == {"input": {"v": sent}}
    assert changes[0].startswith("input.v"), changes


def test_plain_json_is_left_alone_and_copied() -> None:
    original = {"a": [1, 2.5, "é", None, True], "b": {"c": -(2**70)}}
    clean, changes = sanitize(original)
    assert (clean, changes) == (original, [])
    assert clean["a"] is not original["a"]  # the agent may go on mutating its own objects
    assert sanitize(("a", 1)) == (["a", 1], [])  # what json.dumps does anyway


def test_a_cycle_cannot_be_sent() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    with pytest.raises(Unsendable, match=r"content\[1\]: contains itself"):
        sanitize(loop, "content")


# --- against the real server ------------------------------------------------------------------


def _stored(external_id: str) -> list[int]:
    return sorted(
        Message.objects.filter(session__external_id=external_id).values_list("seq", flat=True)
    )


def _record(live_server: Any, key: str, **kwargs: Any) -> tuple[Recorder, str]:
    external_id = f"run-{uuid.uuid4().hex[:12]}"
    recorder = Recorder(
        url=live_server.url, key=key, session_id=external_id, flush_interval=0.05, **kwargs
    )
    return recorder, external_id


def _tool_call(n: int, value: Any) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": f"calling tool {n}"},
        {"type": "tool_use", "id": f"toolu_{n}", "name": "lookup", "input": {"value": value}},
    ]


def _cycle() -> list[Any]:
    loop: list[Any] = ["x"]
    loop.append(loop)
    return loop


HOSTILE = {
    "nan-in-tool-input": math.nan,
    "datetime-in-tool-input": datetime(2026, 3, 2, 12, 0, tzinfo=UTC),
    "lone-surrogate": "\udc00 half a pair",
    "bytes": b"\x00\xff",
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("hostile", list(HOSTILE), ids=list(HOSTILE))
def test_one_hostile_value_is_rewritten_and_all_ten_messages_arrive(
    live_server: Any, hostile: str
) -> None:
    recorder, external_id = _record(live_server, make_key(make_project()))
    for n in range(10):
        value = HOSTILE[hostile] if n == 4 else {"path": f"src/{n}.py"}
        recorder.message("assistant" if n % 2 else "user", _tool_call(n, value))
    assert recorder.flush(timeout=15)
    recorder.close()
    assert _stored(external_id) == list(range(10))
    assert (recorder.sent, recorder.failed, recorder.sanitized) == (10, 0, 1)
    tool_input = Message.objects.get(session__external_id=external_id, seq=4).content[1]["input"]
    assert tool_input["value"] == sanitize(HOSTILE[hostile])[0]


@pytest.mark.django_db(transaction=True)
def test_an_unsendable_message_and_a_refused_compaction_cost_only_themselves(
    live_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    recorder, external_id = _record(live_server, make_key(make_project()))
    seqs = []
    with caplog.at_level(logging.WARNING, logger="sawtooth.client"):
        for n in range(10):
            seqs.append(recorder.message("user", _tool_call(n, _cycle() if n == 3 else n)))
            if n == 5:
                assert recorder.compaction(strategy="bad", tokens_before=TOKENS_MAX + 1)
                assert recorder.compaction(strategy="good", tokens_before=1200, tokens_after=300)
        assert recorder.flush(timeout=15)
        recorder.close()
    # the unsendable one never took a seq, so the session's seqs stay dense
    assert seqs == [0, 1, 2, None, 3, 4, 5, 6, 7, 8]
    assert _stored(external_id) == list(range(9))
    stored = CompactionEvent.objects.filter(session__external_id=external_id)
    assert list(stored.values_list("strategy", "tokens_before")) == [("good", 1200)]
    assert (recorder.sent, recorder.failed) == (9, 2)
    assert [(r.kind, r.seq) for r in recorder.rejected] == [("message", 3), ("compaction", 5)]
    assert "contains itself" in recorder.rejected[0].reason
    assert "compactions[0].tokens_before" in recorder.rejected[1].reason
    warned = [r.getMessage() for r in caplog.records]
    assert any("dropped message 3" in w for w in warned), warned
    assert any("dropped compaction 5" in w for w in warned), warned


@pytest.mark.django_db(transaction=True)
def test_refused_session_fields_do_not_cost_the_messages(live_server: Any) -> None:
    recorder, external_id = _record(live_server, make_key(make_project()), agent="a" * 500)
    for n in range(5):
        recorder.message("user", f"message {n}")
    assert recorder.flush(timeout=15)
    recorder.close()
    assert _stored(external_id) == list(range(5))
    assert AgentSession.objects.get(external_id=external_id).agent == ""
    assert [(r.kind, r.seq) for r in recorder.rejected] == [("session", None)]
    assert recorder.failed == 0


# --- fuzzed ------------------------------------------------------------------------------------

TEXT = st.text(max_size=12) | st.sampled_from(["\ud800", "a\x00b", "\udfff\ud800", "<b>"])
ODD = st.sampled_from(
    [
        math.nan,
        math.inf,
        -math.inf,
        datetime(2026, 3, 2, 12, 0),
        date(2026, 1, 1),
        b"\xff\xfe",
        b"bytes",
        Decimal("2.5"),
        Decimal("-Infinity"),
        uuid.UUID(int=7),
        PurePosixPath("/etc/hosts"),
        10**400,
        -(2**80),
        frozenset({1, 2}),
        (1, "two"),
    ]
)
SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | TEXT | ODD
VALUE = st.recursive(
    SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(TEXT | st.integers(), inner, max_size=3)
    ),
    max_leaves=10,
)
GOOD_TOKENS = st.integers(min_value=0, max_value=TOKENS_MAX)
BAD_TOKENS = st.integers(min_value=TOKENS_MAX + 1) | st.integers(max_value=-1)
TOKENS = GOOD_TOKENS | st.sampled_from([math.nan, math.inf, 12.0]) | BAD_TOKENS
MESSAGE = st.fixed_dictionaries(
    {
        "kind": st.just("message"),
        "role": st.sampled_from(["user", "assistant"]),
        "text": TEXT,
        "input": VALUE,
        "input_tokens": st.none() | TOKENS,
    }
)
COMPACTION = st.fixed_dictionaries(
    {"kind": st.just("compaction"), "summary": TEXT, "tokens_before": st.none() | TOKENS}
)
ITEMS = st.lists(MESSAGE | COMPACTION, min_size=1, max_size=12)


def _refused_count(tokens: Any) -> bool:
    """What the server must refuse: an integer count outside what storage holds."""
    return isinstance(tokens, int) and not 0 <= tokens <= TOKENS_MAX


@pytest.mark.django_db(transaction=True)
@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(items=ITEMS)
def test_fuzzed_every_good_message_arrives_and_only_the_bad_are_reported(
    live_server: Any, items: list[dict[str, Any]]
) -> None:
    key = make_key(make_project())
    recorder, external_id = _record(live_server, key, metadata={"started": datetime.now(UTC)})
    good_messages: list[int] = []
    bad: list[tuple[str, int | None]] = []
    good_compactions: list[str] = []
    next_seq = 0  # a compaction's seq: the next message's
    for n, item in enumerate(items):
        if item["kind"] == "message":
            usage = {"input_tokens": item["input_tokens"], "output_tokens": 1}
            seq = recorder.message(
                item["role"],
                [{"type": "text", "text": item["text"]}, *_tool_call(n, item["input"])[1:]],
                usage=usage,
            )
            assert seq == next_seq
            next_seq += 1
            if _refused_count(item["input_tokens"]):
                bad.append(("message", seq))
            else:
                good_messages.append(seq)
        else:
            strategy = f"s{n}"  # one event per (seq, strategy), as the server keys them
            assert recorder.compaction(
                strategy=strategy, summary=item["summary"], tokens_before=item["tokens_before"]
            )
            if _refused_count(item["tokens_before"]):
                bad.append(("compaction", next_seq))
            else:
                good_compactions.append(strategy)
    assert recorder.flush(timeout=30)
    recorder.close()
    assert _stored(external_id) == good_messages
    stored = CompactionEvent.objects.filter(session__external_id=external_id)
    assert sorted(stored.values_list("strategy", flat=True)) == sorted(good_compactions)
    assert sorted((r.kind, r.seq) for r in recorder.rejected) == sorted(bad)
    assert all(isinstance(r, Rejected) and r.reason for r in recorder.rejected)
    assert (recorder.sent, recorder.failed) == (len(good_messages), len(bad))


@pytest.mark.django_db(transaction=True)
def test_one_oversized_message_costs_only_itself(live_server: Any, settings: Any) -> None:
    # Before: the whole batch was refused with 413 and all six messages were dropped.
    settings.INGEST_MAX_BODY_BYTES = 50_000
    recorder, external_id = _record(live_server, make_key(make_project()))
    # One batch of six, as the background thread takes them from a full queue.
    batch = {
        "messages": [
            {
                "seq": n,
                "role": "user" if n % 2 == 0 else "assistant",
                "content": "x" * 60_000 if n == 3 else f"message {n}",
            }
            for n in range(6)
        ],
        "compactions": [],
    }
    recorder._send(batch)
    recorder.close()
    assert _stored(external_id) == [0, 1, 2, 4, 5]
    assert (recorder.sent, recorder.failed) == (5, 1)
    assert [(r.kind, r.seq) for r in recorder.rejected] == [("message", 3)]
    assert "50000-byte limit" in recorder.rejected[0].reason


@pytest.mark.parametrize("session_id", ["../../etc/passwd", "a/b", "..", "x..y"])
def test_the_recorder_refuses_a_session_id_the_api_could_not_read(session_id: str) -> None:
    # Before: accepted, then every message was dropped by the server's 404.
    with pytest.raises(ValueError, match=r"session_id: .*(one path segment|is not an id)"):
        Recorder(url="http://127.0.0.1:9", key="st_x", session_id=session_id)

"""Emitters' own compaction spans through the OTLP door, and the window an emitter reports.

Each fixture (``tests/fixtures/otel_emitters/``, sources in its ``SOURCES.md``) is written from
the emitter's own source at a named commit, or exported by the emitter's own code installed from
PyPI (pydantic-ai-harness, Google ADK): the span name and attribute keys are the ones that code
sets.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from compaction.engine.otlp import Span, emitter_compaction
from sessions.models import AgentSession, CompactionEvent
from tests.factories import make_key, make_project

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "otel_emitters"


@pytest.fixture
def key() -> str:
    return make_key(make_project(name="emitters"))


def post(client: Client, key: str, name: str) -> dict[str, Any]:
    protobuf = name.endswith(".pb")  # the OTLP exporter's own bytes
    response = client.post(
        "/v1/traces",
        data=(FIXTURES / name).read_bytes(),
        content_type="application/x-protobuf" if protobuf else "application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 200, response.content
    return {} if protobuf else dict(response.json())


def api(client: Client, key: str, path: str) -> Any:
    response = client.get(path, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize(
    ("name", "session", "trigger", "strategy", "before", "after", "emitter"),
    [
        ("openclaw.json", "agent:main:main", "auto", "summarize", 171_204, 23_870, "openclaw"),
        (
            "pydantic_ai_harness.json",
            "run-7f3a",
            "unknown",
            "SummarizingCompaction",
            88_120,
            4_310,
            "pydantic-ai-harness",
        ),
        (
            "redpanda_ai_sdk_go.json",
            "sess-compact",
            "threshold",
            "prune_and_drop",
            158_000,
            96_000,
            "redpanda-ai-sdk-go",
        ),
    ],
)
def test_an_emitters_compaction_span_is_one_compaction_before_the_next_call(
    client: Client,
    key: str,
    name: str,
    session: str,
    trigger: str,
    strategy: str,
    before: int,
    after: int,
    emitter: str,
) -> None:
    post(client, key, name)
    (stored,) = CompactionEvent.objects.all()
    assert stored.session.external_id == session
    assert (stored.trigger, stored.strategy) == (trigger, strategy)
    assert (stored.tokens_before, stored.tokens_after) == (before, after)
    assert stored.kept["emitter"] == emitter
    # the first call's prompt and answer are seqs 0-3; the compacted prompt starts at 4
    assert stored.seq == 4
    (item,) = api(client, key, f"/api/v1/sessions/{session}/compactions")
    assert (item["tokens_before"], item["tokens_after"]) == (before, after)
    # sent again: nothing new (the door is idempotent)
    post(client, key, name)
    assert CompactionEvent.objects.count() == 1


def test_redpanda_keeps_its_breakdown_by_category_and_its_phase(client: Client, key: str) -> None:
    post(client, key, "redpanda_ai_sdk_go.json")
    kept = CompactionEvent.objects.get().kept
    assert (kept["phase"], kept["pruned_results"], kept["dropped_messages"]) == ("proactive", 14, 6)
    assert kept["before"]["tool_results"] == 121_000
    assert kept["after"]["tool_results"] == 64_000
    assert kept["tokens_estimated"] is True


def test_openclaw_keeps_messages_and_tokens_reclaimed(client: Client, key: str) -> None:
    post(client, key, "openclaw.json")
    stored = CompactionEvent.objects.get()
    assert stored.kept["messages_before"] == 212
    assert stored.kept["messages_after"] == 9
    assert stored.kept["tokens_reclaimed"] == 147_334
    assert stored.duration_ms == 8_400


def test_a_reported_window_fills_context_window_with_source_reported(
    client: Client, key: str
) -> None:
    post(client, key, "sentry_context_window.json")
    session = AgentSession.objects.get(external_id="thread-42")
    assert session.context_window == 100_000
    out = api(client, key, "/api/v1/sessions/thread-42")
    assert (out["context_window"], out["context_window_source"]) == (100_000, "reported")
    assert not CompactionEvent.objects.exists()


def test_the_fixtures_use_the_emitters_span_names() -> None:
    names = {
        s["name"]
        for path in FIXTURES.glob("*.json")
        for r in json.loads(path.read_text())["resourceSpans"]
        for scope in r["scopeSpans"]
        for s in scope["spans"]
    }
    assert {"openclaw.compaction", "compact_messages", "redpanda.compaction"} <= names


def test_utilization_alone_gives_the_window_from_the_context_used() -> None:
    from sessions.importers import otlp

    attrs = {"gen_ai.usage.input_tokens": 42_000, "gen_ai.context.utilization": 0.42}
    assert otlp.context_window_reported(otlp.Span("t", "s", "chat", 0, 0, attrs)) == 100_000
    assert otlp.context_window_reported(otlp.Span("t", "s", "chat", 0, 0, {})) is None


def test_langchains_tagged_summary_message_is_the_compactions_summary(
    client: Client, key: str
) -> None:
    post(client, key, "langchain_summarization.json")
    stored = CompactionEvent.objects.get()
    assert stored.session.external_id == "thread-9"
    assert stored.strategy == "summarize"
    assert stored.summary.startswith("Here is a summary of the conversation to date:")
    assert (stored.tokens_before, stored.tokens_after) == (150_300, 2_900)
    summary_message = stored.session.messages.get(seq=stored.summary_seq)
    assert summary_message.content[0]["type"] == "compaction"


def test_pydantic_ai_harness_exported_by_its_own_code_gives_one_compaction(
    client: Client, key: str
) -> None:
    # Exported by pydantic-ai-harness 0.62.0 (PyPI) through pydantic-ai's own instrumentation:
    # five runs of one conversation, SlidingWindowCompaction firing inside the fourth request's
    # span (SOURCES.md says how it was made).
    post(client, key, "pydantic_ai_harness_export.pb")
    (stored,) = CompactionEvent.objects.all()
    assert stored.session.external_id == "01a24bf9-ab89-7753-8bbc-85fb1704126a"
    assert (stored.strategy, stored.trigger) == ("SlidingWindowCompaction", "unknown")
    assert (stored.tokens_before, stored.tokens_after) == (78, 44)
    assert (stored.kept["messages_before"], stored.kept["messages_after"]) == (7, 3)
    calls = stored.session.messages.filter(role="assistant", input_tokens__isnull=False)
    first_after = calls.filter(seq__gte=stored.seq).order_by("seq").first()
    assert first_after is not None
    assert first_after.input_tokens == 66  # the request that was sent the compacted history
    # sent again: the calls before the compaction are known by their span ids (their prompts
    # are no longer a prefix of the compacted context), so nothing is added
    post(client, key, "pydantic_ai_harness_export.pb")
    assert CompactionEvent.objects.count() == 1


@pytest.mark.parametrize(
    ("session", "trigger", "adk_trigger", "before", "after", "config"),
    [
        (
            "garden-session-1",
            "threshold",
            "token_threshold",
            2_303,
            1_607,
            {"token_threshold": 2000, "event_retention_size": 2},
        ),
        (
            "garden-session-2",
            "auto",
            "sliding_window",
            1_937,
            1_241,
            {"compaction_interval": 3, "overlap_size": 1},
        ),
    ],
)
def test_google_adk_exported_by_its_own_code_gives_one_compaction_per_session(
    client: Client,
    key: str,
    session: str,
    trigger: str,
    adk_trigger: str,
    before: int,
    after: int,
    config: dict[str, int],
) -> None:
    # Exported by google-adk 2.13.0 (PyPI) over a scripted model: one session compacting on
    # its token threshold, one on its sliding window (SOURCES.md says how it was made).
    post(client, key, "google_adk_export.pb")
    stored = CompactionEvent.objects.get(session__external_id=session)
    assert (stored.trigger, stored.strategy) == (trigger, "summarize")
    # ADK's span holds no tokens: before is the last call's prompt, after the next one's
    assert (stored.tokens_before, stored.tokens_after) == (before, after)
    assert stored.kept["emitter"] == "google-adk"
    assert stored.kept["trigger"] == adk_trigger
    assert stored.kept["summarizer_type"] == "LlmEventSummarizer"
    assert stored.kept["event_count"] == 6
    assert stored.kept["prompt_chars_saved"] == 4435
    assert {k: stored.kept[k] for k in config} == config
    # the compacted prompt opens with the summary event the summarizer wrote
    assert stored.summary.startswith("Conversation Language: English.")
    assert stored.summary_seq == stored.seq
    # ADK calls its summarizer model outside any span: no summary call is recorded
    calls = stored.session.messages.filter(role="assistant", input_tokens__isnull=False)
    assert calls.count() == 5
    # sent again: nothing new (the door is idempotent)
    post(client, key, "google_adk_export.pb")
    assert CompactionEvent.objects.count() == 2


def test_a_google_adk_compaction_span_without_a_result_event_is_no_compaction() -> None:
    attrs = {"gen_ai.operation.name": "compact_events", "gen_ai.compaction.trigger": "x"}
    assert emitter_compaction(Span("t", "s", "compact_events x", 0, 0, attrs)) is None
    attrs["gen_ai.compaction.result_event_id"] = "e1"
    report = emitter_compaction(Span("t", "s", "compact_events x", 0, 0, attrs))
    assert report is not None
    assert report["trigger"] == "unknown"

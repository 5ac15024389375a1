"""OTLP/HTTP at /v1/traces: GenAI spans in, answered as the OTLP spec says."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError
from django.test import Client
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2

from sessions import otlp_api, services
from sessions.importers import otlp
from sessions.importers.report import ImportReport
from sessions.importers.writer import SessionWriter
from sessions.models import AgentSession, CompactionEvent, Message
from tests.factories import make_key, make_project
from tests.importers.corpus import CORPUS

pytestmark = pytest.mark.django_db

GENAI = CORPUS / "otel_genai" / "openinference-genai"
URL = "/v1/traces"
TRACE = "5b8efff798038103d269b633813fc60c"


def attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, list):
        return {
            "key": key,
            "value": {"arrayValue": {"values": [{"stringValue": v} for v in value]}},
        }
    return {
        "key": key,
        "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)},
    }


def span(span_id: str, attributes: dict[str, Any], start: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "traceId": TRACE,
        "spanId": span_id,
        "name": "chat",
        "startTimeUnixNano": str(1_770_000_000_000_000_000 + start),
        "endTimeUnixNano": str(1_770_000_000_000_000_000 + start + 1000),
        "attributes": [attr(k, v) for k, v in attributes.items()],
        **extra,
    }


def export(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", "billing-agent")]},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}],
            }
        ]
    }


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def call(span_id: str, inputs: list[Any], output: str, *, start: int, tokens: int, **more: Any):
    return span(
        span_id,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.conversation.id": "conv-1",
            "gen_ai.request.model": "claude-opus-4-6",
            "gen_ai.input.messages": inputs,
            "gen_ai.output.messages": [text("assistant", output)],
            "gen_ai.usage.input_tokens": tokens,
            "gen_ai.usage.output_tokens": 7,
            **more,
        },
        start=start,
    )


def post(client: Client, key: str, body: Any, *, content_type: str = "application/json", **kw):
    data = body if isinstance(body, bytes) else json.dumps(body)
    headers = {"Authorization": f"Bearer {key}", **kw.pop("headers", {})}
    return client.post(URL, data=data, content_type=content_type, headers=headers, **kw)


@pytest.fixture
def key() -> str:
    return make_key(make_project(name="otel"))


def test_the_semconv_tool_call_span_from_the_corpus_becomes_a_session(client, key) -> None:
    attributes = json.loads((GENAI / "otel_genai_client_span_tool_calls.json").read_text())
    response = post(client, key, export(span("00f067aa0ba902b7", attributes)))
    assert response.status_code == 200, response.content
    assert response.json() == {}
    session = AgentSession.objects.get(external_id=f"trace-{TRACE}")
    messages = list(Message.objects.filter(session=session).order_by("seq"))
    expected_in = json.loads(attributes["gen_ai.input.messages"])
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[1].content[1] == {
        "type": "tool_use",
        "id": expected_in[1]["parts"][1]["id"],
        "name": expected_in[1]["parts"][1]["name"],
        "input": expected_in[1]["parts"][1]["arguments"],
    }
    assert messages[2].content[0]["type"] == "tool_result"
    assert messages[2].content[0]["tool_use_id"] == expected_in[1]["parts"][1]["id"]
    assert messages[3].input_tokens == attributes["gen_ai.usage.input_tokens"]
    assert messages[3].output_tokens == attributes["gen_ai.usage.output_tokens"]
    assert session.model == attributes["gen_ai.response.model"]
    assert session.agent == "billing-agent"


def test_the_deprecated_prompt_and_completion_form_imports_the_same_messages(client, key):
    current = json.loads((GENAI / "otel_genai_client_span_tool_calls.json").read_text())
    old = json.loads((GENAI / "otel_genai_deprecated_client_span_tool_calls.json").read_text())
    post(client, key, export(span("00f067aa0ba902b7", current)))
    stored_current = list(Message.objects.order_by("seq").values_list("role", "content"))
    Message.objects.all().delete()
    AgentSession.objects.all().delete()
    assert post(client, key, export(span("00f067aa0ba902b8", old))).status_code == 200
    assert list(Message.objects.order_by("seq").values_list("role", "content")) == stored_current


def test_calls_append_only_what_is_new_and_a_resend_is_a_no_op(client, key) -> None:
    first = call(
        "a000000000000001", [text("user", "Fix the bug.")], "Looking.", start=1, tokens=100
    )
    history = [text("user", "Fix the bug."), text("assistant", "Looking."), text("user", "Go on.")]
    second = call("a000000000000002", history, "Done.", start=2, tokens=160)
    assert post(client, key, export(first)).status_code == 200
    assert post(client, key, export(second)).status_code == 200
    assert post(client, key, export(first, second)).status_code == 200
    session = AgentSession.objects.get(external_id="conv-1")
    assert list(Message.objects.filter(session=session).values_list("seq", "role")) == [
        (0, "user"),
        (1, "assistant"),
        (2, "user"),
        (3, "assistant"),
    ]
    assert not CompactionEvent.objects.exists()


def test_each_message_is_hashed_once_and_stored_with_the_hash_of_what_is_stored(
    client, key, monkeypatch
) -> None:
    """The door hashes a prompt's messages to follow the context and hands those hashes to
    ingest, which does not serialize and hash them again; what it stores is the hash of the
    stored content, as a fresh computation gives it."""
    made: list[str] = []
    original = services.message_canonical

    def counting(*, role: str, blocks: list[dict[str, Any]]) -> tuple[str, str]:
        made.append(role)
        return original(role=role, blocks=blocks)

    monkeypatch.setattr(services, "message_canonical", counting)
    first = call("a000000000000001", [text("user", "Fix it.")], "Looking.", start=1, tokens=100)
    history = [text("user", "Fix it."), text("assistant", "Looking."), text("user", "Go on.")]
    second = call("a000000000000002", history, "Done.", start=2, tokens=160)
    assert post(client, key, export(first, second)).status_code == 200
    # first: 2 messages; second: its 4 (the 2 known, then the 2 new ones), none twice
    assert made == ["user", "assistant", "user", "assistant", "user", "assistant"]
    monkeypatch.undo()
    for message in Message.objects.all():
        assert message.content_hash == services.message_hash(
            role=message.role, blocks=message.content
        )


def test_a_message_validation_changed_is_hashed_as_stored_not_as_read() -> None:
    """A reader's hash is of the content it read; a block the wire format refuses is stored
    wrapped as ``invalid_block``, so that message is hashed again, as stored."""
    project = make_project(name="wrapped")
    report = ImportReport()
    file = report.file("spans", format="otlp")
    writer = SessionWriter(
        project=project, external_id="conv-w", session=report.session("conv-w"), file=file
    )
    content = [{"type": "tool_use", "id": "t1"}]  # no name, no input: refused as a tool_use
    read = services.message_canonical(role="assistant", blocks=content)
    writer.add_message({"seq": 0, "role": "assistant", "content": content}, canonical=read)
    writer.flush(session={})
    [stored] = Message.objects.filter(session__external_id="conv-w")
    assert stored.content == [{"type": "invalid_block", "original": content[0]}]
    assert stored.content_hash == services.message_hash(role="assistant", blocks=stored.content)
    assert stored.content_hash != read[1]


def test_the_running_context_is_kept_apart_from_the_clients_metadata(client, key) -> None:
    first = call("a000000000000001", [text("user", "Fix it.")], "Looking.", start=1, tokens=100)
    assert post(client, key, export(first)).status_code == 200
    session = AgentSession.objects.get(external_id="conv-1")
    assert "calls" not in session.metadata
    assert len(session.import_state["calls"]["context"]) == 2
    shown = client.get("/api/v1/sessions/conv-1", headers={"Authorization": f"Bearer {key}"})
    assert "calls" not in shown.json()["metadata"]


def test_the_migration_moves_a_running_context_out_of_the_metadata() -> None:
    import importlib

    from django.apps import apps

    migration = importlib.import_module("sessions.migrations.0007_session_import_state")

    state = {"context": ["ab12"], "seqs": [0], "next_seq": 1, "last_context": 9}
    session = AgentSession.objects.create(
        project=make_project(), external_id="old", metadata={"source": "otlp", "calls": state}
    )
    migration.state_out_of_metadata(apps, None)
    session.refresh_from_db()
    assert (session.metadata, session.import_state) == ({"source": "otlp"}, {"calls": state})
    migration.state_back_into_metadata(apps, None)
    session.refresh_from_db()
    assert session.metadata == {"source": "otlp", "calls": state}


def test_calls_that_log_only_their_new_messages_continue_the_context(client, key) -> None:
    # Some instrumentations put only the turn's new messages in gen_ai.input.messages. The
    # context still grows (the token counts say so): no compaction at every call.
    spans = [
        call(f"d00000000000000{n}", [text("user", f"step {n}")], f"done {n}", start=n, tokens=t)
        for n, t in ((1, 1_000), (2, 1_400), (3, 1_900))
    ]
    post(client, key, export(*spans))
    post(client, key, export(spans[-1]))  # the last call sent again
    session = AgentSession.objects.get(external_id="conv-1")
    stored = Message.objects.filter(session=session).order_by("seq")
    assert [m.content[0]["text"] for m in stored] == [
        "step 1", "done 1", "step 2", "done 2", "step 3", "done 3"
    ]  # fmt: skip
    assert [m.input_tokens for m in stored if m.role == "assistant"] == [1_000, 1_400, 1_900]
    assert not CompactionEvent.objects.exists()
    # A prompt sharing nothing while the context shrank is still a compaction.
    post(
        client,
        key,
        export(call("d000000000000004", [text("user", "S")], "ok", start=4, tokens=300)),
    )
    event = CompactionEvent.objects.get()
    assert (event.seq, event.tokens_before, event.tokens_after) == (6, 1_900, 300)


def test_a_prompt_that_stops_extending_the_history_is_an_observed_compaction(client, key):
    long = [text("user", f"step {i}") for i in range(6)]
    before = call("b000000000000001", long, "ok", start=1, tokens=150_000)
    summary = {"role": "user", "parts": [{"type": "compaction", "content": "Goal: fix the bug."}]}
    after = call("b000000000000002", [summary, text("user", "step 6")], "ok", start=2, tokens=9_000)
    post(client, key, export(before, after))
    event = CompactionEvent.objects.get()
    assert event.seq == 7  # six prompts and one answer came first
    assert (event.replaced_from_seq, event.replaced_to_seq) == (0, 6)
    assert (event.tokens_before, event.tokens_after) == (150_000, 9_000)
    assert (event.strategy, event.summary, event.summary_seq) == (
        "summarize",
        "Goal: fix the bug.",
        7,
    )


def test_the_compacted_event_carries_the_reported_numbers(client, key) -> None:
    event = {
        "timeUnixNano": "1770000000000000500",
        "name": "gen_ai.conversation.compacted",
        "attributes": [
            attr("gen_ai.compaction.trigger", "auto"),
            attr("gen_ai.compaction.tokens_before", 180_000),
            attr("gen_ai.compaction.tokens_after", 30_000),
            attr("gen_ai.compaction.summary", "Goal: migrate billing."),
        ],
    }
    first = call("c000000000000001", [text("user", "a")], "b", start=1, tokens=10)
    second = call(
        "c000000000000002", [text("user", "Goal: migrate billing.")], "c", start=2, tokens=20
    )
    second["events"] = [event]
    post(client, key, export(first, second))
    stored = CompactionEvent.objects.get()
    assert (stored.trigger, stored.tokens_before, stored.tokens_after) == ("auto", 180_000, 30_000)
    assert stored.summary == "Goal: migrate billing."


@pytest.mark.parametrize("flag", [True, "true"])
def test_the_compacted_attribute_on_a_call_is_a_compaction(client, key, flag) -> None:
    first = call("c100000000000001", [text("user", "a")], "b", start=1, tokens=150_000)
    second = call(
        "c100000000000002",
        [text("user", "Goal: ship it.")],
        "c",
        start=2,
        tokens=12_000,
        **{
            "gen_ai.conversation.compacted": flag,
            "gen_ai.compaction.trigger": "manual",
            "gen_ai.compaction.tokens_before": 151_000,
        },
    )
    post(client, key, export(first, second))
    stored = CompactionEvent.objects.get()
    assert (stored.trigger, stored.tokens_before) == ("manual", 151_000)
    assert stored.tokens_after == 12_000


def test_the_compacted_attribute_set_false_is_no_report(client, key) -> None:
    first = call("c200000000000001", [text("user", "a")], "b", start=1, tokens=10)
    second = call(
        "c200000000000002",
        [text("user", "a"), text("assistant", "b"), text("user", "c")],
        "d",
        start=2,
        tokens=20,
        **{"gen_ai.conversation.compacted": False},
    )
    post(client, key, export(first, second))
    assert not CompactionEvent.objects.exists()


def test_the_compacted_attribute_on_every_call_of_the_view_is_one_compaction(client, key):
    # The conventions' attribute says this call's context is a compacted view of a prior
    # conversation, so it stays true on each later call that extends that view.
    flag = {"gen_ai.conversation.compacted": True}
    summary = {"role": "assistant", "parts": [{"type": "compaction", "content": "Goal: x."}]}
    first = call("c300000000000001", [text("user", "a")], "b", start=1, tokens=150_000)
    view = [summary, text("user", "go on")]
    second = call("c300000000000002", view, "c", start=2, tokens=9_000, **flag)
    view += [text("assistant", "c"), text("user", "more")]
    third = call("c300000000000003", view, "d", start=3, tokens=9_500, **flag)
    post(client, key, export(first, second))
    post(client, key, export(third))  # a later request continues the same view
    event = CompactionEvent.objects.get()
    assert (event.seq, event.tokens_before, event.tokens_after) == (2, 150_000, 9_000)
    assert (event.strategy, event.summary, event.summary_seq) == ("summarize", "Goal: x.", 2)


def test_a_flagged_call_that_rewrites_the_view_again_is_a_second_compaction(client, key):
    flag = {"gen_ai.conversation.compacted": True}
    first = call("c400000000000001", [text("user", "a")], "b", start=1, tokens=150_000)
    second = call("c400000000000002", [text("user", "S1")], "c", start=2, tokens=9_000, **flag)
    third = call("c400000000000003", [text("user", "S2")], "d", start=3, tokens=8_000, **flag)
    post(client, key, export(first, second, third))
    assert list(CompactionEvent.objects.order_by("seq").values_list("seq", "tokens_before")) == [
        (2, 150_000),
        (4, 9_000),
    ]


def test_a_bare_compaction_part_is_a_summary_even_without_its_text(client, key) -> None:
    # The conventions' CompactionPart may carry no content (an opaque provider summary).
    bare = {"role": "assistant", "parts": [{"type": "compaction"}]}
    first = call("c500000000000001", [text("user", "a")], "b", start=1, tokens=150_000)
    second = call("c500000000000002", [bare, text("user", "go on")], "c", start=2, tokens=9_000)
    post(client, key, export(first, second))
    event = CompactionEvent.objects.get()
    assert (event.strategy, event.summary_seq) == ("summarize", 2)


def test_cached_tokens_are_split_out_of_input_tokens(client, key) -> None:
    body = call(
        "d000000000000001",
        [text("user", "hi")],
        "hello",
        start=1,
        tokens=1_000,
        **{"gen_ai.usage.cache_read.input_tokens": 900},
    )
    post(client, key, export(body))
    answer = Message.objects.get(role="assistant")
    assert (answer.input_tokens, answer.cache_read_input_tokens) == (100, 900)
    assert answer.context_tokens == 1_000


def test_protobuf_and_gzip_are_accepted(client, key) -> None:
    request = trace_service_pb2.ExportTraceServiceRequest()
    pb_span = request.resource_spans.add().scope_spans.add().spans.add()
    pb_span.trace_id = bytes.fromhex(TRACE)
    pb_span.span_id = bytes.fromhex("e000000000000001")
    pb_span.name = "chat"
    for k, v in {
        "gen_ai.conversation.id": "conv-pb",
        "gen_ai.input.messages": json.dumps([text("user", "ping")]),
        "gen_ai.output.messages": json.dumps([text("assistant", "pong")]),
    }.items():
        pb_span.attributes.append(
            common_pb2.KeyValue(key=k, value=common_pb2.AnyValue(string_value=v))
        )
    response = post(
        client,
        key,
        gzip.compress(request.SerializeToString()),
        content_type="application/x-protobuf",
        headers={"Content-Encoding": "gzip"},
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-protobuf"
    answer = trace_service_pb2.ExportTraceServiceResponse.FromString(response.content)
    assert not answer.HasField("partial_success")
    assert [m.content[0]["text"] for m in Message.objects.order_by("seq")] == ["ping", "pong"]


def test_unreadable_spans_are_rejected_as_partial_success(client, key) -> None:
    good = call("f000000000000001", [text("user", "a")], "b", start=1, tokens=1)
    bad_json = span("f000000000000002", {"gen_ai.input.messages": "[not json"})
    bad_id = span("xyz", {"gen_ai.operation.name": "chat"})
    response = post(client, key, export(good, bad_json, bad_id))
    assert response.status_code == 200
    assert response.json() == {
        "partialSuccess": {
            "rejectedSpans": "2",
            "errorMessage": "resourceSpans[0].scopeSpans[0].spans[1]: gen_ai.input.messages: "
            "not valid JSON (Expecting value); resourceSpans[0].scopeSpans[0].spans[2].spanId: "
            "not a 8-byte hex id",
        }
    }
    assert Message.objects.count() == 2


def test_bad_requests_get_the_spec_answers(client, key) -> None:
    assert post(client, "st_nope_x", export()).status_code == 401
    missing = client.post(URL, data="{}", content_type="application/json")
    assert (missing.status_code, missing.json()) == (
        401,
        {"code": 16, "message": "Authorization: missing, unknown or revoked project key"},
    )
    malformed = post(client, key, b"{oops")
    assert (malformed.status_code, malformed.json()["message"]) == (
        400,
        "body: malformed JSON at line 1 column 2: Expecting property name enclosed in double "
        "quotes",
    )
    wrong_type = post(client, key, b"x", content_type="text/plain")
    assert (wrong_type.status_code, wrong_type.json()["message"]) == (
        415,
        "Content-Type: 'text/plain' is not supported (use application/x-protobuf or "
        "application/json)",
    )
    not_pb = post(client, key, b"\xff\xff\xff", content_type="application/x-protobuf")
    assert not_pb.status_code == 400
    assert client.get(URL).status_code == 405


def test_too_large_is_413(client, key, settings) -> None:
    settings.INGEST_MAX_BODY_BYTES = 100
    body = gzip.compress(
        json.dumps(export(*[span(f"{i:016x}", {}) for i in range(1, 20)])).encode()
    )
    response = post(client, key, body, headers={"Content-Encoding": "gzip"})
    assert (response.status_code, response.json()["message"]) == (
        413,
        "body: larger than the 100-byte limit after decompression",
    )


def test_overload_answers_429_and_503_with_retry_after(client, key, monkeypatch) -> None:
    import threading

    monkeypatch.setattr(otlp_api, "_slots", threading.Semaphore(0))
    busy = post(client, key, export())
    assert (busy.status_code, busy["Retry-After"]) == (429, "1")
    monkeypatch.setattr(otlp_api, "_slots", threading.Semaphore(1))

    def down(**kwargs: Any) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(otlp, "spans_ingest", down)
    unavailable = post(client, key, export())
    assert (unavailable.status_code, unavailable["Retry-After"]) == (503, "5")
    assert unavailable.json() == {"code": 14, "message": "storage unavailable; retry later"}


def test_conversations_are_isolated_by_project(client) -> None:
    key_a, key_b = make_key(), make_key()
    body = export(call("a100000000000001", [text("user", "secret")], "ok", start=1, tokens=5))
    post(client, key_a, body)
    post(client, key_b, body)
    sessions = AgentSession.objects.filter(external_id="conv-1")
    assert sessions.count() == 2
    assert {s.message_count for s in sessions} == {2}
    other = client.get(
        "/api/v1/sessions/conv-1/messages", headers={"Authorization": f"Bearer {make_key()}"}
    )
    assert other.status_code == 404


VERCEL = CORPUS / "otel_genai" / "openinference-vercel" / "all-spans.json"


def test_the_vercel_sdk_span_dump_imports_one_session_per_model_call() -> None:
    data = json.loads(VERCEL.read_text())
    calls = [s for s in data if "ai.prompt.messages" in s["attributes"]]
    result = otlp.spans_ingest(project=make_project(), spans=otlp.spans_from_file_data(data))
    assert result.rejected == 0
    assert AgentSession.objects.count() == len({s["spanContext"]["traceId"] for s in calls})
    prompts = Message.objects.filter(role="user").values_list("content", flat=True)
    first_prompt = json.loads(calls[0]["attributes"]["ai.prompt.messages"])[0]["content"][0]
    assert [{"type": "text", "text": first_prompt["text"]}] in list(prompts)


@pytest.mark.parametrize("path", sorted(GENAI.glob("*.json")), ids=lambda p: Path(p).name)
def test_every_genai_fixture_reads_without_rejection(path: Path) -> None:
    spans = otlp.spans_from_file_data(json.loads(path.read_text()))
    result = otlp.spans_ingest(project=make_project(), spans=spans)
    assert result.rejected == 0
    assert result.accepted == 1


def test_under_mask_at_ingest_a_conversation_id_holding_a_cpf_is_rejected_not_stored(
    client,
) -> None:
    project = make_project(name="masked", mask_at_ingest=True)
    leaky = call(
        "f000000000000001",
        [text("user", "oi")],
        "olá",
        start=1,
        tokens=1,
        **{"gen_ai.conversation.id": "cliente-530.582.439-79"},
    )
    clean = call("f000000000000002", [text("user", "oi")], "olá", start=2, tokens=1)
    response = post(client, make_key(project), export(leaky, clean))
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert "external_id: holds personal data (cpf)" in partial["errorMessage"]
    assert "530.582" not in partial["errorMessage"]
    assert list(
        AgentSession.objects.filter(project=project).values_list("external_id", flat=True)
    ) == ["conv-1"]

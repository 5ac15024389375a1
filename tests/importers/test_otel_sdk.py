"""gen_ai.conversation.compacted as OpenTelemetry's own code emits it, into /v1/traces.

The spans come from ``opentelemetry-util-genai`` on the SDK and reach the door through the
SDK's OTLP/HTTP exporter (``tests/importers/otel_sdk.py``), live and from a recorded export.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from sessions.models import AgentSession, CompactionEvent, Message
from tests.factories import make_key, make_project
from tests.importers import otel_sdk


def assert_stored_as_the_conventions_mean() -> None:
    """One session; three calls; one compaction where the compacted view begins."""
    session = AgentSession.objects.get(external_id=otel_sdk.CONVERSATION)
    assert (session.agent, session.model) == (otel_sdk.AGENT, otel_sdk.MODEL)
    assert session.metadata["provider"] == "anthropic"
    messages = list(Message.objects.filter(session=session).order_by("seq"))
    assert [(m.seq, m.role) for m in messages] == [
        (0, "system"),
        (1, "user"),  # first call
        (2, "assistant"),
        (3, "assistant"),  # second call: the compaction part sent back, then the new prompt
        (4, "user"),
        (5, "assistant"),
        (6, "user"),  # third call extends the second
        (7, "assistant"),
    ]
    assert messages[3].content == [{"type": "compaction", "content": otel_sdk.SUMMARY}]
    # The third call is flagged too (its context is still the compacted view): no second
    # compaction is recorded for it.
    event = CompactionEvent.objects.get(session=session)
    assert event.seq == 3
    assert (event.replaced_from_seq, event.replaced_to_seq) == (1, 2)
    assert (event.tokens_before, event.tokens_after) == (otel_sdk.BEFORE, otel_sdk.AFTER)
    assert (event.strategy, event.summary, event.summary_seq) == (
        "summarize",
        otel_sdk.SUMMARY,
        3,
    )
    # The conventions define no trigger: none is invented.
    assert event.trigger == "unknown"
    last = messages[7]
    assert (last.input_tokens, last.cache_read_input_tokens) == (
        otel_sdk.LATER - otel_sdk.CACHED,
        otel_sdk.CACHED,
    )


@pytest.mark.django_db(transaction=True)
def test_the_sdk_exporter_posts_the_compacted_conversation_to_the_live_door(
    live_server: Any,
) -> None:
    key = make_key(make_project(name="otel-sdk"))
    exporter = otel_sdk.exporter(f"{live_server.url}/v1/traces", key)
    provider = otel_sdk.tracer_provider(exporter)
    try:
        otel_sdk.tell_conversation(provider)
        assert provider.force_flush(timeout_millis=30_000), "the export did not finish"
    finally:
        provider.shutdown()
    assert_stored_as_the_conventions_mean()


@pytest.mark.django_db
def test_the_recorded_sdk_export_imports_the_same(client: Client) -> None:
    body = otel_sdk.FIXTURE.read_bytes()
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(body)
    [resource] = request.resource_spans
    [scope] = resource.scope_spans
    assert scope.scope.name == "opentelemetry.util.genai.handler"
    flags = [
        [a.value for a in span.attributes if a.key == "gen_ai.conversation.compacted"]
        for span in scope.spans
    ]
    # A boolean on the inference span, set true only, left unset otherwise.
    kinds = [[v.WhichOneof("value") for v in f] for f in flags]
    assert kinds == [[], ["bool_value"], ["bool_value"]]
    assert all(v.bool_value for f in flags for v in f)

    key = make_key(make_project(name="otel-sdk"))
    response = client.post(
        "/v1/traces",
        data=body,
        content_type="application/x-protobuf",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 200, response.content
    answer = trace_service_pb2.ExportTraceServiceResponse()
    answer.ParseFromString(response.content)
    assert answer.partial_success.rejected_spans == 0
    assert_stored_as_the_conventions_mean()


def test_the_recorded_export_is_what_the_exporter_makes_today() -> None:
    """The fixture is not hand-edited: a fresh export has the same spans, up to ids and times."""
    fresh = trace_service_pb2.ExportTraceServiceRequest()
    fresh.ParseFromString(otel_sdk.record_export())
    kept = trace_service_pb2.ExportTraceServiceRequest()
    kept.ParseFromString(otel_sdk.FIXTURE.read_bytes())

    def shape(request: trace_service_pb2.ExportTraceServiceRequest) -> list[object]:
        out: list[object] = []
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    out.append(
                        (
                            scope.scope.name,
                            span.name,
                            span.kind,
                            sorted((a.key, a.value.SerializeToString()) for a in span.attributes),
                        )
                    )
        return out

    assert shape(fresh) == shape(kept), (
        "the installed OpenTelemetry packages now export this conversation differently: "
        "regenerate the fixture (tests/fixtures/otel_sdk/README.md) and check the reader"
    )

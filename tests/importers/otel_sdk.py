"""A conversation told through OpenTelemetry's own GenAI instrumentation code path.

The spans are made by ``opentelemetry-util-genai`` (the library the official OpenTelemetry
GenAI instrumentations build their spans with: ``TelemetryHandler.inference`` and its
``InferenceInvocation``, which sets ``gen_ai.conversation.compacted``) on the
OpenTelemetry SDK, and leave through the SDK's OTLP/HTTP exporter
(``opentelemetry-exporter-otlp-proto-http``, protobuf). Nothing here writes an attribute,
a span or an OTLP body by hand.

The conversation: a first call near a full context, then the provider compacts it; the next
two calls send the compaction part back (the conventions' CompactionPart), and the library
marks both, since each one's context is a compacted view of the prior conversation.

``python -m tests.importers.otel_sdk PATH`` writes the bytes the exporter posts for it to
PATH (``tests/fixtures/otel_sdk/`` keeps one such export; its README says how it was made).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from unittest import mock

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.invocation import InferenceInvocation
from opentelemetry.util.genai.types import (
    CompactionPart,
    InputMessage,
    OutputMessage,
    Text,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "otel_sdk" / "compacted.binpb"
CONVERSATION = "conv-otel-sdk-billing"
AGENT = "billing-agent"
MODEL = "claude-sonnet-4-5"
SYSTEM = "You are a billing agent. Keep invoices exact to the cent."
SUMMARY = "Goal: fix the invoice rounding bug. billing/invoice.py rounds each line; tests pass."
BEFORE, AFTER, LATER, CACHED = 150_000, 9_000, 9_800, 9_000


def text(role: str, content: str) -> InputMessage:
    return InputMessage(role=role, parts=[Text(content=content)])


def answer(content: str) -> list[OutputMessage]:
    return [OutputMessage(role="assistant", parts=[Text(content=content)], finish_reason="stop")]


def tracer_provider(exporter: OTLPSpanExporter) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def exporter(endpoint: str, key: str) -> OTLPSpanExporter:
    return OTLPSpanExporter(
        endpoint=endpoint, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


def tell_conversation(provider: TracerProvider) -> None:
    """Three model calls through the library, message content captured on the spans."""
    capture = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    with mock.patch.dict(os.environ, capture):
        handler = TelemetryHandler(tracer_provider=provider)
        system = [Text(content=SYSTEM)]

        def chat() -> InferenceInvocation:
            return handler.inference("anthropic", request_model=MODEL, conversation_id=CONVERSATION)

        first = [text("user", "Fix the invoice rounding bug.")]
        with chat() as call:
            call.system_instruction = list(system)
            call.input_messages = list(first)
            call.output_messages = answer("Reading billing/invoice.py.")
            call.response_model_name = MODEL
            call.input_tokens, call.output_tokens = BEFORE, 40

        compacted = [
            InputMessage(role="assistant", parts=[CompactionPart(content=SUMMARY)]),
            text("user", "Carry on."),
        ]
        with chat() as call:
            call.system_instruction = list(system)
            call.input_messages = list(compacted)
            call.output_messages = answer("Running the tests.")
            call.response_model_name = MODEL
            call.input_tokens, call.output_tokens = AFTER, 30
            call.conversation_compacted = True

        later = [
            *compacted,
            InputMessage(role="assistant", parts=[Text(content="Running the tests.")]),
            text("user", "Fix test_round too."),
        ]
        with chat() as call:
            call.system_instruction = list(system)
            call.input_messages = later
            call.output_messages = answer("Done: test_round passes.")
            call.response_model_name = MODEL
            call.input_tokens, call.output_tokens = LATER, 25
            call.cache_read_input_tokens = CACHED
            call.conversation_compacted = True


@contextmanager
def _receiver() -> Iterator[tuple[str, list[bytes]]]:
    """A throwaway OTLP endpoint on 127.0.0.1 that keeps each body it is sent."""
    bodies: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1/traces", bodies
    finally:
        server.shutdown()
        server.server_close()


def record_export() -> bytes:
    """The one request body the exporter posts for the conversation."""
    with _receiver() as (endpoint, bodies):
        provider = tracer_provider(exporter(endpoint, "not-a-key"))
        tell_conversation(provider)
        assert provider.force_flush(), "the exporter did not finish"
        provider.shutdown()
    assert len(bodies) == 1, f"expected one export request, got {len(bodies)}"
    return bodies[0]


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(record_export())
    print(f"wrote {out}")

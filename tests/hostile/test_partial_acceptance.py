"""Partial acceptance where the protocol has it: OTLP keeps the valid spans and answers
partial_success with the rejected count; the Claude Code import skips bad lines and keeps
the rest; the Recorder drops the one bad message of a batch and sends the others."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from compaction.client.recorder import Recorder
from sessions.models import AgentSession, Message
from tests.factories import make_key, make_project
from tests.importers.corpus import SPOTTER, read_lines
from tests.importers.test_otlp import attr, call, export, post, span, text

pytestmark = pytest.mark.django_db

IMPORT = "/api/v1/imports/claude-code"


@pytest.fixture
def key() -> str:
    return make_key(make_project(name="partial"))


def good_call(span_id: str = "00000000000000a1", start: int = 1) -> dict[str, Any]:
    return call(span_id, [text("user", "Migrate billing.")], "On it.", start=start, tokens=10)


def partial(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    return json.loads(response.content).get("partialSuccess", {})


def test_a_nul_or_lone_surrogate_inside_the_message_json_rejects_that_span_only(
    client: Client, key: str
) -> None:
    nul = span(
        "00000000000000b1",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.conversation.id": "conv-nul",
            "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", '
            '"content": "a\\u0000b"}]}]',
        },
    )
    surrogate = span(
        "00000000000000b2",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.conversation.id": "conv-sur",
            "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", '
            '"content": "\\ud800"}]}]',
        },
    )
    answer = partial(post(client, key, export(good_call(), nul, surrogate)))
    assert answer["rejectedSpans"] == "2"
    assert "spans[1]" in answer["errorMessage"]
    assert "NUL" in answer["errorMessage"]
    assert "surrogate" in answer["errorMessage"]
    assert list(AgentSession.objects.values_list("external_id", flat=True)) == ["conv-1"]
    assert Message.objects.count() == 2


@pytest.mark.parametrize(
    "value",
    [{"intValue": "9" * 5000}, {"intValue": "twelve"}, {"intValue": str(2**64)}],
    ids=["5000-digits", "not-numeric", "beyond-int64"],
)
def test_an_unreadable_int_value_rejects_its_span(client: Client, key: str, value: Any) -> None:
    bad = span("00000000000000c1", {"gen_ai.operation.name": "chat"})
    bad["attributes"].append({"key": "n", "value": value})
    answer = partial(post(client, key, export(good_call(), bad)))
    assert answer["rejectedSpans"] == "1"
    assert "spans[1].attributes.n.intValue" in answer["errorMessage"]
    assert Message.objects.count() == 2


def test_non_finite_doubles_reject_their_span(client: Client, key: str) -> None:
    body = json.dumps(export(good_call(), span("00000000000000c2", {"x": 1.5})))
    body = body.replace('"doubleValue": 1.5', '"doubleValue": NaN')
    answer = partial(post(client, key, body.encode()))
    assert answer["rejectedSpans"] == "1"
    assert Message.objects.count() == 2


def test_a_non_object_resource_and_a_string_scope_are_refused_not_a_500(
    client: Client, key: str
) -> None:
    body = export(good_call())
    body["resourceSpans"].append({"resource": "billing", "scopeSpans": []})
    body["resourceSpans"].append({"scopeSpans": ["not a scope"]})
    body["resourceSpans"].append({"scopeSpans": "nope"})
    answer = partial(post(client, key, body))
    assert answer["rejectedSpans"] == "3"
    assert "resourceSpans[1].resource: expected an object" in answer["errorMessage"]
    assert "resourceSpans[2].scopeSpans[0]: expected an object" in answer["errorMessage"]
    assert Message.objects.count() == 2


@pytest.mark.parametrize("start", [1e30, "1" + "0" * 30, 2**64], ids=["float", "text", "int"])
def test_a_start_time_beyond_int64_rejects_its_span(client: Client, key: str, start: Any) -> None:
    bad = good_call("00000000000000d1", start=2)
    bad["startTimeUnixNano"] = start
    answer = partial(post(client, key, export(good_call(), bad)))
    assert answer["rejectedSpans"] == "1"
    assert "startTimeUnixNano" in answer["errorMessage"]


def test_token_counts_beyond_storage_reject_the_span(client: Client, key: str) -> None:
    bad = call("00000000000000e1", [text("user", "x")], "y", start=5, tokens=2**40)
    answer = partial(post(client, key, export(good_call(), bad)))
    assert answer["rejectedSpans"] == "1"
    assert "gen_ai.usage.input_tokens" in answer["errorMessage"]


def test_protobuf_times_beyond_int64_and_nan_doubles_are_rejected_span_by_span(
    client: Client, key: str
) -> None:
    request = trace_service_pb2.ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for n, (start, double) in enumerate([(1, 1.0), (2**64 - 1, 1.0), (1, float("nan"))]):
        raw = scope.spans.add()
        raw.trace_id = bytes(16)
        raw.span_id = bytes([n + 1] * 8)
        raw.start_time_unix_nano = start
        kv = raw.attributes.add()
        kv.key = "x"
        kv.value.double_value = double
    response = client.post(
        "/v1/traces",
        data=request.SerializeToString(),
        content_type="application/x-protobuf",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 200
    answer = trace_service_pb2.ExportTraceServiceResponse()
    answer.ParseFromString(response.content)
    assert answer.partial_success.rejected_spans == 2


def test_every_otlp_attribute_shape_gets_an_answer_never_a_500(client: Client, key: str) -> None:
    shapes: list[Any] = [
        {"arrayValue": "x"},
        {"arrayValue": {"values": "x"}},
        {"kvlistValue": {"values": 3}},
        {"doubleValue": "abc"},
        {"doubleValue": True},
        {"intValue": None},
        {"intValue": 1.5},
    ]
    for n, shape in enumerate(shapes):
        bad = span(f"00000000000001{n:02x}", {})
        bad["attributes"] = [{"key": "k", "value": shape}]
        assert partial(post(client, key, export(bad)))["rejectedSpans"] == "1", shape
    unreadable = {"resourceSpans": [{"resource": {"attributes": "x"}}]}
    assert partial(post(client, key, unreadable))["rejectedSpans"] == "1"
    assert attr("k", 1) == {"key": "k", "value": {"intValue": "1"}}


def _upload(client: Client, key: str, body: bytes) -> Any:
    return client.post(
        IMPORT + "?name=t.jsonl",
        data=body,
        content_type="application/x-ndjson",
        headers={"Authorization": f"Bearer {key}"},
    )


@pytest.mark.parametrize(
    "bad_line",
    [
        b'{"type": "user", "x": NaN}\n',
        b'{"type": "user", "x": 1e999}\n',
        b'{"type": "user", "message": {"role": "user", "content": "a\x00b"}}\n',
        b"[1, 2, 3]\n",
        b"42\n",
    ],
    ids=["nan", "1e999", "raw-nul-byte", "bare-array", "bare-number"],
)
def test_one_malformed_line_is_skipped_and_reported_the_rest_kept(
    client: Client, key: str, bad_line: bytes
) -> None:
    lines = read_lines(SPOTTER / "short.jsonl")
    good = _upload(client, key, b"".join(lines)).json()["messages"]
    AgentSession.objects.all().delete()
    at = len(lines) // 2
    response = _upload(client, key, b"".join([*lines[:at], bad_line, *lines[at:]]))
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["messages"] == good
    assert report["skipped_lines"] >= 1
    assert any(s["line"] == at + 1 for s in report["files"][0]["skipped"]), report["files"]


@pytest.mark.django_db(transaction=True)
def test_the_recorder_drops_the_one_bad_message_and_sends_the_others(live_server) -> None:
    key = make_key(make_project())
    recorder = Recorder(url=live_server.url, key=key, session_id="run-26", flush_interval=0.2)
    for n in range(26):
        usage = {"input_tokens": 2**40 if n == 13 else 10, "output_tokens": 1}
        recorder.message("user" if n % 2 == 0 else "assistant", f"message {n}", usage=usage)
    assert recorder.flush(timeout=15)
    recorder.close()
    stored = sorted(Message.objects.values_list("seq", flat=True))
    assert stored == [n for n in range(26) if n != 13]
    assert (recorder.sent, recorder.failed) == (25, 1)

"""OpenTelemetry GenAI spans read: OTLP bodies (JSON or protobuf) and span files to model calls.
Over 800 lines because one decoder reads both OTLP encodings, validating every field span by
span with the path it came from, and the GenAI conventions' three message shapes and the
emitters' own compaction spans are read here, so a fix to one cannot miss the others.

The pure half of the OTLP door (no Django): :func:`spans_from_json`, :func:`spans_from_protobuf`
and :func:`spans_from_file_data` decode spans; :func:`call_from_span` turns a model-call span
into a :class:`Call` (the whole prompt it sent, its answer, its usage, the compaction it
reports); :func:`emitter_compaction` reads an emitter's own compaction span and
:func:`context_window_reported` the window a span reports. ``sessions.importers.otlp`` groups
the calls by conversation and stores them.

A ``compaction`` part (CompactionPart) in a prompt is the summary. A
``gen_ai.conversation.compacted`` span event reports one compaction; the conventions' boolean
span attribute of that name set true marks each call whose context is a compacted view, one
compaction where such a run of calls begins. Either may give the trigger, tokens and summary
(attribute names under ``gen_ai.compaction.``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TOKENS_MAX = 100_000_000  # sessions.limits.TOKENS_MAX: larger counts are refused, naming them


class BodyError(ValueError):
    """A body that is not an OTLP export at all (the whole request is refused)."""


@dataclass
class Call:
    """One model call: the prompt (wire messages, no seq), the answer, what it reported.

    ``compactions`` are events the call itself reported (a server-side ``compaction`` block,
    ``context_management.applied_edits``); they are recorded at the answer's seq.
    ``compacted`` is an explicit report that the prompt was compacted before this call.
    ``compacted_view`` says that report is a standing state rather than an event: the OTel
    GenAI attribute ``gen_ai.conversation.compacted`` marks every call whose context is a
    compacted view of a prior conversation, so a run of such calls, each extending the last,
    is one compaction (at the first of them), not one per call.
    """

    key: str
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    usage: dict[str, Any] | None = None
    model: str | None = None
    start_ns: int = 0
    end_ns: int = 0
    compacted: dict[str, Any] | None = None
    compacted_view: bool = False
    compactions: list[dict[str, Any]] = field(default_factory=list)
    # The emitter whose own compaction span reported ``compacted`` (an event, even inside a
    # compacted view that goes on: a second pass within the same view is a second compaction).
    reported_by: str | None = None


FORMAT = "otlp"
MAX_DEPTH = 64
COMPACTED_EVENT = "gen_ai.conversation.compacted"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


class SpanError(ValueError):
    """A span that cannot be read; it is rejected (partial success), the rest go on."""


@dataclass
class SpanEvent:
    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass
class Span:
    trace_id: str
    span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    where: str = ""

    def attr(self, *keys: str) -> Any:
        return self.attr_named(*keys)[1]

    def attr_named(self, *keys: str) -> tuple[str, Any]:
        """(the key found, its value): the span's own attributes first, then its resource's;
        ("", None) when neither has any of ``keys``."""
        for key in keys:
            if key in self.attributes:
                return key, self.attributes[key]
        for key in keys:
            if key in self.resource:
                return key, self.resource[key]
        return "", None

    @property
    def is_genai(self) -> bool:
        return (
            any(k.startswith("gen_ai.") for k in self.attributes)
            or "ai.prompt.messages" in self.attributes
            or self.attributes.get("openinference.span.kind") == "LLM"
        )


# --- decoding OTLP ---------------------------------------------------------------------------


_INT64 = 2**63
# An int64 has at most 19 digits; a longer string is refused before int() reads it.
_INT_TEXT = re.compile(r"[+-]?[0-9]{1,19}")


def _int64(value: Any, where: str) -> int:
    """An OTLP/JSON int64 (a number or a decimal string, as the spec allows)."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _INT_TEXT.fullmatch(value.strip()):
        number = int(value.strip())
    if number is None:
        raise SpanError(f"{where}: not an integer")
    if not -_INT64 <= number < _INT64:
        raise SpanError(f"{where}: outside the 64-bit integer range")
    return number


def _double(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise SpanError(f"{where}: not a number") from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise SpanError(f"{where}: not a finite number")
    return number


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpanError(f"{where}: expected an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpanError(f"{where}: expected a list")
    return value


def _any_value(value: Any, where: str = "value") -> Any:
    """An OTLP/JSON AnyValue as a Python value."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return _int64(value["intValue"], f"{where}.intValue")
    if "doubleValue" in value:
        return _double(value["doubleValue"], f"{where}.doubleValue")
    if "arrayValue" in value:
        values = _mapping(value["arrayValue"], f"{where}.arrayValue").get("values")
        items = _list(values, f"{where}.arrayValue.values")
        return [_any_value(v, f"{where}.arrayValue.values[{i}]") for i, v in enumerate(items)]
    if "kvlistValue" in value:
        values = _mapping(value["kvlistValue"], f"{where}.kvlistValue").get("values")
        return _attributes(values, f"{where}.kvlistValue.values")
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _attributes(raw: Any, where: str = "attributes") -> dict[str, Any]:
    if isinstance(raw, Mapping):  # already a flat map (SDK span dumps, fixtures)
        return dict(raw)
    out: dict[str, Any] = {}
    for item in _list(raw or None, where):
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            out[item["key"]] = _any_value(item.get("value"), f"{where}.{item['key']}")
    return out


def _hex_id(value: Any, size: int, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise SpanError(f"{where}: missing")
    text = value.lower()
    if len(text) == size * 2 and all(c in "0123456789abcdef" for c in text):
        return text
    raise SpanError(f"{where}: not a {size}-byte hex id")


def _nanos(value: Any, where: str = "time") -> int:
    """Nanoseconds since the epoch; unreadable is 0 (unknown), beyond int64 is refused."""
    if isinstance(value, str) and len(value.strip()) > 20:
        raise SpanError(f"{where}: outside the 64-bit range of nanoseconds")
    try:
        if isinstance(value, list | tuple) and len(value) == 2:  # SDK HrTime [seconds, nanos]
            nanos = int(value[0]) * 1_000_000_000 + int(value[1])
        else:
            nanos = int(value or 0)
    except (TypeError, ValueError):
        return 0
    except OverflowError:  # inf
        raise SpanError(f"{where}: not a finite number of nanoseconds") from None
    return _nanos_checked(nanos, where)


def _nanos_checked(nanos: int, where: str) -> int:
    if not 0 <= nanos < _INT64:
        raise SpanError(f"{where}: outside the 64-bit range of nanoseconds")
    return nanos


def spans_from_json(data: Any) -> Iterator[Span | SpanError]:
    """Spans of an ExportTraceServiceRequest in OTLP/JSON; a bad span yields a SpanError."""
    if not isinstance(data, Mapping) or not isinstance(data.get("resourceSpans", []), list):
        raise BodyError("body: expected an ExportTraceServiceRequest with resourceSpans")
    for r, resource_spans in enumerate(data.get("resourceSpans") or []):
        if not isinstance(resource_spans, Mapping):
            yield SpanError(f"resourceSpans[{r}]: not an object")
            continue
        try:
            resource_where = f"resourceSpans[{r}].resource"
            resource = _attributes(
                _mapping(resource_spans.get("resource"), resource_where).get("attributes"),
                f"{resource_where}.attributes",
            )
            scopes = _list(
                resource_spans.get("scopeSpans")
                or resource_spans.get("instrumentationLibrarySpans"),
                f"resourceSpans[{r}].scopeSpans",
            )
        except SpanError as exc:
            yield exc  # the spans under an unreadable resource are refused, counted once
            continue
        for s, scope in enumerate(scopes):
            scope_where = f"resourceSpans[{r}].scopeSpans[{s}]"
            try:
                raw_spans = _list(_mapping(scope, scope_where).get("spans"), f"{scope_where}.spans")
            except SpanError as exc:
                yield exc
                continue
            for i, raw in enumerate(raw_spans):
                where = f"{scope_where}.spans[{i}]"
                try:
                    yield _span_from_json(raw, resource, where)
                except SpanError as exc:
                    yield exc


def _span_from_json(raw: Any, resource: dict[str, Any], where: str) -> Span:
    if not isinstance(raw, Mapping):
        raise SpanError(f"{where}: not an object")
    nested = raw.get("spanContext")
    context: Mapping[str, Any] = nested if isinstance(nested, Mapping) else raw
    trace_id = _hex_id(context.get("traceId"), 16, f"{where}.traceId")
    span_id = _hex_id(context.get("spanId"), 8, f"{where}.spanId")
    events = [
        SpanEvent(
            str(e.get("name", "")),
            _nanos(e.get("timeUnixNano", e.get("time")), f"{where}.events[{n}].timeUnixNano"),
            _attributes(e.get("attributes"), f"{where}.events[{n}].attributes"),
        )
        for n, e in enumerate(_list(raw.get("events"), f"{where}.events"))
        if isinstance(e, Mapping)
    ]
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        name=str(raw.get("name", "")),
        start_ns=_nanos(
            raw.get("startTimeUnixNano", raw.get("startTime")), f"{where}.startTimeUnixNano"
        ),
        end_ns=_nanos(raw.get("endTimeUnixNano", raw.get("endTime")), f"{where}.endTimeUnixNano"),
        attributes=_attributes(raw.get("attributes"), f"{where}.attributes"),
        resource=resource,
        events=events,
        where=where,
    )


def _pb_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_pb_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _pb_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)


def spans_from_protobuf(body: bytes) -> Iterator[Span | SpanError]:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    request = trace_service_pb2.ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise BodyError(f"body: not a valid ExportTraceServiceRequest ({exc})") from None
    for r, resource_spans in enumerate(request.resource_spans):
        resource = {kv.key: _pb_value(kv.value) for kv in resource_spans.resource.attributes}
        for s, scope in enumerate(resource_spans.scope_spans):
            for i, raw in enumerate(scope.spans):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                if len(raw.trace_id) != 16 or len(raw.span_id) != 8:
                    yield SpanError(f"{where}: trace_id must be 16 bytes and span_id 8 bytes")
                    continue
                try:
                    start_ns = _nanos_checked(
                        raw.start_time_unix_nano, f"{where}.startTimeUnixNano"
                    )
                    end_ns = _nanos_checked(raw.end_time_unix_nano, f"{where}.endTimeUnixNano")
                    for e, event in enumerate(raw.events):
                        _nanos_checked(event.time_unix_nano, f"{where}.events[{e}].timeUnixNano")
                except SpanError as exc:
                    yield exc
                    continue
                yield Span(
                    trace_id=raw.trace_id.hex(),
                    span_id=raw.span_id.hex(),
                    name=raw.name,
                    start_ns=start_ns,
                    end_ns=end_ns,
                    attributes={kv.key: _pb_value(kv.value) for kv in raw.attributes},
                    resource=resource,
                    events=[
                        SpanEvent(
                            e.name,
                            e.time_unix_nano,
                            {kv.key: _pb_value(kv.value) for kv in e.attributes},
                        )
                        for e in raw.events
                    ],
                    where=where,
                )


# --- GenAI messages to Anthropic-shaped wire messages ---------------------------------------


def _json_value(value: Any, where: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise SpanError(f"{where}: not valid JSON ({exc.msg})") from None
    return value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _tool_input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return {"arguments": arguments}
    if isinstance(arguments, Mapping):
        return dict(arguments)
    return {} if arguments is None else {"value": arguments}


def _part(part: Any) -> dict[str, Any]:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, Mapping):
        return {"type": "text", "text": _as_text(part)}
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": _as_text(part.get("content", part.get("text", "")))}
    if kind == "tool_call":
        return {
            "type": "tool_use",
            "id": str(part.get("id") or ""),
            "name": str(part.get("name") or ""),
            "input": _tool_input(part.get("arguments")),
        }
    if kind == "tool_call_response":
        return {
            "type": "tool_result",
            "tool_use_id": str(part.get("id") or ""),
            "content": _as_text(part.get("response", "")),
        }
    if kind == "reasoning":
        return {"type": "thinking", "thinking": _as_text(part.get("content", ""))}
    if kind == "compaction":
        return {"type": "compaction", "content": _as_text(part.get("content", ""))}
    if kind in ("uri", "file", "blob") and part.get("modality") == "image":
        ref = part.get("uri") or part.get("file_id") or ""
        if kind == "blob":
            digest = hashlib.sha256(str(part.get("content", "")).encode()).hexdigest()
            ref = f"sha256:{digest}"
        source_type = {"uri": "url", "file": "file", "blob": "base64"}[kind]
        return {"type": "image", "source": {"type": source_type, "ref": str(ref)}}
    return {**part, "type": str(kind or "unknown")}


def _openai_tool_calls(calls: Any) -> list[dict[str, Any]]:
    out = []
    for call in calls or []:
        if not isinstance(call, Mapping):
            continue
        nested = call.get("function")
        function: Mapping[str, Any] = nested if isinstance(nested, Mapping) else call
        out.append(
            {
                "type": "tool_use",
                "id": str(call.get("id") or call.get("toolCallId") or ""),
                "name": str(function.get("name") or function.get("toolName") or ""),
                "input": _tool_input(function.get("arguments", function.get("args"))),
            }
        )
    return out


def _role(raw: Any) -> str:
    role = str(raw or "user")
    if role in ("assistant", "model", "ai"):
        return "assistant"
    if role in ("system", "developer"):
        return "system"
    return "user"  # user, tool (results travel in a user message), anything else


# LangChain's serialized messages (``{"lc": 1, "type": "constructor", "id": [..., "HumanMessage"],
# "kwargs": {...}}``), as its tracers dump them: the class names the role.
_LANGCHAIN_ROLES = {
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
}
# LangChain's SummarizationMiddleware tags the summary it writes into the history
# (langchain-ai/langchain libs/langchain_v1/langchain/agents/middleware/summarization.py,
# ``_build_new_messages``: a HumanMessage with ``additional_kwargs={"lc_source":
# "summarization"}``); deepagents' summarization middleware writes the same tag.
LANGCHAIN_SUMMARY_SOURCE = "summarization"


def _from_langchain(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """A serialized LangChain message as ``{role, content, ...}``; anything else unchanged."""
    kwargs = raw.get("kwargs")
    ids = raw.get("id")
    if raw.get("lc") != 1 or not isinstance(kwargs, Mapping) or not isinstance(ids, list):
        return raw
    role = _LANGCHAIN_ROLES.get(str(ids[-1]) if ids else "", "user")
    return {**kwargs, "role": role}


def is_langchain_summary(raw: Any) -> bool:
    """Whether a message is the summary LangChain's summarization middleware wrote.

    >>> is_langchain_summary({"role": "user", "content": "Here is a summary ...",
    ...                       "additional_kwargs": {"lc_source": "summarization"}})
    True
    """
    if not isinstance(raw, Mapping):
        return False
    extra = raw.get("additional_kwargs")
    tag = extra.get("lc_source") if isinstance(extra, Mapping) else raw.get("lc_source")
    return tag == LANGCHAIN_SUMMARY_SOURCE


def chat_message(raw: Any) -> dict[str, Any]:
    """One GenAI ChatMessage (``parts``), or an older ``{role, content}`` one (a serialized
    LangChain message too), as wire. LangChain's summary message becomes a ``compaction``
    block: the summary that replaced the history before it."""
    if not isinstance(raw, Mapping):
        return {"role": "user", "content": [{"type": "text", "text": _as_text(raw)}]}
    raw = _from_langchain(raw)
    if is_langchain_summary(raw):
        content = raw.get("content")
        text = (
            _as_text(content)
            if not isinstance(content, list)
            else "\n".join(
                _as_text(p.get("text", "")) if isinstance(p, Mapping) else _as_text(p)
                for p in content
            )
        )
        return {"role": "user", "content": [{"type": "compaction", "content": text}]}
    role = raw.get("role")
    if isinstance(raw.get("parts"), list):
        blocks = [_part(p) for p in raw["parts"]]
    else:
        content = raw.get("content")
        if isinstance(content, list):
            blocks = [_vercel_part(p) for p in content]
        elif content is None:
            blocks = []
        else:
            blocks = [{"type": "text", "text": _as_text(content)}]
        if role == "tool" and raw.get("tool_call_id"):
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": str(raw["tool_call_id"]),
                    "content": _as_text(content if content is not None else ""),
                }
            ]
        blocks += _openai_tool_calls(raw.get("tool_calls"))
    return {"role": _role(role), "content": blocks}


def _vercel_part(part: Any) -> dict[str, Any]:
    if not isinstance(part, Mapping):
        return _part(part)
    kind = part.get("type")
    if kind == "tool-call":
        return _openai_tool_calls([part])[0]
    if kind == "tool-result":
        return {
            "type": "tool_result",
            "tool_use_id": str(part.get("toolCallId") or ""),
            "content": _as_text(part.get("output", part.get("result", ""))),
        }
    if kind == "text":
        return {"type": "text", "text": _as_text(part.get("text", ""))}
    return _part(part)


def _messages_attr(span: Span, keys: Sequence[str]) -> list[Any] | None:
    for key in keys:
        value = span.attributes.get(key)
        if value is None:
            continue
        parsed = _json_value(value, f"{span.where or span.span_id}: {key}")
        if isinstance(parsed, Mapping):
            # the older completion form: {"text": ..., "finish_reason": ...}
            if "text" in parsed or "content" in parsed:
                text = parsed.get("text", parsed.get("content"))
                return [{"role": "assistant", "content": _as_text(text)}]
            return [parsed]
        if not isinstance(parsed, list):
            raise SpanError(f"{span.where or span.span_id}: {key}: expected a list of messages")
        return parsed
    for event in span.events:
        if event.name == DETAILS_EVENT:
            for key in keys:
                if key in event.attributes:
                    parsed = _json_value(event.attributes[key], f"{span.where}: {event.name}")
                    return parsed if isinstance(parsed, list) else [parsed]
    return None


def _set_path(target: dict[str, Any], path: list[str], value: Any) -> None:
    node: Any = target
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


def _as_list(node: Any) -> list[Any]:
    if not isinstance(node, dict):
        return []
    return [node[k] for k in sorted(node, key=lambda k: int(k) if k.isdigit() else 0)]


def _openinference_messages(attributes: Mapping[str, Any], prefix: str) -> list[Any]:
    """OpenInference's flattened ``llm.input_messages.0.message.role`` keys, unflattened into
    OpenAI-style messages."""
    tree: dict[str, Any] = {}
    for key, value in attributes.items():
        if key.startswith(prefix + "."):
            _set_path(tree, key[len(prefix) + 1 :].split("."), value)
    out = []
    for item in _as_list(tree):
        message = item.get("message", {}) if isinstance(item, dict) else {}
        contents = [
            {"type": "text", "text": c.get("message_content", {}).get("text", "")}
            for c in _as_list(message.get("contents"))
            if isinstance(c, dict)
        ]
        calls = [
            {
                "id": c.get("tool_call", {}).get("id"),
                "function": c.get("tool_call", {}).get("function", {}),
            }
            for c in _as_list(message.get("tool_calls"))
            if isinstance(c, dict)
        ]
        out.append(
            {
                "role": message.get("role"),
                "content": contents or message.get("content", ""),
                "tool_calls": calls,
                "tool_call_id": message.get("tool_call_id"),
            }
        )
    return out


def _event_messages(span: Span) -> tuple[list[Any], list[Any]]:
    """The older event form: one event per message, ``gen_ai.choice`` for the answer."""
    inputs: list[Any] = []
    outputs: list[Any] = []
    for event in span.events:
        if event.name in _ROLE_EVENTS:
            body = event.attributes.get("content", event.attributes.get("gen_ai.event.content"))
            message = {"role": _ROLE_EVENTS[event.name], "content": body}
            calls = event.attributes.get("tool_calls")
            if calls is not None:
                message["tool_calls"] = _json_value(calls, f"{span.where}: tool_calls")
            if event.attributes.get("id"):
                message["tool_call_id"] = event.attributes["id"]
            inputs.append(message)
        elif event.name == "gen_ai.choice":
            message = _json_value(event.attributes.get("message", {}), f"{span.where}: choice")
            outputs.append({"role": "assistant", **(message if isinstance(message, dict) else {})})
    return inputs, outputs


def _int_attr(span: Span, *keys: str) -> int | None:
    """A token count; unreadable is unknown (None), beyond what storage holds is refused."""
    value = span.attr(*keys)
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str) and len(value.strip()) > 20:
        raise SpanError(f"{span.where or span.span_id}: {keys[0]}: not a token count")
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    except OverflowError:
        raise SpanError(f"{span.where or span.span_id}: {keys[0]}: not a finite number") from None
    if not 0 <= number <= TOKENS_MAX:
        raise SpanError(
            f"{span.where or span.span_id}: {keys[0]}: {number} is outside 0..{TOKENS_MAX}"
        )
    return number


def _usage(span: Span) -> dict[str, int] | None:
    total = _int_attr(
        span, "gen_ai.usage.input_tokens", "ai.usage.promptTokens", "llm.token_count.prompt"
    )
    output = _int_attr(
        span,
        "gen_ai.usage.output_tokens",
        "ai.usage.completionTokens",
        "llm.token_count.completion",
    )
    if total is None and output is None:
        return None
    cache_read = _int_attr(span, "gen_ai.usage.cache_read.input_tokens") or 0
    cache_creation = _int_attr(span, "gen_ai.usage.cache_creation.input_tokens") or 0
    # The GenAI conventions count cached tokens inside input_tokens; the canonical trace
    # keeps them apart, as the Anthropic API reports them.
    return {
        "input_tokens": max((total or 0) - cache_read - cache_creation, 0),
        "output_tokens": output or 0,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_creation,
    }


def _compaction_report(attrs: Mapping[str, Any]) -> dict[str, Any]:
    def pick(*names: str) -> Any:
        for name in names:
            for prefix in ("gen_ai.compaction.", "gen_ai.conversation.compaction.", ""):
                if prefix + name in attrs:
                    return attrs[prefix + name]
        return None

    return {
        "trigger": pick("trigger"),
        "strategy": pick("strategy"),
        "tokens_before": pick("tokens_before", "input_tokens.before"),
        "tokens_after": pick("tokens_after", "input_tokens.after"),
        "summary": pick("summary"),
        "duration_ms": pick("duration_ms"),
        "error": pick("error", "error.message"),
    }


def _compacted(span: Span) -> tuple[dict[str, Any] | None, bool]:
    """The compaction a span reports, and whether that report is a standing state.

    A ``gen_ai.conversation.compacted`` span event reports one compaction. The GenAI
    conventions' boolean attribute of that name on an inference span (true, never false: they
    leave it unset otherwise) says instead that the context this call used is a compacted view
    of a prior conversation; it stays true on the calls that follow in that view, so it is a
    state (``compacted_view``) that ``calls`` turns into one compaction where the view begins.
    Its figures, which the conventions do not define, are read under ``gen_ai.compaction.`` on
    the span."""
    for event in span.events:
        if event.name == COMPACTED_EVENT:
            return _compaction_report(event.attributes), False
    flag = span.attributes.get(COMPACTED_EVENT)
    if flag is True or (isinstance(flag, str) and flag.strip().lower() == "true"):
        figures = {k: v for k, v in span.attributes.items() if k.startswith("gen_ai.compaction.")}
        return _compaction_report(figures), True
    return None, False


# --- emitters' own compaction spans ------------------------------------------------------------
# The GenAI conventions define no compaction span yet, so emitters name their own. Each entry:
# the span name, the emitter, and where its figures are (read from the emitter's own code):
# - OpenClaw's OTel plugin: ``openclaw.compaction`` (``openclaw.compaction.reason``,
#   ``messages_before/after``, ``tokens_before/after``, ``tokens_reclaimed``, ``duration_ms``);
# - pydantic-ai-harness ``compaction/_shared.py`` (``compact_with_span``): ``compact_messages``
#   (``compaction.strategy``, ``compaction.messages_before/after``,
#   ``compaction.tokens_before/after``, the harness's ~4 characters-per-token estimates);
# - redpanda ai-sdk-go ``plugins/otel/compaction.go``: ``redpanda.compaction``
#   (``redpanda.compaction.phase`` proactive|reactive, ``pruned_results``,
#   ``dropped_messages``, ``before.*`` / ``after.*`` token breakdowns by category);
# - Google ADK ``apps/compaction.py`` ``_summarize_events_with_trace`` and
#   ``telemetry/tracing.py`` ``_build_compaction_attributes``: ``compact_events {trigger}``
#   (``gen_ai.operation.name`` ``compact_events``; ``gen_ai.compaction.trigger``
#   token_threshold|sliding_window, ``summarizer_type``, ``event_count``, the config's
#   ``token_threshold`` / ``event_retention_size`` / ``compaction_interval`` /
#   ``overlap_size``, ``result_event_id``, ``prompt_chars_saved``). No tokens: before and after
#   are the calls around it; the summary is the first message of the compacted prompt.
EMITTER_SPANS = {
    "openclaw.compaction": "openclaw",
    "compact_messages": "pydantic-ai-harness",
    "redpanda.compaction": "redpanda-ai-sdk-go",
    "compact_events": "google-adk",
}
_ADK_TRIGGERS = {"token_threshold": "threshold", "sliding_window": "auto"}
_ADK_KEPT = ("trigger", "summarizer_type", "event_count", "token_threshold",
             "event_retention_size", "compaction_interval", "overlap_size", "result_event_id",
             "prompt_chars_saved")  # fmt: skip
_TRIGGERS = {"auto": "auto", "manual": "manual", "threshold": "threshold"}
_REDPANDA_PHASES = {"proactive": "threshold", "reactive": "auto"}


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def emitter_compaction(span: Span) -> dict[str, Any] | None:
    """The compaction an emitter's own compaction span reports (trigger, strategy, tokens
    before and after, what else it counted), or None for any other span.

    >>> s = Span("t", "s", "redpanda.compaction", 0, 0, {"redpanda.compaction.phase":
    ...     "proactive", "redpanda.compaction.before.tokens": 158000,
    ...     "redpanda.compaction.after.tokens": 96000, "redpanda.compaction.pruned_results": 14})
    >>> r = emitter_compaction(s)
    >>> (r["trigger"], r["tokens_before"], r["tokens_after"], r["strategy"])
    ('threshold', 158000, 96000, 'prune_tool_results')
    """
    emitter = EMITTER_SPANS.get(span.name)
    if emitter is None and span.attr("gen_ai.operation.name") == "compact_events":
        emitter = "google-adk"  # ADK names the span "compact_events <trigger>"
    if emitter is None:
        return None
    a = span.attributes
    kept: dict[str, Any] = {"emitter": emitter, "span": span.name}
    duration = (span.end_ns - span.start_ns) // 1_000_000 if span.end_ns > span.start_ns else None
    if emitter == "openclaw":
        reason = a.get("openclaw.compaction.reason")
        trigger = _TRIGGERS.get(str(reason).lower(), "unknown") if reason else "unknown"
        before = _count(a.get("openclaw.compaction.tokens_before"))
        after = _count(a.get("openclaw.compaction.tokens_after"))
        strategy = "summarize"
        for key in ("reason", "messages_before", "messages_after", "messages_removed",
                    "compacting_count", "tokens_reclaimed"):  # fmt: skip
            if f"openclaw.compaction.{key}" in a:
                kept[key] = a[f"openclaw.compaction.{key}"]
        duration = _count(a.get("openclaw.compaction.duration_ms")) or duration
    elif emitter == "pydantic-ai-harness":
        trigger = "unknown"  # the span does not say what fired it
        before = _count(a.get("compaction.tokens_before"))
        after = _count(a.get("compaction.tokens_after"))
        strategy = str(a.get("compaction.strategy") or "")[:60]
        kept["tokens_estimated"] = True  # the harness's ~4 characters-per-token heuristic
        for key in ("messages_before", "messages_after"):
            if f"compaction.{key}" in a:
                kept[key] = a[f"compaction.{key}"]
    elif emitter == "google-adk":
        if "gen_ai.compaction.result_event_id" not in a:
            return None  # no compaction event came of it (the summarizer failed or declined)
        raw = str(a.get("gen_ai.compaction.trigger") or "")
        trigger = _ADK_TRIGGERS.get(raw, "unknown")
        before = after = None  # ADK records none: the calls around it measure them
        strategy = "summarize"  # a BaseEventsSummarizer writes a summary event
        for key in _ADK_KEPT:
            if f"gen_ai.compaction.{key}" in a:
                kept[key] = a[f"gen_ai.compaction.{key}"]
        kept["summary_at"] = "first"  # the compacted prompt opens with the summary event
    else:
        phase = str(a.get("redpanda.compaction.phase") or "")
        trigger = _REDPANDA_PHASES.get(phase, "unknown")
        before = _count(a.get("redpanda.compaction.before.tokens"))
        after = _count(a.get("redpanda.compaction.after.tokens"))
        pruned = _count(a.get("redpanda.compaction.pruned_results")) or 0
        dropped = _count(a.get("redpanda.compaction.dropped_messages")) or 0
        strategy = (
            "prune_and_drop"
            if pruned and dropped
            else "drop_turns"
            if dropped
            else "prune_tool_results"
        )
        kept.update(phase=phase, pruned_results=pruned, dropped_messages=dropped)
        kept["tokens_estimated"] = True  # "conservative heuristic estimates" (the emitter's)
        for side in ("before", "after"):
            prefix = f"redpanda.compaction.{side}."
            kept[side] = {k[len(prefix) :]: v for k, v in a.items() if k.startswith(prefix)}
        duration = None  # a zero-duration span: the pass takes microseconds
    return {
        "trigger": trigger,
        "strategy": strategy,
        "tokens_before": before,
        "tokens_after": after,
        "summary": None,
        "duration_ms": duration,
        "error": None,
        "kept": kept,
    }


def context_window_reported(span: Span) -> int | None:
    """The window a span reports for its call: Sentry's ``gen_ai.context.window_size``
    (getsentry/sentry-conventions), else its ``gen_ai.context.utilization`` read back from the
    context tokens the call used.

    >>> attrs = {"gen_ai.context.window_size": 200000}
    >>> context_window_reported(Span("t", "s", "chat", 0, 0, attrs))
    200000
    """
    size = _count(span.attributes.get("gen_ai.context.window_size"))
    if size:
        return size
    raw = span.attributes.get("gen_ai.context.utilization")
    fraction = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else 0.0
    usage = _usage(span)
    used = sum(usage.values()) - usage["output_tokens"] if usage else 0
    if 0 < fraction <= 1 and used:
        return round(used / fraction)
    return None


def call_from_span(span: Span) -> Call | None:
    """A model call, or None for a span that is not one (tool execution, agent, other)."""
    operation = span.attr("gen_ai.operation.name")
    if operation in ("execute_tool", "embeddings", "create_agent", "invoke_agent"):
        return None
    inputs = _messages_attr(span, ("gen_ai.input.messages", "gen_ai.prompt", "ai.prompt.messages"))
    outputs = _messages_attr(span, ("gen_ai.output.messages", "gen_ai.completion"))
    if (
        inputs is None
        and outputs is None
        and "llm.input_messages.0.message.role" in span.attributes
    ):
        inputs = _openinference_messages(span.attributes, "llm.input_messages")
        outputs = _openinference_messages(span.attributes, "llm.output_messages")
    if inputs is None and outputs is None:
        inputs, outputs = _event_messages(span)
    outputs = outputs or []
    if outputs == [] and isinstance(span.attributes.get("ai.response.text"), str):
        outputs = [{"role": "assistant", "content": span.attributes["ai.response.text"]}]
    if not inputs and not outputs:
        return None
    system = span.attr("gen_ai.system_instructions")
    wire_inputs = [chat_message(m) for m in inputs or []]
    if system is not None:
        parts = _json_value(system, f"{span.where}: gen_ai.system_instructions")
        parts = parts if isinstance(parts, list) else [parts]
        wire_inputs.insert(0, {"role": "system", "content": [_part(p) for p in parts]})
    # Several choices are alternatives: the conversation goes on with the first.
    wire_outputs = [chat_message(m) for m in outputs[:1]]
    model = span.attr(
        "gen_ai.response.model", "gen_ai.request.model", "ai.model.id", "llm.model_name"
    )
    compacted, compacted_view = _compacted(span)
    return Call(
        key=span.span_id,
        inputs=wire_inputs,
        outputs=wire_outputs,
        usage=_usage(span),
        model=str(model) if model else None,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        compacted=compacted,
        compacted_view=compacted_view,
    )


# --- conversations to sessions -------------------------------------------------------------


def spans_from_file_data(data: Any) -> list[Span | SpanError]:
    """Spans from a JSON file: an OTLP/JSON export, a list of SDK span dumps, or one flat
    attribute map (one span)."""
    if isinstance(data, Mapping) and "resourceSpans" in data:
        return list(spans_from_json(data))
    items = data if isinstance(data, list) else [data]
    out: list[Span | SpanError] = []
    for index, raw in enumerate(items):
        if isinstance(raw, Mapping) and "attributes" not in raw:
            raw = {"attributes": raw}  # a bare attribute map
        try:
            if isinstance(raw, Mapping) and "spanContext" not in raw and "traceId" not in raw:
                seed = hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode())
                raw = {**raw, "traceId": seed.hexdigest()[:32], "spanId": seed.hexdigest()[:16]}
            out.append(_span_from_json(raw, {}, f"[{index}]"))
        except SpanError as exc:
            out.append(exc)
    return out

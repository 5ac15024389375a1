"""OpenTelemetry GenAI spans in: OTLP/HTTP bodies and span files, stored by conversation.

The pure reading (decoding, messages, calls, emitters' compaction spans) is
:mod:`compaction.engine.otlp`; this module groups the calls by conversation (its
``gen_ai.conversation.id``, else the trace's) and stores each one through
``sessions.importers.calls``, which turns the prompts into the raw trace and observed
compactions. An emitter's own compaction span is placed before the first call of its
conversation that followed it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import DataError

from compaction.engine import otlp as engine
from compaction.engine.otlp import (
    FORMAT,
    Call,
    Span,
    SpanError,
    SpanEvent,
    call_from_span,
    chat_message,
    context_window_reported,
    emitter_compaction,
    spans_from_file_data,
)
from privacy import masking
from sessions import limits, wire
from sessions.errors import ApiError, BadRequest
from sessions.importers.calls import conversation_ingest
from sessions.importers.report import FileReport, ImportReport
from sessions.models import Project

__all__ = [
    "FORMAT",
    "Call",
    "Span",
    "SpanError",
    "SpanEvent",
    "TraceResult",
    "call_from_span",
    "chat_message",
    "context_window_reported",
    "emitter_compaction",
    "spans_from_file_data",
    "spans_from_json",
    "spans_from_protobuf",
    "spans_ingest",
]
_MAX_DEPTH = engine.MAX_DEPTH


def spans_from_json(data: Any) -> Iterator[Span | SpanError]:
    """:func:`compaction.engine.otlp.spans_from_json`; a body that is no export is a 400."""
    try:
        yield from engine.spans_from_json(data)
    except engine.BodyError as exc:
        raise BadRequest(str(exc)) from None


def spans_from_protobuf(body: bytes) -> Iterator[Span | SpanError]:
    """:func:`compaction.engine.otlp.spans_from_protobuf`; a body that is no export is a 400."""
    try:
        yield from engine.spans_from_protobuf(body)
    except engine.BodyError as exc:
        raise BadRequest(str(exc)) from None


def conversation_id(span: Span) -> str:
    """The session's external id; one storage cannot hold refuses the span (cutting it would
    merge two conversations that share their first 200 characters)."""
    key, value = span.attr_named("gen_ai.conversation.id", "session.id")
    if not value:
        return f"trace-{span.trace_id}"
    try:
        return wire.external_id_check(str(value), where=f"{span.where or span.span_id}: {key}")
    except BadRequest as exc:
        raise SpanError(exc.message) from None


@dataclass
class TraceResult:
    accepted: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)
    report: ImportReport = field(default_factory=ImportReport)


def spans_ingest(
    *,
    project: Project,
    spans: Iterator[Span | SpanError] | Sequence[Span | SpanError],
    source: str = "request",
) -> TraceResult:
    """Group GenAI spans by conversation and store each conversation's new messages.

    Spans that cannot be read are rejected and counted; spans that are not GenAI model calls
    are accepted and ignored.
    """
    result = TraceResult()
    file = result.report.file(source, format=FORMAT)
    by_conversation: dict[str, list[Call]] = {}
    first_span: dict[str, Span] = {}
    of_trace: dict[str, str] = {}  # trace id -> the conversation its model calls belong to
    windows: dict[str, int] = {}  # conversation -> the window its spans report
    emitted: list[tuple[Span, dict[str, Any]]] = []  # emitters' own compaction spans
    for item in spans:
        if isinstance(item, SpanError):
            result.rejected += 1
            result.errors.append(str(item))
            file.skip(None, str(item))
            continue
        file.records += 1
        try:
            call = call_from_span(item) if item.is_genai else None
            if call is not None:
                _check_storable(call, item)
                _check_session_fields(item)
                key = conversation_id(item)
        except SpanError as exc:
            result.rejected += 1
            result.errors.append(str(exc))
            file.skip(None, str(exc))
            continue
        result.accepted += 1
        if call is None:
            report = emitter_compaction(item)
            if report is not None:
                emitted.append((item, report))
                continue
            file.ignored[str(item.attr("gen_ai.operation.name") or "not a model call")] += 1
            continue
        by_conversation.setdefault(key, []).append(call)
        first_span.setdefault(key, item)
        of_trace.setdefault(item.trace_id, key)
        window = context_window_reported(item)
        if window:
            windows[key] = window
    for span, report in emitted:
        _place_emitted(span, report, by_conversation, of_trace, file)
    for external_id, calls in by_conversation.items():
        span = first_span[external_id]
        provider = span.attr("gen_ai.provider.name", "gen_ai.system")
        try:
            conversation_ingest(
                project=project,
                external_id=external_id,
                calls=calls,
                file=file,
                report=result.report,
                source=FORMAT,
                stable_keys=True,  # span ids
                session={
                    "agent": span.attr("gen_ai.agent.name", "service.name"),
                    "metadata": {"provider": provider} if provider else {},
                    **({"context_window": windows[external_id]} if external_id in windows else {}),
                },
            )
        except (ApiError, DataError) as exc:
            # One conversation refused (stored whole or not at all); the others are kept.
            reason = exc.message if isinstance(exc, ApiError) else "a value storage cannot hold"
            message = f"conversation {masking.text_mask(external_id)!r}: {reason}"
            result.accepted -= len(calls)
            result.rejected += len(calls)
            result.errors.append(message)
            file.skip(None, message)
    return result


def _place_emitted(
    span: Span,
    report: dict[str, Any],
    by_conversation: dict[str, list[Call]],
    of_trace: dict[str, str],
    file: FileReport,
) -> None:
    """Give an emitter's compaction to the first model call of its conversation still under
    way when the compaction began (the call that saw the compacted context: pydantic-ai-harness
    compacts inside the request's own span, OpenClaw between two calls); its conversation is
    the one the span names, else the one of the model calls in its trace."""
    named = span.attr("gen_ai.conversation.id", "session.id")
    key = str(named) if named else of_trace.get(span.trace_id, f"trace-{span.trace_id}")
    calls = sorted(by_conversation.get(key, []), key=lambda c: (c.start_ns, c.key))
    after = [c for c in calls if c.end_ns >= span.start_ns and c.reported_by is None]
    if not after:
        # Nothing followed it in this upload: it is kept at the last call's answer.
        if calls:
            placed = {k: v for k, v in report.items() if v is not None}
            calls[-1].compactions.append({**placed, "seq": 0})
            return
        file.ignored[f"{span.name} span with no model call in its conversation"] += 1
        return
    target = after[0]
    own = target.compacted or {}
    target.compacted = {k: (v if v is not None else own.get(k)) for k, v in report.items()}
    target.reported_by = str(report["kept"]["emitter"])


# What a span names of its session, and how long each may be (the columns' limits).
_SESSION_FIELDS = (
    (("gen_ai.agent.name", "service.name"), limits.AGENT_MAX),
    (
        ("gen_ai.response.model", "gen_ai.request.model", "ai.model.id", "llm.model_name"),
        limits.SESSION_MODEL_MAX,
    ),
)


def _check_session_fields(span: Span) -> None:
    """Refuse the span whose agent or model name storage cannot hold, rather than cut it."""
    for keys, limit in _SESSION_FIELDS:
        key, value = span.attr_named(*keys)
        if not value:
            continue
        where = f"{span.where or span.span_id}: {key}"
        try:
            wire.text_storable_check(
                limits.text_check(str(value), limit=limit, field=where), where=where
            )
        except BadRequest as exc:
            raise SpanError(exc.message) from None


def _check_storable(call: Call, span: Span) -> None:
    """Refuse, span by span, decoded content PostgreSQL cannot store (a NUL or lone surrogate
    escaped inside the message JSON, NaN)."""
    where = span.where or span.span_id
    try:
        wire.check_json(call.inputs, max_depth=_MAX_DEPTH)
        wire.check_json(call.outputs, max_depth=_MAX_DEPTH)
        if call.compacted is not None:
            wire.check_json(call.compacted, max_depth=_MAX_DEPTH)
    except BadRequest as exc:
        raise SpanError(f"{where}: messages{exc.message}") from None
